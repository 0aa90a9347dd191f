"""Automatic mixed precision: auto_cast + our own dynamic loss scaler, O1/O2, fp16/bf16.

Functional use in a plain loop::

    amp = Amp(AmpConfig(enable=True, level="O2"))
    model, optimizer = amp.prepare(model, optimizer)
    with amp.autocast():
        loss = loss_fn(model(x), y)
    amp.backward(loss)
    amp.step(optimizer)        # unscale, skip on inf/nan, update the scale
    optimizer.clear_grad()

`amp.describe()` says what is really in effect on this device: paddle turns AMP into a
no-op on CPU, and bf16 needs compute capability >= 8.0. The loss scaler is our own
(`DynamicLossScaler`) so its skip/shrink/grow logic is the same code on every device
and is unit-tested on CPU. A step whose gradients hold inf/nan is skipped even with AMP off.
"""
from __future__ import annotations

import contextlib
import logging

import paddle

from ..checkpoint.finite import all_finite
from .config import AmpConfig  # the schema: train.config, which imports no paddle
from .optim import param_list

logger = logging.getLogger(__name__)

# Ops that overflow easily in fp16 (detection heads, losses); recipes may add more.
DEFAULT_FP16_BLACK_LIST = ("exp", "log", "pow", "square", "reduce_sum", "mean", "softmax_with_cross_entropy",
                           "sigmoid_cross_entropy_with_logits", "cross_entropy", "cross_entropy2", "warpctc",
                           "ctc_loss")

def amp_support(dtype: str = "float16") -> tuple[bool, str]:
    """(supported, reason) for autocast of `dtype` on the current paddle device."""
    device = paddle.device.get_device()
    kind = device.split(":")[0]
    if kind == "cpu":
        return False, f"device is {device}: paddle runs AMP as a no-op on CPU (fp32 everywhere)"
    if kind == "gpu":
        if dtype == "bfloat16":
            try:
                major, minor = paddle.device.cuda.get_device_capability()
            except Exception:  # pragma: no cover - depends on driver
                major, minor = 0, 0
            if major < 8:
                return False, f"{device} has compute capability {major}.{minor}; bfloat16 needs >= 8.0"
        return True, f"{device}"
    return True, f"{device} (non-CUDA accelerator; support depends on the plugin)"


def grads_of(optimizer) -> list:
    """The non-None gradients of the optimizer's parameters."""
    return [p.grad for p in param_list(optimizer) if p.grad is not None]


def any_nonfinite(grads: list) -> bool:
    """True if any element of `grads` is inf/nan; nothing is written (finite.all_finite: one sum per tensor,
    one host sync, exact)."""
    return not all_finite(grads)


def unscale_and_check(grads: list, inv_scale: float) -> bool:
    """Multiply `grads` in place by `inv_scale`; return True if any gradient is inf/nan.
    inv_scale 1.0 (loss scaling off, e.g. AMP on CPU) only checks (any_nonfinite): no write pass."""
    if not grads:
        return False
    if inv_scale == 1.0:
        return any_nonfinite(grads)
    try:
        from paddle import _C_ops

        scale = paddle.to_tensor(1.0 / inv_scale, dtype="float32")
        by_dtype: dict = {}
        for g in grads:  # the fused op wants one dtype per call (fp16 and fp32 grads under O2)
            by_dtype.setdefault(str(g.dtype), []).append(g)
        flags = []
        for group in by_dtype.values():
            _, found_inf = _C_ops.check_finite_and_unscale_(group, scale, paddle.to_tensor(False))
            flags.append(found_inf.reshape([-1])[0])
        return bool(paddle.stack(flags).any().item())
    except (AttributeError, RuntimeError, ValueError):  # pragma: no cover - op missing on a build
        with paddle.no_grad():
            for g in grads:
                g.scale_(inv_scale)
        return any_nonfinite(grads)

