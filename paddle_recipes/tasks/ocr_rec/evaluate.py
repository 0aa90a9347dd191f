"""Evaluation and inference helpers for recognizers (any model returning [B, T, C] logits)."""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np
import paddle

from ...data import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, ImageError, list_images, read_image
from ...formats.ppocr_logs import format_infer_rec, format_rec_result_line
from ...runtime.host import host_float32
from .charset import CharDict
from ...data.skips import SkipStats, unpack_skipped
from .metrics import PerTagRecMetric, RecMetric
from .postprocess import ctc_greedy_decode
from .transforms import INFER_MAX_WIDTH, pad_batch, resize_norm_infer
from .dataset import DataPathError

logger = logging.getLogger(__name__)

def outputs_logits(model) -> bool:
    """False for models whose eval forward gives probabilities (PaddleOCR's: softmax in eval)."""
    return not getattr(model, "outputs_probabilities", False)


@paddle.no_grad()
def evaluate_rec(model, loader, charset: CharDict, stats: SkipStats | None = None, ignore_space: bool = False,
                 is_filter: bool = False, tags: Sequence[str] | None = None) -> Dict[str, float]:
    """Raw metric sums over ``loader`` (see RecMetric.state) plus ``infer_seconds``: wall time of the forward
    passes and decoding (PaddleOCR's eval ``fps`` = total / infer_seconds; data loading not counted).
    Corrupt images are counted in ``stats``. ignore_space / is_filter: see RecMetric. tags: every tag the
    batches can carry (``RecDataset.attach_tags``, e.g. the font of each line): the sums are then
    PerTagRecMetric's (overall and per tag; all-reduce them, then ``PerTagRecMetric.from_state``)."""
    was_training = model.training
    model.eval()
    options = dict(ignore_space=ignore_space, is_filter=is_filter)
    metric = RecMetric(**options) if tags is None else PerTagRecMetric(tags, **options)
    infer_seconds = 0.0
    for batch in loader:
        if stats is not None:
            stats.add_batch(unpack_skipped(batch))
        if "image" not in batch:
            continue
        if tags is not None and "tag" not in batch:
            raise ValueError("evaluate_rec: tags given but batches carry no 'tag' (call RecDataset.attach_tags)")
        t0 = time.perf_counter()
        logits = model(batch["image"])
        is_logits = outputs_logits(model)  # probabilities: the texts need no confidence (one pass: the argmax)
        preds = [t for t, _ in ctc_greedy_decode(host_float32(logits), charset, is_logits=is_logits,
                                                 with_confidence=is_logits)]
        infer_seconds += time.perf_counter() - t0
        metric.update(preds, list(batch["text"]), *([list(batch["tag"])] if tags is not None else []))
    if was_training:
        model.train()
    return {**metric.state(), "infer_seconds": infer_seconds}


@paddle.no_grad()
def recognize_files(model, files: Sequence[str], charset: CharDict, image_shape: Sequence[int] = (3, 48, 320),
                    batch_size: int = 16, max_width: int = INFER_MAX_WIDTH, max_image_pixels: int = MAX_IMAGE_PIXELS,
                    max_image_bytes: int = MAX_IMAGE_BYTES) -> Tuple[List[Tuple[str, str, float]], List[Tuple[str, str]]]:
    """Recognize image files the way paddleocr 3.x ``TextRecognition`` does, so texts and scores agree
    with our export run there: BGR decode, keep-ratio resize to height H on a canvas at least W wide
    (wider lines keep their ratio, up to ``max_width`` px), batches of ``batch_size`` consecutive
    readable files zero-padded to their widest image, confidence = mean max-probability of the kept
    CTC steps. Files are read by data.read_image: one whose header says more than ``max_image_pixels``, or of
    more than ``max_image_bytes`` bytes, or not a regular file (FIFO, device) is skipped unread / undecoded.
    Returns ([(file, text, confidence)], [(file, reason)] of unreadable or too large files)."""
    model.eval()
    probs = bool(getattr(model, "outputs_probabilities", False))  # PaddleOCR-faithful models: softmax in eval
    results, bad = [], []
    pending: List[Tuple[str, np.ndarray]] = []

    def flush():
        if not pending:
            return
        x = paddle.to_tensor(pad_batch([a for _, a in pending]))
        out = host_float32(model(x))  # a view on CPU, no copy
        for (f, _), (text, conf) in zip(pending, ctc_greedy_decode(out, charset, is_logits=not probs)):
            results.append((f, text, conf))
        pending.clear()

    for f in files:
        try:
            img = read_image(f, max_image_pixels, max_image_bytes)
        except ImageError as exc:
            bad.append((f, exc.detail))
            continue
        pending.append((f, resize_norm_infer(img, image_shape, max_width)))
        if len(pending) >= batch_size:
            flush()
    flush()
    return results, bad


def predict_images(model, images: str, charset: CharDict, image_shape: Sequence[int], batch_size: int = 1,
                   show: bool = True, save_res_path: str = "", max_image_pixels: int = MAX_IMAGE_PIXELS,
                   max_image_bytes: int = MAX_IMAGE_BYTES) -> List[Tuple[str, str, float]]:
    """Recognize an image file or folder. When ``show``, logs PaddleOCR tools/infer_rec.py's two lines per
    image (``infer_img: <path>``, ``\t result: <text>\t<score>``) and, with ``save_res_path``, writes its
    results file (``<path>\t<text>\t<score>`` per line). Unreadable images are warned and counted, not fatal
    (``max_image_pixels`` / ``max_image_bytes``: see recognize_files)."""
    if not images:
        raise DataPathError("Predict.images is empty: pass -o Predict.images=path/to/image_or_folder")
    results, bad = recognize_files(model, list_images(images), charset, image_shape, batch_size,
                                   max_image_pixels=max_image_pixels, max_image_bytes=max_image_bytes)
    if show:
        for f, text, conf in results:
            for line in format_infer_rec(f, text, conf):
                logger.info(line)
        for f, why in bad:
            logger.warning("skipped %s: %s", f, why)
        logger.info("predicted %d images, skipped %d", len(results), len(bad))
        if save_res_path:
            out = Path(save_res_path)
            out.parent.mkdir(parents=True, exist_ok=True)
            with open(out, "w", encoding="utf-8") as fh:
                fh.writelines(format_rec_result_line(f, text, conf) for f, text, conf in results)
            logger.info("results written to %s", out)
    return results
