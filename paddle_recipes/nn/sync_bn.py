"""Cross-rank BatchNorm (``Global.use_sync_bn``): in training, every BatchNorm normalises by the statistics of the
global batch (all ranks' samples), as ``paddle.nn.SyncBatchNorm`` does on GPUs, so N processes x batch b compute
what 1 process x batch N*b computes.

    from paddle_recipes.nn.sync_bn import cross_rank_batch_norm, use_sync_bn
    y = cross_rank_batch_norm(x, bn._mean, bn._variance, bn.weight, bn.bias, momentum=0.9, epsilon=1e-5)
    n = use_sync_bn(model)      # in place: n BatchNorm layers switched (same objects, parameters and names)

paddle 3.3.1's ``SyncBatchNorm`` has no CPU kernel (``The kernel `sync_batch_norm` is not registered``), so on CPU
(GLOO) the layers run ``cross_rank_batch_norm``:

* forward: paddle's fused kernel gives this rank's per-channel mean and (two-pass) variance; ONE all-reduce of
  [count x mean, count x variance, count x mean^2, count] (3C + 1 numbers, float64) gives the global mean and the
  global biased variance (Chan's combination: no E[x^2] - E[x]^2 cancellation); paddle's fused inference kernel
  normalises by them;
* backward: paddle's fused kernel gives dy * gamma / std and this rank's sum(dy), sum(dy * x_hat); ONE all-reduce
  of those 2C sums (float64), then the input gradient gamma / std * (dy - mean(dy) - x_hat * mean(dy * x_hat)) over
  the global batch (the correction is one more fused kernel call); gamma's and beta's gradients are this rank's
  sums (DataParallel averages them over the ranks, as for any parameter);
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

import numpy as np
import paddle
import paddle.distributed as dist
import paddle.nn.functional as F
from paddle import _C_ops
from paddle.autograd import PyLayer

from .layers import BN_TYPES

__all__ = ["cross_rank_batch_norm", "use_sync_bn", "is_sync_bn", "SyncBNMixin"]


_FORMATS = {(2, 1): "NC", (3, 1): "NCL", (3, -1): "NLC", (4, 1): "NCHW", (4, -1): "NHWC", (5, 1): "NCDHW",
            (5, -1): "NDHWC"}


def _format(ndim: int, axis: int) -> str:
    key = (ndim, 1 if axis % ndim == 1 else -1 if axis % ndim == ndim - 1 else 0)
    if key not in _FORMATS:
        raise ValueError(f"cross-rank BatchNorm: channel axis {axis} of a {ndim}-d input is not supported")
    return _FORMATS[key]


def _stats_dtype(x) -> str:
    return "float64" if x.dtype == paddle.float64 else "float32"


def all_reduce_np(values: np.ndarray, group) -> np.ndarray:
    """Sum of a float64 numpy vector over the ranks of ``group`` (the same object when there is no communication)."""
    if group is False or not dist.is_initialized() or dist.get_world_size(group) <= 1:
        return values
    t = paddle.to_tensor(values)
    dist.all_reduce(t, group=group)
    return t.numpy()


def _infer(x, mean, var, weight, bias, epsilon, fmt):
    """paddle's fused inference-mode kernel: (x - mean) / sqrt(var + epsilon) * weight + bias per channel."""
    return _C_ops.batch_norm(x, mean, var, weight, bias, True, 0.9, epsilon, fmt, True, False)[0]


