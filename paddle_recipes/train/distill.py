"""Knowledge distillation: soft-label KL at a (dynamic) temperature, optional hidden/attention losses.

Usable with any two paddle models (teacher -> student) in a plain loop, or from the
Trainer by wrapping its `train_step_fn` with `make_distill_step`.

Units and defaults
------------------
- temperature T: dimensionless, > 0. A float, or a schedule object (below).
- `kd_kl_loss` = T^2 * KL(softmax(teacher/T) || softmax(student/T)), in nats, summed over
  classes, averaged over samples (and over valid tokens when a mask is given). The T^2 factor
  keeps gradient magnitudes comparable across temperatures (Hinton et al., 2015).
- `DistillLoss` total = alpha * kd + (1 - alpha) * hard + hidden_weight * hidden_mse
  + attn_weight * attn_mse. Defaults: alpha=0.5, hidden_weight=0, attn_weight=0.

Temperature schedules: `schedule(step, total_steps, teacher_logits=None) -> float | Tensor`
- ConstantT(t=4.0): T = t.
- LinearT(t_start=8.0, t_end=1.0): T = t_start + (t_end - t_start) * p, p = clip(step / total_steps, 0, 1).
- CosineT(t_start=8.0, t_end=1.0): T = t_end + (t_start - t_end) * (1 + cos(pi * p)) / 2.
- EntropyAdaptiveT(t_min=1.0, t_max=4.0): per-sample (per-token for [B, L, C] logits)
  T = t_max - (t_max - t_min) * h, with h = H(softmax(teacher)) / log(C) in [0, 1] the
  teacher's normalised entropy. A confident teacher (h -> 0) is near one-hot, so it gets the
  high temperature that exposes its "dark knowledge"; an uncertain teacher (h -> 1) is already
  soft and gets the low temperature so its targets do not flatten into uniform noise.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from .trainer import Callback

__all__ = [
    "ConstantT", "LinearT", "CosineT", "EntropyAdaptiveT", "build_temperature",
    "kd_kl_loss", "DistillLoss", "DistillStep", "DistillCallback", "make_distill_step",
    "teacher_normalized_entropy",
]


# ----------------------------------------------------------------------------- schedules
def _progress(step: int, total_steps: int) -> float:
    if total_steps <= 0:
        return 1.0
    return min(max(float(step) / float(total_steps), 0.0), 1.0)


class ConstantT:
    """T = t for every step (default t=4.0)."""

    def __init__(self, t: float = 4.0):
        if t <= 0:
            raise ValueError(f"temperature must be > 0, got {t}")
        self.t = float(t)

    def __call__(self, step: int = 0, total_steps: int = 1, teacher_logits=None) -> float:
        return self.t

    def __repr__(self):
        return f"ConstantT(t={self.t})"


class _AnnealT:
    """Anneals from t_start (step 0) to t_end (step >= total_steps) along `_curve(progress)` in [0, 1]."""

    def __init__(self, t_start: float = 8.0, t_end: float = 1.0):
        if t_start <= 0 or t_end <= 0:
            raise ValueError(f"temperatures must be > 0, got {t_start}, {t_end}")
        self.t_start, self.t_end = float(t_start), float(t_end)

    @staticmethod
    def _curve(p: float) -> float:
        raise NotImplementedError

    def __call__(self, step: int = 0, total_steps: int = 1, teacher_logits=None) -> float:
        return self.t_start + (self.t_end - self.t_start) * self._curve(_progress(step, total_steps))

    def __repr__(self):
        return f"{type(self).__name__}(t_start={self.t_start}, t_end={self.t_end})"


class LinearT(_AnnealT):
    """Linear annealing from t_start (step 0) to t_end (step >= total_steps)."""

    @staticmethod
    def _curve(p: float) -> float:
        return p


class CosineT(_AnnealT):
    """Cosine annealing from t_start (step 0) to t_end (step >= total_steps)."""

    @staticmethod
    def _curve(p: float) -> float:
        return 0.5 * (1.0 - math.cos(math.pi * p))


def teacher_normalized_entropy(teacher_logits: paddle.Tensor) -> paddle.Tensor:
    """H(softmax(logits)) / log(C) over the last axis, in [0, 1]; shape = logits.shape[:-1]."""
    num_classes = teacher_logits.shape[-1]
    logp = F.log_softmax(teacher_logits.astype("float32"), axis=-1)
    ent = -(logp.exp() * logp).sum(axis=-1)
    if num_classes < 2:
        return paddle.zeros_like(ent)
    return ent / math.log(num_classes)


class EntropyAdaptiveT:
    """Per-sample T = t_max - (t_max - t_min) * normalised teacher entropy (see module doc)."""

    def __init__(self, t_min: float = 1.0, t_max: float = 4.0):
        if not 0 < t_min <= t_max:
            raise ValueError(f"need 0 < t_min <= t_max, got t_min={t_min}, t_max={t_max}")
        self.t_min, self.t_max = float(t_min), float(t_max)

    def __call__(self, step: int = 0, total_steps: int = 1, teacher_logits=None) -> paddle.Tensor:
        if teacher_logits is None:
            raise ValueError("EntropyAdaptiveT needs teacher_logits")
        with paddle.no_grad():
            h = teacher_normalized_entropy(teacher_logits.detach())
            return self.t_max - (self.t_max - self.t_min) * h

    def __repr__(self):
        return f"EntropyAdaptiveT(t_min={self.t_min}, t_max={self.t_max})"


_SCHEDULES = {"constant": ConstantT, "linear": LinearT, "cosine": CosineT, "entropy": EntropyAdaptiveT}


def build_temperature(name: str, **kwargs):
    """Build a schedule by name: constant | linear | cosine | entropy (kwargs go to its constructor)."""
    if name not in _SCHEDULES:
        raise ValueError(f"unknown temperature schedule '{name}'; choose one of {sorted(_SCHEDULES)}")
    return _SCHEDULES[name](**kwargs)


# ----------------------------------------------------------------------------- losses
def _as_temperature(T, logits: paddle.Tensor) -> paddle.Tensor | float:
    """Float stays float; a Tensor of shape [B] or logits.shape[:-1] is broadcast to [..., 1]."""
    if not isinstance(T, paddle.Tensor):
        T = float(T)
        if T <= 0:
            raise ValueError(f"temperature must be > 0, got {T}")
        return T
    T = T.astype("float32").detach()
    while T.ndim < logits.ndim:
        T = T.unsqueeze(-1)
    return T


def kd_kl_loss(student_logits: paddle.Tensor, teacher_logits: paddle.Tensor, T=1.0,
               mask: Optional[paddle.Tensor] = None) -> paddle.Tensor:
    """T^2 * KL(softmax(teacher/T) || softmax(student/T)), mean over samples (valid tokens).

    student_logits, teacher_logits: [B, C] or [B, L, C]. T: float, or Tensor [B] / logits.shape[:-1]
    (per-sample / per-token temperature; its own T^2 is applied to each element).
    mask: optional [B] / [B, L] with 1 for positions that count. Returns a scalar (nats).
    """
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student logits {list(student_logits.shape)} and teacher logits "
                         f"{list(teacher_logits.shape)} must have the same shape")
    s = student_logits.astype("float32")
    t = teacher_logits.astype("float32").detach()
    Tb = _as_temperature(T, s)
    log_ps = F.log_softmax(s / Tb, axis=-1)
    log_pt = F.log_softmax(t / Tb, axis=-1)
    kl = (log_pt.exp() * (log_pt - log_ps)).sum(axis=-1)  # shape logits.shape[:-1]
    kl = kl * (Tb.squeeze(-1) ** 2 if isinstance(Tb, paddle.Tensor) else Tb ** 2)
    if mask is None:
        return kl.mean()
    m = mask.astype("float32")
    return (kl * m).sum() / paddle.clip(m.sum(), min=1.0)


def _layer_map(n_student: int, n_teacher: int) -> list[tuple[int, int]]:
    """Uniform map of student layer j (1..Ls) to teacher layer round(j * Lt / Ls)."""
    return [(j, max(1, round(j * n_teacher / n_student))) for j in range(1, n_student + 1)]


class DistillLoss(nn.Layer):
    """Teacher -> student loss. Has parameters only when `hidden_dims` needs a projection.

    Args:
        temperature: float or schedule (ConstantT/LinearT/CosineT/EntropyAdaptiveT/any callable
            `(step, total_steps, teacher_logits) -> float | Tensor`). Default 4.0.
        alpha: weight of the soft KD term; (1 - alpha) weights the hard loss. Default 0.5.
        hidden_weight: weight of the MSE between mapped hidden states (0 = off, default).
        attn_weight: weight of the MSE between head-averaged attention maps (0 = off, default).
        hidden_dims: (student_hidden, teacher_hidden); when they differ a Linear projection
            student -> teacher is created: add `distill_loss.parameters()` to the optimizer
            (under DDP attach it to the student, e.g. `student.add_sublayer("kd_proj", loss.hidden_proj)`).
    """

    def __init__(self, temperature=4.0, alpha: float = 0.5, hidden_weight: float = 0.0,
                 attn_weight: float = 0.0, hidden_dims: Optional[Sequence[int]] = None):
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        self.temperature = temperature if callable(temperature) else ConstantT(float(temperature))
        self.alpha, self.hidden_weight, self.attn_weight = float(alpha), float(hidden_weight), float(attn_weight)
        self.hidden_proj = None
        if hidden_dims is not None and hidden_dims[0] != hidden_dims[1]:
            self.hidden_proj = nn.Linear(int(hidden_dims[0]), int(hidden_dims[1]))

    def current_temperature(self, step: int, total_steps: int, teacher_logits=None):
        return self.temperature(step, total_steps, teacher_logits)

    def hidden_loss(self, student_hidden: Sequence[paddle.Tensor], teacher_hidden: Sequence[paddle.Tensor],
                    mask: Optional[paddle.Tensor] = None) -> paddle.Tensor:
        """MSE over mapped layers (index 0 = embeddings, mapped 0 -> 0). Tensors [B, L, H]."""
        pairs = [(0, 0)] + _layer_map(len(student_hidden) - 1, len(teacher_hidden) - 1)
        total = 0.0
        for si, ti in pairs:
            s = student_hidden[si].astype("float32")
            if self.hidden_proj is not None:
                s = self.hidden_proj(s)
            if s.shape[-1] != teacher_hidden[ti].shape[-1]:
                raise ValueError(f"hidden sizes differ ({s.shape[-1]} vs {teacher_hidden[ti].shape[-1]}); "
                                 f"pass hidden_dims=(student, teacher) to DistillLoss")
            err = ((s - teacher_hidden[ti].astype("float32").detach()) ** 2).mean(axis=-1)  # [B, L]
            total = total + _masked_mean(err, mask)
        return total / len(pairs)

    def attn_loss(self, student_attn: Sequence[paddle.Tensor], teacher_attn: Sequence[paddle.Tensor],
                  mask: Optional[paddle.Tensor] = None) -> paddle.Tensor:
        """MSE between head-averaged attention probabilities [B, heads, L, L] of mapped layers."""
        pairs = _layer_map(len(student_attn), len(teacher_attn))
        total = 0.0
        for sj, tj in pairs:
            s = student_attn[sj - 1].astype("float32").mean(axis=1)
            t = teacher_attn[tj - 1].astype("float32").detach().mean(axis=1)
            err = ((s - t) ** 2).sum(axis=-1)  # [B, L]
            total = total + _masked_mean(err, mask)
        return total / len(pairs)

    def forward(self, student_logits, teacher_logits, hard_loss=None, step: int = 0, total_steps: int = 1,
                mask=None, student_hidden=None, teacher_hidden=None, student_attn=None, teacher_attn=None,
                feature_mask=None) -> dict:
        """Returns {"loss", "kd_loss", "hard_loss", "hidden_loss", "attn_loss", "temperature"}.

        mask: positions counted by the KD term ([B] or [B, L], like the logits' leading dims).
        feature_mask: [B, L] real-token mask for the hidden/attention terms (default: `mask` when it
        is [B, L], else every position).
        `temperature` is the float T, or the mean of a per-sample T (for logging).
        Without `hard_loss` the KD term gets the full weight (alpha is ignored).
        """
        T = self.current_temperature(step, total_steps, teacher_logits)
        kd = kd_kl_loss(student_logits, teacher_logits, T, mask=mask)
        out = {"kd_loss": kd}
        if hard_loss is None:
            loss = kd
        else:
            loss = self.alpha * kd + (1.0 - self.alpha) * hard_loss
            out["hard_loss"] = hard_loss
        tok_mask = feature_mask if feature_mask is not None else (mask if (mask is not None and mask.ndim == 2) else None)
        if self.hidden_weight > 0:
            if student_hidden is None or teacher_hidden is None:
                raise ValueError("hidden_weight > 0 needs student_hidden and teacher_hidden")
            out["hidden_loss"] = self.hidden_loss(student_hidden, teacher_hidden, tok_mask)
            loss = loss + self.hidden_weight * out["hidden_loss"]
        if self.attn_weight > 0:
            if student_attn is None or teacher_attn is None:
                raise ValueError("attn_weight > 0 needs student_attn and teacher_attn")
            out["attn_loss"] = self.attn_loss(student_attn, teacher_attn, tok_mask)
            loss = loss + self.attn_weight * out["attn_loss"]
        out["loss"] = loss
        out["temperature"] = float(T.mean()) if isinstance(T, paddle.Tensor) else float(T)
        return out


def _masked_mean(err: paddle.Tensor, mask: Optional[paddle.Tensor]) -> paddle.Tensor:
    if mask is None:
        return err.mean()
    m = mask.astype("float32")
    return (err * m).sum() / paddle.clip(m.sum(), min=1.0)


# ----------------------------------------------------------------------------- trainer glue
_FEATURE_KEYS = ("logits", "mask", "feature_mask", "hidden_states", "attentions", "loss_weight")


def _scalars(d: dict) -> dict:
    """Keep only loggable entries: floats/ints and 0-d/1-element tensors."""
    out = {}
    for k, v in d.items():
        if k in _FEATURE_KEYS:
            continue
        if isinstance(v, (int, float)) or (isinstance(v, paddle.Tensor) and v.size == 1):
            out[k] = v
    return out


class DistillStep:
    """A Trainer `train_step_fn` that adds distillation to a base step.

    base_step_fn(model, batch) -> dict with "loss" (the hard loss, Tensor) and "logits"
    (Tensor [B, C] or [B, L, C]); optional "mask" ([B] / [B, L]), "feature_mask" ([B, L] real
    tokens), "hidden_states", "attentions" (needed only when the loss uses them). The teacher runs `teacher_step_fn` (default: the
    same base_step_fn) under no_grad in eval mode.

    If the base step returns "loss_weight" w (already applied to its "loss"), the whole
    distillation loss is scaled by w instead (so per-task weights cover the soft term too).

    `self.step` is the temperature-schedule step: it counts calls in training mode unless a
    `DistillCallback` syncs it to the Trainer's optimizer step. `total_steps`: length of the schedule in
    optimizer steps; None (default) = the Trainer's total_steps, set by a `DistillCallback` (1 without one).
    """

    def __init__(self, teacher: nn.Layer, base_step_fn: Callable, distill_loss: DistillLoss,
                 total_steps: Optional[int] = None, teacher_step_fn: Optional[Callable] = None):
        self.teacher = teacher
        self.base_step_fn = base_step_fn
        self.teacher_step_fn = teacher_step_fn or base_step_fn
        self.distill_loss = distill_loss
        self.follows_trainer = total_steps is None
        self.total_steps = 1 if total_steps is None else int(total_steps)
        self.step = 0
        self.teacher.eval()
        for p in self.teacher.parameters():
            p.stop_gradient = True

    def __call__(self, model, batch) -> dict:
        out = self.base_step_fn(model, batch)
        if "logits" not in out:
            raise KeyError("base_step_fn must return 'logits' for distillation (got keys "
                           f"{sorted(out)})")
        self.teacher.eval()
        with paddle.no_grad():
            t_out = self.teacher_step_fn(self.teacher, batch)
        w = float(out.get("loss_weight", 1.0))  # per-task weight already applied to out["loss"]
        hard = out["loss"] / w if "loss" in out and w != 1.0 else out.get("loss")
        d = self.distill_loss(out["logits"], t_out["logits"], hard_loss=hard, step=self.step,
                              total_steps=self.total_steps, mask=out.get("mask"),
                              student_hidden=out.get("hidden_states"), teacher_hidden=t_out.get("hidden_states"),
                              student_attn=out.get("attentions"), teacher_attn=t_out.get("attentions"),
                              feature_mask=out.get("feature_mask"))
        if getattr(model, "training", True):
            self.step += 1
        logged = _scalars(out)
        logged.update(_scalars(d))
        logged["loss"] = d["loss"] * w if w != 1.0 else d["loss"]
        return logged


def make_distill_step(teacher: nn.Layer, base_step_fn: Callable, distill_loss: DistillLoss,
                      total_steps: Optional[int] = None, teacher_step_fn: Optional[Callable] = None) -> DistillStep:
    """Wrap a Trainer train_step_fn with teacher -> student distillation (see DistillStep)."""
    return DistillStep(teacher, base_step_fn, distill_loss, total_steps, teacher_step_fn)


class DistillCallback(Callback):
    """Trainer callback: keeps `distill_step.step` equal to `trainer.global_step` (optimizer steps),
    so gradient accumulation does not advance the temperature schedule per micro-step, and a
    resumed run continues the schedule where it stopped. A step built without total_steps gets
    `trainer.total_steps` (Composer's max_duration)."""

    def __init__(self, distill_step: DistillStep):
        self.distill_step = distill_step

    def _sync(self, trainer) -> None:
        self.distill_step.step = int(trainer.global_step)
        if self.distill_step.follows_trainer and trainer.total_steps:
            self.distill_step.total_steps = int(trainer.total_steps)

    def on_fit_start(self, trainer) -> None:
        self._sync(trainer)

    def on_step_end(self, trainer) -> None:
        self._sync(trainer)
