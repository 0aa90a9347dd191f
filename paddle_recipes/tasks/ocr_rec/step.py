"""The training step of a CTC recognizer: skipped-sample counting, CTC loss and greedy-decode accuracy."""
from __future__ import annotations

import numpy as np
import paddle

from .charset import CharDict
from ...data.skips import SkipStats, unpack_skipped
from ...runtime.host import host_float32
from .losses import CTCLoss
from .postprocess import ctc_greedy_decode
from .ppocr_losses import MultiLoss


def zero_loss(model, image_shape) -> paddle.Tensor:
    """A zero loss for a batch with no readable sample that still runs `model`'s forward (a DataParallel
    wrapper prepares its gradient all-reduce there) and a backward over every parameter, as a real batch
    does: every rank then joins the same collectives. The forward sees one zero image of ``image_shape``
    [C, H, W] in eval mode, so BatchNorm statistics are untouched."""
    was_training = model.training
    model.eval()
    try:
        out = model(paddle.zeros([1, *image_shape], dtype="float32"))
    finally:
        if was_training:
            model.train()
    outs = out.values() if isinstance(out, dict) else out if isinstance(out, (list, tuple)) else [out]
    terms = [t.astype("float32").sum() * 0.0 for t in outs if isinstance(t, paddle.Tensor) and paddle.is_floating_point(t)]
    return paddle.add_n(terms + [p.astype("float32").sum() * 0.0 for p in model.parameters()])


def batch_accuracy(logits: paddle.Tensor, texts, charset: CharDict) -> float:
    """Exact-match line accuracy of greedy CTC decoding of ``logits`` [B, T, C] against ``texts`` (host side)."""
    preds = ctc_greedy_decode(host_float32(logits.detach()), charset, with_confidence=False)
    return float(np.mean([p == t for (p, _), t in zip(preds, texts)]))


class CtcTrainStep:
    """`step(model, batch) -> {"loss", ["acc"]}` for the Trainer. Skip records of the batch (unreadable samples
    found in loader workers) are counted in `stats`; a batch with no good sample gives a zero loss that still
    runs the model's forward (zero_loss), so DDP ranks stay in step.

    acc: exact-match line accuracy of greedy decoding. The decode copies the logits to the host (a sync on a GPU)
    and loops in Python, so it runs on every ``metric_every``-th call only (Global.cal_metric_during_train as a
    period: 1 = every step, PaddleOCR's true; 0 = never). ``calls`` counts calls with data, ``decodes`` the decodes.
    ``distill``: None, or ``distill(ctc_logits, batch) -> (loss term, scalars)`` added to the loss
    (distill_pretrained.CtcDistill: Global.distill_pretrained).
    """

    def __init__(self, charset: CharDict, stats: SkipStats, zero_infinity: bool = True, metric_every: int = 1,
                 image_shape=(3, 32, 128), distill=None):
        if isinstance(metric_every, bool) or metric_every < 0:
            raise ValueError(f"metric_every must be an integer >= 0, got {metric_every!r}")
        self.charset, self.stats, self.loss_fn = charset, stats, CTCLoss(zero_infinity=zero_infinity)
        self.metric_every = int(metric_every)
        self.calls = self.decodes = 0
        self.image_shape = list(image_shape)  # of the zero_loss forward (updated from every real batch)
        self.distill = distill

    def add_distill(self, out: dict, ctc_logits, batch: dict) -> dict:
        """out["loss"] plus the distillation term (when on), its scalars logged."""
        if self.distill is not None:
            term, logged = self.distill(ctc_logits, batch)
            out.update(logged, loss=out["loss"] + term)
        return out

    def _metric_due(self) -> bool:
        self.calls += 1
        due = bool(self.metric_every) and self.calls % self.metric_every == 0
        self.decodes += due
        return due

    def __call__(self, model, batch: dict) -> dict:
        self.stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            return {"loss": zero_loss(model, self.image_shape)}
        self.image_shape = list(batch["image"].shape[1:])
        logits = model(batch["image"])
        out = self.add_distill({"loss": self.loss_fn(logits, batch["label"], batch["length"])}, logits, batch)
        if self._metric_due():
            out["acc"] = batch_accuracy(logits, batch["text"], self.charset)
        return out

class MultiLossTrainStep(CtcTrainStep):
    """PP-OCRv4/v5 MultiHead training (PaddleOCR's MultiLoss = CTC + NRTR): the model gets the targets
    [label_ctc, label_gtc, length] (NRTR teacher forcing), the loss is CTC on "ctc" + NRTR on "gtc";
    acc decodes the CTC branch (a model without GTC branch: CTC loss only). The batch needs ``label_gtc``
    (dataset.collate_gtc)."""

    def __init__(self, charset: CharDict, stats: SkipStats, zero_infinity: bool = True, metric_every: int = 1,
                 image_shape=(3, 48, 320), distill=None):
        super().__init__(charset, stats, zero_infinity, metric_every, image_shape, distill)
        self.multi = MultiLoss(zero_infinity=zero_infinity)

    def __call__(self, model, batch: dict) -> dict:
        self.stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            return {"loss": zero_loss(model, self.image_shape)}
        self.image_shape = list(batch["image"].shape[1:])
        targets = [batch["label"], batch["label_gtc"], batch["length"]]
        out = model(batch["image"], targets)
        losses = self.multi(out, batch["label"], batch["length"], batch["label_gtc"])
        res = {"loss": losses["loss"], **{k: float(losses[k]) for k in ("CTCLoss", "NRTRLoss") if k in losses}}
        res = self.add_distill(res, out["ctc"], batch)
        if self._metric_due():
            res["acc"] = batch_accuracy(out["ctc"], batch["text"], self.charset)
        return res
