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
