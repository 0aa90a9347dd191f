"""Global.cpu_depthwise_kernel: the depthwise convolutions of the training step run our compiled CPU kernel.

    from paddle_recipes.kernels.depthwise import depthwise_conv2d, use_depthwise_kernel
    y = depthwise_conv2d(x, weight, stride=(1, 1), padding=(1, 1))   # functional: NCHW float32 CPU, with gradient
    n = use_depthwise_kernel(model)    # in place: n eligible nn.Conv2D layers use it in training mode

On CPU, paddle's depthwise_conv2d (and its gradient) is the largest op of a PP-OCR mobile training step (the profile
in benchmarks/results/step_switches/README.md). `kernels/depthwise_conv2d.cc` computes the same sums row by row (vectorized axpy and dot
products); only the float32 summation order differs, so losses agree to float tolerance
(docs/cards/depthwise_kernel.md). It is built on first use with the system C++ compiler through
paddle.utils.cpp_extension (~15 s once) into a cache folder keyed by the source, paddle, Python and this CPU's
instruction set (kernels/build.py): $PADDLE_RECIPES_CACHE or ~/.cache/paddle_recipes, then
kernels/depthwise_conv2d-<key>.

Eligible layers: nn.Conv2D with groups == in_channels == out_channels, dilation 1, zero padding given as an int or
[h, w], NCHW. Training-mode float32 calls use the kernel; evaluation, export (jit.save traces eval mode) and other
dtypes keep paddle's conv, so saved models and checkpoints never reference the custom op and the weights keep
their names. CPU only: on a GPU, cuDNN's depthwise kernel is kept (use_depthwise_kernel is not applied there).
"""
from __future__ import annotations

import sys
from typing import Sequence, Tuple, Union

import paddle
from paddle import nn

from . import build as kernel_build
from .build import KernelBuildError

__all__ = ["KernelBuildError", "cache_dir", "load_kernel", "depthwise_conv2d", "DepthwiseKernelConv2D", "eligible",
           "use_depthwise_kernel"]

SOURCE = kernel_build.KERNELS / "depthwise_conv2d.cc"
CXX_FLAGS = ("-O3", "-march=native", "-fopenmp-simd")
NAME = "pr_depthwise_conv2d_ext"
_module = None


def cache_dir():
    """The build folder of SOURCE on this machine (kernel_build.cache_dir)."""
    return kernel_build.cache_dir(SOURCE, CXX_FLAGS)


@paddle.jit.not_to_static  # a to_static trace calls it as Python and records the op it returns
def load_kernel():
    """The compiled op module, built on the first call on this machine (kernel_build.load_ops). Raises
    KernelBuildError with the compiler's (or loader's) last line."""
    return kernel_build.load_once(sys.modules[__name__])


def _pair(value) -> Tuple[int, int]:
    if isinstance(value, int):
        return value, value
    return int(value[0]), int(value[1])


def depthwise_conv2d(x: paddle.Tensor, weight: paddle.Tensor, stride: Union[int, Sequence[int]] = 1,
                     padding: Union[int, Sequence[int]] = 0) -> paddle.Tensor:
    """F.conv2d(x, weight, stride=stride, padding=padding, groups=C) for x [N, C, H, W] and weight [C, 1, kh, kw],
    float32 on CPU, zero padding (pixels, symmetric), dilation 1; differentiable in x and weight."""
    return load_kernel().pr_depthwise_conv2d(x, weight, list(_pair(stride)), list(_pair(padding)))


class DepthwiseKernelConv2D(nn.Conv2D):
    """An nn.Conv2D whose training-mode float32 forward is depthwise_conv2d (+ bias); anything else is nn.Conv2D's.
    use_depthwise_kernel turns eligible layers into this class in place (same parameters, same names)."""

    def forward(self, x):
        if not kernel_build.uses_kernel(self, x, self.weight):
            return super().forward(x)
        y = depthwise_conv2d(x, self.weight, self._stride, self._padding)
        if self.bias is not None:
            y = y + self.bias.reshape([1, -1, 1, 1])
        return y


def eligible(layer: nn.Layer) -> bool:
    """True for an nn.Conv2D the kernel computes exactly: one filter per channel, dilation 1, zero padding as an
    int or [h, w], NCHW."""
    if not isinstance(layer, nn.Conv2D) or isinstance(layer, DepthwiseKernelConv2D):
        return False
    pad = layer._padding
    pad_ok = isinstance(pad, int) or (isinstance(pad, (list, tuple)) and len(pad) == 2
                                      and all(isinstance(p, int) for p in pad))
    return (layer._groups == layer._in_channels == layer._out_channels and pad_ok
            and list(layer._dilation) == [1, 1] and layer._padding_mode == "zeros" and layer._data_format == "NCHW")


def use_depthwise_kernel(model: nn.Layer) -> int:
    """Turn every eligible nn.Conv2D of model into a DepthwiseKernelConv2D (in place; builds the kernel first, so
    a build failure leaves the model unchanged). Returns how many layers changed."""
    layers = [m for m in model.sublayers(include_self=True) if eligible(m)]
    if layers:
        load_kernel()
    for layer in layers:
        layer.__class__ = DepthwiseKernelConv2D
    return len(layers)
