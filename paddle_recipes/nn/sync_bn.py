"""Cross-rank BatchNorm (``Global.use_sync_bn``): in training, every BatchNorm normalises by the statistics of the
global batch (all ranks' samples), as ``paddle.nn.SyncBatchNorm`` does on GPUs, so N processes x batch b compute
what 1 process x batch N*b computes.

    from paddle_recipes.nn.sync_bn import cross_rank_batch_norm, use_sync_bn
    y = cross_rank_batch_norm(x, bn._mean, bn._variance, bn.weight, bn.bias, momentum=0.9, epsilon=1e-5)
    n = use_sync_bn(model)      # in place: n BatchNorm layers switched (same objects, parameters and names)

paddle 3.3.1's ``SyncBatchNorm`` has no CPU kernel (``The kernel `sync_batch_norm` is not registered``), so on CPU
(GLOO) the layers run ``cross_rank_batch_norm``:

* forward: each rank reduces its own slice of the batch to per-channel [sum, centred sum of squares, sum^2 / count]
  and its element count (two passes over x, in float32), then ONE all-reduce of those 3C + 1 numbers in float64
  gives the global mean and the global (biased) variance (Chan's pairwise combination: no E[x^2] - E[x]^2
  cancellation in float32);
* backward: ONE all-reduce of the two per-channel gradient sums (sum dy, sum dy * x_hat) in float64; the input
  gradient is then gamma / std * (dy - mean(dy) - x_hat * mean(dy * x_hat)) over the global batch; gamma's and
  beta's gradients are this rank's sums (DataParallel averages them over the ranks, as for any parameter);
* running statistics as paddle's kernel: ``running = momentum * running + (1 - momentum) * batch``, the biased batch
  variance, float32, identical on every rank.

Outside training (eval, a frozen BN: weights.freeze_bn), with ``use_global_stats`` or on one process the layer runs
paddle's own kernel unchanged (no communication; bit for bit BatchNorm). On a GPU the training forward calls
paddle's ``sync_batch_norm`` op (NCCL) instead. The switch changes the layers' class to a subclass of their own
(BatchNorm1D/2D/3D, and ``paddle.nn.BatchNorm`` of PaddleOCR's DB head, which paddle's own
``SyncBatchNorm.convert_sync_batchnorm`` skips): parameters, statistics, names, hooks and flags stay, so checkpoints
and PaddleOCR weights load unchanged and ``isinstance(layer, BatchNorm2D)`` still holds.
"""
from __future__ import annotations

import paddle
import paddle.distributed as dist
import paddle.nn.functional as F
from paddle import _C_ops
from paddle.autograd import PyLayer

from .layers import BN_TYPES

__all__ = ["cross_rank_batch_norm", "use_sync_bn", "is_sync_bn", "SyncBNMixin"]


def _all_reduce(values: paddle.Tensor, group) -> paddle.Tensor:
    if group is not False and dist.is_initialized() and dist.get_world_size(group) > 1:
        dist.all_reduce(values, group=group)
    return values


def _shape_of_channel(ndim: int, axis: int, c: int) -> list[int]:
    shape = [1] * ndim
    shape[axis] = c
    return shape


class _CrossRankNormalize(PyLayer):
    """y = x_hat * weight + bias with x_hat = (x - mean) * invstd; mean / invstd are the global batch's (constants
    here); the backward adds their dependence on x through one all-reduce of sum(dy) and sum(dy * x_hat)."""

    @staticmethod
    def forward(ctx, x, weight, bias, mean, invstd, count, axis, group):
        shape = _shape_of_channel(x.ndim, axis, x.shape[axis])
        x_hat = (x - mean.reshape(shape)) * invstd.reshape(shape)
        ctx.save_for_backward(x_hat, weight, invstd)
        ctx.count, ctx.axis, ctx.group, ctx.shape = count, axis, group, shape
        return x_hat * weight.reshape(shape) + bias.reshape(shape)

    @staticmethod
    def backward(ctx, dy):
        x_hat, weight, invstd = ctx.saved_tensor()
        axes = [a for a in range(dy.ndim) if a != ctx.axis % dy.ndim]
        d_bias = paddle.sum(dy, axis=axes, dtype="float64")
        d_weight = paddle.sum(dy * x_hat, axis=axes, dtype="float64")
        sums = _all_reduce(paddle.concat([d_bias, d_weight]), ctx.group) / ctx.count
        mean_dy, mean_dy_xhat = (t.astype(dy.dtype).reshape(ctx.shape) for t in paddle.split(sums, 2))
        dx = (weight * invstd).reshape(ctx.shape) * (dy - mean_dy - x_hat * mean_dy_xhat)
        return dx, d_weight.astype(dy.dtype), d_bias.astype(dy.dtype)


