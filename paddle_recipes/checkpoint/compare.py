"""Does a checkpoint fit the current run? Its weights and saved config against the model and config now."""
from __future__ import annotations

from .format import CheckpointError


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

