"""Run the OCR system on images: boxes -> crops in reading order -> texts, results file, pictures, e2e metric.

``OcrPipeline(detect, recognize, drop_score)`` is model-agnostic: ``detect(img) -> (boxes, scores)``
(e.g. :func:`det_fn` around our DB model), ``recognize(crops) -> [(text, score)]`` (:func:`rec_fn`).
``pipeline(img)`` -> [{"transcription", "points", "score"}] in reading order, lines whose recognition
score is below ``drop_score`` (default 0.5, PaddleOCR's) left out. ``boxes=`` replaces the detector
(the GT-box "oracle" of eval mode, a plumbing check of crops + recognizer). ``crop``: the crop mode,
"minarea" (paddlex 3.x, default) or "rotate" (paddleocr 2.x); see geometry.crop_box.
``classify(crops) -> [(label, score)]`` (optional; PaddleOCR's use_angle_cls / use_textline_orientation stage, e.g.
tasks.ocr_cls.predict.classify_images): crops whose label contains '180' with a score above ``cls_thresh`` (0.9)
are turned by 180 degrees before recognition (:func:`orient_crops`).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, List, Sequence, Tuple

import cv2
import numpy as np
import paddle
from PIL import Image, ImageDraw, ImageFont

from ..ocr_rec.charset import CharDict
from ..ocr_rec.postprocess import ctc_greedy_decode
from paddle_recipes.data import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, images
from paddle_recipes.runtime.host import host_float32

from ..ocr_rec.transforms import pad_batch, resize_norm_batch_ppocr2, resize_norm_infer
from ..ocr_det.predict import detect_image
from .geometry import crop_box, paddleocr2_boxes, reading_order
from .metric import E2EMetric

logger = logging.getLogger(__name__)
REC_RESIZES = ("paddlex", "paddleocr2")


def det_fn(model, eval_tf, post) -> Callable:
    model.eval()
    return partial(detect_image, model, eval_tf=eval_tf, post=post)


def rec_fn(model, charset: CharDict, image_shape: Sequence[int], batch_num: int = 6,
           resize: str = "paddlex") -> Callable:
    """Crops -> [(text, score)]: sorted by width / height, ``batch_num`` per forward pass, each resized to the
    rec input height H (width H * w / h, at least W) and zero-padded to the widest of its batch (``resize``
    "paddlex": PaddleX's TextRecognition inference resize, per line; "paddleocr2": 2.x's TextRecognizer, one width
    for the batch, transforms.resize_norm_batch_ppocr2); CTC greedy decoding, score = mean max-probability of the
    kept steps."""
    if resize not in REC_RESIZES:
        raise ValueError(f"rec resize {resize!r}: must be one of {list(REC_RESIZES)}")
    model.eval()
    is_logits = not getattr(model, "outputs_probabilities", False)

    @paddle.no_grad()
    def run(crops: Sequence[np.ndarray]) -> List[Tuple[str, float]]:
        ratios = [c.shape[1] / float(c.shape[0]) for c in crops]
        order = (np.argsort(ratios).tolist() if resize == "paddleocr2"  # 2.x's sort (not stable on ties)
                 else sorted(range(len(crops)), key=ratios.__getitem__))
        out: List[Tuple[str, float]] = [("", 0.0)] * len(crops)
        for k in range(0, len(order), batch_num):
            idx = order[k:k + batch_num]
            x = (resize_norm_batch_ppocr2([crops[i] for i in idx], image_shape) if resize == "paddleocr2" else
                 pad_batch([resize_norm_infer(crops[i], image_shape) for i in idx]))
            logits = host_float32(model(paddle.to_tensor(x)))  # a view on CPU, no copy
            for i, res in zip(idx, ctc_greedy_decode(logits, charset, is_logits=is_logits)):
                out[i] = res
        return out
    return run


def orient_crops(crops: Sequence[np.ndarray], classify: Callable, thresh: float = 0.9) -> List[np.ndarray]:
    """PaddleOCR's angle-classifier step: each crop classified '180' (a label containing it) with a score above
    ``thresh`` is turned by 180 degrees; the others are returned as they are."""
    labels = classify(crops) if len(crops) else []
    return [np.ascontiguousarray(c[::-1, ::-1]) if "180" in lab and score > thresh else c
            for c, (lab, score) in zip(crops, labels)]


@dataclass
class OcrPipeline:
    detect: Callable
    recognize: Callable
    drop_score: float = 0.5
    crop: str = "minarea"  # how boxes are cut out: geometry.crop_box's mode
    classify: Callable | None = None  # the orientation stage (orient_crops); None = off
    cls_thresh: float = 0.9

    def __call__(self, img: np.ndarray, boxes: Sequence | None = None) -> List[dict]:
        if boxes is None:
            boxes, _ = self.detect(img)
        boxes = [np.asarray(b, np.float32).reshape(-1, 2) for b in boxes]
        if self.crop == "rotate":  # 2.x crops the boxes its TextDetector hands on
            boxes = paddleocr2_boxes(boxes, img.shape)
        boxes = [boxes[i] for i in reading_order(boxes)]
        crops = [crop_box(img, b, self.crop) for b in boxes]
        if self.classify is not None:
            crops = orient_crops(crops, self.classify, self.cls_thresh)
        texts = self.recognize(crops) if boxes else []
        return [{"transcription": t, "points": np.round(b, 2).tolist(), "score": round(float(s), 5)}
                for b, (t, s) in zip(boxes, texts) if s >= self.drop_score]


def draw_result(img: np.ndarray, lines: Sequence[dict], font_path: str, font_index: int = 0) -> np.ndarray:
    """BGR picture: the image with its boxes (left) beside a white page with each text written in its box."""
    h, w = img.shape[:2]
    left = Image.fromarray(cv2.cvtColor(img, cv2.COLOR_BGR2RGB))
    right = Image.new("RGB", (w, h), (255, 255, 255))
    dl, dr = ImageDraw.Draw(left), ImageDraw.Draw(right)
    rng = np.random.default_rng(0)
    for ln in lines:
        pts = [tuple(p) for p in ln["points"]]
        color = tuple(int(c) for c in rng.integers(0, 200, 3))
        dl.polygon(pts, outline=color, width=2)
        dr.polygon(pts, outline=color, width=1)
        q = np.asarray(ln["points"], np.float32)
        (_, _), (bw, bh), _ = cv2.minAreaRect(q)
        size = max(8, int(min(bw, bh) * 0.8))  # the box's thickness, then shrunk until the text fits its length
        font = ImageFont.truetype(font_path, size, index=font_index)
        while size > 8 and font.getlength(ln["transcription"]) > max(bw, bh):
            size -= 1
            font = ImageFont.truetype(font_path, size, index=font_index)
        dr.text((float(q[:, 0].min()) + 2, float(q[:, 1].min()) + 1), ln["transcription"], fill=(0, 0, 0), font=font)
    both = Image.new("RGB", (2 * w, h))
    both.paste(left, (0, 0)), both.paste(right, (w, 0))
    return cv2.cvtColor(np.asarray(both), cv2.COLOR_RGB2BGR)


def read_image(path: str, limits: Tuple[int, int] = (MAX_IMAGE_PIXELS, MAX_IMAGE_BYTES)) -> Tuple[np.ndarray | None, str]:
    """(BGR image, "") or (None, reason) for a file data.read_image refuses (missing, not a regular file, corrupt,
    above ``limits`` = (max_image_pixels, max_image_bytes))."""
    try:
        return images.read_image(path, *limits), ""
    except images.ImageError as exc:
        return None, exc.detail


def run_files(pipeline: OcrPipeline, files: Sequence[str], out_dir: str | Path, font: Tuple[str, int] | None,
              limits: Tuple[int, int] = (MAX_IMAGE_PIXELS, MAX_IMAGE_BYTES)) -> dict:
    """OCR ``files`` -> ``out_dir/system_results.txt`` (``path<TAB>[{"transcription", "points", "score"}]`` per
    readable image, PaddleOCR's predict_system results file) and ``out_dir/<name>`` pictures (``font`` =
    (path, face index) for the texts; None: no pictures). Unreadable images (read_image) are counted and logged; an image
    with no line found gets ``[]`` and is counted as ``no_text``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows, counts = [], {"images": 0, "lines": 0, "no_text": 0, "skipped": 0}
    for f in files:
        img, why = read_image(f, limits)
        if img is None:
            logger.warning("skipped %s: %s", f, why)
            counts["skipped"] += 1
            continue
        lines = pipeline(img)
        counts["images"] += 1
        counts["lines"] += len(lines)
        counts["no_text"] += not lines
        rows.append(f"{f}\t{json.dumps(lines, ensure_ascii=False)}\n")
        if font is not None:
            cv2.imwrite(str(out_dir / Path(f).name), draw_result(img, lines, *font))
    (out_dir / "system_results.txt").write_text("".join(rows), encoding="utf-8")
    return {**counts, "results": str(out_dir / "system_results.txt")}


