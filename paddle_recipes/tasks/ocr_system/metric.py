"""End-to-end OCR metric on labelled pages: line-level precision / recall / F with exact text, plus 1 - NED.

Per image, predicted lines and GT polygons are matched one to one, greedily by decreasing IoU, pairs with
IoU >= ``iou`` (0.5) only. GT lines labelled ``###`` / ``*`` are don't-care: a prediction matched to one is
left out of every count. A matched pair is a hit when the predicted text equals the GT text exactly.
precision = hits / predictions, recall = hits / GT lines, F = 2PR / (P + R) (0 when both are 0).
``one_minus_ned``: mean over the matched GT lines of 1 - ED(pred, gt) / max(len(pred), len(gt), 1);
``one_minus_ned_all`` counts unmatched GT lines as 0.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np
from shapely.geometry import Polygon

from ..ocr_rec.metrics import edit_distance
from ..ocr_det.labels import IGNORE_TEXTS


def _poly(points) -> Polygon:
    p = Polygon(np.asarray(points, np.float64).reshape(-1, 2))
    return p if p.is_valid else p.buffer(0)


def polygon_iou(a, b) -> float:
    pa, pb = _poly(a), _poly(b)
    union = pa.union(pb).area
    return float(pa.intersection(pb).area / union) if union > 0 else 0.0


def match_lines(preds: Sequence[Tuple[object, str]], gts: Sequence[Tuple[object, str]], iou: float = 0.5
                ) -> List[Tuple[int, int]]:
    """Greedy one-to-one (pred index, gt index) pairs with IoU >= ``iou``, highest IoU first."""
    pairs = sorted(((polygon_iou(p, g), i, j) for i, (p, _) in enumerate(preds) for j, (g, _) in enumerate(gts)),
                   key=lambda t: (-t[0], t[1], t[2]))
    used_p, used_g, out = set(), set(), []
    for v, i, j in pairs:
        if v < iou:
            break
        if i not in used_p and j not in used_g:
            used_p.add(i), used_g.add(j)
            out.append((i, j))
    return out


class E2EMetric:
    """Accumulate images with ``update(preds, gts)``, each a list of (points, text); ``compute()``."""

    def __init__(self, iou: float = 0.5):
        self.iou = iou
        self.n = {"images": 0, "gt": 0, "pred": 0, "hits": 0, "matched": 0}
        self.ned_sum = 0.0

    def update(self, preds: Sequence[Tuple[object, str]], gts: Sequence[Tuple[object, str]]) -> List[Tuple[int, int]]:
        pairs = match_lines(preds, gts, self.iou)
        dont_care = [(i, j) for i, j in pairs if gts[j][1] in IGNORE_TEXTS]
        care = [(i, j) for i, j in pairs if gts[j][1] not in IGNORE_TEXTS]
        self.n["images"] += 1
        self.n["gt"] += sum(t not in IGNORE_TEXTS for _, t in gts)
        self.n["pred"] += len(preds) - len(dont_care)
        self.n["matched"] += len(care)
        for i, j in care:
            p, g = preds[i][1], gts[j][1]
            self.n["hits"] += p == g
            self.ned_sum += 1.0 - edit_distance(p, g) / max(len(p), len(g), 1)
        return care

    def compute(self) -> Dict[str, float]:
        n = self.n
        p = n["hits"] / n["pred"] if n["pred"] else 0.0
        r = n["hits"] / n["gt"] if n["gt"] else 0.0
        return {"precision": p, "recall": r, "f": 2 * p * r / (p + r) if p + r else 0.0,
                "one_minus_ned": self.ned_sum / n["matched"] if n["matched"] else 0.0,
                "one_minus_ned_all": self.ned_sum / n["gt"] if n["gt"] else 0.0,
                "det_recall": n["matched"] / n["gt"] if n["gt"] else 0.0, **n}
