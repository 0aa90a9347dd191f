"""Atomic, complete checkpoints for exact resume.

Layout of `save_checkpoint(root, state, tag="step_000100")`::

    root/step_000100/model.pdparams      model weights (PaddleOCR/ppdet-compatible .pdparams)
    root/step_000100/optimizer.pdopt     optimizer state (incl. LR scheduler inside paddle optimizers)
    root/step_000100/ema.pdparams        EMA shadow weights (state["ema"]["shadow"]), if given
    root/step_000100/state.pkl           everything else: epoch, step, amp, accumulator, lr, rng, config, ...
                                         (plain python / numpy values only: serialization.check_plain)
    root/latest                          text file naming the newest complete checkpoint

The state is assembled Fabric-style: `collect_state({"model": layer, "optimizer": PortableOptimizer(opt),
"ema": ema, "epoch": 3, ...})` asks each object for its own state_dict() (plain values are kept as they
are) and `restore_state(objects, state)` hands each object its part back (set_state_dict).

A checkpoint is written into a temporary folder and renamed into place, then `latest` is
replaced atomically (os.replace), so a crash mid-save never leaves a half checkpoint behind
`latest`. `keep_last` older ones are kept, besides `best` and the permanent `iter_epoch_N` folders.

Faults: re-saving a tag swaps the folders atomically (renameat2 RENAME_EXCHANGE; elsewhere a
two-rename fallback that resolve_checkpoint can recover from); a state with an inf/nan tensor is
refused (NonFiniteStateError, nothing written); disk full (ENOSPC) prunes old checkpoints down to
the newest valid one and retries once, then raises CheckpointError naming the path, as do other
write errors (read-only dir): the previous checkpoint stays intact. `clean_stale` removes temp
folders left by a crash. `OutputLock` keeps two runs out of one output dir.
`check_compatible` compares a checkpoint's weights and saved config with the current model.
Every file is read through `serialization` (restricted unpickler): a crafted checkpoint cannot run code.
"""
from __future__ import annotations

import errno
import logging
import os
import random
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import paddle

from .finite import FLOAT_DTYPES, first_bad_index
from .serialization import UnsafeWeightsError, dump_plain, load_plain, load_weights_file, match_dtypes

TENSOR_FILES = {"model": "model.pdparams", "optimizer": "optimizer.pdopt", "ema": "ema.pdparams"}
# an entry whose tensors sit under a sub-key: that sub-key goes to the tensor file (a plain weights file that
# load_weights / Global.pretrained_model read), the rest of the entry (e.g. EMA's num_updates) to state.pkl
TENSOR_SUBKEY = {"ema": "shadow"}
STATE_FILE = "state.pkl"
LATEST = "latest"
LOCK_FILE = ".lock"

logger = logging.getLogger(__name__)
KEEP_PREFIX = "iter_epoch_"  # permanent checkpoints (Global.keep_every_epochs): never pruned


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or unreadable; the message names the path."""


class NonFiniteStateError(CheckpointError):
    """save_checkpoint refused a state holding inf/nan tensors (nothing was written)."""


def _named_leaves(state, prefix: str = ""):
    for key, value in state.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _named_leaves(value, name + ".")
        else:
            yield name, value


def first_nonfinite(state_dict) -> str | None:
    """Name ("outer.inner" for nested dicts) of the first floating tensor or array holding inf/nan in a
    state dict, else None. Paddle tensors are checked together (finite.first_bad_index: one host sync)."""
    if not isinstance(state_dict, dict):
        return None
    names, tensors, bad_array = [], [], None
    for name, value in _named_leaves(state_dict):
        if isinstance(value, paddle.Tensor) and value.dtype in FLOAT_DTYPES:
            names.append(name)
            tensors.append(value)
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f" and not np.isfinite(value).all():
            bad_array = name  # the first bad array: only the tensors before it can come first
            break
    bad = first_bad_index(tensors)
    return names[bad] if bad is not None else bad_array


def rng_state() -> dict:
    """Python, numpy and paddle (CPU + CUDA) RNG states, as plain values (paddle's GeneratorStates as
    their __getstate__ tuples), so state.pkl needs no class to load."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "paddle": [g.__getstate__() for g in paddle.get_rng_state()]}
    if paddle.is_compiled_with_cuda() and paddle.device.get_device().startswith("gpu"):
        state["paddle_cuda"] = [g.__getstate__() for g in paddle.get_cuda_rng_state()]
    return state


