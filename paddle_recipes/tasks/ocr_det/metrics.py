"""Detection metric with PaddleOCR's semantics (its ``DetMetric`` / ``DetectionIoUEvaluator``).

Per image: ground-truth and detected polygons that are not valid shapely polygons (self-intersecting,
< 3 points, ...) are skipped. A detection covering more than half of its own area with an ignored
("###") ground truth is "don't care". Then, greedily in (gt, det) index order, a cared gt and a cared
det are matched when IoU > 0.5, each at most once. Over the dataset:
recall = matched / cared gts, precision = matched / cared dets, hmean = their harmonic mean
(0 when a denominator is 0).
"""
from __future__ import annotations

from typing import Dict, List, Sequence

from shapely.geometry import Polygon


def evaluate_image(gts: Sequence[Sequence], gt_ignore: Sequence[bool], dets: Sequence[Sequence],
                   iou_constraint: float = 0.5, area_precision_constraint: float = 0.5) -> Dict[str, int]:
    """-> {"gtCare", "detCare", "detMatched"} for one image (polygons as point lists)."""
    gt_pols, dont_care_gt = [], []
    for points, ignore in zip(gts, gt_ignore):
        if Polygon(points).is_valid:
            gt_pols.append(Polygon(points))
            if ignore:
                dont_care_gt.append(len(gt_pols) - 1)
    det_pols, dont_care_det = [], []
    for points in dets:
        pol = Polygon(points)
        if not pol.is_valid:
            continue
        det_pols.append(pol)
        for g in dont_care_gt:
            covered = 0 if pol.area == 0 else gt_pols[g].intersection(pol).area / pol.area
            if covered > area_precision_constraint:
                dont_care_det.append(len(det_pols) - 1)
                break
    matched = 0
    gt_used, det_used = set(), set()
    for g, gp in enumerate(gt_pols):
        for d, dp in enumerate(det_pols):
            if g in gt_used or d in det_used or g in dont_care_gt or d in dont_care_det:
                continue
            if dp.intersection(gp).area / dp.union(gp).area > iou_constraint:
                gt_used.add(g)
                det_used.add(d)
                matched += 1
    return {"gtCare": len(gt_pols) - len(dont_care_gt), "detCare": len(det_pols) - len(dont_care_det),
            "detMatched": matched}


def combine_results(results: Sequence[Dict[str, int]]) -> Dict[str, float]:
    gt = sum(r["gtCare"] for r in results)
    det = sum(r["detCare"] for r in results)
    matched = sum(r["detMatched"] for r in results)
    recall = 0 if gt == 0 else float(matched) / gt
    precision = 0 if det == 0 else float(matched) / det
    hmean = 0 if recall + precision == 0 else 2 * recall * precision / (recall + precision)
    return {"precision": precision, "recall": recall, "hmean": hmean}


class DetMetric:
    """Accumulates images: ``update(det_points_per_image, gt_polys_per_image, ignore_tags_per_image)``;
    ``get_metric()`` -> {"precision", "recall", "hmean"} and resets. ``main_indicator``: 'hmean'."""

    main_indicator = "hmean"

    def __init__(self):
        self.results: List[Dict[str, int]] = []

    def update(self, dets_batch, gts_batch, ignores_batch) -> None:
        for dets, gts, ignores in zip(dets_batch, gts_batch, ignores_batch):
            self.results.append(evaluate_image(gts, ignores, dets))

    def get_metric(self) -> Dict[str, float]:
        out = combine_results(self.results)
        self.results = []
        return out