class _CrossRankNormalize(PyLayer):
    """y = (x - mean) / sqrt(var + eps) * weight + bias with the global batch's mean / var (paddle's fused
    inference kernel). Backward: paddle's fused training-mode gradient kernel, given the GLOBAL mean and 1 / std as
    the batch statistics, gives dx as if this rank's slice were the whole batch plus this rank's sum(dy) and
    sum(dy * x_hat) (the shift's and scale's gradients); ONE all-reduce makes those sums global and
    weight / std * ((local - global) mean of dy + x_hat * (local - global) mean of dy * x_hat) is added (one more
    fused kernel call; a small term: paddle's kernel keeps its exact centring). The per-channel arithmetic is
    numpy's (float64): C numbers, where paddle's per-op cost would dominate."""

    @staticmethod
    def forward(ctx, x, weight, bias, mean, var, stats, epsilon, fmt, group):
        ctx.save_for_backward(x, weight, bias, mean, var)
        ctx.stats, ctx.epsilon, ctx.fmt, ctx.group = stats, epsilon, fmt, group
        return _infer(x, mean, var, weight, bias, epsilon, fmt)

    @staticmethod
    def backward(ctx, dy):
        x, weight, bias, mean, var = ctx.saved_tensor()
        st = ctx.stats
        invstd = 1.0 / np.sqrt(st["var"] + ctx.epsilon)
        dx, d_weight, d_bias = _C_ops.batch_norm_grad(
            x, weight, bias, mean, var, mean, paddle.to_tensor(invstd.astype(st["dtype"])), None, dy, 0.0,
            ctx.epsilon, ctx.fmt, False, False, False)
        local = np.concatenate([d_bias.numpy(), d_weight.numpy()]).astype("float64")
        total = all_reduce_np(local, ctx.group)
        if total is not local:  # another rank's samples: move this rank's means of dy, dy * x_hat to the global ones
            c, n, count = d_bias.shape[0], st["local_count"], st["count"]
            diff = local / n - total / count
            k = st["weight"] * invstd
            dx = dx + _infer(x, mean, var, paddle.to_tensor((k * diff[c:]).astype(st["dtype"])),
                             paddle.to_tensor((k * diff[:c]).astype(st["dtype"])), ctx.epsilon, ctx.fmt)
        return dx, d_weight, d_bias


@paddle.no_grad()
def _global_stats_np(x: paddle.Tensor, axis: int, group):
    c = x.shape[axis]
    n = float(x.numel()) / c
    dtype = _stats_dtype(x)
    # paddle's fused kernel with momentum 0: its running-statistics outputs are this rank's batch mean and
    # (two-pass, biased) variance
    _, local_mean, local_var, _, _, _ = _C_ops.batch_norm(
        x, paddle.zeros([c], dtype=dtype), paddle.ones([c], dtype=dtype), None, None, False, 0.0, 1e-5,
        _format(x.ndim, axis), False, False)
    m, v = local_mean.numpy().astype("float64"), local_var.numpy().astype("float64")
    total = all_reduce_np(np.concatenate([n * m, n * v, n * m * m, [n]]), group)
    s_all, m2_all, sq_all, n_all = total[:c], total[c:2 * c], total[2 * c:3 * c], float(total[-1])
    mean = s_all / n_all
    var = np.maximum((m2_all + sq_all - n_all * mean * mean) / n_all, 0.0)  # sum M2 + the between-rank part
    return mean, var, n_all, dtype, n


def global_batch_stats(x: paddle.Tensor, axis: int = 1, group=None):
    """(mean, biased variance, element count) per channel of the batch of ALL ranks (one all-reduce; on one process
    this rank's): float64 numpy vectors of C values and a float. This rank's mean and variance come from paddle's
    fused kernel (two-pass), the combination is Chan's, in float64."""
    return _global_stats_np(x, axis, group)[:3]


def cross_rank_batch_norm(x: paddle.Tensor, running_mean: paddle.Tensor, running_var: paddle.Tensor,
                          weight: paddle.Tensor | None = None, bias: paddle.Tensor | None = None,
                          momentum: float = 0.9, epsilon: float = 1e-5, axis: int = 1, group=None) -> paddle.Tensor:
    """Training-mode BatchNorm over the global batch of every rank of ``group`` (None: the default group; False: no
    communication, this rank's batch alone). Updates running_mean / running_var in place as paddle's kernel does
    (momentum * running + (1 - momentum) * batch, in the statistics' dtype; biased variance). ``axis``: the channel
    axis (1 for NC..., -1 for N...C). Differentiable in x, weight and bias; a collective in forward and backward."""
    c = x.shape[axis]
    mean64, var64, count, dtype, local_count = _global_stats_np(x, axis, group)
    mean, var = mean64.astype(dtype), var64.astype(dtype)
    with paddle.no_grad():  # float32 arithmetic as paddle's kernel: running * momentum + batch * (1 - momentum)
        for running, batch in ((running_mean, mean), (running_var, var)):
            r = running.numpy()
            running.set_value(r * r.dtype.type(momentum) + batch * r.dtype.type(1.0 - momentum))
    weight = paddle.ones([c], dtype=dtype) if weight is None else weight
    bias = paddle.zeros([c], dtype=dtype) if bias is None else bias
    stats = {"weight": weight.numpy().astype("float64"), "var": var64, "count": count, "local_count": local_count,
             "dtype": dtype}
    return _CrossRankNormalize.apply(x, weight, bias, paddle.to_tensor(mean), paddle.to_tensor(var), stats, epsilon,
                                     _format(x.ndim, axis), group)


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
