"""DB training labels with PaddleOCR's semantics (its ``MakeShrinkMap`` and ``MakeBorderMap``).

Polygons are float arrays [K, 2] of (x, y) pixels on the (cropped/resized) training image.

* ``make_shrink_map``: polygons are clipped to the image; those with |area| < 1, marked ignore, or
  whose box is thinner than ``min_text_size`` px are filled 0 in the mask (and become ignored); the
  others are shrunk with pyclipper by D = A (1 - r^2) / L (A area, L perimeter, r ``shrink_ratio``;
  r = 0.4, 0.8 tried in turn until one piece comes out) and filled 1 in the shrink map. An empty
  shrink result is ignored too. Returns (shrink_map, shrink_mask, ignore_tags) as float32 [H, W].
* ``make_border_map``: each cared polygon is dilated by the same D; inside the dilated polygon
  (threshold mask = 1) the threshold map is 1 - min(1, distance to the nearest edge / D) (the DB
  paper's point-to-edge distance, as PaddleOCR computes it), the max over polygons, then scaled to
  [``thresh_min``, ``thresh_max``]. Returns (threshold_map, threshold_mask) as float32 [H, W]. Distances are only
  computed on the canvas, so memory stays O(H x W) for any polygon; coordinates beyond 4 canvas sizes are clamped.
Defaults as PaddleOCR's det YAMLs: shrink_ratio 0.4, min_text_size 8, thresh 0.3 .. 0.7.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import cv2
import numpy as np
import pyclipper
from shapely.geometry import Polygon


def signed_area(poly: np.ndarray) -> float:
    """Shoelace area, positive for clockwise polygons in image coordinates (y down)."""
    q = np.roll(poly, 1, axis=0)
    return float((poly[:, 0] * q[:, 1] - poly[:, 1] * q[:, 0]).sum() / 2.0)


def offset_polygon(poly: np.ndarray, distance: float) -> List[list]:
    """pyclipper round-joined offset of a closed polygon (negative distance shrinks)."""
    off = pyclipper.PyclipperOffset()
    off.AddPath([tuple(p) for p in poly], pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
    return off.Execute(distance)


def shrink_distance(poly: np.ndarray, ratio: float) -> float:
    shape = Polygon(poly)
    return shape.area * (1 - ratio ** 2) / shape.length


def make_shrink_map(h: int, w: int, polys: Sequence[np.ndarray], ignore_tags: Sequence[bool],
                    shrink_ratio: float = 0.4, min_text_size: float = 8
                    ) -> Tuple[np.ndarray, np.ndarray, List[bool]]:
    gt = np.zeros((h, w), dtype=np.float32)
    mask = np.ones((h, w), dtype=np.float32)
    ignore = [bool(t) for t in ignore_tags]
    for i, poly in enumerate(polys):
        poly = np.array(poly)
        poly[:, 0] = np.clip(poly[:, 0], 0, w - 1)
        poly[:, 1] = np.clip(poly[:, 1], 0, h - 1)
        area = signed_area(poly)
        ignore[i] = ignore[i] or abs(area) < 1
        if area > 0:
            poly = poly[::-1]
        extent = poly.max(0) - poly.min(0)
        shrunk = []
        if not ignore[i] and min(extent) >= min_text_size:
            for ratio in np.arange(shrink_ratio, 1, shrink_ratio):
                shrunk = offset_polygon(poly, -shrink_distance(poly, ratio))
                if len(shrunk) == 1:
                    break
        if not shrunk:
            cv2.fillPoly(mask, poly.astype(np.int32)[np.newaxis], 0)
            ignore[i] = True
            continue
        for piece in shrunk:
            cv2.fillPoly(gt, [np.array(piece).reshape(-1, 2).astype(np.int32)], 1)
    return gt, mask, ignore


def _min_square_edge_distance(xs, ys, poly):
    """Squared distance of every pixel (xs [1, W], ys [H, 1]) to the nearest edge of ``poly`` [K, 2], DB's formula per
    edge (p1, p2): where the angle at the pixel between p1 and p2 is acute, the distance to the nearer end point,
    else the distance to the edge's line. Squares throughout: each vertex's map once (shared by its two edges),
    the line's as cross^2 / length^2, the min over edges, one sqrt by the caller (7.0 instead of 9.0 ms for a
    640 x 640 crop's border map, the same values; tests/ocr_det/test_det_transform_fast.py checks the law-of-cosines
    form sqrt(d1 d2 sin^2 / d12) of PaddleOCR's MakeBorderMap on random polygons)."""
    to_vertex = [np.square(xs - px) + np.square(ys - py) for px, py in poly]
    best = None
    for i, (p1, p2) in enumerate(zip(poly, np.roll(poly, -1, axis=0))):
        ax, ay = xs - p1[0], ys - p1[1]
        vx, vy = p2[0] - p1[0], p2[1] - p1[1]
        d1, d2 = to_vertex[i], to_vertex[(i + 1) % len(poly)]
        acute = d1 > (ax * vx) + (ay * vy)
        out = (ay * vx) - (ax * vy)
        np.square(out, out=out)
        with np.errstate(divide="ignore", invalid="ignore"):
            out /= vx * vx + vy * vy
        np.copyto(out, np.fmin(d1, d2), where=acute)
        best = out if best is None else np.fmin(best, out, out=best)
    return best


