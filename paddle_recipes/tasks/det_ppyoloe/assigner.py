"""Task-aligned assigner (TAL, from the TOOD paper) and box helpers.

For every ground-truth box g and anchor a:
    metric(g, a) = score(a, class(g)) ** alpha * IoU(pred_box(a), g) ** beta
Candidates are anchors whose centre lies inside g; each g keeps its top-k candidates by
metric. An anchor claimed by several boxes goes to the box with the highest IoU.
Soft class targets: one-hot(class) * metric / max_metric(g) * max_IoU(g) (per-gt normalised).

All tensors are batched with ground truths padded to M per image (``pad_gt_mask`` 1 = real).
Boxes are xyxy in the same unit as the anchor points (pixels of the network input).
"""
from __future__ import annotations

import paddle
import paddle.nn.functional as F

EPS = 1e-9


def box_iou_pairwise(boxes1, boxes2, eps: float = EPS):
    """IoU of [..., N, 4] vs [..., L, 4] xyxy boxes -> [..., N, L]."""
    b1 = boxes1.unsqueeze(-2)
    b2 = boxes2.unsqueeze(-3)
    x1 = paddle.maximum(b1[..., 0], b2[..., 0])
    y1 = paddle.maximum(b1[..., 1], b2[..., 1])
    x2 = paddle.minimum(b1[..., 2], b2[..., 2])
    y2 = paddle.minimum(b1[..., 3], b2[..., 3])
    inter = (x2 - x1).clip(min=0) * (y2 - y1).clip(min=0)
    a1 = (b1[..., 2] - b1[..., 0]).clip(min=0) * (b1[..., 3] - b1[..., 1]).clip(min=0)
    a2 = (b2[..., 2] - b2[..., 0]).clip(min=0) * (b2[..., 3] - b2[..., 1]).clip(min=0)
    return inter / (a1 + a2 - inter + eps)


def points_in_boxes(points, boxes, eps: float = EPS):
    """[L, 2] anchor points vs [B, M, 4] boxes -> float mask [B, M, L], 1 where the point is strictly inside."""
    p = points.unsqueeze(0).unsqueeze(0)  # [1, 1, L, 2]
    b = boxes.unsqueeze(2)  # [B, M, 1, 4]
    deltas = paddle.concat([p - b[..., :2], b[..., 2:] - p], axis=-1)  # [B, M, L, 4]
    return (deltas.min(axis=-1) > eps).astype("float32")


class TaskAlignedAssigner:
    """TAL with ``topk`` candidates per gt, ``alpha`` on the score and ``beta`` on the IoU.

    Defaults follow PP-YOLOE: topk=13, alpha=1.0, beta=6.0.
    """

    def __init__(self, topk: int = 13, alpha: float = 1.0, beta: float = 6.0):
        self.topk, self.alpha, self.beta = topk, alpha, beta

    @paddle.no_grad()
    def __call__(self, pred_scores, pred_bboxes, anchor_points, gt_labels, gt_bboxes, pad_gt_mask, bg_index: int):
        """
        Args:
            pred_scores: [B, L, C] sigmoid scores.  pred_bboxes: [B, L, 4] xyxy.
            anchor_points: [L, 2] xy.  gt_labels: [B, M, 1] int64.  gt_bboxes: [B, M, 4].
            pad_gt_mask: [B, M, 1] float (1 = real box).  bg_index: label given to background (= C).
        Returns:
            labels [B, L] int64 (bg_index for background), boxes [B, L, 4], scores [B, L, C] soft targets.
        """
        B, L, C = pred_scores.shape
        M = gt_bboxes.shape[1]
        if M == 0:
            return (paddle.full([B, L], bg_index, dtype="int64"), paddle.zeros([B, L, 4]),
                    paddle.zeros([B, L, C]))
        pad = pad_gt_mask.astype("float32")  # [B, M, 1]
        ious = box_iou_pairwise(gt_bboxes, pred_bboxes)  # [B, M, L]
        labels = gt_labels.squeeze(-1).clip(0, C - 1)  # [B, M]
        scores_t = pred_scores.transpose([0, 2, 1])  # [B, C, L]
        gt_scores = paddle.take_along_axis(scores_t, labels.unsqueeze(-1).expand([B, M, L]), axis=1)  # [B, M, L]
        metric = gt_scores.pow(self.alpha) * ious.pow(self.beta)
        in_gt = points_in_boxes(anchor_points, gt_bboxes)  # [B, M, L]
        k = min(self.topk, L)
        cand = metric * in_gt
        _, topk_idx = paddle.topk(cand, k, axis=-1)  # [B, M, k]
        topk_mask = F.one_hot(topk_idx, L).sum(axis=-2)  # [B, M, L]
        mask_pos = (topk_mask > 0).astype("float32") * in_gt * pad
        # Resolve anchors claimed by several boxes: keep the box with the highest IoU.
        claimed = mask_pos.sum(axis=1)  # [B, L]
        if float(claimed.max()) > 1:
            best = F.one_hot(ious.argmax(axis=1), M).transpose([0, 2, 1])  # [B, M, L]
            multi = (claimed > 1).astype("float32").unsqueeze(1)
            mask_pos = multi * best * pad + (1 - multi) * mask_pos
            claimed = mask_pos.sum(axis=1)
        fg = claimed > 0  # [B, L]
        gt_index = mask_pos.argmax(axis=1)  # [B, L]
        assigned_labels = paddle.take_along_axis(labels, gt_index, axis=1)
        assigned_labels = paddle.where(fg, assigned_labels, paddle.full_like(assigned_labels, bg_index))
        assigned_boxes = paddle.take_along_axis(gt_bboxes, gt_index.unsqueeze(-1).expand([B, L, 4]), axis=1)
        one_hot = F.one_hot(assigned_labels, C + 1)[..., :C]  # background row dropped
        metric = metric * mask_pos
        max_metric = metric.max(axis=-1, keepdim=True)  # [B, M, 1]
        max_iou = (ious * mask_pos).max(axis=-1, keepdim=True)
        norm = (metric / (max_metric + EPS) * max_iou).max(axis=1).unsqueeze(-1)  # [B, L, 1]
        return assigned_labels, assigned_boxes, one_hot * norm