def score_pages(dataset, read: Callable[[int, dict], Sequence[Tuple[object, str]]], iou: float = 0.5) -> dict:
    """E2E metric (metric.E2EMetric) over a ``DetDataset``: ``read(index, sample)`` gives the (points, text)
    lines found on page ``index`` (the system's, or another OCR's recorded output); unreadable images / bad
    labels are counted in the dataset's stats and not scored."""
    metric = E2EMetric(iou)
    for i in range(len(dataset)):
        sample = dataset.load(i)
        if isinstance(sample, tuple):
            dataset.stats.add(sample[1], sample[2])
            continue
        dataset.stats.add_batch(sample["polygon_problems"])
        gts = [(p, "###" if ign else t) for p, t, ign in zip(sample["polys"], sample["texts"], sample["ignore_tags"])]
        metric.update(read(i, sample), gts)
    return metric.compute()


def evaluate_pages(pipeline: OcrPipeline, dataset, oracle: bool = False, iou: float = 0.5) -> dict:
    """score_pages with ``pipeline`` reading each page. ``oracle``: GT polygons (not ``###``) replace the detector."""
    def read(_, sample):
        boxes = [p for p, ign in zip(sample["polys"], sample["ignore_tags"]) if not ign] if oracle else None
        return [(ln["points"], ln["transcription"]) for ln in pipeline(sample["image"], boxes=boxes)]
    return score_pages(dataset, read, iou)
