"""Detector evaluation loop: forward, host NMS, (multi-rank gather), COCO mAP.

``evaluate_detector(model, loader, index, nms)`` -> {"mAP", "mAP50", "mAP75", "mean_top_score",
"num_images"}; ``mean_top_score`` (mean over images of the best detection score) is a continuous
signal that differs between weight sets even when mAP is still 0 early in training.
"""
from __future__ import annotations

import numpy as np
import paddle
import paddle.distributed as dist

from .metrics import coco_evaluate, index_to_coco
from .postprocess import postprocess_batch


def _to_numpy(x):
    return x.numpy() if isinstance(x, paddle.Tensor) else np.asarray(x)


def gather_detections(dets: dict) -> dict:
    """Union of per-rank {im_id: det} dicts (identity on one process)."""
    if not dist.is_initialized() or dist.get_world_size() <= 1:
        return dets
    parts: list = []
    dist.all_gather_object(parts, dets)
    merged = {}
    for part in parts:
        merged.update(part)
    return merged


@paddle.no_grad()
def run_detector(model, loader, nms: dict) -> dict:
    """{im_id: [K, 6] (label, score, x1, y1, x2, y2) in original-image pixels} for every image in ``loader``."""
    was_training = model.training
    model.eval()
    dets = {}
    try:
        for batch in loader:
            boxes, scores = model(batch["image"])
            post = postprocess_batch(_to_numpy(boxes), _to_numpy(scores), _to_numpy(batch["scale_factor"]), **nms)
            for im_id, det in zip(_to_numpy(batch["im_id"]).tolist(), post):
                dets[int(im_id)] = det
    finally:
        if was_training:
            model.train()
    return dets


def evaluate_detector(model, loader, index, nms: dict) -> dict:
    """COCO bbox metrics of ``model`` on ``loader`` (images of the CocoIndex ``index``); see module doc."""
    dets = gather_detections(run_detector(model, loader, nms))
    ids = [r["im_id"] for r in index.records]
    res = coco_evaluate(index_to_coco(index), dets, index.cat_ids, ids)  # the loader's validated gt
    res.pop("log", None)
    tops = [float(d[:, 1].max()) if len(d) else 0.0 for d in (dets.get(i, np.zeros((0, 6))) for i in ids)]
    res["mean_top_score"] = float(np.mean(tops)) if tops else 0.0
    res["num_images"] = len(dets)
    return res
