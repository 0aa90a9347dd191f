"""DenseConvRec / DenseConvDet: CPU-friendly rec and det backbones of plain dense 3x3 convs (no depthwise; ours).

Why: on CPU paddle's depthwise 3x3 conv runs at ~2 GFLOP/s while a dense 3x3 conv runs at ~12 and a
matmul at ~34+ (one core, measured in issue 13). LCNetRec-0.5 spends only 14% of its FLOPs in depthwise
convs but ~61% of its step time there. DenseConvRec-1.0 has about the same FLOPs per line as LCNetRec-0.5
at [3, 32, 192] (15.5 vs 14.8 MFLOP forward) but all of them in dense convs.

DenseConvRec: output [B, C_out, 1, W / width_stride] like the other rec backbones (height halved per stage, then
averaged). DenseConvDet: 4 feature maps at strides 4, 8, 16, 32, as ``det: true`` backbones return.
"""
from __future__ import annotations

from typing import Sequence

import paddle.nn as nn

from .catalog import BACKBONE, DET, REC, register
from .layers import ConvBN, div8, width_plan


@register(BACKBONE, "DenseConvRec", REC, ours=True)
class DenseConvRec(nn.Layer):
    """Stages of dense 3x3 ConvBN-ReLU; the first conv of each stage downsamples (H by 2, W per width_stride).

    stage_channels: output channels per stage (times ``scale``); depths: convs per stage.
    Defaults (16, 32, 48, 96) x (1, 1, 2, 1): 4 height halvings (32 -> 2), 5 convs.
    """

    def __init__(self, in_channels: int = 3, scale: float = 1.0, width_stride: int = 8,
                 stage_channels: Sequence[int] = (16, 32, 48, 96), depths: Sequence[int] = (1, 1, 2, 1)):
        super().__init__()
        if len(stage_channels) != len(depths):
            raise ValueError("stage_channels and depths must have the same length")
        ws = width_plan(width_stride, len(stage_channels))
        layers, cin = [], in_channels
        for i, (c, d) in enumerate(zip(stage_channels, depths)):
            cout = div8(c * scale)
            for j in range(d):
                layers.append(ConvBN(cin, cout, 3, stride=(2, ws[i]) if j == 0 else 1))
                cin = cout
        self.body = nn.Sequential(*layers)
        self.out_channels = cin

    def forward(self, x):
        return self.body(x).mean(axis=2, keepdim=True)


@register(BACKBONE, "DenseConvDet", DET, ours=True)
class DenseConvDet(nn.Layer):
    """A CPU-friendly detection backbone of plain dense 3x3 ConvBN-ReLU (no depthwise; ours, not PaddleOCR's).

    Why: on CPU paddle's depthwise 3x3 conv runs ~6x slower per FLOP than a dense one; PP-OCRv5_mobile_det
    (PPLCNetV3) spends most of its step there. One train step (forward, DBLoss, backward, Adam) of
    8 x 3 x 320 x 320 on one core: this backbone + DBFPN 64 + DBHead 0.78 s, PP-OCRv5_mobile_det 4.1 s.

    A stride-2 stem conv (``stem`` channels), then one stage per entry of ``stage_channels`` / ``depths``:
    its first conv has stride 2. Returns the 4 stage outputs (strides 4, 8, 16, 32), as ``det: true``
    backbones do; ``out_channels`` = ``stage_channels`` times ``scale`` (rounded to multiples of 8).
    Defaults: stem 16, stages (32, 48, 64, 96) x depths (2, 2, 2, 2), 0.26M parameters.
    """

    def __init__(self, in_channels: int = 3, scale: float = 1.0, stem: int = 16,
                 stage_channels: Sequence[int] = (32, 48, 64, 96), depths: Sequence[int] = (2, 2, 2, 2)):
        super().__init__()
        if len(stage_channels) != 4 or len(depths) != 4 or min(depths) < 1:
            raise ValueError("DenseConvDet: stage_channels and depths need 4 entries each (strides 4, 8, 16, 32), "
                             f"depths >= 1; got {list(stage_channels)} and {list(depths)}")
        cin = div8(stem * scale)
        self.stem = ConvBN(in_channels, cin, 3, stride=2)
        self.stages, self.out_channels = nn.LayerList(), []
        for c, d in zip(stage_channels, depths):
            cout = div8(c * scale)
            self.stages.append(nn.Sequential(*[ConvBN(cin if j == 0 else cout, cout, 3, stride=2 if j == 0 else 1)
                                               for j in range(d)]))
            cin = cout
            self.out_channels.append(cout)

    def forward(self, x):
        x, outs = self.stem(x), []
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return outs
