"""DB loss with PaddleOCR's semantics (``Loss: {name: DBLoss, ...}`` in its det YAMLs).

loss = alpha * L_shrink + beta * L_threshold + L_binary (+ L_cbn for PFHeadLocal), where
* L_shrink: ``main_loss_type`` on the probability map, balanced (``balance_loss``) by OHEM: all
  positive pixels plus the ``ohem_ratio`` x #positives highest-loss negative pixels (counts truncated
  to integers, as PaddleOCR). With ``DiceLoss`` (PaddleOCR's PP-OCRv4/v5 setting) the per-pixel loss
  is the scalar dice of the whole map, so the balance only rescales it by (P + N) / (P + N + eps);
  with ``BCELoss`` it is the classic per-pixel OHEM BCE;
* L_threshold: masked L1 between threshold map and its label (inside the dilated text regions);
* L_binary: dice between the approximate binary map and the shrink label;
* L_cbn (PFHeadLocal): the shrink loss applied to ``cbn_maps``.
Defaults as PaddleOCR: alpha 5, beta 10, ohem_ratio 3, eps 1e-6.
"""
from __future__ import annotations

import paddle
import paddle.nn as nn
import paddle.nn.functional as F


def dice_loss(pred, gt, mask, eps=1e-6):
    """1 - 2 |P.G.M| / (|P.M| + |G.M| + eps) over the whole batch (a scalar)."""
    inter = paddle.sum(pred * gt * mask)
    return 1 - 2.0 * inter / (paddle.sum(pred * mask) + paddle.sum(gt * mask) + eps)


def mask_l1_loss(pred, gt, mask, eps=1e-6):
    """sum(|pred - gt| * mask) / (sum(mask) + eps)."""
    return (paddle.abs(pred - gt) * mask).sum() / (mask.sum() + eps)


PIXEL_LOSSES = {
    "DiceLoss": lambda pred, gt, mask, eps: dice_loss(pred, gt, mask, eps),
    "BCELoss": lambda pred, gt, mask, eps: F.binary_cross_entropy(pred, gt, reduction="none"),
    "MaskL1Loss": lambda pred, gt, mask, eps: mask_l1_loss(pred, gt, mask, eps),
}


class BalanceLoss(nn.Layer):
    """OHEM-balanced loss (see module docstring). ``negative_ratio``: negatives kept per positive."""

    def __init__(self, balance_loss: bool = True, main_loss_type: str = "DiceLoss",
                 negative_ratio: float = 3, eps: float = 1e-6):
        super().__init__()
        if main_loss_type not in PIXEL_LOSSES:
            raise ValueError(f"DBLoss.main_loss_type: {main_loss_type!r} is not one of {sorted(PIXEL_LOSSES)}")
        if not balance_loss and main_loss_type == "BCELoss":
            raise ValueError("DBLoss: balance_loss: false with main_loss_type: BCELoss is not supported (PaddleOCR "
                             "returns an unreduced per-pixel map there); use balance_loss: true or DiceLoss")
        self.balance_loss, self.negative_ratio, self.eps = balance_loss, negative_ratio, eps
        self.loss = PIXEL_LOSSES[main_loss_type]

    def forward(self, pred, gt, mask):
        positive = gt * mask
        negative = (1 - gt) * mask
        n_pos = int(positive.sum())
        n_neg = int(min(float(negative.sum()), n_pos * self.negative_ratio))
        loss = self.loss(pred, gt, mask, self.eps)
        if not self.balance_loss:
            return loss
        pos_loss = (positive * loss).sum()
        if n_neg == 0:
            return pos_loss / (n_pos + self.eps)
        neg_loss = paddle.topk((negative * loss).reshape([-1]), k=n_neg)[0].sum()
        return (pos_loss + neg_loss) / (n_pos + n_neg + self.eps)


class DBLoss(nn.Layer):
    """``forward(predicts, labels)``: ``predicts["maps"]`` [B, 3, H, W] (probability, threshold,
    binary) from the head in train mode; ``labels`` = [image, threshold_map, threshold_mask,
    shrink_map, shrink_mask] (PaddleOCR's KeepKeys order; maps [B, H, W]). Returns a dict of scalars:
    ``loss``, ``loss_shrink_maps``, ``loss_threshold_maps``, ``loss_binary_maps``, ``loss_cbn``."""

    def __init__(self, balance_loss: bool = True, main_loss_type: str = "DiceLoss", alpha: float = 5,
                 beta: float = 10, ohem_ratio: float = 3, eps: float = 1e-6):
        super().__init__()
        self.alpha, self.beta, self.eps = alpha, beta, eps
        self.bce_loss = BalanceLoss(balance_loss, main_loss_type, ohem_ratio, eps)

    def forward(self, predicts, labels):
        maps = predicts["maps"]
        threshold_map, threshold_mask, shrink_map, shrink_mask = labels[1:5]
        l_shrink = self.alpha * self.bce_loss(maps[:, 0], shrink_map, shrink_mask)
        l_thresh = self.beta * mask_l1_loss(maps[:, 1], threshold_map, threshold_mask, self.eps)
        l_binary = dice_loss(maps[:, 2], shrink_map, shrink_mask, self.eps)
        if "cbn_maps" in predicts:
            l_cbn = self.bce_loss(predicts["cbn_maps"][:, 0], shrink_map, shrink_mask)
        else:
            l_cbn = paddle.zeros([], dtype=maps.dtype)
        total = l_shrink + l_thresh + l_binary
        return {"loss": total + l_cbn, "loss_shrink_maps": l_shrink, "loss_threshold_maps": l_thresh,
                "loss_binary_maps": l_binary, "loss_cbn": l_cbn}