def _draw_border(poly: np.ndarray, canvas: np.ndarray, mask: np.ndarray, shrink_ratio: float) -> None:
    if Polygon(poly).area <= 0:
        return
    distance = shrink_distance(poly, shrink_ratio)
    padded = np.array(offset_polygon(poly, distance)[0])
    cv2.fillPoly(mask, [padded.astype(np.int32)], 1.0)
    xmin, ymin = padded.min(0)
    xmax, ymax = padded.max(0)
    h, w = canvas.shape
    x0, x1 = max(0, xmin), min(xmax, w - 1)
    y0, y1 = max(0, ymin), min(ymax, h - 1)
    if x0 > x1 or y0 > y1:  # the dilated polygon misses the canvas
        return
    # Distances only over the part of the dilated polygon's box that is on the canvas (memory: the canvas at
    # most, whatever the polygon's size), the min over edges taken one edge at a time, scaled and clipped once.
    xs = np.arange(x0 - xmin, x1 - xmin + 1, dtype=np.float64)[None, :]
    ys = np.arange(y0 - ymin, y1 - ymin + 1, dtype=np.float64)[:, None]
    local = np.array(poly, np.float64) - (xmin, ymin)
    dist = np.sqrt(_min_square_edge_distance(xs, ys, local))
    with np.errstate(divide="ignore", invalid="ignore"):
        dist /= distance
    np.clip(dist, 0, 1, out=dist)
    near = 1 - dist.astype(np.float32)
    region = canvas[y0:y1 + 1, x0:x1 + 1]
    np.fmax(near, region, out=region)


def make_border_map(h: int, w: int, polys: Sequence[np.ndarray], ignore_tags: Sequence[bool],
                    shrink_ratio: float = 0.4, thresh_min: float = 0.3, thresh_max: float = 0.7
                    ) -> Tuple[np.ndarray, np.ndarray]:
    canvas = np.zeros((h, w), dtype=np.float32)
    mask = np.zeros((h, w), dtype=np.float32)
    bound = 4.0 * max(h, w) + 64  # px: coordinates clamped to +-bound before pyclipper (its integers overflow)
    for poly, ignore in zip(polys, ignore_tags):
        if not ignore:
            _draw_border(np.clip(np.array(poly, np.float64), -bound, bound), canvas, mask, shrink_ratio)
    return canvas * (thresh_max - thresh_min) + thresh_min, mask
