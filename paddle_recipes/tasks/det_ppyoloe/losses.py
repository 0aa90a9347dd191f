"""PP-YOLOE losses: varifocal (classification), GIoU (box) and distribution focal (DFL).

All return *sums* (per element weighting included); the head divides by the total
assigned score so the scale does not depend on the number of positives.
"""
from __future__ import annotations

import paddle
import paddle.nn.functional as F

EPS = 1e-9


def varifocal_loss(logits, target_scores, labels_one_hot, alpha: float = 0.75, gamma: float = 2.0):
    """Varifocal loss summed over all elements.

    Positives (``labels_one_hot`` = 1) are weighted by their IoU-aware target q;
    negatives by ``alpha * p ** gamma``. BCE is against the soft target q.
    """
    p = F.sigmoid(logits)
    weight = alpha * p.pow(gamma) * (1 - labels_one_hot) + target_scores * labels_one_hot
    bce = F.binary_cross_entropy_with_logits(logits, target_scores, reduction="none")
    return (bce * weight.detach()).sum()


def giou(boxes1, boxes2, eps: float = EPS):
    """Generalised IoU of matching xyxy boxes [..., 4] -> [...]; in [-1, 1]."""
    x1 = paddle.maximum(boxes1[..., 0], boxes2[..., 0])
    y1 = paddle.maximum(boxes1[..., 1], boxes2[..., 1])
    x2 = paddle.minimum(boxes1[..., 2], boxes2[..., 2])
    y2 = paddle.minimum(boxes1[..., 3], boxes2[..., 3])
    inter = (x2 - x1).clip(min=0) * (y2 - y1).clip(min=0)
    a1 = (boxes1[..., 2] - boxes1[..., 0]) * (boxes1[..., 3] - boxes1[..., 1])
    a2 = (boxes2[..., 2] - boxes2[..., 0]) * (boxes2[..., 3] - boxes2[..., 1])
    union = a1 + a2 - inter + eps
    iou = inter / union
    cw = paddle.maximum(boxes1[..., 2], boxes2[..., 2]) - paddle.minimum(boxes1[..., 0], boxes2[..., 0])
    ch = paddle.maximum(boxes1[..., 3], boxes2[..., 3]) - paddle.minimum(boxes1[..., 1], boxes2[..., 1])
    enclose = cw * ch + eps
    return iou - (enclose - union) / enclose


def giou_loss(pred_boxes, target_boxes, weights):
    """Sum of ``weights * (1 - GIoU)`` over matching boxes [N, 4]; weights [N]."""
    return ((1.0 - giou(pred_boxes, target_boxes)) * weights).sum()


def bbox_to_distance(anchor_points, boxes, reg_max: int):
    """xyxy boxes [N, 4] -> (left, top, right, bottom) distances from anchors [N, 2], clipped to [0, reg_max - 0.01]."""
    lt = anchor_points - boxes[..., :2]
    rb = boxes[..., 2:] - anchor_points
    return paddle.concat([lt, rb], axis=-1).clip(0, reg_max - 0.01)


def distribution_focal_loss(pred_dist, target, weights):
    """DFL summed over boxes: pred_dist [N, 4, reg_max+1] logits, target [N, 4] real distances in bins.

    Cross-entropy on the two integer bins around the target, weighted linearly by proximity,
    averaged over the 4 sides, times ``weights`` [N].
    """
    left = target.floor().astype("int64")
    right = left + 1
    w_left = right.astype("float32") - target
    w_right = 1.0 - w_left
    logp = F.log_softmax(pred_dist, axis=-1)
    lp_left = paddle.take_along_axis(logp, left.unsqueeze(-1), axis=-1).squeeze(-1)
    lp_right = paddle.take_along_axis(logp, right.unsqueeze(-1), axis=-1).squeeze(-1)
    per_side = -(lp_left * w_left + lp_right * w_right)  # [N, 4]
    return (per_side.mean(axis=-1) * weights).sum()
