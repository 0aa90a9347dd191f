"""Crops and reading order of detected text boxes, as PaddleOCR's pipelines make them.

* :func:`crop_box`, crop mode ``minarea`` (paddlex 3.x, the ``PaddleOCR(...)`` pipeline: CropByPolys with
  det_box_type 'quad'): every box, whatever its number of points, is cropped through its minimum-area rectangle
  (points truncated to int first). Mode ``rotate`` (paddleocr 2.x TextSystem, det_box_type 'quad'): a 4-point
  box is warped as given, corners as listed; a box of other size goes through its min-area rectangle, as 2.x
  does for 'poly' boxes. Both: ``ocr_det.geometry.rotate_crop`` (upright, cubic, turned when tall).
* :func:`reading_order`: sort by the first point's (y, x), then within rows (first points less than
  ``row_tol`` = 10 px apart in y) left to right (2.x's sorted_boxes, 3.x's SortQuadBoxes).
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from ..ocr_det.geometry import min_area_quad, rotate_crop

CROP_MODES = ("minarea", "rotate")


def crop_box(img: np.ndarray, points, mode: str = "minarea") -> np.ndarray:
    """A detector box ([K, 2] x, y px) -> its upright line image, by crop ``mode`` (see the module docstring)."""
    if mode not in CROP_MODES:
        raise ValueError(f"crop mode {mode!r}: must be one of {list(CROP_MODES)}")
    pts = np.asarray(points)
    if mode == "rotate" and pts.size == 8:
        return rotate_crop(img, pts.astype(np.float32))
    return rotate_crop(img, min_area_quad(pts))


def reading_order(boxes: Sequence, row_tol: float = 10.0) -> List[int]:
    """Indices of ``boxes`` (each [K, 2] x, y) in reading order (see module docstring)."""
    first = [np.asarray(b, np.float64).reshape(-1, 2)[0] for b in boxes]
    order = sorted(range(len(boxes)), key=lambda i: (first[i][1], first[i][0]))
    for i in range(len(order) - 1):  # bubble each box left past neighbours of its row (PaddleOCR's pass)
        for j in range(i, -1, -1):
            a, b = first[order[j]], first[order[j + 1]]
            if abs(b[1] - a[1]) < row_tol and b[0] < a[0]:
                order[j], order[j + 1] = order[j + 1], order[j]
            else:
                break
    return order
