"""Evaluation and inference helpers for recognizers (any model returning [B, T, C] logits)."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np
import paddle

from .charset import CharDict
from .dataset import SkipStats, unpack_skipped
from .metrics import PerTagRecMetric, RecMetric
from .postprocess import ctc_greedy_decode
from .transforms import decode_image, resize_norm_pad

logger = logging.getLogger(__name__)

IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")


@paddle.no_grad()
def evaluate_rec(model, loader, charset: CharDict, stats: SkipStats | None = None) -> Dict[str, float]:
    """Raw metric sums over ``loader`` (see RecMetric.state); corrupt images are counted in ``stats``."""
    was_training = model.training
    model.eval()
    metric = RecMetric()
    for batch in loader:
        if stats is not None:
            stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            continue
        logits = model(batch["image"])
        preds = [t for t, _ in ctc_greedy_decode(logits.astype("float32").numpy(), charset)]
        metric.update(preds, list(batch["text"]))
    if was_training:
        model.train()
    return metric.state()


@paddle.no_grad()
def evaluate_rec_per_tag(model, loader, charset: CharDict, tags: Sequence[str],
                         stats: SkipStats | None = None) -> Dict[str, float]:
    """Like :func:`evaluate_rec` over a dataset with tags (``RecDataset.attach_tags``, e.g. the font of
    each held-out line): raw sums of :class:`PerTagRecMetric` (all-reduce them, then ``from_state``)."""
    was_training = model.training
    model.eval()
    metric = PerTagRecMetric(tags)
    for batch in loader:
        if stats is not None:
            stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            continue
        if "tag" not in batch:
            raise ValueError("evaluate_rec_per_tag: batches carry no 'tag' (call RecDataset.attach_tags first)")
        logits = model(batch["image"])
        preds = [t for t, _ in ctc_greedy_decode(logits.astype("float32").numpy(), charset)]
        metric.update(preds, list(batch["text"]), list(batch["tag"]))
    if was_training:
        model.train()
    return metric.state()


def list_images(path: str | os.PathLike) -> List[str]:
    """An image file -> [it]; a folder -> its image files (sorted). Missing path -> FileNotFoundError."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such image or folder: {p}")
    if p.is_dir():
        return sorted(str(f) for f in p.iterdir() if f.suffix.lower() in IMAGE_EXTS)
    return [str(p)]


@paddle.no_grad()
def recognize_files(model, files: Sequence[str], charset: CharDict, image_shape: Sequence[int] = (3, 48, 320),
                    batch_size: int = 16) -> Tuple[List[Tuple[str, str, float]], List[Tuple[str, str]]]:
    """Recognize image files. Returns ([(file, text, confidence)], [(file, reason)] of unreadable files)."""
    model.eval()
    results, bad = [], []
    pending: List[Tuple[str, np.ndarray]] = []

    def flush():
        if not pending:
            return
        x = paddle.to_tensor(np.stack([a for _, a in pending]))
        for (f, _), (text, conf) in zip(pending, ctc_greedy_decode(model(x).astype("float32").numpy(), charset)):
            results.append((f, text, conf))
        pending.clear()

    for f in files:
        try:
            data = Path(f).read_bytes()
        except OSError as exc:
            bad.append((f, f"unreadable: {exc.strerror or exc}"))
            continue
        img = decode_image(data)
        if img is None:
            bad.append((f, "corrupt image (cannot decode)"))
            continue
        pending.append((f, resize_norm_pad(img, image_shape)[0]))
        if len(pending) >= batch_size:
            flush()
    flush()
    return results, bad


def predict_images(model, images: str, charset: CharDict, image_shape: Sequence[int], batch_size: int = 16,
                   show: bool = True) -> List[Tuple[str, str, float]]:
    """Recognize an image file or folder; prints "file<TAB>text<TAB>confidence" per image when ``show``.
    Unreadable images are warned and counted, not fatal."""
    if not images:
        from .dataset import DataPathError

        raise DataPathError("Predict.images is empty: pass -o Predict.images=path/to/image_or_folder")
    results, bad = recognize_files(model, list_images(images), charset, image_shape, batch_size)
    if show:
        for f, text, conf in results:
            print(f"{f}\t{text}\t{conf:.4f}")
        for f, why in bad:
            logger.warning("skipped %s: %s", f, why)
        logger.info("predicted %d images, skipped %d", len(results), len(bad))
    return results
