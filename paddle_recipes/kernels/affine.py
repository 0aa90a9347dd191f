"""Global.cpu_affine_kernel: the training step's scalar affine maps and conv bias adds run our compiled CPU ops.

    from paddle_recipes.kernels.affine import channel_bias, scalar_affine, use_affine_kernel
    y = scalar_affine(x, scale, bias)   # scale * x + bias, scale and bias of shape [1]; float32 CPU, with gradient
    y = channel_bias(x, bias)           # x + bias[c] for x [N, C, ...], bias [C]
    n = use_affine_kernel(model)        # in place: n layers use them in training mode

A PP-LCNetV3 network (PP-OCRv4/v5 mobile det and rec) applies a LearnableAffineBlock (y = scale * x + bias, one
learnt scalar each) to every rep-block output twice: ~30 M values per det step at 4 x 320 x 320. Paddle computes
each as a broadcast multiply and a broadcast add, and their gradients as broadcast reductions; a conv's bias add
(DB head's transposed convs) is a per-channel broadcast add. On CPU those broadcasts cost ~4x a plain elementwise
pass (benchmarks/results/step_switches/README.md). `kernels/affine.cc` does each map in one pass, bit for bit paddle's forward and input
gradient; the parameter gradients (sums over the tensor) are accumulated in double, so they differ from paddle's
float sums by float32 rounding only (docs/cards/affine_kernel.md). Built once like the depthwise kernel
(kernels/build.py: ~15 s, cached).

Switched layers: LearnableAffineBlock; nn.Conv2D and nn.Conv2DTranspose with a bias, NCHW, zero padding (the conv
itself stays paddle's, or our depthwise kernel's). Training-mode float32 calls use the ops; evaluation, export
and other dtypes keep paddle's ops, so saved models never reference them and the weights keep their names.
CPU only (not applied on a GPU).
"""
from __future__ import annotations

import sys

import paddle
import paddle.nn.functional as F
from paddle import nn

from . import build as kernel_build
from .depthwise import DepthwiseKernelConv2D, depthwise_conv2d
from .build import KernelBuildError
from ..nn.layers import LearnableAffineBlock

__all__ = ["KernelBuildError", "load_kernel", "scalar_affine", "channel_bias", "use_affine_kernel", "eligible"]

SOURCE = kernel_build.KERNELS / "affine.cc"
CXX_FLAGS = ("-O3", "-march=native", "-fopenmp-simd", "-ffp-contract=off")  # no FMA: paddle's multiply, then add
NAME = "pr_affine_ext"
_module = None


@paddle.jit.not_to_static  # a to_static trace calls it as Python and records the op it returns
def load_kernel():
    """The compiled op module, built on the first call on this machine (kernel_build.load_ops). Raises
    KernelBuildError with the compiler's (or loader's) last line."""
    return kernel_build.load_once(sys.modules[__name__])


def scalar_affine(x: paddle.Tensor, scale: paddle.Tensor, bias: paddle.Tensor) -> paddle.Tensor:
    """scale * x + bias for scale and bias of one value each (shape [1]); float32 CPU; differentiable in all
    three."""
    return load_kernel().pr_scalar_affine(x, scale, bias)


def channel_bias(x: paddle.Tensor, bias: paddle.Tensor) -> paddle.Tensor:
    """x + bias broadcast over dim 1 (x [N, C, ...], bias [C]); float32 CPU; differentiable in x and bias."""
    return load_kernel().pr_channel_bias(x, bias)


class AffineKernelLAB(LearnableAffineBlock):
    """A LearnableAffineBlock whose training-mode float32 forward is scalar_affine."""

    def forward(self, x):
        if not kernel_build.uses_kernel(self, x, self.scale, self.bias):
            return super().forward(x)
        return scalar_affine(x, self.scale, self.bias)


class BiasKernelConv2D(nn.Conv2D):
    """An nn.Conv2D (zero padding, NCHW, with a bias) whose training-mode float32 bias add is channel_bias."""

    def forward(self, x):
        if not kernel_build.uses_kernel(self, x, self.weight, self.bias):
            return super().forward(x)
        y = F.conv._conv_nd(x, self.weight, bias=None, stride=self._stride, padding=self._updated_padding,
                            padding_algorithm=self._padding_algorithm, dilation=self._dilation, groups=self._groups,
                            data_format=self._data_format, channel_dim=self._channel_dim, op_type=self._op_type,
                            use_cudnn=self._use_cudnn)
        return channel_bias(y, self.bias)


class BiasKernelDepthwiseConv2D(DepthwiseKernelConv2D):
    """A DepthwiseKernelConv2D with a bias: our depthwise conv, then channel_bias."""

    def forward(self, x):
        if not kernel_build.uses_kernel(self, x, self.weight, self.bias):
            return nn.Conv2D.forward(self, x)
        return channel_bias(depthwise_conv2d(x, self.weight, self._stride, self._padding), self.bias)


class BiasKernelConv2DTranspose(nn.Conv2DTranspose):
    """An nn.Conv2DTranspose (NCHW, with a bias) whose training-mode float32 bias add is channel_bias."""

    def forward(self, x, output_size=None):
        if not kernel_build.uses_kernel(self, x, self.weight, self.bias):
            return super().forward(x, output_size)
        y = F.conv2d_transpose(x, self.weight, bias=None, padding=self._padding,
                               output_padding=self.output_padding if output_size is None else 0, stride=self._stride,
                               dilation=self._dilation, groups=self._groups, output_size=output_size,
                               data_format=self._data_format)
        return channel_bias(y, self.bias)


_SWAPS = ((LearnableAffineBlock, AffineKernelLAB), (DepthwiseKernelConv2D, BiasKernelDepthwiseConv2D),
          (nn.Conv2D, BiasKernelConv2D), (nn.Conv2DTranspose, BiasKernelConv2DTranspose))
_OURS = tuple(new for _, new in _SWAPS)


def _swap_for(layer: nn.Layer):
    """The class `layer` becomes, or None when it is not eligible (already switched, no bias, channels last,
    a padding mode other than zeros, a subclass with its own forward)."""
    if isinstance(layer, _OURS):
        return None
    new = next((new for old, new in _SWAPS if type(layer) is old), None)
    if new is None or new is AffineKernelLAB:
        return new
    ok = layer.bias is not None and layer._data_format == "NCHW" and getattr(layer, "_padding_mode", "zeros") == "zeros"
    return new if ok else None


def eligible(layer: nn.Layer) -> bool:
    """True for a layer use_affine_kernel switches: a LearnableAffineBlock, or an nn.Conv2D / nn.Conv2DTranspose
    (or a depthwise-kernel conv) with a bias, NCHW, zero padding."""
    return _swap_for(layer) is not None


def use_affine_kernel(model: nn.Layer) -> int:
    """Switch every eligible layer of model (in place; the same parameters and names; builds the ops first, so a
    build failure leaves the model unchanged). Returns how many layers changed."""
    swaps = [(m, _swap_for(m)) for m in model.sublayers(include_self=True)]
    swaps = [(m, new) for m, new in swaps if new is not None]
    if swaps:
        load_kernel()
    for layer, new in swaps:
        layer.__class__ = new
    return len(swaps)
