"""Crops and reading order of detected text boxes, with PaddleOCR's TextSystem semantics.

* :func:`rotate_crop`: a 4-point box (top-left, top-right, bottom-right, bottom-left, pixels) warped to an
  upright ``w x h`` image, w / h the longer of each pair of opposite sides (truncated to int), cubic
  interpolation, replicated border; a crop with h / w >= 1.5 is turned 90 degrees counter-clockwise
  (PaddleOCR's get_rotate_crop_image).
* :func:`min_area_crop`: any polygon -> its minimum-area rectangle, corners ordered as above, then
  :func:`rotate_crop` (PaddleOCR's get_minarea_rect_crop, used for polygon boxes).
* :func:`reading_order`: sort by the first point's (y, x), then within rows (first points less than
  ``row_tol`` = 10 px apart in y) left to right (PaddleOCR's sorted_boxes).
"""
from __future__ import annotations

from typing import List, Sequence

import cv2
import numpy as np

from ..ocr_det.synth_pages import order_quad, turn_if_tall, warp_quad


def rotate_crop(img: np.ndarray, quad) -> np.ndarray:
    """Perspective crop of a 4-point box (tl, tr, br, bl) -> upright HWC image (see module docstring)."""
    return turn_if_tall(warp_quad(img, quad))


def min_area_quad(points) -> np.ndarray:
    """The minimum-area rectangle of integer-rounded ``points`` as (tl, tr, br, bl): by x, the left pair
    and the right pair each ordered by y (PaddleOCR's get_minarea_rect_crop ordering)."""
    return order_quad(cv2.boxPoints(cv2.minAreaRect(np.asarray(points, np.float32).reshape(-1, 2).astype(np.int32))))


def min_area_crop(img: np.ndarray, points) -> np.ndarray:
    return rotate_crop(img, min_area_quad(points))


def crop_box(img: np.ndarray, points, box_type: str = "quad") -> np.ndarray:
    """A detector box -> its line image. ``box_type`` as PaddleOCR's det_box_type: "quad" crops a 4-point box
    as given (a box of other size goes through its min-area rectangle), "poly" always uses the rectangle."""
    pts = np.asarray(points, np.float32).reshape(-1, 2)
    return rotate_crop(img, pts) if box_type == "quad" and len(pts) == 4 else min_area_crop(img, pts)


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
