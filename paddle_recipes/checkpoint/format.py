"""The checkpoint format: atomic, complete checkpoint folders for exact resume.

Layout of `save_checkpoint(root, state, tag="step_000100")`::

    root/step_000100/model.pdparams      model weights (PaddleOCR/ppdet-compatible .pdparams)
    root/step_000100/optimizer.pdopt     optimizer state (incl. LR scheduler inside paddle optimizers)
    root/step_000100/ema.pdparams        EMA shadow weights (state["ema"]["shadow"]), if given
    root/step_000100/merged.pdparams     weights merged with the init weights (state["merged"]["weights"]), if
                                         given (Global.finetune_merge: weights.merge); never read by resume
    root/step_000100/state.pkl           the rest: epoch, step, amp, lr, rng, config, ... (plain values only)
    root/latest                          text file naming the newest complete checkpoint

Writes go to a temporary folder renamed into place, then `latest` is replaced atomically (os.replace): a
crash mid-save never leaves a half checkpoint behind `latest`. `keep_last` older ones are kept, besides `best`
and the permanent `iter_epoch_N` folders; a pruned folder is renamed to a hidden temp name before deletion.
Faults: re-saving a tag swaps the folders atomically (renameat2 RENAME_EXCHANGE; elsewhere a two-rename
fallback resolve_checkpoint recovers from); a state with an inf/nan tensor is refused (NonFiniteStateError,
nothing written); disk full (ENOSPC) prunes old checkpoints down to the newest valid one and retries once,
then raises CheckpointError naming the path, as do other write errors: the previous checkpoint stays intact.
`clean_stale` removes temp folders and incomplete checkpoint folders left by a crash. Every file is read
through `serialization` (restricted unpickler): a crafted checkpoint cannot run code. Next to it:
checkpoint_state (RNG, optimizer, collect/restore), checkpoint_compare (does it fit this run), resume (what a
run continues from), rundir (the output-dir lock), weights (eval / predict / export loading).
"""
from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

import paddle

from .finite import first_nonfinite
from .serialization import UnsafeWeightsError, dump_plain, load_plain, load_weights_file

TENSOR_FILES = {"model": "model.pdparams", "optimizer": "optimizer.pdopt", "ema": "ema.pdparams",
                "merged": "merged.pdparams"}
# an entry whose tensors sit under a sub-key: that sub-key goes to the tensor file (a plain weights file that
# load_weights / Global.pretrained_model read), the rest of the entry (e.g. EMA's num_updates) to state.pkl
TENSOR_SUBKEY = {"ema": "shadow", "merged": "weights"}
STATE_FILE = "state.pkl"
LATEST = "latest"