def _generator_states(states: list) -> list:
    """paddle GeneratorStates from rng_state()'s tuples (objects of older checkpoints pass through)."""
    cls = type(paddle.get_rng_state()[0])
    out = []
    for s in states:
        if isinstance(s, (tuple, list)):
            g = cls.__new__(cls)
            g.__setstate__(tuple(s))
            s = g
        out.append(s)
    return out


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    paddle.set_rng_state(_generator_states(state["paddle"]))
    if "paddle_cuda" in state and paddle.is_compiled_with_cuda():
        paddle.set_cuda_rng_state(_generator_states(state["paddle_cuda"]))


class _RngStates:
    """The process's RNG streams as a checkpoint object (rng_state / set_rng_state)."""

    state_dict = staticmethod(rng_state)
    set_state_dict = staticmethod(set_rng_state)


RNG = _RngStates()


def collect_state(objects: dict) -> dict:
    """name -> object.state_dict() for objects that have one; other values (numbers, dicts) as they are."""
    return {k: v.state_dict() if hasattr(v, "state_dict") else v for k, v in objects.items()}


def restore_state(objects: dict, state: dict) -> None:
    """Hand each object its part of a loaded checkpoint `state` (set_state_dict). A part this run needs
    but the checkpoint lacks is a CheckpointError naming the checkpoint."""
    missing = [k for k in objects if state.get(k) is None]
    if missing:
        raise CheckpointError(f"{state.get('path', 'checkpoint')}: no {', '.join(missing)} state, but this run "
                              f"uses {'them' if len(missing) > 1 else 'it'}")
    for name, obj in objects.items():
        obj.set_state_dict(state[name])


def _param_names(optimizer) -> list[str]:
    from .amp import _param_list

    return [p.name for p in _param_list(optimizer)]


def _rename_keys(state, mapping: dict) -> Any:
    """Rename dict keys that equal or start with `old_` for each old->new in mapping."""
    if not isinstance(state, dict):
        return state
    ordered = sorted(mapping, key=len, reverse=True)  # longest first: linear_1 vs linear_10
    out = {}
    for key, value in state.items():
        new_key = key
        if isinstance(key, str):
            for old in ordered:
                if key == old or key.startswith(old + "_"):
                    new_key = mapping[old] + key[len(old):]
                    break
        out[new_key] = _rename_keys(value, mapping) if isinstance(value, dict) else value
    return out


def portable_optimizer_state(optimizer) -> dict:
    """optimizer.state_dict() with parameter names replaced by positions (param_0, param_1, ...).

    Paddle keys optimizer state by auto-generated parameter names (linear_4.w_0), which differ
    between two processes that build the same model; positions do not.
    """
    names = _param_names(optimizer)
    return _rename_keys(optimizer.state_dict(), {n: f"@param_{i}" for i, n in enumerate(names)})


def load_portable_optimizer_state(optimizer, state: dict) -> None:
    """Inverse of portable_optimizer_state for this optimizer's parameters."""
    names = _param_names(optimizer)
    optimizer.set_state_dict(_rename_keys(state, {f"@param_{i}": n for i, n in enumerate(names)}))


class PortableOptimizer:
    """An optimizer as a checkpoint object: its state keyed by parameter position (portable_optimizer_state)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def state_dict(self) -> dict:
        return portable_optimizer_state(self.optimizer)

    def set_state_dict(self, state: dict) -> None:
        load_portable_optimizer_state(self.optimizer, state)


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

    state keys "model", "optimizer", "ema" hold state_dicts saved with paddle.save (of "ema", its
    "shadow" weights; the rest of it goes to state.pkl); every other key is pickled into state.pkl and
    must be plain python / numpy values (TypeError naming the key otherwise, nothing written;
    serialization.check_plain).
    Raises NonFiniteStateError (nothing written) when model/ema/optimizer hold inf/nan, and
    CheckpointError naming the folder when the disk is full (after pruning old checkpoints down
    to the newest valid one and one retry) or not writable; the previous checkpoint is kept.
    """
    root = Path(root)
    final = root / tag
    for key in TENSOR_FILES:
        bad = first_nonfinite(state.get(key))
        if bad is not None:
            raise NonFiniteStateError(f"refusing to write checkpoint {final}: {key} tensor '{bad}' holds inf/nan; "
                                      f"the previous checkpoint ({_latest_tag(root) or 'none'}) is kept")
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
                                  f"checkpoint ({_latest_tag(root) or 'none'}) is kept") from None
        except BaseException:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
    _prune(root, keep_last, protect=tag)
    return final


