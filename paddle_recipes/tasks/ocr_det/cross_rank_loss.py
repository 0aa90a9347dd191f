"""Cross-rank DB loss (``Loss.cross_rank``; default: on with ``Global.use_sync_bn``): with N processes, every rank
computes the DB loss of the GLOBAL batch (all ranks' samples), so N processes x batch b train the function 1 process
x batch N*b trains (with the cross-rank BatchNorm of nn/sync_bn.py for the network).

    from paddle_recipes.tasks.ocr_det.cross_rank_loss import CrossRankDBLoss, top_k_weights
    loss = CrossRankDBLoss(main_loss_type="BCELoss")        # DBLoss's arguments; group=None: the default group
    w = top_k_weights(values, k)                             # the global top-k as 0 / 1 / tie-share weights

PaddleOCR's DBLoss is not a mean over samples: the dice and masked-L1 terms are ratios of batch sums, and the OHEM
of the shrink map keeps the k = min(#negatives, ohem_ratio x #positives) hardest negatives of the batch. Here:

* every ratio's numerator and denominator is a sum over the global batch: ONE all-reduce (float64) of that term's
  few local sums (dice: 3 + the 2 pixel counts; masked L1: 2; focal: 2), so the counts, k, the dice and the L1 are
  the global batch's (counts truncated to integers, as PaddleOCR);
* OHEM's global top-k is a distributed k-th value, not an all-gather of the maps: a radix select on the float bits
  of the negative pixels' losses (non-negative floats order as their bit patterns): 3 rounds (32-bit floats; 6 for
  float64) of one all-reduce of a 2048-bin histogram (16 KB) each find the exact k-th largest value t, the count
  above it and the count equal to it; then one all-reduce of the selected sum. An all-gather would move every
  pixel: 3.3 MB per rank and loss term at batch 8 x 320 x 320 (4 bytes x 819,200), x (N - 1) received per rank;
* ties at t: PaddleOCR's ``paddle.topk`` keeps k of them in an order of its kernel's own; here every value equal
  to t gets the weight (k - #above) / #equal (the tied share), so the loss is the same sum of the k largest
  values and its gradient is the mean over the tied choices: deterministic, and independent of how the samples are
  split over the ranks or ordered;
* gradient: each global sum enters the loss as ``N x local + (global - N x local)`` (constant part detached), so a
  rank's backward gives N x the global loss's gradient through its own pixels; DataParallel's mean over the ranks
  then gives the gradient of the global loss (with the cross-rank BN, whose backward already sums over ranks).

Every rank returns the same global loss value. A rank with an empty batch cannot join the collectives (as with the
cross-rank BN): the data path must give every rank a sample. One process: ``build_db_loss`` returns the plain
DBLoss (PaddleOCR's math, paddle.topk's ties).
"""
from __future__ import annotations

import logging

import numpy as np
import paddle
import paddle.distributed as dist
import paddle.nn as nn
import paddle.nn.functional as F

from ...nn.sync_bn import all_reduce_np
from .config import DBLossConfig
from .losses import BalanceLoss, DBLoss

logger = logging.getLogger(__name__)

RADIX_BITS = 11  # 2048-bin histograms: 3 rounds for float32, 6 for float64


def world_size(group=None) -> int:
    if group is False or not dist.is_initialized():
        return 1
    return dist.get_world_size(group)


class GlobalSums:
    """``sums(*scalars)``: the scalar tensors summed over the ranks of ``group`` (one all-reduce, float64); each
    result has the global value and N x the local gradient (see the module docstring). ``sums.values(array)``:
    the same for numbers without a gradient. ``calls``: all-reduces so far."""

    def __init__(self, group=None):
        self.group, self.scale, self.calls = group, float(world_size(group)), 0

    def values(self, local) -> np.ndarray:
        self.calls += 1
        return all_reduce_np(np.asarray(local, dtype=np.float64), self.group)

    def __call__(self, *local):
        loc = paddle.stack([t.astype("float64").reshape([]) for t in local])
        loc_np = loc.numpy()
        total = self.values(loc_np)
        return (loc * self.scale + paddle.to_tensor(total - loc_np * self.scale)).unbind()


