"""Atomic, complete checkpoints for exact resume.

Layout of `save_checkpoint(root, state, tag="step_000100")`::

    root/step_000100/model.pdparams      model weights (PaddleOCR/ppdet-compatible .pdparams)
    root/step_000100/optimizer.pdopt     optimizer state (incl. LR scheduler inside paddle optimizers)
    root/step_000100/ema.pdparams        EMA shadow weights, if given
    root/step_000100/state.pkl           everything else: epoch, step, amp, accumulator, lr, rng, config, ...
    root/latest                          text file naming the newest complete checkpoint

A checkpoint is written into a temporary folder and renamed into place, then `latest` is
replaced atomically (os.replace), so a crash mid-save never leaves a half checkpoint behind
`latest`. `keep_last` older ones are kept, besides `best` and the permanent `iter_epoch_N` folders.
"""
from __future__ import annotations

import os
import pickle
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import paddle

TENSOR_FILES = {"model": "model.pdparams", "optimizer": "optimizer.pdopt", "ema": "ema.pdparams"}
STATE_FILE = "state.pkl"
LATEST = "latest"
KEEP_PREFIX = "iter_epoch_"  # permanent checkpoints (Global.keep_every_epochs): never pruned


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or unreadable; the message names the path."""


def rng_state() -> dict:
    """Python, numpy and paddle (CPU + CUDA) RNG states."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "paddle": paddle.get_rng_state()}
    if paddle.is_compiled_with_cuda() and paddle.device.get_device().startswith("gpu"):
        state["paddle_cuda"] = paddle.get_cuda_rng_state()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    paddle.set_rng_state(state["paddle"])
    if "paddle_cuda" in state and paddle.is_compiled_with_cuda():
        paddle.set_cuda_rng_state(state["paddle_cuda"])


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


def save_checkpoint(root: str | os.PathLike, state: dict, tag: str, keep_last: int = 3) -> Path:
    """Write `state` atomically under root/tag and point root/latest at it. Returns the folder.

    state keys "model", "optimizer", "ema" hold state_dicts saved with paddle.save; every other
    key is pickled into state.pkl (plain python, numpy, RNG states, small tensors are fine).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / tag
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{tag}.tmp-"))
    try:
        for key, fname in TENSOR_FILES.items():
            if state.get(key) is not None:
                paddle.save(state[key], str(tmp / fname))
        rest = {k: v for k, v in state.items() if k not in TENSOR_FILES}
        with open(tmp / STATE_FILE, "wb") as f:
            pickle.dump(rest, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        if final.exists():  # re-saving the same tag: move the old one aside first
            old = root / f".{tag}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
        _fsync_dir(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _atomic_write_text(root / LATEST, tag + "\n")
    _prune(root, keep_last, protect=tag)
    return final


def _prune(root: Path, keep_last: int, protect: str) -> None:
    if keep_last <= 0:
        return
    dirs = sorted((p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                   and (p / STATE_FILE).exists() and p.name != "best" and not p.name.startswith(KEEP_PREFIX)),
                  key=lambda p: p.stat().st_mtime)
    for p in dirs[:-keep_last]:
        if p.name != protect:
            shutil.rmtree(p, ignore_errors=True)


def resume_source(resume: str, output_dir: str | os.PathLike) -> str | None:
    """A recipe's `Global.resume` -> what to pass to Trainer.fit(resume_from=...).

    "" -> None (fresh run); "auto" -> output_dir/checkpoints if it holds a `latest`, else None;
    anything else is returned as given (a checkpoint folder or root, checked when loaded).
    """
    if resume == "auto":
        root = Path(output_dir) / "checkpoints"
        return str(root) if (root / LATEST).exists() else None
    return resume or None


def resolve_checkpoint(path: str | os.PathLike) -> Path:
    """A checkpoint folder, or a root holding `latest`, -> the checkpoint folder."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    if (path / STATE_FILE).exists():
        return path
    latest = path / LATEST
    if latest.exists():
        tag = latest.read_text(encoding="utf-8").strip()
        target = path / tag
        if not (target / STATE_FILE).exists():
            raise CheckpointError(f"{latest} names '{tag}', which is not a complete checkpoint")
        return target
    raise CheckpointError(f"{path} is neither a checkpoint folder (no {STATE_FILE}) nor a root with '{LATEST}'")


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read a checkpoint written by save_checkpoint (folder or root). Raises CheckpointError."""
    folder = resolve_checkpoint(path)
    try:
        with open(folder / STATE_FILE, "rb") as f:
            state = pickle.load(f)
        for key, fname in TENSOR_FILES.items():
            if (folder / fname).exists():
                state[key] = paddle.load(str(folder / fname))
    except CheckpointError:
        raise
    except Exception as exc:
        raise CheckpointError(f"cannot read checkpoint {folder}: {type(exc).__name__}: {exc}") from exc
    state["path"] = str(folder)
    return state


def load_weights(model: paddle.nn.Layer, path: str | os.PathLike, prefer_ema: bool = True) -> str:
    """Load weights into `model` from a checkpoint folder/root or a .pdparams file. Returns what was loaded."""
    path = Path(path)
    if path.is_file():
        weights, source = paddle.load(str(path)), str(path)
    else:
        folder = resolve_checkpoint(path)
        fname = "ema.pdparams" if prefer_ema and (folder / "ema.pdparams").exists() else "model.pdparams"
        weights, source = paddle.load(str(folder / fname)), str(folder / fname)
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
    target.set_state_dict(weights)
    return source
