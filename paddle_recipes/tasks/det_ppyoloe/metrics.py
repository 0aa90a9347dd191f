"""COCO box evaluation via pycocotools (its console output is captured, not printed).

``coco_evaluate(ann_file, detections, cat_ids)`` -> {"mAP": AP@[.5:.95], "mAP50": AP@.5, "mAP75": ...}
with ``detections`` as {im_id: [K, 6] array (label, score, x1, y1, x2, y2) in original pixels}.
"""
from __future__ import annotations

import contextlib
import io

import numpy as np


def detections_to_coco(detections: dict, cat_ids: list) -> list:
    """Convert {im_id: [K, 6]} (contiguous labels) into COCO result dicts (xywh, category ids)."""
    results = []
    for im_id, det in detections.items():
        for label, score, x1, y1, x2, y2 in np.asarray(det, dtype=np.float64).reshape(-1, 6):
            results.append({"image_id": int(im_id), "category_id": int(cat_ids[int(label)]),
                            "bbox": [x1, y1, x2 - x1, y2 - y1], "score": float(score)})
    return results


def index_to_coco(index) -> dict:
    """The ground truth the loader trains on (a validated CocoIndex) as a COCO dict: skipped images and
    boxes are absent, clipped boxes are clipped, ``area`` is the box area and annotation ids are new,
    so eval never scores what the loader rejected (and needs no ``area``/``id`` in the json)."""
    images, anns = [], []
    for rec in index.records:
        images.append({"id": int(rec["im_id"]), "width": int(rec["width"]), "height": int(rec["height"]),
                       "file_name": str(rec["file"])})
        for (x1, y1, x2, y2), label in zip(np.asarray(rec["boxes"]).reshape(-1, 4).tolist(), rec["classes"]):
            w, h = x2 - x1, y2 - y1
            anns.append({"id": len(anns) + 1, "image_id": int(rec["im_id"]), "iscrowd": 0, "area": w * h,
                         "category_id": int(index.cat_ids[int(label)]), "bbox": [x1, y1, w, h]})
    cats = [{"id": int(c), "name": n} for c, n in zip(index.cat_ids, index.cat_names)]
    return {"images": images, "annotations": anns, "categories": cats}


def coco_evaluate(ann_file, detections: dict, cat_ids: list, image_ids=None) -> dict:
    """Run COCOeval (bbox) restricted to ``image_ids`` (default: the images in ``detections``).

    ``ann_file``: a COCO json path, or a COCO dict (e.g. ``index_to_coco(index)``).
    Returns mAP (AP@[.5:.95]), mAP50, mAP75 in [0, 1]; all zeros when there are no detections.
    The pycocotools log is returned under ``"log"`` instead of being printed.
    """
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        if isinstance(ann_file, dict):
            gt = COCO()
            gt.dataset = ann_file
            gt.createIndex()
        else:
            gt = COCO(ann_file)
        results = detections_to_coco(detections, cat_ids)
        ids = sorted(int(i) for i in (image_ids if image_ids is not None else detections.keys()))
        if not results:
            return {"mAP": 0.0, "mAP50": 0.0, "mAP75": 0.0, "log": "no detections"}
        dt = gt.loadRes(results)
        ev = COCOeval(gt, dt, "bbox")
        ev.params.imgIds = ids
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    stats = ev.stats
    return {"mAP": float(max(stats[0], 0.0)), "mAP50": float(max(stats[1], 0.0)),
            "mAP75": float(max(stats[2], 0.0)), "log": buf.getvalue()}