logger = logging.getLogger(__name__)
KEEP_PREFIX = "iter_epoch_"  # permanent checkpoints (Global.keep_every_epochs): never pruned
_STEP_TAG = re.compile(rf"(step|{KEEP_PREFIX.rstrip('_')})_\d+")  # the trainer's checkpoint tags (not `best`)


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or unreadable; the message names the path."""


class NonFiniteStateError(CheckpointError):
    """save_checkpoint refused a state holding inf/nan tensors (nothing was written)."""


def weights_file_in(folder: str | os.PathLike, prefer_ema: bool = True) -> Path:
    """The weights file of a checkpoint folder: with `prefer_ema` (the run's output weights) merged.pdparams when
    present (Global.finetune_merge), else ema.pdparams when present; else model.pdparams (the running weights)."""
    for key in ("merged", "ema") if prefer_ema else ():
        if (Path(folder) / TENSOR_FILES[key]).exists():
            return Path(folder) / TENSOR_FILES[key]
    return Path(folder) / TENSOR_FILES["model"]


def is_latest_pointer(path: str | os.PathLike) -> bool:
    """True for the `latest` text file of a checkpoint root (it names a checkpoint; it holds no weights)."""
    path = Path(path)
    return path.name == LATEST and path.is_file() and path.stat().st_size < 256


def weights_file_at(path: str | os.PathLike, prefer_ema: bool = True) -> Path:
    """A weights file as it is; a checkpoint folder, a root or its `latest` file -> that checkpoint's weights file
    (weights_file_in). A missing path is a CheckpointError (resolve_checkpoint)."""
    path = Path(path)
    if path.is_file() and not is_latest_pointer(path):
        return path
    return weights_file_in(resolve_checkpoint(path), prefer_ema)


def latest_tag(root: str | os.PathLike) -> str | None:
    """The tag root/latest names, or None when there is none."""
    try:
        return (Path(root) / LATEST).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:  # pragma: no cover - e.g. unsupported FS
        pass


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2 RENAME_EXCHANGE). False when unsupported."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _write_folder(tmp: Path, state: dict) -> None:
    rest = {k: v for k, v in state.items() if k not in TENSOR_FILES}
    for key, fname in TENSOR_FILES.items():
        value = state.get(key)
        if value is None:
            continue
        sub = TENSOR_SUBKEY.get(key)
        if sub is not None and isinstance(value, dict) and sub in value:
            rest[key] = {k: v for k, v in value.items() if k != sub}
            value = value[sub]
        paddle.save(value, str(tmp / fname))
    with open(tmp / STATE_FILE, "wb") as f:
        dump_plain(rest, f, "checkpoint state")
        f.flush()
        os.fsync(f.fileno())


def _place(tmp: Path, final: Path) -> None:
    """Move the finished tmp folder to `final`; an existing `final` is never absent meanwhile."""
    if not final.exists():
        os.replace(tmp, final)
        return
    if _exchange(tmp, final):  # tmp now holds the old checkpoint
        shutil.rmtree(tmp, ignore_errors=True)
        return
    trash = final.with_name(f".{final.name}.old")  # fallback: resolve_checkpoint recovers from trash
    shutil.rmtree(trash, ignore_errors=True)
    os.replace(final, trash)
    os.replace(tmp, final)
    shutil.rmtree(trash, ignore_errors=True)


def save_checkpoint(root: str | os.PathLike, state: dict, tag: str, keep_last: int = 3) -> Path:
    """Write `state` atomically under root/tag and point root/latest at it. Returns the folder.

    state keys "model", "optimizer", "ema", "merged" hold state_dicts saved with paddle.save (of "ema" its
    "shadow" weights, of "merged" its "weights"; the rest of them goes to state.pkl); every other key is pickled into state.pkl and
    must be plain python / numpy values (TypeError naming the key otherwise, nothing written;
    serialization.check_plain).
    Raises NonFiniteStateError (nothing written) when model/ema/optimizer/merged hold inf/nan, and
    CheckpointError naming the folder when the disk is full (after pruning old checkpoints down
    to the newest valid one and one retry) or not writable; the previous checkpoint is kept.
    """
    root = Path(root)
    final = root / tag
    for key in TENSOR_FILES:
        bad = first_nonfinite(state.get(key))
        if bad is not None:
            raise NonFiniteStateError(f"refusing to write checkpoint {final}: {key} tensor '{bad}' holds inf/nan; "
                                      f"the previous checkpoint ({latest_tag(root) or 'none'}) is kept")
    for attempt in (1, 2):
        tmp = None
        try:
            root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{tag}.tmp-"))
            _write_folder(tmp, state)
            _place(tmp, final)
            _fsync_dir(root)
            _atomic_write_text(root / LATEST, tag + "\n")
            break
        except OSError as exc:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            if exc.errno == errno.ENOSPC and attempt == 1 and _prune(root, 1, protect=tag, keep_latest=True):
                logger.warning("disk full while writing %s: pruned old checkpoints, retrying once", final)
                continue
            raise CheckpointError(f"cannot write checkpoint {final}: {exc.strerror or exc}; the previous "
                                  f"checkpoint ({latest_tag(root) or 'none'}) is kept") from None
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
    _prune(root, keep_last, protect=tag)
    return final


def _prune(root: Path, keep_last: int, protect: str, keep_latest: bool = False) -> int:
    """Delete the oldest complete checkpoints beyond `keep_last` (never `best`, `protect`, or what
    `latest` names when keep_latest). Returns how many were deleted."""
    if keep_last <= 0 or not root.is_dir():
        return 0
    keep = {protect, "best"} | ({latest_tag(root)} if keep_latest else set())
    dirs = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                   and (p / STATE_FILE).exists() and p.name != "best" and not p.name.startswith(KEEP_PREFIX)),
                  key=lambda p: p.stat().st_mtime)
    doomed = [p for p in dirs[:-keep_last] if p.name not in keep]
    for p in doomed:
        _remove_folder(p)
    return len(doomed)


def _remove_folder(folder: Path) -> None:
    """Delete a checkpoint folder: renamed to a hidden temp name first, so a kill mid-delete leaves no
    half folder under a checkpoint's name (clean_stale removes the temp)."""
    trash = folder.with_name(f".{folder.name}.tmp-prune")
    try:
        if trash.exists():
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(folder, trash)
    except OSError:
        trash = folder
    shutil.rmtree(trash, ignore_errors=True)


def clean_stale(root: str | os.PathLike) -> list[str]:
    """Remove temp folders (.TAG.tmp-*, .TAG.old, .latest.*) left by a crash mid-save. A trash folder
    that `latest` still needs (crash between the two renames of a re-save) is moved back first.
    Returns the names removed. Call it only while holding the output dir (OutputLock)."""
    root = Path(root)
    if not root.is_dir():
        return []
    latest = latest_tag(root)
    if latest and not (root / latest / STATE_FILE).exists() and (root / f".{latest}.old" / STATE_FILE).exists():
        os.replace(root / f".{latest}.old", root / latest)
        logger.warning("restored checkpoint %s from an interrupted re-save", root / latest)
    removed, incomplete = [], []
    for p in root.iterdir():
        if p.name.startswith(".") and (".tmp-" in p.name or p.name.endswith(".old") or p.name.startswith(f".{LATEST}.")):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(p.name)
        elif (p.is_dir() and _STEP_TAG.fullmatch(p.name) and p.name != latest and not (p / STATE_FILE).exists()):
            shutil.rmtree(p, ignore_errors=True)  # e.g. a kill while an older version pruned it in place
            incomplete.append(p.name)
    if removed:
        logger.info("removed %d stale temp file(s) in %s: %s", len(removed), root, ", ".join(sorted(removed)[:5]))
    if incomplete:
        logger.warning("removed %d incomplete checkpoint folder(s) in %s (no %s, left by an interrupted delete): %s",
                       len(incomplete), root, STATE_FILE, ", ".join(sorted(incomplete)[:5]))
    return removed + incomplete


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """A checkpoint folder, a root holding `latest`, or that `latest` file itself -> the checkpoint folder."""
    path = Path(path)
    if is_latest_pointer(path):  # root/latest, as a PaddleOCR user writes output/x/latest
        path = path.parent
    weights = path if path.suffix == ".pdparams" else Path(f"{path}.pdparams")
    if weights.is_file():  # PaddleOCR's best_accuracy(.pdparams): weights only
        raise CheckpointError(f"{path} is a weights file ({weights.name}), not a checkpoint folder: it holds no "
                              f"optimizer or epoch state to resume; start from its weights with "
                              f"Global.pretrained_model={path}")
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    if (path / STATE_FILE).exists():
        return path
    latest = path / LATEST
    if latest.exists():
        tag = latest.read_text(encoding="utf-8").strip()
        target = path / tag
        trash = path / f".{tag}.old"
        if not (target / STATE_FILE).exists() and (trash / STATE_FILE).exists():
            return trash  # crash between the two renames of a re-save (fallback path)
        if not (target / STATE_FILE).exists():
            raise CheckpointError(f"{latest} names '{tag}', which is not a complete checkpoint")
        return target
    raise CheckpointError(f"{path} is neither a checkpoint folder (no {STATE_FILE}) nor a root with '{LATEST}'")


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read a checkpoint written by save_checkpoint (folder or root). Raises CheckpointError."""
    folder = resolve_checkpoint(path)
    try:
        state = load_plain(folder / STATE_FILE)
        if not isinstance(state, dict):
            raise CheckpointError(f"{folder / STATE_FILE} holds a {type(state).__name__}, not a checkpoint state")
        for key, fname in TENSOR_FILES.items():
            if (folder / fname).exists():
                tensors = load_weights_file(folder / fname)
                sub = TENSOR_SUBKEY.get(key)
                state[key] = {**state[key], sub: tensors} if sub and isinstance(state.get(key), dict) else tensors
            elif isinstance(state.get(key), dict) and TENSOR_SUBKEY.get(key):  # e.g. EMA's counts without its weights
                logger.warning("%s is missing: the checkpoint has no %s state", folder / fname, key)
                state[key] = None  # restore_state: "no ema state, but this run uses it"
    except (CheckpointError, UnsafeWeightsError):
        raise
    except Exception as exc:
        raise CheckpointError(f"cannot read checkpoint {folder}: {type(exc).__name__}: {exc}") from exc
    state["path"] = str(folder)
    return state

