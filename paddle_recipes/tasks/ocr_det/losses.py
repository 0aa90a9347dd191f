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
``main_loss_type: DiceFocalLoss`` (PP-OCRv6) replaces both the balanced shrink loss and the binary dice by
dice_weight x dice + focal_weight x masked focal loss (``focal_alpha``, ``focal_gamma``: sigmoid focal loss of
the logit of the clipped probability, averaged over the mask), as PaddleOCR. ``aux_weight_p4/p3/p2`` > 0 add
weight x (the same three terms) on the auxiliary heads' ``aux_maps_p*`` (PP-OCRv6's DBHead ``aux_in_channels``),
each also reported as ``loss_aux_maps_p*``.
Defaults as PaddleOCR: alpha 5, beta 10, ohem_ratio 3, eps 1e-6, focal_alpha 0.25, focal_gamma 2, weights 1 / 0.
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


def masked_focal_loss(pred, gt, mask, alpha=0.25, gamma=2.0, eps=1e-6):
    """Sigmoid focal loss of logit(clip(pred, eps, 1 - eps)) against ``gt``, summed over ``mask``, divided by
    (sum(mask) + eps)."""
    p = paddle.clip(pred, eps, 1.0 - eps)
    loss = F.sigmoid_focal_loss(paddle.log(p / (1.0 - p)), gt, alpha=alpha, gamma=gamma, reduction="none")
    return (loss * mask).sum() / (mask.sum() + eps)


class DiceFocalLoss(nn.Layer):
    """dice_weight x dice_loss + focal_weight x masked_focal_loss (PaddleOCR's default focal_alpha here: 0.75;
    DBLoss passes its own, 0.25)."""

    def __init__(self, dice_weight=1.0, focal_weight=1.0, focal_alpha=0.75, focal_gamma=2.0, eps=1e-6):
        super().__init__()
        self.dice_weight, self.focal_weight, self.alpha, self.gamma, self.eps = (
            dice_weight, focal_weight, focal_alpha, focal_gamma, eps)

    def forward(self, pred, gt, mask):
        return (self.dice_weight * dice_loss(pred, gt, mask, self.eps)
                + self.focal_weight * masked_focal_loss(pred, gt, mask, self.alpha, self.gamma, self.eps))


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
        self.main_loss_type = main_loss_type
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
    ``loss``, ``loss_shrink_maps``, ``loss_threshold_maps``, ``loss_binary_maps``, ``loss_cbn`` (and
    ``loss_aux_maps_p*`` for the auxiliary maps weighted > 0)."""

    def __init__(self, balance_loss: bool = True, main_loss_type: str = "DiceLoss", alpha: float = 5,
                 beta: float = 10, ohem_ratio: float = 3, eps: float = 1e-6, focal_alpha: float = 0.25,
                 focal_gamma: float = 2.0, dice_weight: float = 1.0, focal_weight: float = 1.0,
                 aux_weight_p4: float = 0.0, aux_weight_p3: float = 0.0, aux_weight_p2: float = 0.0):
        super().__init__()
        self.alpha, self.beta, self.eps = alpha, beta, eps
        if main_loss_type == "DiceFocalLoss":
            self.bce_loss = DiceFocalLoss(dice_weight, focal_weight, focal_alpha, focal_gamma, eps)
            self.dice_loss = self.bce_loss
        else:
            self.bce_loss = BalanceLoss(balance_loss, main_loss_type, ohem_ratio, eps)
            self.dice_loss = lambda pred, gt, mask: dice_loss(pred, gt, mask, eps)
        self.l1_loss = lambda pred, gt, mask: mask_l1_loss(pred, gt, mask, eps)
        self.aux_weights = {"aux_maps_p4": aux_weight_p4, "aux_maps_p3": aux_weight_p3, "aux_maps_p2": aux_weight_p2}

    def _terms(self, maps, threshold_map, threshold_mask, shrink_map, shrink_mask):
        return (self.alpha * self.bce_loss(maps[:, 0], shrink_map, shrink_mask),
                self.beta * self.l1_loss(maps[:, 1], threshold_map, threshold_mask),
                self.dice_loss(maps[:, 2], shrink_map, shrink_mask))

    def forward(self, predicts, labels):
        maps = predicts["maps"]
        targets = labels[1:5]  # threshold_map, threshold_mask, shrink_map, shrink_mask
        l_shrink, l_thresh, l_binary = self._terms(maps, *targets)
        if "cbn_maps" in predicts:
            l_cbn = self.bce_loss(predicts["cbn_maps"][:, 0], targets[2], targets[3])
        else:
            l_cbn = paddle.zeros([], dtype=maps.dtype)
        out = {"loss": l_shrink + l_thresh + l_binary + l_cbn, "loss_shrink_maps": l_shrink,
               "loss_threshold_maps": l_thresh, "loss_binary_maps": l_binary, "loss_cbn": l_cbn}
        for key, weight in self.aux_weights.items():
            if weight > 0 and key in predicts:
                out[f"loss_{key}"] = paddle.add_n(list(self._terms(predicts[key], *targets)))
                out["loss"] = out["loss"] + weight * out[f"loss_{key}"]
        return out
