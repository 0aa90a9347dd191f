"""Crops and reading order of detected text boxes, as PaddleOCR's pipelines make them.

* :func:`crop_box`, crop mode ``minarea`` (paddlex 3.x, the ``PaddleOCR(...)`` pipeline: CropByPolys with
  det_box_type 'quad'): every box, whatever its number of points, is cropped through its minimum-area rectangle
  (points truncated to int first). Mode ``rotate`` (paddleocr 2.x TextSystem, det_box_type 'quad'): a 4-point
  box is warped as given, corners as listed; a box of other size goes through its min-area rectangle, as 2.x
  does for 'poly' boxes. Both: ``ocr_det.geometry.rotate_crop`` (upright, cubic, turned when tall). The warp
  follows each pipeline's OpenCV: ``minarea`` computes OpenCV 4.x's bytes whatever cv2 is installed (paddlex pins
  opencv-contrib 4.10), ``rotate`` calls the installed cv2 (paddleocr 2.x pins none); ``opencv4`` overrides it.
* :func:`paddleocr2_boxes`: 4-point boxes as paddleocr 2.x's TextDetector hands them to its TextSystem (the
  ``rotate`` mode's boxes): corners re-ordered clockwise from the one of least x + y (then least y - x, the
  opposite corner the one of most x + y), truncated into the image (0 .. w - 1, 0 .. h - 1), and boxes with a side
  (corner 0 to 1, 0 to 3) of 3 px or less dropped.
* :func:`reading_order`: sort by the first point's (y, x), then within rows (first points less than
  ``row_tol`` = 10 px apart in y) left to right (2.x's sorted_boxes, 3.x's SortQuadBoxes).
"""
from __future__ import annotations

from typing import List, Sequence

import numpy as np

from ..ocr_det.geometry import min_area_quad, rotate_crop

CROP_MODES = ("minarea", "rotate")


def crop_box(img: np.ndarray, points, mode: str = "minarea", opencv4: bool | None = None) -> np.ndarray:
    """A detector box ([K, 2] x, y px) -> its upright line image, by crop ``mode`` (see the module docstring);
    ``opencv4`` None: the mode's own warp (minarea: OpenCV 4.x's bytes, rotate: the installed cv2)."""
    if mode not in CROP_MODES:
        raise ValueError(f"crop mode {mode!r}: must be one of {list(CROP_MODES)}")
    opencv4 = mode == "minarea" if opencv4 is None else opencv4
    pts = np.asarray(points)
    if mode == "rotate" and pts.size == 8:
        return rotate_crop(img, pts.astype(np.float32), opencv4)
    return rotate_crop(img, min_area_quad(pts), opencv4)


def paddleocr2_boxes(boxes: Sequence, shape) -> List[np.ndarray]:
    """``boxes`` (each [4, 2] x, y) on an image of ``shape`` (h, w, ...) -> 2.x's kept boxes, float32 (see module
    docstring); a box of other size is kept as it is (it is cropped through its min-area rectangle)."""
    h, w = shape[:2]
    out = []
    for box in boxes:
        p = np.asarray(box, np.float32).reshape(-1, 2)
        if len(p) != 4:
            out.append(p)
            continue
        s = p.sum(1)
        first, third = int(np.argmin(s)), int(np.argmax(s))
        rest = np.delete(p, (first, third), axis=0)  # 2 points (3 when one corner is both)
        d = rest[:, 1] - rest[:, 0]
        q = np.stack([p[first], rest[np.argmin(d)], p[third], rest[np.argmax(d)]])
        q = np.floor(np.clip(q, 0, [w - 1, h - 1])).astype(np.float32)
        if int(np.linalg.norm(q[0] - q[1])) > 3 and int(np.linalg.norm(q[0] - q[3])) > 3:
            out.append(q)
    return out


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
