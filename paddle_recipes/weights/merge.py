"""Weight-space interpolation of a fine-tune with its init weights (WiSE-FT; ``Global.finetune_merge``, card
docs/cards/finetune_merge.md).

    merged = merge_weights(init_state, tuned_state, alpha)    # functional: (1 - alpha) * init + alpha * tuned
    merge = InitMerge(model, alpha)                           # in a run: snapshot of the init weights, right after
    merge.merged(ema_or_model_state)                          #   they are loaded (the released model)
    with merge.apply_to(model): evaluate(model)               # eval of the merged weights, then the running ones back

Every floating tensor of the state dict is interpolated, BatchNorm running mean / variance included (with the BN
statistics frozen, as a released-form fine-tune runs by default, both are the released ones and stay so); other
tensors (integer counters) are the fine-tuned ones. alpha 0 returns the init tensors and alpha 1 the fine-tuned
ones bit for bit (copies, not x + 0 * d, which would turn -0.0 into +0.0).

In a training run (the recipe mixin tasks/ocr_rec/finetune_merge.MergeWithInit) the running weights are never merged: training, the optimizer,
EMA and resume see the unmerged ones; every checkpoint folder also holds ``merged.pdparams`` (the merge of its EMA
weights when EMA is on, else of its model weights), which eval / predict / export and a later
Global.pretrained_model read first (checkpoint.format.weights_file_in), and the in-training eval (and so ``best``)
scores the merged weights.
"""
from __future__ import annotations

import contextlib
import logging

import numpy as np
import paddle

from ..config import ConfigError
from ..runtime.distributed import unwrap

MERGED = "merged"  # the checkpoint part (checkpoint.format writes its "weights" as merged.pdparams)


def _is_float(t) -> bool:
    return t.dtype in (paddle.float16, paddle.bfloat16, paddle.float32, paddle.float64)


def check_alpha(alpha, key: str = "alpha") -> float:
    """alpha as a float in [0, 1]; anything else (a bool, a string, out of range, nan) is a ConfigError naming key."""
    ok = isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0.0 <= float(alpha) <= 1.0
    if not ok:
        raise ConfigError(f"{key} must be a number in [0, 1] (the fine-tuned weights' share; null = off), got {alpha!r}")
    return float(alpha)


@paddle.no_grad()
def merge_weights(init: dict, tuned: dict, alpha: float) -> dict:
    """{name: (1 - alpha) * init[name] + alpha * tuned[name]} for floating tensors (computed in float32, cast to
    tuned's dtype; tuned's place), tuned's value for the others. The two must hold the same names and shapes
    (ValueError naming the first that differs). alpha 0 / 1: copies of init / tuned, bit for bit."""
    alpha = check_alpha(alpha)
    if set(init) != set(tuned):
        diff = sorted(set(init) ^ set(tuned))
        raise ValueError(f"merge_weights: init and fine-tuned weights hold different tensors, e.g. {diff[:3]}")
    out = {}
    for name, t in tuned.items():
        i = init[name]
        if list(i.shape) != list(t.shape):
            raise ValueError(f"merge_weights: {name}: init shape {list(i.shape)} != fine-tuned {list(t.shape)}")
        if not _is_float(t) or alpha == 1.0:
            out[name] = t.clone()
        elif alpha == 0.0:
            out[name] = i.astype(t.dtype).clone()
        else:
            i32, t32 = i.astype("float32"), t.astype("float32")
            out[name] = (i32 + alpha * (t32 - i32)).astype(t.dtype)
    return out


class InitMerge:
    """The init weights of ``model`` (a copy of its state dict at construction: build it after the init weights are
    loaded, before any step) and alpha. ``merged(state)``: merge_weights(init, state, alpha).
    A checkpoint part (state_dict / set_state_dict): ``{"weights": merged weights of the run's output (the EMA
    shadow when ``ema`` is set, else the model's), "alpha": alpha}``; checkpoint.format writes "weights" as
    merged.pdparams. Loading it back changes nothing (merged weights are recomputed from the running ones)."""

    def __init__(self, model: paddle.nn.Layer, alpha: float, log: logging.Logger | None = None):
        self.alpha = check_alpha(alpha)
        self.model = unwrap(model)
        self.init = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.ema = None  # the trainer's ModelEMA, when EMA is on (MergeWithInit's callback sets it at fit start)
        self.log = log or logging.getLogger(__name__)

    def merged(self, state: dict) -> dict:
        return merge_weights(self.init, state, self.alpha)

    def output_state(self) -> dict:
        """The weights the run outputs before the merge: the EMA shadow (EMA on) or the model's."""
        return self.ema.ema_state_dict() if self.ema is not None else self.model.state_dict()

    @contextlib.contextmanager
    def apply_to(self, model: paddle.nn.Layer):
        """The merge of ``model``'s current weights (e.g. with EMA applied) swapped in for the block, then back."""
        state = unwrap(model).state_dict()
        backup = {k: v.detach().clone() for k, v in state.items()}
        merged = self.merged(backup)
        with paddle.no_grad():
            for name, value in state.items():
                paddle.assign(merged[name].astype(value.dtype), value)
        try:
            yield model
        finally:
            with paddle.no_grad():
                for name, value in state.items():
                    paddle.assign(backup[name], value)

    def state_dict(self) -> dict:
        return {"weights": self.merged(self.output_state()), "alpha": self.alpha}

    def set_state_dict(self, state: dict) -> None:
        if state.get("alpha") != self.alpha:
            self.log.info("the checkpoint's merged weights used alpha %s; this run writes alpha %s", state.get("alpha"),
                          self.alpha)


def max_abs_diff(a: dict, b: dict) -> float:
    """Largest |a - b| over the floating tensors two state dicts share (tests and the benchmark's checks)."""
    return max((float(np.abs(a[k].astype("float64").numpy() - b[k].astype("float64").numpy()).max())
                for k in a if k in b and _is_float(a[k]) and a[k].size), default=0.0)

