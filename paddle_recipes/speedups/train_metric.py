"""CTC train step with train accuracy every N steps (PaddleOCR's ``cal_metric_during_train``).

Decoding the batch for a train accuracy copies the logits to the host and runs a Python loop:
a sync point every step (it serialises the step, and under DDP the slowest rank waits for it).
With ``metric_every=N`` the decode runs on every N-th micro-batch only (0 = never).

    step = ctc_train_step(CTCLoss(), charset, metric_every=20)
    trainer = Trainer(model, opt, step, loader, ...)     # logs "acc" on the steps that computed it
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import paddle

from ..tasks.ocr.postprocess import ctc_greedy_decode


def batch_accuracy(logits: paddle.Tensor, texts, charset) -> float:
    """Exact-match line accuracy of greedy CTC decoding (host side)."""
    preds = ctc_greedy_decode(logits.detach().astype("float32").numpy(), charset, with_confidence=False)
    return float(np.mean([p == t for (p, _), t in zip(preds, texts)]))


class ctc_train_step:  # noqa: N801  (used like a function: step(model, batch))
    """train_step(model, batch) -> {"loss", ["acc"]} for the Trainer.

    metric_every: decode for train accuracy on every N-th call (1 = every step, as before; 0 = never).
    on_batch: optional callable(batch) run first (e.g. skip bookkeeping).
    """

    def __init__(self, loss_fn: Callable, charset, metric_every: int = 1, on_batch: Optional[Callable] = None):
        if metric_every < 0:
            raise ValueError(f"metric_every must be >= 0, got {metric_every}")
        self.loss_fn, self.charset, self.metric_every, self.on_batch = loss_fn, charset, metric_every, on_batch
        self.calls = 0
        self.decodes = 0

    def __call__(self, model, batch) -> dict:
        if self.on_batch is not None:
            self.on_batch(batch)
        if "image" not in batch:  # every sample unreadable: a zero loss keeps DDP in step
            return {"loss": paddle.add_n([p.sum() * 0.0 for p in model.parameters()])}
        self.calls += 1
        logits = model(batch["image"])
        out = {"loss": self.loss_fn(logits, batch["label"], batch["length"])}
        if self.metric_every and self.calls % self.metric_every == 0:
            out["acc"] = batch_accuracy(logits, batch["text"], self.charset)
            self.decodes += 1
        return out
