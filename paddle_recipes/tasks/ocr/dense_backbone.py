"""DenseConvRec: a CPU-friendly recognizer backbone of plain dense 3x3 convs (no depthwise).

Why: on CPU paddle's depthwise 3x3 conv runs at ~2 GFLOP/s while a dense 3x3 conv runs at ~12 and a
matmul at ~34+ (one core, measured in issue 13). LCNetRec-0.5 spends only 14% of its FLOPs in depthwise
convs but ~61% of its step time there. DenseConvRec-1.0 has about the same FLOPs per line as LCNetRec-0.5
at [3, 32, 192] (15.5 vs 14.8 MFLOP forward) but all of them in dense convs.

Output [B, C_out, 1, W / width_stride] like the other backbones (height halved per stage, then averaged).
"""
from __future__ import annotations

from typing import Sequence

import paddle.nn as nn

from .models import ConvBN, _div8, _width_plan, register_backbone


@register_backbone("DenseConvRec")
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
        ws = _width_plan(width_stride, len(stage_channels))
        layers, cin = [], in_channels
        for i, (c, d) in enumerate(zip(stage_channels, depths)):
            cout = _div8(c * scale)
            for j in range(d):
                layers.append(ConvBN(cin, cout, 3, stride=(2, ws[i]) if j == 0 else 1))
                cin = cout
        self.body = nn.Sequential(*layers)
        self.out_channels = cin

    def forward(self, x):
        return self.body(x).mean(axis=2, keepdim=True)
