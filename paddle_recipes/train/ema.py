"""Model EMA (exponential moving average of weights) with warmup; the shadow is always fp32.

    ema = ModelEMA(model, decay=0.9998, warmup="threshold")
    ...optimizer step...
    ema.update(model)
    with ema.apply_to(model):      # EMA weights in, original weights back on exit
        evaluate(model)

Update n (0-based count of earlier updates) uses decay d_n:
    threshold:    d_n = min(decay, (1 + n) / (10 + n))                     (PaddleDetection's default)
    exponential:  d_n = decay * (1 - exp(-(n + 1) / warmup_steps))          (timm / YOLO style)
    none:         d_n = decay
    shadow <- d_n * shadow + (1 - d_n) * weight        (shadow starts as a copy of the weights)

Every floating-point entry of the state_dict (parameters and BN statistics) is averaged in
fp32, so an O2 (fp16) model still gets a full-precision EMA; integer buffers are copied.
"""
from __future__ import annotations

import contextlib
import math

import paddle

from ..runtime.distributed import unwrap
from ..checkpoint.finite import FLOAT_DTYPES
from .config import EMA_WARMUPS as WARMUPS, EmaConfig  # the schema: train.config, which imports no paddle


def build_ema(cfg: EmaConfig, model: paddle.nn.Layer) -> "ModelEMA | None":
    """ModelEMA from config, or None when disabled."""
    if not cfg.enable:
        return None
    return ModelEMA(model, decay=cfg.decay, warmup=cfg.warmup, warmup_steps=cfg.warmup_steps, device=cfg.device)


def ema_decay(n: int, decay: float, warmup: str = "threshold", warmup_steps: int = 2000) -> float:
    """Decay used for update number n (0-based)."""
    if warmup == "threshold":
        return min(decay, (1.0 + n) / (10.0 + n))
    if warmup == "exponential":
        return decay * (1.0 - math.exp(-(n + 1.0) / warmup_steps))
    if warmup == "none":
        return decay
    raise ValueError(f"unknown EMA warmup {warmup!r}; choose one of {WARMUPS}")


def _is_float(t: paddle.Tensor) -> bool:
    return t.dtype in FLOAT_DTYPES


# paddle's in-place lerp kernel without the public wrapper's checks: 4 us a call against 8.4 on a small tensor
_LERP_KERNEL = getattr(getattr(paddle, "_C_ops", None), "lerp_", None)


def _flat(t: paddle.Tensor) -> paddle.Tensor:
    """A 1-D view of t when reshape gives one (same memory), else t: paddle's CPU lerp is ~8x slower on 4-D
    tensors than on 1-D (22 vs 2.7 ms for a 512x512x3x3 conv weight, 1 thread)."""
    flat = t.reshape([-1])
    return flat if flat.data_ptr() == t.data_ptr() else t


def _lerp_(shadow: paddle.Tensor, new: paddle.Tensor, weight: paddle.Tensor) -> None:
    """shadow += weight * (new - shadow) in place, in one pass (weight: a 1-element float32 tensor; a Python float
    costs a conversion per call). shadow and new have the same shape."""
    if _LERP_KERNEL is not None:
        _LERP_KERNEL(shadow, new, weight)
    else:
        shadow.lerp_(new, weight)

