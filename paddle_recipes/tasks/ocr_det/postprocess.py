"""DB post-processing with PaddleOCR's semantics (its ``DBPostProcess``).

The probability map is thresholded at ``thresh`` (optionally dilated by 2x2), contours are found,
and for each of the first ``max_candidates`` contours:
* ``box_type`` 'quad': its min-area rectangle (skip if the short side < 3 px), score = mean
  probability inside the rectangle (``score_mode`` 'fast') or inside the contour ('slow'); skip if
  below ``box_thresh``; expand by D = A * ``unclip_ratio`` / L with pyclipper (skip if it splits),
  take the min-area rectangle again (skip if the short side < 5 px); 4 points ordered
  top-left, top-right, bottom-right, bottom-left;
* 'poly': the contour simplified with epsilon = 0.002 x perimeter (skip if < 4 points), fast score,
  expanded the same way (no rectangle), every point kept.
Coordinates are scaled from the map to the source image (``src_w``/``src_h``), rounded and clipped
to [0, src]. Defaults as PaddleOCR's class: thresh 0.3, box_thresh 0.7, max_candidates 1000,
unclip_ratio 2.0 (its det YAMLs set box_thresh 0.6, unclip_ratio 1.5).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import cv2
import numpy as np

from .label_maps import offset_polygon
from shapely.geometry import Polygon

MIN_SIZE = 3  # px on the map: shorter candidates are dropped (5 after unclipping)


def mini_box(contour) -> Tuple[List[np.ndarray], float]:
    """Min-area rectangle as 4 points (tl, tr, br, bl) and its short side."""
    rect = cv2.minAreaRect(contour)
    pts = sorted(list(cv2.boxPoints(rect)), key=lambda p: p[0])
    left = (pts[0], pts[1]) if pts[1][1] > pts[0][1] else (pts[1], pts[0])  # (top, bottom)
    right = (pts[2], pts[3]) if pts[3][1] > pts[2][1] else (pts[3], pts[2])
    return [left[0], right[0], right[1], left[1]], min(rect[1])


def _mean_in(prob: np.ndarray, pts: np.ndarray, lo, hi) -> float:
    h, w = prob.shape
    xmin, ymin = min(max(int(lo[0]), 0), w - 1), min(max(int(lo[1]), 0), h - 1)  # np.clip of scalars, in ints
    xmax, ymax = min(max(int(hi[0]), 0), w - 1), min(max(int(hi[1]), 0), h - 1)
    mask = np.zeros((ymax - ymin + 1, xmax - xmin + 1), dtype=np.uint8)
    shifted = (pts - np.asarray([xmin, ymin], pts.dtype)).astype("int32")  # float points: truncated, as before
    cv2.fillPoly(mask, shifted.reshape(1, -1, 2), 1)
    return cv2.mean(prob[ymin:ymax + 1, xmin:xmax + 1], mask)[0]


def score_fast(prob: np.ndarray, box: np.ndarray) -> float:
    """Mean probability inside the polygon ``box`` (float points; bbox floor/ceil)."""
    box = np.asarray(box)
    lo = np.floor(box.min(0)).astype("int32")
    hi = np.ceil(box.max(0)).astype("int32")
    return _mean_in(prob, box.copy(), lo, hi)


def score_slow(prob: np.ndarray, contour: np.ndarray) -> float:
    """Mean probability inside the contour itself (integer points)."""
    pts = np.reshape(contour, (-1, 2)).copy()
    return _mean_in(prob, pts, pts.min(0), pts.max(0))


def unclip(box, unclip_ratio: float):
    poly = Polygon(box)
    return offset_polygon(np.asarray(box), poly.area * unclip_ratio / poly.length)


@dataclass
class DBPostProcess:
    """``__call__(maps [B, 1, H, W] or [B, H, W] numpy, shape_list [B, 4] = (src_h, src_w, ratio_h,
    ratio_w))`` -> per image ``{"points": boxes, "scores": scores}``; 'quad' boxes are an int32 array
    [N, 4, 2], 'poly' boxes a list of point lists."""
    thresh: float = 0.3
    box_thresh: float = 0.7
    max_candidates: int = 1000
    unclip_ratio: float = 2.0
    use_dilation: bool = False
    score_mode: str = "fast"
    box_type: str = "quad"

    def __post_init__(self):
        if self.score_mode not in ("fast", "slow"):
            raise ValueError(f"DBPostProcess.score_mode: must be 'fast' or 'slow', got {self.score_mode!r}")
        if self.box_type not in ("quad", "poly"):
            raise ValueError(f"DBPostProcess.box_type: must be 'quad' or 'poly', got {self.box_type!r}")

    def _contours(self, bitmap):
        """findContours of the mask (bool or 0/1 uint8): OpenCV takes any non-zero pixel as 1, so the 0/1 bytes
        give the contours of PaddleOCR's 0/255 image without making it."""
        bitmap = np.ascontiguousarray(bitmap)
        return cv2.findContours(bitmap.view(np.uint8) if bitmap.dtype == bool else bitmap.astype(np.uint8),
                                cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)[-2]

    def _to_src(self, box, shape, src_w, src_h):
        """Points [..., 2] from the map's pixels to the source image's, rounded and clipped (elementwise)."""
        box = np.array(box)
        h, w = shape
        box[..., 0] = np.clip(np.round(box[..., 0] / w * src_w), 0, src_w)
        box[..., 1] = np.clip(np.round(box[..., 1] / h * src_h), 0, src_h)
        return box

    def quads(self, prob, bitmap, src_w, src_h):
        boxes, scores = [], []
        for contour in self._contours(bitmap)[:self.max_candidates]:
            points, sside = mini_box(contour)
            if sside < MIN_SIZE:
                continue
            points = np.array(points)
            score = score_fast(prob, points.reshape(-1, 2)) if self.score_mode == "fast" else score_slow(prob, contour)
            if self.box_thresh > score:
                continue
            expanded = unclip(points, self.unclip_ratio)
            if len(expanded) > 1:
                continue
            box, sside = mini_box(np.array(expanded).reshape(-1, 1, 2))
            if sside < MIN_SIZE + 2:
                continue
            boxes.append(box)
            scores.append(score)
        if not boxes:
            return np.array(boxes, dtype="int32"), scores
        return self._to_src(np.array(boxes), bitmap.shape, src_w, src_h).astype("int32"), scores  # all at once

    def polys(self, prob, bitmap, src_w, src_h):
        boxes, scores = [], []
        for contour in self._contours(bitmap)[:self.max_candidates]:
            approx = cv2.approxPolyDP(contour, 0.002 * cv2.arcLength(contour, True), True)
            points = approx.reshape((-1, 2))
            if points.shape[0] < 4:
                continue
            score = score_fast(prob, points.reshape(-1, 2))
            if self.box_thresh > score:
                continue
            expanded = unclip(points, self.unclip_ratio)
            if len(expanded) != 1:
                continue
            box = np.array(expanded).reshape(-1, 2)
            if mini_box(box.reshape((-1, 1, 2)))[1] < MIN_SIZE + 2:
                continue
            boxes.append(self._to_src(box, bitmap.shape, src_w, src_h).tolist())
            scores.append(score)
        return boxes, scores

    def __call__(self, maps, shape_list: Sequence[Sequence[float]]) -> List[Dict]:
        maps = np.asarray(maps)
        prob = maps[:, 0] if maps.ndim == 4 else maps
        segmentation = prob > self.thresh
        out = []
        for i in range(prob.shape[0]):
            src_h, src_w = shape_list[i][0], shape_list[i][1]
            mask = segmentation[i]
            if self.use_dilation:
                mask = cv2.dilate(mask.astype(np.uint8), np.array([[1, 1], [1, 1]]))
            find = self.polys if self.box_type == "poly" else self.quads
            boxes, scores = find(prob[i], mask, src_w, src_h)
            out.append({"points": boxes, "scores": scores})
        return out