def top_k_weights(values: np.ndarray, k: int, reduce=lambda h: h) -> np.ndarray:
    """Weights (float64, ``values``' shape) of the k largest of the values of every rank: 1 above the global k-th
    largest value t, (k - #above) / #equal at t, 0 below; sum(w x values) over the ranks is the sum of the k
    largest. ``values``: non-negative float32 / float64 (any shape, may be empty on a rank); ``reduce``: the sum of
    a float64 vector over the ranks (identity: this array alone). k must be in [1, #values over the ranks]."""
    v = np.ascontiguousarray(values).reshape(-1)
    if v.dtype not in (np.float32, np.float64):
        raise ValueError(f"top_k_weights: float32 or float64 values, got {v.dtype}")
    v = v + v.dtype.type(0)  # -0.0 -> +0.0: the bit order is the value order for non-negative floats
    if v.size and not (v.min() >= 0):
        raise ValueError("top_k_weights: values must be non-negative and not NaN")
    uint = np.uint32 if v.dtype == np.float32 else np.uint64
    bits = v.view(uint)
    cand, shift, prefix, need, tied = bits, 8 * v.itemsize, 0, float(k), 0.0
    while shift > 0:
        width = min(RADIX_BITS, shift)
        shift -= width
        digit = ((cand >> uint(shift)) & uint((1 << width) - 1)).astype(np.intp)
        hist = reduce(np.bincount(digit, minlength=1 << width).astype(np.float64))
        from_top = np.cumsum(hist[::-1])
        i = int(np.searchsorted(from_top, need))  # the first bin, from the top, where the count reaches k
        if i >= hist.size:
            raise ValueError(f"top_k_weights: k = {k} is more than the {int(from_top[-1])} values")
        d = hist.size - 1 - i
        need -= from_top[i] - hist[d]
        prefix, tied = prefix | (d << shift), hist[d]
        cand = cand[digit == d]
    t = uint(prefix)
    w = (bits > t).astype(np.float64)
    w[bits == t] = need / tied
    return w.reshape(np.shape(values))


class CrossRankBalanceLoss(BalanceLoss):
    """BalanceLoss (OHEM) over the global batch: global counts and dice, global top-k of the negatives."""

    def __init__(self, sums: GlobalSums, balance_loss: bool = True, main_loss_type: str = "DiceLoss",
                 negative_ratio: float = 3, eps: float = 1e-6):
        super().__init__(balance_loss, main_loss_type, negative_ratio, eps)
        self.sums = sums

    def _counts(self, p_cnt, n_cnt):
        n_pos = int(float(p_cnt))
        return n_pos, int(min(float(n_cnt), n_pos * self.negative_ratio))

    def forward(self, pred, gt, mask):
        positive, negative = gt * mask, (1 - gt) * mask
        if self.main_loss_type == "DiceLoss":  # the per-pixel loss is the batch's dice
            inter, p_sum, g_sum, p_cnt, n_cnt = self.sums((pred * gt * mask).sum(), (pred * mask).sum(),
                                                          (gt * mask).sum(), positive.sum(), negative.sum())
            loss = 1 - 2.0 * inter / (p_sum + g_sum + self.eps)
            if not self.balance_loss:
                return loss.astype(pred.dtype)
            n_pos, n_neg = self._counts(p_cnt, n_cnt)
            pos_loss = p_cnt.detach() * loss
            if n_neg > 0:
                neg = negative.numpy()
                sel = neg > 0
                w = top_k_weights(neg[sel] * float(loss), n_neg, self.sums.values)
                neg_loss = float(self.sums.values([(w * neg[sel]).sum()])[0]) * loss
        else:  # BCELoss: a loss per pixel
            pixel = F.binary_cross_entropy(pred, gt, reduction="none")
            pos_loss, p_cnt, n_cnt = self.sums((positive * pixel).sum(), positive.sum(), negative.sum())
            n_pos, n_neg = self._counts(p_cnt, n_cnt)
            if n_neg > 0:
                neg_pixel = negative * pixel
                neg = negative.numpy()
                sel = neg > 0
                v = neg_pixel.astype("float64" if pred.dtype == paddle.float64 else "float32").numpy()[sel]
                w = np.zeros(neg.shape, dtype=np.float64)
                w[sel] = top_k_weights(v, n_neg, self.sums.values)
                (neg_loss,) = self.sums((neg_pixel * paddle.to_tensor(w).astype(pred.dtype)).sum())
        if n_neg == 0:
            return (pos_loss / (n_pos + self.eps)).astype(pred.dtype)
        return ((pos_loss + neg_loss) / (n_pos + n_neg + self.eps)).astype(pred.dtype)


