"""LCNetRec: our light PP-LCNet-style recognizer backbone of depthwise-separable blocks (hardswish, optional
squeeze-excite), several times cheaper than ResNet34vd. Our design, not PaddleOCR's ``PPLCNetV3``
(nn/pplcnetv3.py): PaddleOCR weights do not load into it."""
from __future__ import annotations

import paddle.nn as nn
import paddle.nn.functional as F

from .catalog import BACKBONE, REC, register
from .layers import ConvBN, div8, width_plan


class SE(nn.Layer):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2D(c, max(8, c // r), 1)
        self.fc2 = nn.Conv2D(max(8, c // r), c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))


class DWSepBlock(nn.Layer):
    """Depthwise kxk (stride) + optional SE + pointwise 1x1, hardswish activations."""

    def __init__(self, cin, cout, k, stride, se=False):
        super().__init__()
        self.dw = ConvBN(cin, cin, k, stride=stride, groups=cin, act="hardswish")
        self.se = SE(cin) if se else nn.Identity()
        self.pw = ConvBN(cin, cout, 1, act="hardswish")

    def forward(self, x):
        return self.pw(self.se(self.dw(x)))


@register(BACKBONE, "LCNetRec", REC, ours=True)
class LCNetRec(nn.Layer):
    """Light PP-LCNet-style recognizer backbone. Output [B, 384*scale, 1, W/width_stride].

    Height is halved 4 times (48 -> 3), then averaged to 1. ``width_stride`` (default 4)
    is spread over the first downsampling layers.
    """

    # (kernel, out_channels, downsample?, se) per block, after a stride-2 stem of 16 channels.
    PLAN = [(3, 32, False, False),
            (3, 64, True, False), (3, 64, False, False),
            (3, 128, True, False), (3, 128, False, False),
            (5, 256, True, False), (5, 256, False, False), (5, 256, False, False), (5, 256, False, True),
            (5, 384, False, True)]

    def __init__(self, in_channels: int = 3, scale: float = 1.0, width_stride: int = 4):
        super().__init__()
        ws = width_plan(width_stride, 4)
        self.stem = ConvBN(in_channels, div8(16 * scale), 3, stride=(2, ws[0]), act="hardswish")
        blocks, cin, k = [], div8(16 * scale), 1
        for kernel, cout, down, se in self.PLAN:
            stride = (1, 1)
            if down:
                stride, k = (2, ws[k]), k + 1
            blocks.append(DWSepBlock(cin, div8(cout * scale), kernel, stride, se))
            cin = div8(cout * scale)
        self.blocks = nn.Sequential(*blocks)
        self.out_channels = cin

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return x.mean(axis=2, keepdim=True)
