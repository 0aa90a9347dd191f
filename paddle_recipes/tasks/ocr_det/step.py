"""The DB training step and evaluation loop.

``DBTrainStep(model, batch)`` -> {"loss", "loss_shrink_maps", "loss_threshold_maps", "loss_binary_maps"}:
skip records of the batch are counted in ``stats``; a batch with no good sample gives a zero loss that
touches every parameter (DDP ranks stay in step).

``evaluate_det(model, loader, post, reduce)`` -> {"precision", "recall", "hmean", "fps"}: the eval-mode
probability map of each image (cropped to its own size before padding), DBPostProcess, then PaddleOCR's
IoU-0.5 matching; the match counts are summed over ranks by ``reduce`` before the ratios.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import paddle

from ...data import DataError
from ...data.skips import SkipStats, unpack_skipped
from .batch import MAP_KEYS
from .losses import DBLoss
from .metrics import combine_results, evaluate_image
from .postprocess import DBPostProcess
from ...runtime.host import host_float32


class DBTrainStep:
    def __init__(self, loss: DBLoss, stats: SkipStats):
        self.loss_fn, self.stats = loss, stats

    def __call__(self, model, batch: dict) -> dict:
        self.stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            return {"loss": paddle.add_n([p.sum() * 0.0 for p in model.parameters()])}
        losses = self.loss_fn(model(batch["image"]), [None] + [batch[k] for k in MAP_KEYS])
        return {"loss": losses["loss"], **{k: float(v) for k, v in losses.items() if k.startswith("loss_")
                                           and k != "loss_cbn"}}


def predict_maps(model, images, image_hw) -> list:
    """Eval-mode probability maps [h, w] of a padded batch, each cropped to its image's size."""
    with paddle.no_grad():
        maps = model(paddle.to_tensor(images) if not isinstance(images, paddle.Tensor) else images)["maps"]
    maps = host_float32(maps)[:, 0]  # a view of the output on CPU (no 4 B/px copy)
    return [m[:int(h), :int(w)] for m, (h, w) in zip(maps, np.asarray(image_hw))]


def evaluate_det(model, loader, post: DBPostProcess, reduce: Callable = lambda x: x, stats: SkipStats | None = None
                 ) -> dict:
    model.eval()
    counts = {"gtCare": 0, "detCare": 0, "detMatched": 0}
    n_images, t0 = 0, time.time()
    for batch in loader:
        if stats is not None:
            stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            continue
        maps = predict_maps(model, batch["image"], batch["image_hw"])
        shapes = np.asarray(batch["shape"])
        for prob, shape, gts, ignores in zip(maps, shapes, batch["polys"], batch["ignore_tags"]):
            dets = post(prob[None], [shape])[0]["points"]
            result = evaluate_image([np.asarray(g).tolist() for g in gts], [bool(i) for i in ignores],
                                    [np.asarray(d).tolist() for d in dets])
            for k in counts:
                counts[k] += result[k]
            n_images += 1
    seconds = time.time() - t0
    if float(reduce(float(n_images))) <= 0:  # every rank sees the sum: all raise together
        raise DataError("det evaluation saw 0 readable images (empty label file, wrong data_dir, or every image "
                        "skipped); see the skipped-sample warnings above")
    counts = {k: int(round(float(reduce(float(v))))) for k, v in counts.items()}
    out = combine_results([counts])
    out["fps"] = float(reduce(n_images / max(seconds, 1e-9)))  # images/s, summed over ranks
    return out