def _latest_tag(root: Path) -> str | None:
    try:
        return (Path(root) / LATEST).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _prune(root: Path, keep_last: int, protect: str, keep_latest: bool = False) -> int:
    """Delete the oldest complete checkpoints beyond `keep_last` (never `best`, `protect`, or what
    `latest` names when keep_latest). Returns how many were deleted."""
    if keep_last <= 0 or not root.is_dir():
        return 0
    keep = {protect, "best"} | ({_latest_tag(root)} if keep_latest else set())
    dirs = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                   and (p / STATE_FILE).exists() and p.name != "best" and not p.name.startswith(KEEP_PREFIX)),
                  key=lambda p: p.stat().st_mtime)
    removed = 0
    for p in dirs[:-keep_last]:
        if p.name not in keep:
            shutil.rmtree(p, ignore_errors=True)
            removed += 1
    return removed


def clean_stale(root: str | os.PathLike) -> list[str]:
    """Remove temp folders (.TAG.tmp-*, .TAG.old, .latest.*) left by a crash mid-save. A trash folder
    that `latest` still needs (crash between the two renames of a re-save) is moved back first.
    Returns the names removed. Call it only while holding the output dir (OutputLock)."""
    root = Path(root)
    if not root.is_dir():
        return []
    latest = _latest_tag(root)
    if latest and not (root / latest / STATE_FILE).exists() and (root / f".{latest}.old" / STATE_FILE).exists():
        os.replace(root / f".{latest}.old", root / latest)
        logger.warning("restored checkpoint %s from an interrupted re-save", root / latest)
    removed = []
    for p in root.iterdir():
        if p.name.startswith(".") and (".tmp-" in p.name or p.name.endswith(".old") or p.name.startswith(f".{LATEST}.")):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(p.name)
    if removed:
        logger.info("removed %d stale temp file(s) in %s: %s", len(removed), root, ", ".join(sorted(removed)[:5]))
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """An output dir held by one run: `dir/.lock`, held with flock(2) for the run's lifetime and holding
    "pid host" for the error message. Acquisition is atomic (the kernel lock, not the file's content,
    decides), and a run killed with -9 frees it (the kernel drops the flock): the next run takes it over
    with a warning. A lock naming a live pid on this host, or another host, is also refused (a run that
    does not flock, or NFS). Re-entrant within one process: the first acquirer owns it, release() of a
    nested acquire is a no-op.

        with OutputLock("output/rec"): ...   # or lock.acquire() / lock.release()
    """

    _held: dict[str, int] = {}  # resolved lock path -> fd, for this process

    def __init__(self, output_dir: str | os.PathLike):
        self.path = Path(output_dir) / LOCK_FILE
        self.held = False
        self._owns = False

    def _owner(self) -> tuple[int, str] | None:
        try:
            pid, _, host = self.path.read_text(encoding="utf-8").strip().partition(" ")
            return int(pid), host
        except (OSError, ValueError):
            return None

    def _busy(self, owner) -> CheckpointError:
        who = f"pid {owner[0]} on {owner[1]}" if owner else "another process"
        return CheckpointError(f"output dir {self.path.parent} is in use by {who} (lock {self.path}); use "
                               f"another Global.output_dir or stop that run")

    def acquire(self) -> "OutputLock":
        import fcntl

        me = (os.getpid(), socket.gethostname())
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CheckpointError(f"cannot create output dir {self.path.parent}: {exc.strerror or exc}") from None
        key = os.path.realpath(self.path)
        if key in OutputLock._held:
            self.held = True
            return self
        for _ in range(50):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            except OSError as exc:
                raise CheckpointError(f"cannot write lock {self.path}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._busy(self._owner()) from None
            except OSError as exc:
                os.close(fd)
                raise CheckpointError(f"cannot lock {self.path}: {exc.strerror or exc}") from None
            try:  # the holder unlinked it between our open and flock: lock the new file instead
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            owner = self._owner()
            if owner is not None and owner != me and (owner[1] != me[1] or _pid_alive(owner[0])):
                os.close(fd)
                raise self._busy(owner)
            if owner is not None and owner != me:
                logger.warning("taking over stale lock %s (pid %d is not running)", self.path, owner[0])
            try:
                os.ftruncate(fd, 0)
                os.write(fd, f"{me[0]} {me[1]}\n".encode())
            except OSError as exc:
                os.close(fd)
                raise CheckpointError(f"cannot write lock {self.path}: {exc.strerror or exc}") from None
            OutputLock._held[key] = fd
            self.held = self._owns = True
            return self
        raise CheckpointError(f"could not take the lock {self.path} (another run keeps taking it)")

    def release(self) -> None:
        if self._owns:
            fd = OutputLock._held.pop(os.path.realpath(self.path), None)
            if fd is not None:
                self.path.unlink(missing_ok=True)  # unlink while holding the flock, then drop it
                os.close(fd)
        self.held = self._owns = False

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def check_compatible(state: dict, model_state: dict, config: dict | None = None,
                     sections: tuple = ("Architecture",)) -> None:
    """Raise CheckpointError naming the differing keys when checkpoint `state` (load_checkpoint) does
    not fit the current model: missing/extra weights, other shapes, or other config `sections`."""
    where = state.get("path", "checkpoint")
    problems = []
    saved_cfg = state.get("config") or {}
    for sec in sections:
        if config is not None and sec in config and sec in saved_cfg:
            diffs = _dict_diff(saved_cfg[sec], config[sec], sec)
            if diffs:
                problems.append("config differs: " + "; ".join(diffs[:6]))
    weights = state.get("model") or {}
    missing = sorted(set(model_state) - set(weights))
    extra = sorted(set(weights) - set(model_state))
    shapes = [f"{k} {list(weights[k].shape)} vs {list(model_state[k].shape)} now"
              for k in model_state if k in weights and list(weights[k].shape) != list(model_state[k].shape)]
    if missing:
        problems.append(f"weights missing: {missing[:4]}")
    if extra:
        problems.append(f"unexpected weights: {extra[:4]}")
    if shapes:
        problems.append("shapes differ: " + ", ".join(shapes[:4]))
    if problems:
        raise CheckpointError(f"{where} does not match this model: " + " | ".join(problems))


_ABSENT = "<absent>"


def _dict_diff(old, new, prefix: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new), key=str):
            out += _dict_diff(old.get(k, _ABSENT), new.get(k, _ABSENT), f"{prefix}.{k}")
        return out
    if old == new or (old in (None, _ABSENT) and new in (None, _ABSENT)):  # a key added since (default None)
        return []
    return [f"{prefix}: {old!r} in checkpoint, {new!r} now"]


