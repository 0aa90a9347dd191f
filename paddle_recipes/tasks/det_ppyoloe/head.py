"""Efficient task-aligned head (ET-head) of PP-YOLOE, with its training loss.

Per level: ``cls = conv3x3(ESE(feat) + feat)`` -> C logits, ``reg = conv3x3(ESE(feat))`` ->
4 x (reg_max + 1) logits of a discrete distribution over distances (in grid cells) from the
anchor point to the left/top/right/bottom sides. The expected value of each distribution is
the predicted distance (DFL formulation, "integral" decoding).

Loss: TAL assignment, then ``cls_w * VFL + iou_w * GIoU + dfl_w * DFL`` normalised by the sum
of the soft targets (all-reduced across ranks). ATSS warm-up of the original is not used:
TAL runs from the first step (documented in recipes/README_det.md).
"""
from __future__ import annotations

import math

import paddle
import paddle.distributed as dist
import paddle.nn as nn
import paddle.nn.functional as F

from ...nn.catalog import HEAD, PPYOLOE, register
from .assigner import TaskAlignedAssigner
from .backbone import ConvBN
from .losses import bbox_to_distance, distribution_focal_loss, giou_loss, varifocal_loss


class ESEAttn(nn.Layer):
    """``ConvBN1x1(feat * sigmoid(fc(avg_feat)))``: channel gate from the pooled feature."""

    def __init__(self, channels: int, act: str = "swish"):
        super().__init__()
        self.fc = nn.Conv2D(channels, channels, 1, weight_attr=nn.initializer.Normal(std=0.001))
        self.conv = ConvBN(channels, channels, 1, act=act)

    def forward(self, feat, avg_feat):
        return self.conv(feat * F.sigmoid(self.fc(avg_feat)))


def make_anchors(feats, strides, offset: float = 0.5):
    """Anchor centres (pixels) [L, 2] and their strides [L, 1] for feature maps listed shallow -> deep."""
    points, stride_list = [], []
    for feat, s in zip(feats, strides):
        shape = paddle.shape(feat)
        h, w = shape[2], shape[3]
        xs = (paddle.arange(w).astype("float32") + offset) * s
        ys = (paddle.arange(h).astype("float32") + offset) * s
        yy, xx = paddle.meshgrid(ys, xs)
        pts = paddle.stack([xx, yy], axis=-1).reshape([-1, 2])
        points.append(pts)
        stride_list.append(paddle.ones_like(pts[:, :1]) * float(s))
    return paddle.concat(points, axis=0), paddle.concat(stride_list, axis=0)


