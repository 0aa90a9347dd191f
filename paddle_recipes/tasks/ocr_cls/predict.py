"""Predict mode and the pipeline stage: classify text-line images as PaddleOCR's ClsPostProcess does (argmax label,
its probability).

    results, bad = classify_images(model, [bgr, ...], spec)          # [(label, score)], in order
    results, bad = classify_files(model, ["a.jpg"], spec, batch_size=16)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
import paddle

from paddle_recipes.config import ConfigError
from paddle_recipes.data import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, ImageError, read_image
from paddle_recipes.runtime.host import host_float32
from paddle_recipes.train.config import PredictConfig

from .transforms import preprocess


@dataclass
class ClsPredictConfig(PredictConfig):
    """PredictConfig plus save_res_path: also write "<image>\\t<label>\\t<score>" lines ("" = off)."""
    save_res_path: str = ""

    def __post_init__(self):
        if self.batch_size < 1:
            raise ConfigError(f"Predict.batch_size must be >= 1, got {self.batch_size}")


@paddle.no_grad()
def classify_images(model, images: Sequence[np.ndarray], spec, batch_size: int = 16) -> List[Tuple[str, float]]:
    """(label, probability) of each BGR image by `model` (eval mode, softmax output), batches of `batch_size`."""
    model.eval()
    out: List[Tuple[str, float]] = []
    for i in range(0, len(images), batch_size):
        x = np.stack([preprocess(im, spec.image_shape, spec.mode) for im in images[i:i + batch_size]])
        probs = host_float32(model(paddle.to_tensor(x)))
        out += [(spec.labels[int(p.argmax())], float(p.max())) for p in probs]
    return out


def classify_files(model, files: Sequence[str], spec, batch_size: int = 16, max_image_pixels: int = MAX_IMAGE_PIXELS,
                   max_image_bytes: int = MAX_IMAGE_BYTES) -> Tuple[list, list]:
    """([(file, label, score)], [(file, reason)] of files data.read_image refuses: unreadable, not a regular file,
    too many bytes or pixels, corrupt)."""
    good, bad = [], []
    for f in files:
        try:
            good.append((f, read_image(f, max_image_pixels, max_image_bytes)))
        except ImageError as exc:
            bad.append((f, exc.detail))
    labels = classify_images(model, [im for _, im in good], spec, batch_size)
    return [(f, lab, score) for (f, _), (lab, score) in zip(good, labels)], bad