class CrossRankDBLoss(DBLoss):
    """DBLoss (same arguments, same outputs) over the global batch of every rank of ``group`` (None: the default
    group; False: this rank alone, no communication). ``all_reduce_calls``: all-reduces so far."""

    def __init__(self, *args, group=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.sums = GlobalSums(group)
        b = self.bce_loss
        if isinstance(b, BalanceLoss):
            self.bce_loss = CrossRankBalanceLoss(self.sums, b.balance_loss, b.main_loss_type, b.negative_ratio,
                                                 b.eps)
            self.dice_loss = self._dice
        else:  # DiceFocalLoss (PP-OCRv6)
            self.bce_loss = self.dice_loss = _CrossRankDiceFocal(self, b.dice_weight, b.focal_weight, b.alpha,
                                                                 b.gamma)
        self.l1_loss = self._l1

    @property
    def all_reduce_calls(self) -> int:
        return self.sums.calls

    def _dice(self, pred, gt, mask):
        inter, p_sum, g_sum = self.sums((pred * gt * mask).sum(), (pred * mask).sum(), (gt * mask).sum())
        return (1 - 2.0 * inter / (p_sum + g_sum + self.eps)).astype(pred.dtype)

    def _l1(self, pred, gt, mask):
        num, den = self.sums((paddle.abs(pred - gt) * mask).sum(), mask.sum())
        return (num / (den + self.eps)).astype(pred.dtype)



class _CrossRankDiceFocal(nn.Layer):
    """DiceFocalLoss (PP-OCRv6) over the global batch: dice_weight x global dice + focal_weight x global masked
    focal loss."""

    def __init__(self, owner: CrossRankDBLoss, dice_weight, focal_weight, alpha, gamma):
        super().__init__()
        self.owner = [owner]  # not a sublayer (no cycle in the layer tree)
        self.dice_weight, self.focal_weight, self.alpha, self.gamma = dice_weight, focal_weight, alpha, gamma

    def forward(self, pred, gt, mask):
        o = self.owner[0]
        p = paddle.clip(pred, o.eps, 1.0 - o.eps)
        focal = F.sigmoid_focal_loss(paddle.log(p / (1.0 - p)), gt, alpha=self.alpha, gamma=self.gamma,
                                     reduction="none")
        num, den = o.sums((focal * mask).sum(), mask.sum())
        return (self.dice_weight * o._dice(pred, gt, mask)
                + self.focal_weight * (num / (den + o.eps)).astype(pred.dtype))


def build_db_loss(cfg: DBLossConfig, use_sync_bn: bool, n_processes: int, log: bool = False) -> DBLoss:
    """The det recipe's loss: CrossRankDBLoss when ``cfg.cross_rank`` (null: ``use_sync_bn``) and more than one
    process, else DBLoss."""
    if not (use_sync_bn if cfg.cross_rank is None else cfg.cross_rank) or n_processes <= 1:
        return DBLoss(**cfg.kwargs())
    if log:
        logger.info("Loss.cross_rank: every rank computes the DB loss of the global batch of %d processes (global "
                    "counts, dice, L1 and OHEM top-k; about 7 small all-reduces per loss term set and step)",
                    n_processes)
    return CrossRankDBLoss(**cfg.kwargs())
