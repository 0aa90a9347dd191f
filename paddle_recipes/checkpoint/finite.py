"""Fast inf/nan checks over many tensors (gradients, weights, EMA shadows).

A per-tensor ``isfinite(t).all()`` costs several ops and one host sync per tensor: for a model's ~hundreds of
tensors that is milliseconds per call on CPU, every step when the trainer checks at each log line. Here: one
float32 sum per tensor (an inf/nan element makes its sum inf/nan), one add_n, one sync. Only when that total is
not finite (a bad element, or finite values whose float32 sum overflows) is each tensor checked element-wise,
so the answer is exact either way.
"""
from __future__ import annotations

import numpy as np
import paddle

FLOAT_DTYPES = (paddle.float32, paddle.float16, paddle.bfloat16, paddle.float64)


def _finite(t: paddle.Tensor) -> bool:
    return bool(paddle.isfinite(t if t.dtype in (paddle.float32, paddle.float64) else t.astype("float32")).all())


def first_bad_index(tensors: list) -> int | None:
    """Index of the first tensor holding inf/nan, else None (floating paddle tensors only)."""
    if not tensors:
        return None
    with paddle.no_grad():
        sums = [t.sum() if t.dtype == paddle.float32 else t.sum(dtype="float32") for t in tensors]
        if bool(paddle.isfinite(paddle.add_n(sums)).item()):
            return None
        return next((i for i, t in enumerate(tensors) if not _finite(t)), None)


def all_finite(tensors: list) -> bool:
    """True when no element of any tensor is inf/nan."""
    return first_bad_index(tensors) is None


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
