"""Re-parameterisation of multi-branch blocks both ways, and BN calibration of un-fused blocks.

A rep block computes the eval-mode sum of branches ``BN_i(conv_i(x))`` (a branch without conv is a BN of x
itself, the identity branch). ``fuse_branches`` folds them into one conv (weight, bias); PaddleOCR's released
inference models hold only that fused conv (PPLCNetV3's ``reparam_conv``).

``unfuse_into`` goes back to the training form so that fine-tuning trains the network PaddleOCR trains (all
branches, each with its BN), rather than the deploy form (one plain conv, no BN), whose optimisation differs
(no branch over-parameterisation, no BN normalising the fused conv): the fused kernel goes into the first kxk
branch, whose BN becomes a pass-through in eval mode (running mean 0, var 1 - eps, gamma 1, beta = the fused
bias; paddle's BN kernel still rounds once, ~1 ulp); every other branch outputs exactly 0 in train and eval mode:
its BN gets gamma 0, beta 0 and its conv keeps its initial random weights (a conv without BN gets a zero kernel).
Not a zero kernel under a BN of gamma 1: in train mode BN divides a zero output's batch variance 0 by sqrt(eps),
so the first step's tiny kernel update is normalised to a unit-variance output and the network forgets at once
(the official PP-OCRv4 rec: CTC loss 15 -> 75 and eval accuracy 0 after 3 steps at lr 1e-4). Eval-mode outputs are unchanged up to that rounding. In train mode the kept BN normalises by
batch statistics, which differ from mean 0 / var 1: ``calibrate_unfused_bn(model, batches)`` sets those BNs'
running mean/var to the statistics of their inputs on real data and re-expresses gamma/beta so that the eval-mode
function stays the same
(gamma' = a * sqrt(var + eps), beta' = c + a * mean for the previous eval map y = a * z + c), so that train-mode
BN (batch statistics) computes nearly the eval-mode function from the first step.
"""
from __future__ import annotations

import copy
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import paddle
import paddle.nn as nn

PASSTHROUGH_FLAG = "_unfused_passthrough"  # set on the BNs unfuse_into made pass-through (calibration targets)


def bn_affine(bn) -> Tuple[np.ndarray, np.ndarray]:
    """Eval-mode BN as y = a * x + c per channel (float64)."""
    std = np.sqrt(bn._variance.numpy().astype("float64") + bn._epsilon)
    a = bn.weight.numpy().astype("float64") / std
    return a, bn.bias.numpy().astype("float64") - a * bn._mean.numpy().astype("float64")


def _dilate(kernel: np.ndarray, rate: int) -> np.ndarray:
    """A kxk kernel of dilation `rate` as the equivalent dense kernel (zeros between taps)."""
    if rate == 1:
        return kernel
    k = kernel.shape[-1]
    out = np.zeros(kernel.shape[:2] + (rate * (k - 1) + 1,) * 2, kernel.dtype)
    out[:, :, ::rate, ::rate] = kernel
    return out


def _centered(kernel: np.ndarray, size: Sequence[int]) -> np.ndarray:
    ph, pw = (size[0] - kernel.shape[2]) // 2, (size[1] - kernel.shape[3]) // 2
    return np.pad(kernel, ((0, 0), (0, 0), (ph, ph), (pw, pw)))


