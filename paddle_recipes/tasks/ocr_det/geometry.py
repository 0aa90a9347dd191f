"""Box geometry shared by the synthetic pages (``synth_pages.py``) and the OCR system (``tasks/ocr_system``):
numpy + OpenCV only. Points are (x, y) pixels; a quad is (top-left, top-right, bottom-right, bottom-left).

* :func:`rotate_crop`: a quad warped to an upright ``w x h`` image, w / h the longer of each pair of opposite
  sides truncated to int, cubic interpolation, replicated border, turned 90 degrees counter-clockwise when
  h / w >= 1.5 (paddleocr 2.x's get_rotate_crop_image). ``opencv4=True`` (default) computes OpenCV 4.x's bytes
  whatever OpenCV is installed (``cubic_warp``: paddlex 3.x pins OpenCV 4.10; OpenCV 5 changed the cubic warp);
  ``False`` calls the installed ``cv2.warpPerspective``, as paddleocr 2.x does (it pins no OpenCV). A side of
  0 px is left to OpenCV, as there: it then makes an image the size of the source.
* :func:`min_area_quad`: the minimum-area rectangle of the points truncated to int, corners ordered by
  :func:`order_quad` (the box of get_minarea_rect_crop, paddleocr 2.x and paddlex 3.x alike).
"""
from __future__ import annotations

import cv2
import numpy as np

from .cubic_warp import warp_perspective_cubic

TALL_RATIO = 1.5  # h / w at or above which a crop is turned (vertical text)


def order_quad(pts) -> np.ndarray:
    """4 points -> (top-left, top-right, bottom-right, bottom-left): sorted by x (stable), the left pair and the
    right pair each ordered by y, as DB's mini box and get_minarea_rect_crop order them."""
    pts = sorted(np.asarray(pts, np.float32).tolist(), key=lambda p: p[0])
    left = (pts[0], pts[1]) if pts[1][1] > pts[0][1] else (pts[1], pts[0])
    right = (pts[2], pts[3]) if pts[3][1] > pts[2][1] else (pts[3], pts[2])
    return np.float32([left[0], right[0], right[1], left[1]])


def warp_quad(img: np.ndarray, quad, opencv4: bool = True) -> np.ndarray:
    """Perspective warp of a quad (float32) to an upright ``w x h`` image (see the module docstring)."""
    q = np.asarray(quad, np.float32).reshape(4, 2)
    w = int(max(np.linalg.norm(q[0] - q[1]), np.linalg.norm(q[2] - q[3])))
    h = int(max(np.linalg.norm(q[0] - q[3]), np.linalg.norm(q[1] - q[2])))
    m = cv2.getPerspectiveTransform(q, np.float32([[0, 0], [w, 0], [w, h], [0, h]]))
    if opencv4 and w > 0 and h > 0 and img.dtype == np.uint8:
        return warp_perspective_cubic(img, m, w, h)
    return cv2.warpPerspective(img, m, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)


def turn_if_tall(crop: np.ndarray) -> np.ndarray:
    """A crop with h / w >= TALL_RATIO turned 90 degrees counter-clockwise, else the crop itself."""
    return np.ascontiguousarray(np.rot90(crop)) if crop.shape[0] / float(crop.shape[1]) >= TALL_RATIO else crop


def rotate_crop(img: np.ndarray, quad, opencv4: bool = True) -> np.ndarray:
    """The upright line image of a quad (see the module docstring)."""
    return turn_if_tall(warp_quad(img, quad, opencv4))


def min_area_quad(points) -> np.ndarray:
    """The minimum-area rectangle of ``points`` ([K, 2], truncated to int32) as an ordered quad (order_quad)."""
    return order_quad(cv2.boxPoints(cv2.minAreaRect(np.asarray(points).reshape(-1, 2).astype(np.int32))))