class DynamicLossScaler:
    """Loss scaling with overflow skip and a dynamic scale (same rules as paddle.amp.GradScaler).

    After a step with inf/nan gradients the step is skipped; after `decr_every_n_nan_or_inf` such
    steps in a row the scale is multiplied by `decr_ratio` (not below `min_scale`). After
    `incr_every_n_steps` finite steps in a row it is multiplied by `incr_ratio`.
    enabled=False keeps scale 1.0 but still detects (and, if `skip_nonfinite`, skips) bad steps.
    """

    def __init__(self, init_scale: float = 1024.0, incr_ratio: float = 2.0, decr_ratio: float = 0.5,
                 incr_every_n_steps: int = 2000, decr_every_n_nan_or_inf: int = 1, dynamic: bool = True,
                 enabled: bool = True, min_scale: float = 1.0, skip_nonfinite: bool = True):
        self.enabled = enabled
        self.scale_value = float(init_scale) if enabled else 1.0
        self.incr_ratio, self.decr_ratio = incr_ratio, decr_ratio
        self.incr_every_n_steps, self.decr_every_n_nan_or_inf = incr_every_n_steps, decr_every_n_nan_or_inf
        self.dynamic, self.min_scale, self.skip_nonfinite = dynamic, min_scale, skip_nonfinite
        self.good_steps = 0
        self.bad_steps = 0
        self.skipped_steps = 0
        self._unscaled = False
        self._found_inf = False

    def scale(self, loss):
        """loss * scale (no-op when disabled)."""
        return loss * self.scale_value if self.enabled and self.scale_value != 1.0 else loss

    def unscale_(self, optimizer) -> bool:
        """Divide the gradients by the scale once; returns True when any is inf/nan."""
        if not self._unscaled:
            inv = 1.0 / self.scale_value if self.enabled else 1.0
            self._found_inf = unscale_and_check(grads_of(optimizer), inv)
            self._unscaled = True
        return self._found_inf

    def step(self, optimizer) -> bool:
        """Unscale, step unless gradients overflowed, update the scale. Returns True if stepped."""
        found_inf = self.unscale_(optimizer)
        skip = found_inf and (self.skip_nonfinite or self.enabled)
        if skip:
            self.skipped_steps += 1
            logger.warning("non-finite gradients: optimizer step skipped (loss scale %.1f, %d skipped so far)",
                           self.scale_value, self.skipped_steps)
        else:
            optimizer.step()
        self.update(found_inf)
        return not skip

    def update(self, found_inf: bool) -> None:
        """Apply the dynamic scale rules for one step's overflow flag."""
        self._unscaled = False
        self._found_inf = False
        if not (self.enabled and self.dynamic):
            return
        if found_inf:
            self.good_steps = 0
            self.bad_steps += 1
            if self.bad_steps >= self.decr_every_n_nan_or_inf:
                self.scale_value = max(self.scale_value * self.decr_ratio, self.min_scale)
                self.bad_steps = 0
        else:
            self.bad_steps = 0
            self.good_steps += 1
            if self.good_steps >= self.incr_every_n_steps:
                self.scale_value *= self.incr_ratio
                self.good_steps = 0

    def state_dict(self) -> dict:
        return {"scale": self.scale_value, "good_steps": self.good_steps, "bad_steps": self.bad_steps,
                "skipped_steps": self.skipped_steps}

    def set_state_dict(self, state: dict) -> None:
        self.scale_value = float(state["scale"])
        self.good_steps = int(state["good_steps"])
        self.bad_steps = int(state["bad_steps"])
        self.skipped_steps = int(state.get("skipped_steps", 0))

_REPORTED: set = set()


class Amp:
    """auto_cast + loss scaling, reporting honestly what is in effect on this device."""

    def __init__(self, cfg: AmpConfig | None = None):
        self.cfg = cfg or AmpConfig()
        supported, self.reason = amp_support(self.cfg.dtype)
        self.in_effect = bool(self.cfg.enable and supported)
        scaling = (self.in_effect and self.cfg.dtype == "float16") or (self.cfg.enable and self.cfg.force_loss_scaling)
        self.scaler = DynamicLossScaler(
            init_scale=self.cfg.init_loss_scaling, incr_ratio=self.cfg.incr_ratio, decr_ratio=self.cfg.decr_ratio,
            incr_every_n_steps=self.cfg.incr_every_n_steps, decr_every_n_nan_or_inf=self.cfg.decr_every_n_nan_or_inf,
            dynamic=self.cfg.use_dynamic_loss_scaling, enabled=scaling, min_scale=self.cfg.min_loss_scaling,
            skip_nonfinite=self.cfg.skip_nonfinite_steps)
        msg = self.describe()
        if msg not in _REPORTED:
            _REPORTED.add(msg)
            (logger.warning if self.cfg.enable and not self.in_effect else logger.info)(msg)

    def describe(self) -> str:
        """One line: requested vs in effect, dtype, level, loss scaling."""
        c = self.cfg
        if not c.enable:
            return "AMP off: fp32 training" + (" (non-finite steps are skipped)" if c.skip_nonfinite_steps else "")
        scaling = (f"dynamic loss scaling from {c.init_loss_scaling:g}" if self.scaler.enabled and c.use_dynamic_loss_scaling
                   else f"static loss scale {c.init_loss_scaling:g}" if self.scaler.enabled else "no loss scaling")
        if not self.in_effect:
            return (f"AMP requested ({c.level}, {c.dtype}) but NOT in effect: {self.reason}; "
                    f"training runs in fp32, {scaling}")
        return f"AMP {c.level} {c.dtype} in effect on {self.reason}, {scaling}"

    def prepare(self, model, optimizer=None):
        """O2: cast the model to low precision with fp32 master weights (paddle.amp.decorate)."""
        if self.in_effect and self.cfg.level == "O2":
            if optimizer is None:
                model = paddle.amp.decorate(models=model, level="O2", dtype=self.cfg.dtype)
            else:
                model, optimizer = paddle.amp.decorate(models=model, optimizers=optimizer, level="O2",
                                                       dtype=self.cfg.dtype, master_weight=self.cfg.master_weight,
                                                       save_dtype="float32")
        return model, optimizer

    def autocast(self):
        """Context manager: paddle.amp.auto_cast when in effect, else a no-op (no warning spam)."""
        if not self.in_effect:
            return contextlib.nullcontext()
        white = list(self.cfg.custom_white_list) or None
        black = sorted(set(self.cfg.custom_black_list)) or None
        return paddle.amp.auto_cast(enable=True, custom_white_list=white, custom_black_list=black,
                                    level=self.cfg.level, dtype=self.cfg.dtype)

    def scale(self, loss):
        return self.scaler.scale(loss)

    def backward(self, loss) -> None:
        """Scale and back-propagate `loss`."""
        self.scaler.scale(loss).backward()

    def step(self, optimizer) -> bool:
        """Unscale, skip on overflow, optimizer.step(), update the scale. Returns True if stepped."""
        return self.scaler.step(optimizer)

    def state_dict(self) -> dict:
        return self.scaler.state_dict()

    def set_state_dict(self, state: dict) -> None:
        self.scaler.set_state_dict(state)