class ModelEMA:
    """fp32 shadow copy of a model's weights.

    decay: target decay (default 0.9998, ppdet). warmup: "threshold" | "exponential" | "none".
    warmup_steps: time constant of the exponential warmup, in updates (default 2000).
    device: keep the shadow on this device ("cpu" saves accelerator memory); default: with the weights.
    """

    def __init__(self, model: paddle.nn.Layer, decay: float = 0.9998, warmup: str = "threshold",
                 warmup_steps: int = 2000, device: str | None = None):
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"EMA decay must be in [0, 1), got {decay}")
        ema_decay(0, decay, warmup, warmup_steps)  # validates warmup
        self.decay, self.warmup, self.warmup_steps, self.device = decay, warmup, warmup_steps, device
        self.num_updates = 0
        self.shadow: dict[str, paddle.Tensor] = {}
        self._plan: list | None = None  # cached views for update(): _build_plan
        with paddle.no_grad():
            for name, value in unwrap(model).state_dict().items():
                t = value.detach().astype("float32") if _is_float(value) else value.detach()
                t = t.clone()
                if device is not None:
                    t = t.to(device)
                self.shadow[name] = t

    @property
    def current_decay(self) -> float:
        """Decay the next update will use."""
        return ema_decay(self.num_updates, self.decay, self.warmup, self.warmup_steps)

    @paddle.no_grad()
    def update(self, model: paddle.nn.Layer, step: int | None = None) -> float:
        """Fold the current weights into the shadow; returns the decay used.

        step: the caller's count of optimizer steps taken before this one (timm's `update(model, step)`);
        the warmup reads it, so there is no second counter to drift. None = count updates here."""
        if step is not None:
            self.num_updates = int(step)
        d = self.current_decay
        weight = paddle.full([1], 1.0 - d, dtype="float32")
        state = unwrap(model).state_dict()
        if not self._plan_holds(state):
            self._plan = self._build_plan(state)
        for value, _, shadow_view, new_view in self._plan:
            if new_view is not None:  # fp32 entry next to its shadow: cached views, one kernel call
                _lerp_(shadow_view, new_view, weight)
                continue
            new = value.detach()
            if self.device is not None:
                new = new.to(self.device)
            if _is_float(value):
                new = new if new.dtype == paddle.float32 else new.astype("float32")
                _lerp_(shadow_view, new.reshape(shadow_view.shape), weight)
            else:
                paddle.assign(new, shadow_view)
        self.num_updates += 1
        return d

    def _build_plan(self, state: dict) -> list:
        """Per state_dict entry: (the model's tensor, its data_ptr, the shadow's 1-D view, a view of the tensor of
        the same shape when it can be lerped as it is (fp32, same device), else None). Views share memory, so the
        optimizer's in-place updates show through them; `_plan_holds` checks that they still do."""
        plan = []
        for name, value in state.items():
            shadow = self.shadow.get(name)
            if shadow is None:
                raise KeyError(f"EMA has no entry for '{name}': was the model changed after ModelEMA was built?")
            shadow_view = _flat(shadow) if _is_float(value) else shadow
            new_view = _flat(value) if self.device is None and value.dtype == paddle.float32 else None
            if new_view is not None and new_view.shape != shadow_view.shape:
                new_view = None  # one of the two has no 1-D view: update() reshapes a copy each step
            plan.append((value, value.data_ptr(), shadow_view, new_view))
        return plan

    def _plan_holds(self, state: dict) -> bool:
        """The cached views are valid: the same tensor objects, in the same order, at the same addresses (a
        `set_value` that reallocates, a swapped layer or a new entry all rebuild the plan)."""
        plan = self._plan
        if plan is None or len(plan) != len(state):
            return False
        return all(value is entry[0] and value.data_ptr() == entry[1] for value, entry in zip(state.values(), plan))

    def ema_state_dict(self) -> dict:
        """The averaged weights (fp32), keyed like model.state_dict()."""
        return dict(self.shadow)

    @paddle.no_grad()
    def copy_to(self, model: paddle.nn.Layer) -> None:
        """Load the EMA weights into `model` (cast to each entry's dtype)."""
        target = unwrap(model).state_dict()
        for name, value in target.items():
            paddle.assign(self.shadow[name].to(value.place).astype(value.dtype), value)

    @contextlib.contextmanager
    def apply_to(self, model: paddle.nn.Layer):
        """Swap EMA weights into `model` for the block, restore the trained weights afterwards."""
        backup = {k: v.detach().clone() for k, v in unwrap(model).state_dict().items()}
        self.copy_to(model)
        try:
            yield model
        finally:
            with paddle.no_grad():
                for name, value in unwrap(model).state_dict().items():
                    paddle.assign(backup[name], value)

    def state_dict(self) -> dict:
        return {"shadow": {k: v for k, v in self.shadow.items()}, "num_updates": self.num_updates,
                "decay": self.decay, "warmup": self.warmup, "warmup_steps": self.warmup_steps}

    def set_state_dict(self, state: dict) -> None:
        missing = set(self.shadow) - set(state["shadow"])
        if missing:
            raise KeyError(f"EMA checkpoint lacks {sorted(missing)[:5]}")
        with paddle.no_grad():
            for name, value in state["shadow"].items():
                if name in self.shadow:
                    v = value if isinstance(value, paddle.Tensor) else paddle.to_tensor(value)
                    self.shadow[name] = v.astype(self.shadow[name].dtype).clone()
        self._plan = None  # new shadow tensors: the cached views point at the old ones
        self.num_updates = int(state["num_updates"])