@register(HEAD, "PPYOLOEHead", PPYOLOE, fixed=("in_channels", "num_classes", "strides"))
class PPYOLOEHead(nn.Layer):
    """ET-head over 3 levels.

    Args:
        in_channels: neck channels shallow -> deep.  num_classes: C.  strides: (8, 16, 32).
        reg_max: highest distance bin (distances in grid cells, 0..reg_max).
        loss_weights: dict with ``cls`` (1.0), ``iou`` (2.5), ``dfl`` (0.5).
        assigner: TAL settings (topk 13, alpha 1, beta 6).
    """

    def __init__(self, in_channels, num_classes: int, strides=(8, 16, 32), reg_max: int = 16,
                 loss_weights=None, topk: int = 13, alpha: float = 1.0, beta: float = 6.0,
                 prior_prob: float = 0.01, act: str = "swish"):
        super().__init__()
        self.num_classes = num_classes
        self.strides = list(strides)
        self.reg_max = reg_max
        self.loss_weights = {"cls": 1.0, "iou": 2.5, "dfl": 0.5, **(loss_weights or {})}
        self.assigner = TaskAlignedAssigner(topk=topk, alpha=alpha, beta=beta)
        self.stem_cls = nn.LayerList([ESEAttn(c, act) for c in in_channels])
        self.stem_reg = nn.LayerList([ESEAttn(c, act) for c in in_channels])
        bias_cls = -math.log((1 - prior_prob) / prior_prob)
        self.pred_cls = nn.LayerList([
            nn.Conv2D(c, num_classes, 3, padding=1, weight_attr=nn.initializer.Constant(0.0),
                      bias_attr=nn.initializer.Constant(bias_cls)) for c in in_channels])
        self.pred_reg = nn.LayerList([
            nn.Conv2D(c, 4 * (reg_max + 1), 3, padding=1, weight_attr=nn.initializer.Constant(0.0),
                      bias_attr=nn.initializer.Constant(1.0)) for c in in_channels])
        self.register_buffer("proj", paddle.linspace(0, reg_max, reg_max + 1).astype("float32"),
                             persistable=False)

    def forward(self, feats):
        """Returns cls logits [B, L, C], distance logits [B, L, 4, reg_max+1], anchors [L, 2], strides [L, 1]."""
        cls_list, reg_list = [], []
        for i, feat in enumerate(feats):
            avg = feat.mean(axis=[2, 3], keepdim=True)
            cls_list.append(self.pred_cls[i](self.stem_cls[i](feat, avg) + feat).flatten(2))
            reg_list.append(self.pred_reg[i](self.stem_reg[i](feat, avg)).flatten(2))
        cls_logits = paddle.concat(cls_list, axis=-1).transpose([0, 2, 1])
        reg = paddle.concat(reg_list, axis=-1).transpose([0, 2, 1])
        reg = reg.reshape([0, -1, 4, self.reg_max + 1])
        anchors, stride_t = make_anchors(feats, self.strides)
        return cls_logits, reg, anchors, stride_t

    def decode(self, reg, anchors_grid):
        """Distance logits [B, L, 4, R+1] + anchor points in grid units [L, 2] -> xyxy in grid units."""
        # expected bin = sum(p * bin); not .matmul(proj): Paddle Inference 3.3's IR passes miscompute a 1-D
        # matmul_v2 in legacy (.pdmodel) programs (Export.legacy / ppdet's deploy)
        dist_ = paddle.sum(F.softmax(reg, axis=-1) * self.proj, axis=-1)  # [B, L, 4]
        return paddle.concat([anchors_grid - dist_[..., :2], anchors_grid + dist_[..., 2:]], axis=-1)

    def predict(self, outputs):
        """Head outputs -> (boxes [B, L, 4] xyxy in input pixels, scores [B, L, C] after sigmoid)."""
        cls_logits, reg, anchors, stride_t = outputs
        reg, cls_logits = reg.astype("float32"), cls_logits.astype("float32")  # fp16 pixels are too coarse
        boxes = self.decode(reg, anchors / stride_t) * stride_t
        return boxes, F.sigmoid(cls_logits)

    def loss(self, outputs, gt_class, gt_bbox, pad_gt_mask):
        """Dict of losses (``loss`` = weighted total, plus ``loss_cls``, ``loss_iou``, ``loss_dfl``).

        gt_class [B, M, 1] int64, gt_bbox [B, M, 4] xyxy pixels of the network input, pad_gt_mask [B, M, 1].
        """
        cls_logits, reg, anchors, stride_t = outputs
        cls_logits = cls_logits.astype("float32")
        reg = reg.astype("float32")
        anchors_grid = anchors / stride_t
        pred_grid = self.decode(reg, anchors_grid)  # [B, L, 4]
        C = self.num_classes
        labels, boxes, scores = self.assigner(
            F.sigmoid(cls_logits).detach(), (pred_grid * stride_t).detach(), anchors,
            gt_class, gt_bbox, pad_gt_mask, bg_index=C)
        one_hot = F.one_hot(labels, C + 1)[..., :C]
        score_sum = scores.sum()
        if dist.is_initialized() and dist.get_world_size() > 1:
            score_sum = score_sum.clone()
            dist.all_reduce(score_sum)
            score_sum = score_sum / dist.get_world_size()
        score_sum = score_sum.clip(min=1.0)
        loss_cls = varifocal_loss(cls_logits, scores, one_hot) / score_sum

        pos = labels != C  # [B, L]
        num_pos = int(pos.astype("int64").sum())
        if num_pos > 0:
            B, L = pos.shape
            m4 = pos.unsqueeze(-1).expand([B, L, 4])
            pred_pos = paddle.masked_select(pred_grid, m4).reshape([-1, 4])
            tgt_pos = paddle.masked_select(boxes / stride_t, m4).reshape([-1, 4])
            w = paddle.masked_select(scores.sum(-1), pos)
            loss_iou = giou_loss(pred_pos, tgt_pos, w) / score_sum
            anchors_pos = paddle.masked_select(anchors_grid.unsqueeze(0).expand([B, L, 2]),
                                               pos.unsqueeze(-1).expand([B, L, 2])).reshape([-1, 2])
            R1 = self.reg_max + 1
            dist_pos = paddle.masked_select(reg, pos.reshape([B, L, 1, 1]).expand([B, L, 4, R1])).reshape([-1, 4, R1])
            target = bbox_to_distance(anchors_pos, tgt_pos, self.reg_max)
            loss_dfl = distribution_focal_loss(dist_pos, target, w) / score_sum
        else:  # keep every parameter in the graph (DataParallel needs a gradient for all of them)
            loss_iou = reg.sum() * 0.0
            loss_dfl = reg.sum() * 0.0
        lw = self.loss_weights
        total = lw["cls"] * loss_cls + lw["iou"] * loss_iou + lw["dfl"] * loss_dfl
        return {"loss": total, "loss_cls": loss_cls, "loss_iou": loss_iou, "loss_dfl": loss_dfl,
                "num_pos": float(num_pos)}