@paddle.no_grad()
def global_batch_stats(x: paddle.Tensor, axis: int = 1, group=None):
    """(mean, biased variance, element count) per channel of the batch of ALL ranks (one all-reduce; on one process
    this rank's): float32 mean / variance of shape [C], count a Python float."""
    axes = [a for a in range(x.ndim) if a != axis % x.ndim]
    c = x.shape[axis]
    n = float(x.numel()) / c
    s = paddle.sum(x, axis=axes, dtype="float64")
    centred = x - (s / n).astype(x.dtype).reshape(_shape_of_channel(x.ndim, axis, c))
    m2 = paddle.sum(centred * centred, axis=axes, dtype="float64")
    local = paddle.concat([s, m2, s * s / n, paddle.full([1], n, dtype="float64")])
    total = _all_reduce(local, group)
    s_all, m2_all, sq_all, n_all = paddle.split(total, [c, c, c, 1])
    mean = s_all / n_all
    var = paddle.clip((m2_all + sq_all - n_all * mean * mean) / n_all, min=0.0)  # Chan: sum M2 + between-rank part
    return mean.astype(x.dtype), var.astype(x.dtype), float(n_all.item())


def cross_rank_batch_norm(x: paddle.Tensor, running_mean: paddle.Tensor, running_var: paddle.Tensor,
                          weight: paddle.Tensor | None = None, bias: paddle.Tensor | None = None,
                          momentum: float = 0.9, epsilon: float = 1e-5, axis: int = 1, group=None) -> paddle.Tensor:
    """Training-mode BatchNorm over the global batch of every rank of ``group`` (None: the default group; False: no
    communication, this rank's batch alone). Updates running_mean / running_var in place as paddle's kernel does
    (momentum * running + (1 - momentum) * batch; biased variance). ``axis``: the channel axis (1 for NC..., -1 for
    N...C). Differentiable in x, weight and bias; a collective in forward and backward."""
    c = x.shape[axis]
    mean, var, count = global_batch_stats(x, axis, group)
    with paddle.no_grad():
        paddle.assign(running_mean * momentum + mean * (1.0 - momentum), running_mean)
        paddle.assign(running_var * momentum + var * (1.0 - momentum), running_var)
    invstd = paddle.rsqrt(var + epsilon)
    weight = paddle.ones([c], dtype=x.dtype) if weight is None else weight
    bias = paddle.zeros([c], dtype=x.dtype) if bias is None else bias
    return _CrossRankNormalize.apply(x, weight, bias, mean, invstd, count, axis, group)


def _channel_axis(layer) -> int:
    fmt = getattr(layer, "_data_format", None) or getattr(layer, "_data_layout", "NCHW")
    return 1 if str(fmt).startswith("NC") else -1


class SyncBNMixin:
    """Put in front of a BatchNorm class (use_sync_bn does it): training-mode forwards use the global batch's
    statistics; everything else is the base class's forward."""

    _sync_bn_group = None

    def forward(self, x):
        if (not self.training or self._use_global_stats or not dist.is_initialized()
                or dist.get_world_size(self._sync_bn_group) <= 1):
            return super().forward(x)
        momentum, eps = self._momentum, self._epsilon
        if "gpu" in str(x.place).lower():  # paddle's own kernel (NCCL, default group)
            layout = getattr(self, "_data_format", None) or self._data_layout
            y = _C_ops.sync_batch_norm_(x, self._mean, self._variance, self.weight, self.bias, False, momentum, eps,
                                        layout, False, False)[0]
        else:
            y = cross_rank_batch_norm(x, self._mean, self._variance, self.weight, self.bias, momentum, eps,
                                      _channel_axis(self), self._sync_bn_group)
        act = getattr(self, "_act", None)  # paddle.nn.BatchNorm(act=...): PaddleOCR's DB head uses act="relu"
        return getattr(F, act)(y) if act else y


_CLASSES: dict = {}


def _sync_class(cls):
    if issubclass(cls, SyncBNMixin):
        return cls
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"CrossRank{cls.__name__}", (SyncBNMixin, cls), {"__module__": __name__})
    return _CLASSES[cls]


def is_sync_bn(layer) -> bool:
    return isinstance(layer, SyncBNMixin)


def use_sync_bn(model: paddle.nn.Layer, group=None) -> int:
    """Switch every BatchNorm of `model` (itself included) to its cross-rank subclass, in place (the same layer
    objects: parameters, statistics, names, hooks kept); ``group``: the process group (None: the default one).
    Idempotent. Returns how many BatchNorm layers are cross-rank."""
    bns = [m for m in model.sublayers(include_self=True) if isinstance(m, BN_TYPES)]
    for bn in bns:
        bn.__class__ = _sync_class(type(bn))
        bn._sync_bn_group = group
    return len(bns)
