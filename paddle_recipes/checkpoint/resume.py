"""The resume policy: which checkpoint a training run continues from (Global.resume / Global.checkpoints)."""
from __future__ import annotations

import logging
import os
from pathlib import Path

from ..runtime import distributed as dist_utils
from .format import LATEST, CheckpointError, latest_tag, resolve_checkpoint

logger = logging.getLogger("paddle_recipes.checkpoint.format")  # one logger for the checkpoint area


def resume_source(resume: str, output_dir: str | os.PathLike, log: bool = True) -> str | None:
    """A recipe's `Global.resume` -> what to pass to Trainer.fit(resume_from=...).

    "" -> None (fresh run; with `log`, a warning when output_dir/checkpoints already holds a `latest`: a job
    restarted by its launcher without Global.resume=auto starts over); "auto" -> output_dir/checkpoints if it holds
    a `latest`, else None; anything else is returned as given (a checkpoint folder or root, checked when loaded).
    `log`: say which.
    """
    if resume == "auto":
        root = Path(output_dir) / "checkpoints"
        if (root / LATEST).exists():
            if log:
                logger.info("Global.resume=auto: resuming from %s (latest: %s)", root, latest_tag(root))
            return str(root)
        if log:
            logger.info("Global.resume=auto: no checkpoint in %s, starting fresh", root)
        return None
    if not resume and log and (Path(output_dir) / "checkpoints" / LATEST).exists():
        logger.warning("Global.resume is empty: starting fresh although %s holds checkpoint %s (its checkpoints "
                       "will be replaced); a restarted job continues only with -o Global.resume=auto",
                       Path(output_dir) / "checkpoints", latest_tag(Path(output_dir) / "checkpoints"))
    return resume or None


def resume_from(g, output_dir: str | None = None) -> str | None:
    """Global.checkpoints (PaddleOCR's key), else Global.resume -> Trainer.fit(resume_from=...); "auto" looks in
    <output_dir or Global.output_dir>/checkpoints. Both naming different checkpoints: CheckpointError.

    Every rank looks on its own node's disk; on several processes they must find the same checkpoint (a
    collective check), else CheckpointError: nodes that do not share the output dir would resume at
    different steps and fall out of step."""
    named = g.checkpoints or ""
    if named and g.resume not in ("", "auto", named):
        raise CheckpointError(f"Global.checkpoints={named} and Global.resume={g.resume} name different checkpoints "
                              "to continue from: set one")
    src = named or resume_source(g.resume, output_dir or g.output_dir)
    try:
        mine = str(resolve_checkpoint(src)) if src else "no checkpoint"
    except (CheckpointError, OSError):
        mine = f"{src} (unreadable)"
    differ = dist_utils.ranks_disagreeing(mine)
    if differ:
        raise CheckpointError(
            f"Global.resume={g.resume or '(empty)'}: rank {dist_utils.dist.get_rank()} finds {mine}, but rank(s) "
            f"{', '.join(map(str, differ))} find a different checkpoint than rank 0: every node must see the same "
            f"{Path(output_dir or g.output_dir) / 'checkpoints'} (put Global.output_dir on storage all nodes share, "
            "or copy rank 0's checkpoints folder to every node first)")
    return src
