"""Post-processing on the host (numpy): rescale to the original image, then Paddle's ``multiclass_nms3``
semantics (what ppdet's PP-YOLOE head runs), so eval, predict and the inference predictor give the
detections ppdet gives on the same raw outputs.

The rules followed (Paddle's CPU kernel ``multiclass_nms3``, as ppdet's ``MultiClassNMS`` calls it):

- per class (``background_label`` skipped, -1 = none): candidates with score > ``score_threshold``, sorted
  by score descending (ties: lower anchor index first), the first ``nms_top_k`` of them (-1 = all) go
  through greedy NMS; a candidate is kept when its IoU with every kept box of the class is <= the IoU
  threshold. IoU in float32: areas are w * h (``normalized``) or (w + 1) * (h + 1), inverted boxes have
  area 0, disjoint boxes IoU 0, a zero union suppresses.
- across classes: when more than ``keep_top_k`` (-1 = no cap) survive, the ``keep_top_k`` best scores are
  kept (ties: lower class first, then NMS order).
- output order: class ascending, then score descending within a class (as ppdet's ``bbox`` rows).

ppdet divides the boxes by the scale factor before NMS (``PPYOLOEHead.post_process``), and so does
``postprocess_batch``.
"""
from __future__ import annotations

import numpy as np


def pairwise_iou(a: np.ndarray, b: np.ndarray, normalized: bool = True) -> np.ndarray:
    """IoU [N, M] of xyxy boxes ``a`` [N, 4] and ``b`` [M, 4], float32, as Paddle's JaccardOverlap (module doc)."""
    one = np.float32(0.0 if normalized else 1.0)

    def area(x):
        w, h = x[:, 2] - x[:, 0], x[:, 3] - x[:, 1]
        return np.where((w < 0) | (h < 0), np.float32(0.0), (w + one) * (h + one))

    a, b = a[:, None, :], b[None, :, :]
    iw = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + one
    ih = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + one
    inter = iw * ih
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area(a[:, 0])[:, None] + area(b[0])[None, :] - inter)
    disjoint = (b[..., 0] > a[..., 2]) | (b[..., 2] < a[..., 0]) | (b[..., 1] > a[..., 3]) | (b[..., 3] < a[..., 1])
    return np.where(disjoint, np.float32(0.0), iou)


def greedy_nms(boxes: np.ndarray, groups: np.ndarray, iou_threshold: float, normalized: bool = True,
               limit: int = -1, chunk: int = 256) -> np.ndarray:
    """Greedy NMS over ``boxes`` [N, 4] already in processing order (best first), separately within each value of
    ``groups`` [N]: a box is kept when its IoU with every kept box of its group is <= the threshold (a NaN IoU,
    zero union, suppresses). Stops after ``limit`` kept boxes (-1 = none). Returns kept positions, in order.
    Works in chunks: IoU against the kept boxes and within the chunk as matrices, one cheap pass per chunk."""
    thr = np.float32(iou_threshold)
    kept: list[int] = []
    for start in range(0, len(boxes), chunk):
        cb, cg = boxes[start:start + chunk], groups[start:start + chunk]
        sup = np.zeros(len(cb), dtype=bool)
        if kept:
            kb, kg = boxes[kept], groups[kept]
            sup = ((~(pairwise_iou(kb, cb, normalized) <= thr)) & (kg[:, None] == cg[None, :])).any(axis=0)
        within = ~(pairwise_iou(cb, cb, normalized) <= thr) & (cg[:, None] == cg[None, :])
        within &= np.triu(np.ones_like(within), k=1)  # only later boxes of the chunk are suppressed
        for j in range(len(cb)):
            if sup[j]:
                continue
            kept.append(start + j)
            if len(kept) == limit:
                return np.asarray(kept, dtype=np.int64)
            sup |= within[j]
    return np.asarray(kept, dtype=np.int64)


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, normalized: bool = True) -> np.ndarray:
    """Greedy NMS over xyxy ``boxes`` [N, 4]: kept indices in descending score order (ties: lower index first)."""
    order = np.argsort(-np.asarray(scores, np.float32), kind="stable")
    boxes = np.asarray(boxes, np.float32)[order]
    return order[greedy_nms(boxes, np.zeros(len(order), np.int64), iou_threshold, normalized)]


def multiclass_nms(boxes: np.ndarray, scores: np.ndarray, score_threshold: float = 0.01, nms_top_k: int = 1000,
                   iou_threshold: float = 0.7, keep_top_k: int = 100, normalized: bool = True,
                   background_label: int = -1) -> np.ndarray:
    """One image: boxes [L, 4] xyxy, scores [L, C] -> detections [K, 6] float32 = (class, score, x1, y1, x2, y2).

    nms_top_k: candidates per class entering NMS (-1 = all); keep_top_k: detections per image (-1 = all);
    order and tie rules: see the module doc. All classes are processed together in the order the keep_top_k cut
    ranks them (score descending, then class, then anchor index), NMS within each class, stopping at keep_top_k
    kept: the per-class results are unchanged by the interleaving, and the first keep_top_k kept are the ones
    Paddle's cut keeps.
    """
    boxes, scores = np.asarray(boxes, np.float32), np.asarray(scores, np.float32)
    passed = scores > np.float32(score_threshold)
    if 0 <= background_label < scores.shape[1]:
        passed[:, background_label] = False
    if nms_top_k > -1:  # rank of each (box, class) pair inside its class, ties: lower index first
        rank = np.empty(scores.shape, np.int64)
        np.put_along_axis(rank, np.argsort(-scores, axis=0, kind="stable"), np.arange(len(scores))[:, None], axis=0)
        passed &= rank < nms_top_k
    idx, cls = np.nonzero(passed)
    if idx.size == 0:
        return np.zeros((0, 6), dtype=np.float32)
    sc = scores[idx, cls]
    order = np.lexsort((idx, cls, -sc))
    idx, cls, sc = idx[order], cls[order], sc[order]
    kept = greedy_nms(boxes[idx], cls, iou_threshold, normalized, limit=keep_top_k if keep_top_k > -1 else -1)
    kept = kept[np.argsort(cls[kept], kind="stable")]  # class-major, score order within a class
    return np.concatenate([cls[kept, None].astype(np.float32), sc[kept, None], boxes[idx[kept]]], axis=1)


def postprocess_batch(boxes: np.ndarray, scores: np.ndarray, scale_factors: np.ndarray, **nms_kwargs) -> list:
    """Batch version: boxes [B, L, 4] in network-input pixels, scores [B, L, C], scale_factors [B, 2] = (sy, sx)
    from original to input; the boxes are divided by the scale first (original-image pixels, float32, as
    ppdet), then ``multiclass_nms``; returns a list of [K, 6] arrays."""
    out = []
    for b, s, sf in zip(boxes, scores, np.asarray(scale_factors, np.float32)):
        b = np.asarray(b, np.float32) / np.array([sf[1], sf[0], sf[1], sf[0]], dtype=np.float32)
        out.append(multiclass_nms(b, s, **nms_kwargs))
    return out
