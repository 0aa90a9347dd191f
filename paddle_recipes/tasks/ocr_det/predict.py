"""Predict mode of the det recipe: boxes of image files, PaddleOCR's infer_det.py result file and pictures.

``predict_files(model, files, eval_tf, post, out_dir, result_file)`` writes ``result_file`` ("" =
``out_dir/det_results.txt``; PaddleOCR's Global.save_res_path) (one
``path<TAB>[{"points": [[x, y], ...]}, ...]`` line per image, as PaddleOCR's tools/infer_det.py) and
``out_dir/<name>`` (the image with the boxes drawn); images data.read_image refuses (unreadable, not a regular
file, above ``limits`` = (max_image_pixels, max_image_bytes)) are skipped and listed.
Returns [(path, boxes, scores)], the bad files as [(path, reason)].
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Sequence, Tuple

import cv2
import numpy as np

from paddle_recipes.data import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, ImageError, read_image

from .postprocess import DBPostProcess
from .step import predict_maps
from .transforms import DBEvalTransform


def detect_image(model, img: np.ndarray, eval_tf: DBEvalTransform, post: DBPostProcess
                 ) -> Tuple[List[np.ndarray], List[float]]:
    """One BGR image -> (boxes as [K, 2] arrays of image pixels (DBPostProcess dtype), their scores); ``model`` in eval mode."""
    sample = eval_tf({"image": img, "polys": [], "ignore_tags": []})
    prob = predict_maps(model, sample["image"][None], [sample["image"].shape[1:]])[0]
    det = post(prob[None], [sample["shape"]])[0]
    return [np.asarray(b) for b in det["points"]], [float(s) for s in det["scores"]]


def predict_files(model, files: Sequence[str], eval_tf: DBEvalTransform, post: DBPostProcess, out_dir: str | Path,
                  result_file: str | Path = "", limits: Tuple[int, int] = (MAX_IMAGE_PIXELS, MAX_IMAGE_BYTES)
                  ) -> Tuple[List[tuple], List[Tuple[str, str]]]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results, bad, lines = [], [], []
    model.eval()
    for f in files:
        try:
            img = read_image(f, *limits)
        except ImageError as exc:
            bad.append((f, exc.detail))
            continue
        boxes, scores = detect_image(model, img, eval_tf, post)
        boxes = [b.tolist() for b in boxes]
        results.append((f, boxes, scores))
        lines.append(f"{f}\t{json.dumps([{'points': b} for b in boxes])}\n")
        for b in boxes:
            cv2.polylines(img, [np.asarray(b, np.int32)], True, (0, 0, 255), 2)
        cv2.imwrite(str(out_dir / Path(f).name), img)
    result_file = Path(result_file or out_dir / "det_results.txt")
    result_file.parent.mkdir(parents=True, exist_ok=True)
    result_file.write_text("".join(lines), encoding="utf-8")
    return results, bad
