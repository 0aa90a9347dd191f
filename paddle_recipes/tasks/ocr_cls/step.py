"""The orientation classifier's train step (PaddleOCR's ClsLoss: cross entropy of the logits) and evaluation
(PaddleOCR's ClsMetric: acc = correct / samples)."""
from __future__ import annotations

import time
from typing import Callable

import paddle
import paddle.nn.functional as F

from paddle_recipes.data.skips import SkipStats, unpack_skipped
from paddle_recipes.tasks.ocr_rec.step import zero_loss


class ClsTrainStep:
    """`step(model, batch) -> {"loss", ["acc"]}`; skip records are counted in `stats`; a batch without a readable
    sample gives zero_loss (DDP ranks stay in step). acc (the batch's) when ``with_acc``."""

    def __init__(self, stats: SkipStats, image_shape, with_acc: bool = True):
        self.stats, self.image_shape, self.with_acc = stats, list(image_shape), with_acc

    def __call__(self, model, batch: dict) -> dict:
        self.stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            return {"loss": zero_loss(model, self.image_shape)}
        logits = model(batch["image"])
        out = {"loss": F.cross_entropy(logits.astype("float32"), batch["label"])}
        if self.with_acc:
            out["acc"] = float((logits.argmax(-1) == batch["label"]).astype("float32").mean())
        return out


@paddle.no_grad()
def evaluate_cls(model, loader, reduce_sum: Callable[[float], float], stats: SkipStats | None = None) -> dict:
    """{acc, num_samples, infer_seconds} over `loader` (sums reduced with `reduce_sum` over ranks); eval mode
    outputs are probabilities (argmax = class)."""
    was_training = model.training
    model.eval()
    correct = total = seconds = 0.0
    for batch in loader:
        if stats is not None:
            stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            continue
        t0 = time.perf_counter()
        pred = model(batch["image"]).argmax(-1)
        correct += float((pred == batch["label"]).astype("float32").sum())
        seconds += time.perf_counter() - t0
        total += int(batch["label"].shape[0])
    if was_training:
        model.train()
    correct, total, seconds = reduce_sum(correct), reduce_sum(total), reduce_sum(seconds)
    return {"acc": correct / (total + 1e-7), "num_samples": int(total), "infer_seconds": seconds}