def optimizer_changes(state: dict, config: dict | None) -> list[str]:
    """How the current config's `Optimizer` section differs from the checkpoint's ("key: old in checkpoint,
    new now"); [] when equal or either config is unknown. Resume says so: a changed Optimizer.name means its
    moments are not restored."""
    saved = (state.get("config") or {}).get("Optimizer")
    now = (config or {}).get("Optimizer")
    if not isinstance(saved, dict) or not isinstance(now, dict):
        return []
    return _dict_diff(saved, now, "Optimizer")


def resume_source(resume: str, output_dir: str | os.PathLike) -> str | None:
    """A recipe's `Global.resume` -> what to pass to Trainer.fit(resume_from=...).

    "" -> None (fresh run); "auto" -> output_dir/checkpoints if it holds a `latest`, else None;
    anything else is returned as given (a checkpoint folder or root, checked when loaded).
    """
    if resume == "auto":
        root = Path(output_dir) / "checkpoints"
        if (root / LATEST).exists():
            logger.info("Global.resume=auto: resuming from %s (latest: %s)", root, _latest_tag(root))
            return str(root)
        logger.info("Global.resume=auto: no checkpoint in %s, starting fresh", root)
        return None
    return resume or None


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """A checkpoint folder, or a root holding `latest`, -> the checkpoint folder."""
    path = Path(path)
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
    except (CheckpointError, UnsafeWeightsError):
        raise
    except Exception as exc:
        raise CheckpointError(f"cannot read checkpoint {folder}: {type(exc).__name__}: {exc}") from exc
    state["path"] = str(folder)
    return state


def load_weights(model: paddle.nn.Layer, path: str | os.PathLike, prefer_ema: bool = True) -> str:
    """Load weights into `model` from a checkpoint folder/root or a .pdparams file. Returns what was loaded."""
    path = Path(path)
    if path.is_file():
        weights, source = load_weights_file(path), str(path)
    else:
        folder = resolve_checkpoint(path)
        fname = "ema.pdparams" if prefer_ema and (folder / "ema.pdparams").exists() else "model.pdparams"
        weights, source = load_weights_file(folder / fname), str(folder / fname)
    if not isinstance(weights, dict):
        raise CheckpointError(f"{source} holds a {type(weights).__name__}, not a state_dict")
    from .distributed import unwrap

    target = unwrap(model)
    missing = set(target.state_dict()) - set(weights)
    if missing:
        raise CheckpointError(f"{source} lacks weights for {sorted(missing)[:5]} (model/config mismatch?)")
    own = target.state_dict()
    bad = [f"{k} {list(np.shape(weights[k]))}->{list(v.shape)}" for k, v in own.items()
           if list(np.shape(weights[k])) != list(v.shape)]
    if bad:  # paddle would only warn "Skip loading" and keep random values
        raise CheckpointError(f"{source}: shape mismatch for {', '.join(bad[:3])} ({len(bad)} in all; "
                              "another dictionary or architecture? use Global.pretrained_model to fine-tune)")
    target.set_state_dict(match_dtypes(weights, own, source))  # exact conversions only, else one line
    return source
