"""The shared command line of every recipe: `-c config.yml -o key=value --mode train|eval|...`.

    def main(argv=None):
        return run_recipe("ocr_rec", RecConfig, MODES, default_config="recipes/configs/ocr_rec.yml", argv=argv)

    if __name__ == "__main__":
        exit_on_user_error(main, "ocr_rec", extra_errors=(LabelFileError,))

run_recipe parses the config (typed, unknown keys rejected), sets up the process group, device,
seeds and rank-aware logging (output_dir/<mode>.log), saves the resolved config next to the
outputs and calls `modes[mode](cfg, info)`. The config must have a `Global` section with
`seed`, `device` and `output_dir`.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from .runtime import distributed as dist_utils, peers
from .assets import resolve_path
from . import MissingDependencyError
from .checkpoint.format import CheckpointError
from .checkpoint.rundir import OutputLock
from .config import (ConfigError, ConfigTranslator, OverrideNote, add_config_args, dump_config, flatten_opts,
                     load_config)
from .data import DataError
from .train.trainer import NonFiniteError
from .checkpoint.serialization import WeightsFileError

USER_ERRORS: tuple = (ConfigError, CheckpointError, DataError, NonFiniteError, FileNotFoundError, WeightsFileError,
                      dist_utils.PeerError, MissingDependencyError)


def quiet_known_warnings() -> None:
    """Filter, once per process, the library warnings that are noise in a recipe run (call at start-up, never
    per step or per sample: every change of the warning filters resets Python's once-per-location registry).

    - paddle's BatchNorm ``When training, we now always track global mean and variance.``: raised by every BN
      layer on every training forward; it describes paddle's normal behaviour, nothing to act on.
    - PIL's ``DecompressionBombWarning``: our image-size guard (``data.image_pixels``, ``max_image_pixels``)
      decides about huge images and counts/logs each skip.
    Every other warning shows as Python's default does: once per location and message."""
    import warnings

    warnings.filterwarnings("ignore", message="When training, we now always track global mean and variance",
                            category=UserWarning)
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - pillow is a dependency
        return
    warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)


def run_recipe(name: str, schema: type, modes: dict[str, Callable], default_config: str | None = None,
               argv: list[str] | None = None, default_mode: str = "train",
               check: Callable[[Any], None] | None = None, description: str | None = None,
               translators: Sequence[ConfigTranslator] = ()) -> Any:
    """Parse args, build the typed config, set up distributed + logging, run the chosen mode.

    translators: foreign-config readers for `-c` (config.load_config); their notes are logged once,
    on rank 0, as warnings of logger `name` once logging is set up."""
    parser = argparse.ArgumentParser(prog=name, description=description or f"{name} recipe")
    add_config_args(parser, default_config=default_config)
    parser.add_argument("--mode", choices=sorted(modes), default=default_mode)
    args = parser.parse_args(argv)
    dist_utils.quiet_sigterm()  # before the config is read: a SIGTERM while it loads is one line, not paddle's dump
    quiet_known_warnings()
    notes: list[str] = []
    cfg = load_config(resolve_path(args.config) if args.config else None, flatten_opts(args.opt), schema,
                      translators=translators, notes=notes)
    if check is not None:
        check(cfg)
    g = cfg.Global
    info = dist_utils.setup(seed=g.seed, device=g.device or None)
    out = Path(g.output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"Global.output_dir {str(out)!r}: cannot create the folder ({exc.strerror or exc})") from None
    # a training run owns its output dir: lock it before writing anything there (config.yml, train.log)
    lock = OutputLock(out) if args.mode == "train" and info.is_main else None
    try:
        dist_utils.raise_together(lambda: lock.acquire() if lock is not None else None, (CheckpointError,),
                                  what=f"locking the output dir {out}")  # rank 0 locks; every rank stops if it can't
        dist_utils.setup_logging(info, log_file=str(out / f"{args.mode}.log"))
        peers.set_checkpoint_dir(out / "checkpoints")
        if info.is_main:
            dump_config(cfg, out / ("config.yml" if args.mode == "train" else f"config.{args.mode}.yml"))
            for note in notes:  # an -o that replaced a value is news, not a warning
                logging.getLogger(name).log(logging.INFO if isinstance(note, OverrideNote) else logging.WARNING,
                                            "%s", note)
        logging.getLogger(name).info("%s --mode %s: world_size %d, device %s", name, args.mode, info.world_size,
                                     info.device)
        return modes[args.mode](cfg, info)
    finally:
        if lock is not None:
            lock.release()


def exit_on_user_error(main: Callable[[], Any], name: str, extra_errors: tuple = ()) -> None:
    """Run `main()`; a user error (bad config key, missing file, bad data, unknown component name) exits 2
    with one clear line. A multi-process run that succeeded ends with dist_utils.exit_distributed_run."""
    distributed = "PADDLE_TRAINER_ID" in os.environ  # started by paddle.distributed.launch
    try:
        main()
    except USER_ERRORS + tuple(extra_errors) as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        peers.announce_leaving(f"it stopped with an error: {first}")
        if distributed:
            dist_utils.exit_now(2)
        sys.exit(2)
    except RuntimeError as exc:
        line = peers.collective_timeout_line(exc)  # gloo's own timeout, when the lost-node monitor did not come first
        if line is not None:
            print(line, file=sys.stderr)
            if distributed:
                dist_utils.exit_now(peers.PEER_LOST_EXIT)
            sys.exit(peers.PEER_LOST_EXIT)
        if not dist_utils.is_peer_loss(exc):  # a collective whose peer rank is gone: that rank printed the reason
            raise
        first = str(exc).strip().splitlines()[0][:200]
        print(f"{name}: error: rank {os.environ.get('PADDLE_TRAINER_ID', '?')} stopped: another rank failed or "
              f"was stopped ({first})", file=sys.stderr)
        dist_utils.exit_now(143)
    dist_utils.exit_distributed_run(0)
