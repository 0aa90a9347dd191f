"""Learning without forgetting for a fine-tuned recognizer (``Global.distill_pretrained``, card
docs/cards/distill_pretrained.md): a frozen copy of the model as its init weights made it (the released model) reads
every training batch too, and its CTC distribution is a soft target for the student, on the lines it reads as
labelled (replay lines, general lines, the new domain's lines it already gets right). The new domain's lines it
misreads are learned from their labels alone.

Per batch of B lines with T CTC frames and C classes, at temperature tau (``Global.distill_temperature``, default 1):

    kd = (1 / B) * sum over agreed lines b of sum_t tau^2 * KL(softmax(teacher[b, t] / tau) || softmax(student[b, t] / tau))

in nats per line, like the CTC loss (a mean over the batch of per-line negative log-likelihoods); the step's loss is
``ctc + Global.distill_weight * kd`` (default weight 1); the KL as paddle_recipes.train.distill.kd_kl_loss
computes it, with our own log-softmax (log_softmax_last: paddle's CPU kernel is slow at 6,625 classes).
"""
from __future__ import annotations

import copy
import logging

import numpy as np
import paddle

from ...runtime.distributed import unwrap
from ...runtime.host import host_float32
from ...weights.policy import require_init_weights
from .charset import CharDict
from .postprocess import ctc_greedy_decode
from .ppocr_models import PPOCRRecModel


def log_softmax_last(x: paddle.Tensor) -> paddle.Tensor:
    """log_softmax over the last axis as x - max - log(sum(exp(x - max))): the same values to float32 rounding as
    paddle.nn.functional.log_softmax, whose CPU kernel took 3.1 s forward (6.3 s with its backward) for [640, 6625]
    logits (16 lines x 40 frames x PP-OCRv4's classes) where these ops take 0.08 s (1 thread; measured in
    benchmarks/results/finetune_distill_pretrained/README.md)."""
    shifted = x - x.max(axis=-1, keepdim=True).detach()
    return shifted - paddle.log(paddle.exp(shifted).sum(axis=-1, keepdim=True))


def ctc_distill_loss(student_logits: paddle.Tensor, teacher_logits: paddle.Tensor, agreed: paddle.Tensor,
                     temperature: float = 1.0) -> paddle.Tensor:
    """kd of the module doc: logits [B, T, C], ``agreed`` [B] (1 = the line counts). 0 when no line counts."""
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student logits {list(student_logits.shape)} and teacher logits "
                         f"{list(teacher_logits.shape)} must have the same shape")
    log_ps = log_softmax_last(student_logits.astype("float32") / temperature)
    log_pt = log_softmax_last(teacher_logits.astype("float32").detach() / temperature)
    kl = (log_pt.exp() * (log_pt - log_ps)).sum(axis=-1)  # [B, T]
    per_line = kl.sum(axis=1) * agreed.astype("float32")
    return temperature ** 2 * per_line.sum() / student_logits.shape[0]


def teacher_mode(teacher: paddle.nn.Layer) -> None:
    """Eval mode (BatchNorm statistics, no dropout), except a PaddleOCR rec backbone's sequence pool
    (nn/rec_pool.py: 40 columns in training, one per 2 feature columns in eval), which pools as the student's
    training forward does, so that teacher and student give the same frames at every input width."""
    teacher.eval()
    if isinstance(teacher, PPOCRRecModel):
        teacher.backbone.training = True  # the backbone's own flag only: its sub-layers stay in eval mode


def frozen_teacher(model: paddle.nn.Layer) -> paddle.nn.Layer:
    """A deep copy of ``model`` in teacher_mode, every parameter stop_gradient, returning CTC logits (not
    probabilities) in eval mode. Not a sublayer of anything: no optimizer, EMA or checkpoint sees it."""
    teacher = copy.deepcopy(model)
    teacher_mode(teacher)
    for p in teacher.parameters():
        p.stop_gradient = True
    for layer in teacher.sublayers(include_self=True):
        if hasattr(layer, "return_logits"):
            layer.return_logits = True
    return teacher


class CtcDistill:
    """``term(student_logits, batch) -> (loss term, logged scalars)`` for a CTC train step: runs the teacher on
    batch["image"] without gradient, decodes it greedily and distills on the lines whose reading equals
    batch["text"]. Logs ``kd`` (the unweighted term) and ``kd_lines`` (the fraction of lines that counted)."""

    def __init__(self, teacher: paddle.nn.Layer, charset: CharDict, weight: float = 1.0, temperature: float = 1.0):
        if weight < 0 or temperature <= 0:
            raise ValueError(f"distill weight must be >= 0 and temperature > 0, got {weight}, {temperature}")
        self.teacher, self.charset = teacher, charset
        self.weight, self.temperature = float(weight), float(temperature)

    def agreed(self, teacher_logits: paddle.Tensor, texts: list) -> np.ndarray:
        """[B] float32: 1 where the teacher's greedy reading equals the label."""
        reads = ctc_greedy_decode(host_float32(teacher_logits), self.charset, with_confidence=False)
        return np.array([r == t for (r, _), t in zip(reads, texts)], dtype="float32")

    def __call__(self, student_logits: paddle.Tensor, batch: dict):
        teacher_mode(self.teacher)  # the trainer's model.train() never reaches it, but a caller's might
        with paddle.no_grad():
            out = self.teacher(batch["image"])
        teacher_logits = (out["ctc"] if isinstance(out, dict) else out).detach()
        agreed = self.agreed(teacher_logits, batch["text"])
        kd = ctc_distill_loss(student_logits, teacher_logits, paddle.to_tensor(agreed), self.temperature)
        return self.weight * kd, {"kd": float(kd), "kd_lines": float(agreed.mean())}


def distill_from_init(model: paddle.nn.Layer, g, charset: CharDict, init_source: str,
                      log: logging.Logger) -> "CtcDistill | None":
    """Global.distill_pretrained: a CtcDistill whose teacher is a frozen copy of ``model`` as the init weights
    ``init_source`` made it (call after they are loaded, before any step; on resume too: the checkpoint loads
    later, into the student only); None when off. On without init weights: ConfigError (one line)."""
    if not g.distill_pretrained:
        return None
    require_init_weights("distill_pretrained", init_source, "to distill from")
    log.info("Global.distill_pretrained: a frozen copy of %s is the teacher (CTC soft targets on the lines it reads "
             "as labelled; weight %g, temperature %g; never trained nor saved)", init_source, g.distill_weight,
             g.distill_temperature)
    return CtcDistill(frozen_teacher(unwrap(model)), charset, g.distill_weight, g.distill_temperature)


class DistillFromInit:
    """Recipe mixin (before Recipe in the bases): after the init weights are loaded (Recipe.init_weights), ``distill``
    is distill_from_init's CtcDistill (Global.distill_pretrained) or None, for the train step."""
    distill: "CtcDistill | None" = None

    def init_weights(self, model):
        plan = super().init_weights(model)
        self.distill = distill_from_init(model, self.cfg.Global, self.charset, self.init_weights_source(), self.log)
        return plan
