"""The training step of a CTC recognizer: skipped-sample counting, CTC loss and greedy-decode accuracy."""
from __future__ import annotations

import numpy as np
import paddle

from .charset import CharDict
from .dataset import SkipStats, unpack_skipped
from .losses import CTCLoss
from .postprocess import ctc_greedy_decode


class CtcTrainStep:
    """`step(model, batch) -> {"loss", "acc"}` for the Trainer. Skip records of the batch (unreadable samples
    found in loader workers) are counted in `stats`; a batch with no good sample gives a zero loss that still
    touches every parameter, so DDP ranks stay in step. acc: exact-match line accuracy of greedy decoding, computed
(a device-to-host copy and a decode per batch) only when ``cal_metric`` (Global.cal_metric_during_train)."""

    def __init__(self, charset: CharDict, stats: SkipStats, zero_infinity: bool = True, cal_metric: bool = True):
        self.charset, self.stats, self.loss_fn = charset, stats, CTCLoss(zero_infinity=zero_infinity)
        self.cal_metric = cal_metric

    def __call__(self, model, batch: dict) -> dict:
        self.stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            return {"loss": paddle.add_n([p.sum() * 0.0 for p in model.parameters()])}
        logits = model(batch["image"])
        loss = self.loss_fn(logits, batch["label"], batch["length"])
        if not self.cal_metric:
            return {"loss": loss}
        preds = ctc_greedy_decode(logits.detach().astype("float32").numpy(), self.charset, with_confidence=False)
        return {"loss": loss, "acc": float(np.mean([p == t for (p, _), t in zip(preds, batch["text"])]))}


class MultiLossTrainStep(CtcTrainStep):
    """PP-OCRv4/v5 MultiHead training (PaddleOCR's MultiLoss = CTC + NRTR): the model gets the targets
    [label_ctc, label_gtc, length] (NRTR teacher forcing), the loss is CTC on "ctc" + NRTR on "gtc";
    acc decodes the CTC branch. The batch needs ``label_gtc`` (dataset.collate_gtc)."""

    def __init__(self, charset: CharDict, stats: SkipStats, zero_infinity: bool = True, cal_metric: bool = True):
        from .ppocr_losses import MultiLoss

        super().__init__(charset, stats, zero_infinity, cal_metric)
        self.multi = MultiLoss(zero_infinity=zero_infinity)

    def __call__(self, model, batch: dict) -> dict:
        self.stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            return {"loss": paddle.add_n([p.sum() * 0.0 for p in model.parameters()])}
        targets = [batch["label"], batch["label_gtc"], batch["length"]]
        out = model(batch["image"], targets)
        losses = self.multi(out, batch["label"], batch["length"], batch["label_gtc"])
        parts = {"CTCLoss": float(losses["CTCLoss"]), "NRTRLoss": float(losses["NRTRLoss"])}
        if not self.cal_metric:
            return {"loss": losses["loss"], **parts}
        preds = ctc_greedy_decode(out["ctc"].detach().astype("float32").numpy(), self.charset, with_confidence=False)
        acc = float(np.mean([p == t for (p, _), t in zip(preds, batch["text"])]))
        return {"loss": losses["loss"], **parts, "acc": acc}
