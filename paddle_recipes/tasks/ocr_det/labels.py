"""PaddleOCR det label lines: ``path<TAB>[{"transcription": "...", "points": [[x, y], ...]}, ...]``.

``"###"`` (or ``"*"``) as transcription marks a region to ignore (masked out in training, "don't
care" in the metric), as PaddleOCR's DetLabelEncode. Problems are reported with ``file:line``:
* the whole line: JSON that does not parse, is not a list of objects with ``points``, or has no
  polygon left -> ``DetLabelError`` (strict) or a counted skip (reason ``malformed_json`` /
  ``no_text``);
* one polygon (``file:line polygon k``), counted and the rest of the line kept:
  fewer than 3 points or non-numeric points (``bad_polygon``, dropped), zero area (``zero_area``,
  dropped), self-intersecting (``self_intersecting``: kept as an ignored region, so its pixels are
  neither text nor background), wholly outside the image (``outside_image``, dropped; checked by
  ``clip_polygons_to_image`` once the image size is known, which also clamps the others into the image).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np
from shapely.geometry import Polygon, box

IGNORE_TEXTS = ("###", "*")


class DetLabelError(ValueError):
    """A det label line cannot be used: ``str()`` is "file:line: reason: detail"."""

    def __init__(self, where: str, reason: str, detail: str, problems=()):
        super().__init__(f"{where}: {reason}: {detail}")
        self.where, self.reason, self.detail = where, reason, detail
        self.problems = list(problems)  # the polygon problems found before giving up on the line


@dataclass
class DetBox:
    points: np.ndarray  # [K, 2] float32 (x, y) pixels
    text: str
    ignore: bool
    index: int = 0  # position in the label line (for "file:line polygon k")


Problems = List[Tuple[str, str]]  # [(where, reason)]


def parse_det_label(label: str, source: str) -> Tuple[List[DetBox], Problems]:
    """Parse the JSON part of a det label line -> (boxes, polygon problems). Raises DetLabelError
    (reason in the message) for malformed JSON or when no usable polygon is left."""
    try:
        items = json.loads(label)
    except json.JSONDecodeError as exc:
        raise DetLabelError(source, "malformed_json", f"{exc.msg} at column {exc.colno}: {label[:60]!r}") from None
    if not isinstance(items, list) or not all(isinstance(i, dict) and "points" in i for i in items):
        raise DetLabelError(source, "malformed_json", f"expected a list of objects with \"points\": {label[:60]!r}")
    boxes, problems = [], []
    for k, item in enumerate(items):
        where = f"{source} polygon {k}"
        text = str(item.get("transcription", ""))
        try:
            pts = np.asarray(item["points"], dtype=np.float32)
        except (TypeError, ValueError):
            problems.append((where, "bad_polygon"))
            continue
        if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] < 3 or not np.isfinite(pts).all():
            problems.append((where, "bad_polygon"))
            continue
        shape = Polygon(pts)
        valid = shape.is_valid
        if (shape.area if valid else shape.buffer(0).area) <= 0:
            problems.append((where, "zero_area"))
            continue
        ignore = text in IGNORE_TEXTS
        if not valid:
            problems.append((where, "self_intersecting"))
            ignore = True
        boxes.append(DetBox(pts, text, ignore, k))
    if not boxes:
        raise DetLabelError(source, "no_text", "no usable polygon in the label", problems)
    return boxes, problems


def clip_polygons_to_image(boxes: Sequence[DetBox], h: int, w: int, source: str) -> Tuple[List[DetBox], Problems]:
    """Drop the polygons that do not overlap the h x w image (problem ``outside_image``) and clamp the vertices of
    the others into [0, w] x [0, h] (as PaddleOCR's MakeShrinkMap clamps them), so no coordinate is larger than the
    image (a 1e30 or 20000-px polygon on a 128-px page cannot overflow pyclipper or size a label map); -> (kept,
    problems)."""
    frame = box(0, 0, w, h)
    kept, problems = [], []
    for b in boxes:
        if Polygon(b.points).buffer(0).intersection(frame).area <= 0:
            problems.append((f"{source} polygon {b.index}", "outside_image"))
        else:
            pts = np.clip(b.points, 0, np.array([w, h], np.float32))
            kept.append(DetBox(pts, b.text, b.ignore, b.index))
    return kept, problems
