"""Post-processing: score threshold, per-class NMS, top-k, and rescale to original image size.

Runs on host (numpy) so the exported graph stays a plain conv net (boxes + scores) that Paddle
Inference / TensorRT handle with dynamic shapes; the same function serves eval, predict and
the inference predictor.
"""
from __future__ import annotations

import numpy as np


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Greedy NMS over xyxy ``boxes`` [N, 4]; returns kept indices in descending score order."""
    order = np.argsort(-scores, kind="stable")
    x1, y1, x2, y2 = boxes.T
    areas = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0, None)
        h = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0, None)
        inter = w * h
        iou = inter / (areas[i] + areas[rest] - inter + 1e-9)
        order = rest[iou <= iou_threshold]
    return np.asarray(keep, dtype=np.int64)


def multiclass_nms(boxes: np.ndarray, scores: np.ndarray, score_threshold: float = 0.01,
                   nms_top_k: int = 1000, iou_threshold: float = 0.7, keep_top_k: int = 100) -> np.ndarray:
    """One image: boxes [L, 4], scores [L, C] -> detections [K, 6] = (class, score, x1, y1, x2, y2).

    Candidates above ``score_threshold`` (each box x class pair separately), the ``nms_top_k`` best
    are NMSed per class (class-offset trick), then the ``keep_top_k`` best are returned.
    """
    idx, cls = np.nonzero(scores > score_threshold)
    if idx.size == 0:
        return np.zeros((0, 6), dtype=np.float32)
    sc = scores[idx, cls]
    if sc.size > nms_top_k:
        top = np.argpartition(-sc, nms_top_k - 1)[:nms_top_k]
        idx, cls, sc = idx[top], cls[top], sc[top]
    b = boxes[idx].astype(np.float64)
    offset = (np.abs(b).max() + 1.0) * cls[:, None]
    keep = nms(b + offset, sc, iou_threshold)[:keep_top_k]
    return np.concatenate([cls[keep, None].astype(np.float32), sc[keep, None].astype(np.float32),
                           b[keep].astype(np.float32)], axis=1)


def postprocess_batch(boxes: np.ndarray, scores: np.ndarray, scale_factors: np.ndarray, **nms_kwargs) -> list:
    """Batch version: boxes [B, L, 4] in network-input pixels, scale_factors [B, 2] = (sy, sx) from
    original to input; returns a list of [K, 6] arrays with boxes in original-image pixels."""
    out = []
    for b, s, sf in zip(boxes, scores, scale_factors):
        det = multiclass_nms(b, s, **nms_kwargs)
        det[:, 2:] /= np.array([sf[1], sf[0], sf[1], sf[0]], dtype=np.float32)
        out.append(det)
    return out
