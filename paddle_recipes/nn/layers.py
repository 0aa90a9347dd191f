"""Small layers and channel rules shared by several backbone families of ``paddle_recipes.nn``.

* ``ConvBN``: conv (no bias, 'same' padding) + BN + activation; sub-layers ``conv`` / ``bn`` (our designs).
* ``LearnableAffineBlock``: y = scale * x + bias with scalar parameters (PaddleOCR's PPLCNetV3 and PPHGNetV2).
* ``SELayer``: PaddleOCR's squeeze-excite, sub-layers ``conv1`` / ``conv2`` (PPLCNetV3, MobileNetV1Enhance).
* ``div8`` / ``make_divisible``: channel rounding of our designs / of PaddleOCR's.
* ``width_plan``: how a total width stride is spread over downsampling stages (our rec backbones).
"""
from __future__ import annotations

from typing import List

import paddle
import paddle.nn as nn
from paddle import ParamAttr
from paddle.nn.layer.norm import _BatchNormBase
from paddle.nn.initializer import Constant


BN_TYPES = (_BatchNormBase, paddle.nn.BatchNorm)  # every BatchNorm kind (PaddleOCR's DB head uses nn.BatchNorm)


def div8(v: float, minimum: int = 8) -> int:
    """Round channels to a multiple of 8 (at least ``minimum``)."""
    return max(minimum, int(v + 4) // 8 * 8)


def make_divisible(v: float, divisor: int = 16, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of ``divisor`` without losing more than 10% (PaddleOCR's rule)."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


def width_plan(width_stride: int, n: int) -> List[int]:
    """Split a total width stride (power of two) over ``n`` downsampling stages, earliest first."""
    if width_stride & (width_stride - 1) or width_stride < 1:
        raise ValueError(f"width_stride must be a power of two, got {width_stride}")
    plan, remaining = [], width_stride
    for _ in range(n):
        s = 2 if remaining > 1 else 1
        plan.append(s)
        remaining //= s
    if remaining != 1:
        raise ValueError(f"width_stride {width_stride} too large for {n} downsampling stages")
    return plan


class ConvBN(nn.Layer):
    """Conv (no bias, padding (k-1)//2) + BN + ``act`` ("relu" | "hardswish" | None)."""

    def __init__(self, cin, cout, k, stride=1, groups=1, act="relu"):
        super().__init__()
        pad = (k - 1) // 2
        self.conv = nn.Conv2D(cin, cout, k, stride=stride, padding=pad, groups=groups, bias_attr=False)
        self.bn = nn.BatchNorm2D(cout)
        self.act = {"relu": nn.ReLU(), "hardswish": nn.Hardswish(), None: nn.Identity()}[act]

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class LearnableAffineBlock(nn.Layer):
    """y = scale * x + bias with scalar parameters (learning rate x ``lr_mult * lab_lr``)."""

    def __init__(self, scale_value=1.0, bias_value=0.0, lr_mult=1.0, lab_lr=0.1):
        super().__init__()
        attr = ParamAttr(learning_rate=lr_mult * lab_lr)
        self.scale = self.create_parameter([1], attr=attr, default_initializer=Constant(scale_value))
        self.bias = self.create_parameter([1], attr=ParamAttr(learning_rate=lr_mult * lab_lr),
                                          default_initializer=Constant(bias_value))

    def forward(self, x):
        return self.scale * x + self.bias


class SELayer(nn.Layer):
    """Squeeze-excite: global mean -> 1x1 (c/4) -> relu -> 1x1 (c) -> hardsigmoid -> scale."""

    def __init__(self, channel, reduction=4, lr_mult=1.0):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2D(1)
        attr = dict(weight_attr=ParamAttr(learning_rate=lr_mult), bias_attr=ParamAttr(learning_rate=lr_mult))
        self.conv1 = nn.Conv2D(channel, channel // reduction, 1, **attr)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2D(channel // reduction, channel, 1,
                               weight_attr=ParamAttr(learning_rate=lr_mult), bias_attr=ParamAttr(learning_rate=lr_mult))
        self.hardsigmoid = nn.Hardsigmoid()

    def forward(self, x):
        w = self.hardsigmoid(self.conv2(self.relu(self.conv1(self.avg_pool(x)))))
        return x * w
