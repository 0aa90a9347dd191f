"""ResNet34vd: our ResNet-34 with the "vd" tweaks (3-conv stem, avg-pool shortcut) for text recognition,
strides tuned for text lines (height shrinks to 1, width by ``width_stride``). Our design, not PaddleOCR's
``ResNet`` (nn/resnet_vd.py): PaddleOCR weights do not load into it."""
from __future__ import annotations

from typing import Sequence, Tuple

import paddle.nn as nn
import paddle.nn.functional as F

from .catalog import BACKBONE, REC, register
from .layers import ConvBN, div8, width_plan


class BasicBlockVd(nn.Layer):
    """3x3-3x3 residual block; a strided shortcut is avg-pool + 1x1 conv (the "d" tweak)."""

    def __init__(self, cin, cout, stride: Tuple[int, int]):
        super().__init__()
        self.conv1 = ConvBN(cin, cout, 3, stride=stride)
        self.conv2 = ConvBN(cout, cout, 3, act=None)
        if tuple(stride) != (1, 1):
            self.short = nn.Sequential(nn.AvgPool2D(stride, stride, ceil_mode=True), ConvBN(cin, cout, 1, act=None))
        elif cin != cout:
            self.short = ConvBN(cin, cout, 1, act=None)
        else:
            self.short = nn.Identity()

    def forward(self, x):
        return F.relu(self.conv2(self.conv1(x)) + self.short(x))


@register(BACKBONE, "ResNet34vd", REC, ours=True)
class ResNet34vd(nn.Layer):
    """ResNet34-vd for recognition. Output [B, 512*scale, 1, W/width_stride].

    Height: stem pool /2, then stages 2-4 each /2 -> H/16 (3 for H=48), then mean over H.
    Width: split ``width_stride`` (default 4 -> T=80 for W=320) over stem pool and stage 2,3,...
    """

    def __init__(self, in_channels: int = 3, scale: float = 1.0, width_stride: int = 4,
                 depths: Sequence[int] = (3, 4, 6, 3)):
        super().__init__()
        ws = width_plan(width_stride, 4)
        c = [div8(v * scale) for v in (32, 64, 128, 256, 512)]
        self.stem = nn.Sequential(ConvBN(in_channels, c[0], 3), ConvBN(c[0], c[0], 3), ConvBN(c[0], c[1], 3))
        self.pool = nn.MaxPool2D(kernel_size=3, stride=(2, ws[0]), padding=1)
        stages, cin = [], c[1]
        stage_strides = [(1, 1), (2, ws[1]), (2, ws[2]), (2, ws[3])]
        for i, (depth, cout) in enumerate(zip(depths, c[1:])):
            for j in range(depth):
                stages.append(BasicBlockVd(cin, cout, stage_strides[i] if j == 0 else (1, 1)))
                cin = cout
        self.stages = nn.Sequential(*stages)
        self.out_channels = cin

    def forward(self, x):
        x = self.stages(self.pool(self.stem(x)))
        return x.mean(axis=2, keepdim=True)