def identity_kernel(shape: Sequence[int]) -> np.ndarray:
    """The kernel of x itself for a conv of weight shape [out, in/groups, kh, kw] (out == channels)."""
    out, per_group, kh, kw = shape
    k = np.zeros(shape, "float64")
    k[np.arange(out), np.arange(out) % per_group, kh // 2, kw // 2] = 1.0
    return k


def fuse_branches(branches: Sequence[Tuple[Optional[nn.Conv2D], Optional[nn.Layer]]], shape: Sequence[int],
                  groups: int = 1) -> Tuple[np.ndarray, np.ndarray]:
    """(weight [shape], bias [out]) of one conv equal to the eval-mode sum of ``branches``: (conv, bn) pairs,
    conv None = identity, bn None = none; smaller / dilated kernels are centred in ``shape``."""
    weight, bias = np.zeros(shape, "float64"), np.zeros(shape[0], "float64")
    for conv, bn in branches:
        if conv is None:
            w, b = identity_kernel(shape), np.zeros(shape[0])
        else:
            w = _dilate(conv.weight.numpy().astype("float64"), conv._dilation[0])
            w, b = _centered(w, shape[2:]), (conv.bias.numpy().astype("float64") if conv.bias is not None
                                             else np.zeros(shape[0]))
        if bn is not None:
            a, c = bn_affine(bn)
            w, b = w * a[:, None, None, None], b * a + c
        weight, bias = weight + w, bias + b
    return weight.astype("float32"), bias.astype("float32")


def _set_bn(bn, gamma, beta, var=1.0, mean=0.0):
    n = bn.weight.shape[0]
    for t, v in ((bn.weight, gamma), (bn.bias, beta), (bn._mean, mean), (bn._variance, var)):
        t.set_value(np.broadcast_to(np.asarray(v, "float32"), [n]).copy())


def _passthrough(eps: float) -> Tuple[float, float]:
    """(gamma, running var) for which float32 eval-mode BN multiplies by exactly 1: var = 1 - eps, gamma = 1
    when var + eps rounds to 1.0 in float32, else var 1, gamma sqrt(1 + eps)."""
    var = np.float32(1.0) - np.float32(eps)
    if np.float32(var + np.float32(eps)) == np.float32(1.0):
        return 1.0, float(var)
    return float(np.sqrt(1.0 + eps)), 1.0


def set_passthrough(bn, beta) -> None:
    """Make `bn` compute x + beta in eval mode (exactly, in float32) and mark it for calibrate_unfused_bn."""
    gamma, var = _passthrough(bn._epsilon)
    _set_bn(bn, gamma, beta, var)
    setattr(bn, PASSTHROUGH_FLAG, True)


def fused_param_attrs(conv: nn.Conv2D, bn: Optional[nn.Layer] = None) -> Tuple[paddle.ParamAttr, paddle.ParamAttr]:
    """(weight_attr, bias_attr) of the one conv that replaces a rep block whose first branch is `conv` (+ `bn`):
    the branch's learning-rate multiplier (e.g. PPLCNetV3's ``lr_mult_list``) and trainable flag carry over, so
    that training the fused form updates it as the branches were; the weight keeps `conv`'s regularizer, the bias
    takes `bn`'s bias regulariser (PaddleOCR's BN parameters: no weight decay; None = the optimizer's)."""
    w = conv.weight
    lr, trainable = w.optimize_attr.get("learning_rate", 1.0), w.trainable
    bias_reg = bn.bias.regularizer if bn is not None and getattr(bn, "bias", None) is not None else None
    return (paddle.ParamAttr(learning_rate=lr, regularizer=w.regularizer, trainable=trainable),
            paddle.ParamAttr(learning_rate=lr, regularizer=bias_reg, trainable=trainable))


def rep_blocks(model: nn.Layer) -> List[Tuple[str, nn.Layer]]:
    """(name, layer) of the re-parameterizable blocks (a ``fused_conv_name`` and a ``fuse()``), in model order."""
    return [(n, m) for n, m in model.named_sublayers() if hasattr(m, "fused_conv_name")]


def is_fused(block: nn.Layer) -> bool:
    """True when a rep block is in its deploy form: its fused conv exists and has a bias (no training form has)."""
    conv = getattr(block, block.fused_conv_name, None)
    return conv is not None and getattr(conv, "bias", None) is not None


def rep_block_states(model: nn.Layer) -> List[Tuple[str, str, bool]]:
    """(name, fused conv name, is_fused) of each rep block of `model`, in model order: what a weights file's keys
    are checked against (weights.released.form_from)."""
    return [(n, m.fused_conv_name, is_fused(m)) for n, m in rep_blocks(model)]


def fuse_blocks(model: nn.Layer, names: Optional[Iterable[str]] = None) -> List[str]:
    """Fuse the rep blocks of `model` named in `names` (None = every one) into their deploy convs, in place and
    in whatever mode `model` is. Returns the names of the blocks it fused: already-fused blocks are left as they
    are (a fused net: [])."""
    wanted = None if names is None else set(names)
    done = []
    for name, block in rep_blocks(model):
        if not is_fused(block) and (wanted is None or name in wanted):
            block.fuse()
            done.append(name)
    return done


def fuse_in_place(model: nn.Layer) -> List[str]:
    """Put `model` in eval mode and fuse every rep block in it (a layer with ``fused_conv_name`` and ``fuse()``)
    into its deploy conv: the same eval-mode function up to float32 rounding, one conv instead of the branches.
    Returns the names of the blocks it fused (fuse_blocks)."""
    model.eval()
    return fuse_blocks(model)


def fused_copy(model: nn.Layer) -> Tuple[nn.Layer, List[str]]:
    """A deep copy of `model` in eval mode with every rep block fused (fuse_in_place); returns (copy, names of
    the rep blocks). `model` itself is not changed."""
    fused = copy.deepcopy(model)
    return fused, fuse_in_place(fused)


def unfuse_into(branches: Sequence[Tuple[Optional[nn.Conv2D], Optional[nn.Layer]]], weight, bias) -> None:
    """Write a fused (weight, bias) into the training-form ``branches`` (see the module docstring): the first
    branch (a conv of that weight shape, with a BN) carries it, the others output exactly 0."""
    weight, bias = np.asarray(weight, "float32"), np.asarray(bias, "float32")
    (conv0, bn0), rest = branches[0], branches[1:]
    if conv0 is None or bn0 is None or list(conv0.weight.shape) != list(weight.shape):
        raise ValueError(f"cannot un-fuse a {list(weight.shape)} kernel into a branch of shape "
                         f"{None if conv0 is None else list(conv0.weight.shape)}")
    conv0.weight.set_value(weight)
    if conv0.bias is not None:
        conv0.bias.set_value(np.zeros_like(bias))
    set_passthrough(bn0, bias)
    for conv, bn in rest:
        if bn is not None:  # gamma 0: exactly 0 in both modes; the conv keeps its initial (random) weights so that
            _set_bn(bn, 0.0, 0.0)  # gamma's gradient (sum g * normalised conv output) is not 0 and the branch learns
        elif conv is not None:  # a conv without BN: a zero kernel outputs 0 and still gets gradients
            conv.weight.set_value(np.zeros(conv.weight.shape, "float32"))
        if conv is not None and conv.bias is not None:
            conv.bias.set_value(np.zeros(conv.bias.shape, "float32"))


def passthrough_bns(model: nn.Layer) -> List[Tuple[str, nn.Layer]]:
    """(name, BN) of the pass-through BNs left by unfuse_into, in model order."""
    return [(n, m) for n, m in model.named_sublayers() if getattr(m, PASSTHROUGH_FLAG, False)]


@paddle.no_grad()
def calibrate_unfused_bn(model: nn.Layer, batches: Iterable,
                         reduce: Optional[Callable[[np.ndarray], np.ndarray]] = None) -> int:
    """Set each un-fused pass-through BN's running mean/var to the per-channel statistics of its input over
    ``batches`` (images [B, C, H, W] tensors or arrays, run in eval mode), keeping the eval-mode function
    (see the module docstring). ``reduce``: sums a float64 vector over processes (all-reduce), so that every
    rank sets the same statistics from all ranks' batches; None = this process only. Returns the number of BNs
    calibrated (0 when the model has none)."""
    bns = passthrough_bns(model)
    if not bns:
        return 0
    sums = {n: [np.zeros(bn.weight.shape[0]), np.zeros(bn.weight.shape[0]), 0] for n, bn in bns}

    def hook_for(name):
        def hook(layer, inputs):
            x = inputs[0].astype("float64")
            s = sums[name]
            s[0] = s[0] + x.sum(axis=[0, 2, 3]).numpy()
            s[1] = s[1] + (x * x).sum(axis=[0, 2, 3]).numpy()
            s[2] += x.shape[0] * x.shape[2] * x.shape[3]
        return hook

    handles = [bn.register_forward_pre_hook(hook_for(n)) for n, bn in bns]
    was_training = model.training
    model.eval()
    try:
        for batch in batches:
            model(paddle.to_tensor(np.asarray(batch, "float32")) if not isinstance(batch, paddle.Tensor) else batch)
    finally:
        for h in handles:
            h.remove()
        if was_training:
            model.train()
    if reduce is not None:  # one collective for all BNs: [sum, sum of squares, count] per BN, concatenated
        flat = reduce(np.concatenate([np.concatenate([s[0], s[1], [s[2]]]) for s in sums.values()]))
        at = 0
        for s in sums.values():
            c = s[0].shape[0]
            s[0], s[1], s[2] = flat[at:at + c], flat[at + c:at + 2 * c], float(flat[at + 2 * c])
            at += 2 * c + 1
    for name, bn in bns:
        total, sq, count = sums[name]
        if not count:
            continue
        mean = total / count
        var = np.maximum(sq / count - mean * mean, 0.0)
        a, c = bn_affine(bn)
        _set_bn(bn, a * np.sqrt(var + bn._epsilon), c + a * mean, var, mean)
    return len(bns)
