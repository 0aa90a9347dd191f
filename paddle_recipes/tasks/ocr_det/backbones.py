"""Detection backbones: PaddleOCR's ResNet-vd (``ResNet_vd``: DB with ResNet18/50-vd), parameter for parameter,
and ``DenseConvDet``, our CPU-friendly dense-conv backbone (the default recipe's).

Same blocks as the recognition ResNet (``tasks/ocr/ppocr_backbones.py``) with square strides:
stem conv1_1 of stride 2, 3x3/2 max-pool, stages 2-4 start with stride 2 (their conv shortcut is
a 2x2 ceil-mode average pool then a 1x1 conv, the "vd" shortcut). Returns the 4 stage outputs
(strides 4, 8, 16, 32), channels [64, 128, 256, 512] (x4 for ``layers`` >= 50).
"""
from __future__ import annotations

from typing import Sequence

import paddle.nn as nn

from ..ocr.models import ConvBN, _div8
from ..ocr.ppocr_backbones import RESNET_DEPTHS, ResBasicBlock, ResBottleneckBlock, ResConvBN


class ResNet_vd(nn.Layer):
    """``layers`` in 18/34/50/101/152/200; ``out_indices``: which stages to return (default all 4).
    ``disable_se`` is accepted and has no effect (PaddleOCR's res18 config sets it; its ResNet_vd has
    no SE). Deformable stages (``dcn_stage``) are not implemented."""

    def __init__(self, in_channels: int = 3, layers: int = 50, dcn_stage: Sequence[bool] | None = None,
                 out_indices: Sequence[int] | None = None, disable_se: bool = True):
        super().__init__()
        if layers not in RESNET_DEPTHS:
            raise ValueError(f"ResNet_vd: layers must be one of {sorted(RESNET_DEPTHS)}, got {layers}")
        if dcn_stage and any(dcn_stage):
            raise ValueError("ResNet_vd: deformable conv stages (dcn_stage) are not implemented")
        self.out_indices = list(out_indices) if out_indices is not None else [0, 1, 2, 3]
        bottleneck = layers >= 50
        expansion = 4 if bottleneck else 1
        stage_in = [64, 256, 512, 1024] if bottleneck else [64, 64, 128, 256]
        filters = [64, 128, 256, 512]
        self.conv1_1 = ResConvBN(in_channels, 32, 3, stride=2, act="relu")
        self.conv1_2 = ResConvBN(32, 32, 3, act="relu")
        self.conv1_3 = ResConvBN(32, 64, 3, act="relu")
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        block_cls = ResBottleneckBlock if bottleneck else ResBasicBlock
        self.stages, self.out_channels = [], []
        for s, n in enumerate(RESNET_DEPTHS[layers]):
            blocks = []
            for i in range(n):
                cin = stage_in[s] if i == 0 else filters[s] * expansion
                stride = (2, 2) if i == 0 and s != 0 else (1, 1)
                block = block_cls(cin, filters[s], stride, shortcut=i != 0, if_first=s == i == 0)
                blocks.append(self.add_sublayer(f"bb_{s}_{i}", block))
            self.stages.append(blocks)
            if s in self.out_indices:
                self.out_channels.append(filters[s] * expansion)

    def forward(self, x):
        x = self.pool2d_max(self.conv1_3(self.conv1_2(self.conv1_1(x))))
        outs = []
        for s, blocks in enumerate(self.stages):
            for block in blocks:
                x = block(x)
            if s in self.out_indices:
                outs.append(x)
        return outs


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
        cin = _div8(stem * scale)
        self.stem = ConvBN(in_channels, cin, 3, stride=2)
        self.stages, self.out_channels = nn.LayerList(), []
        for c, d in zip(stage_channels, depths):
            cout = _div8(c * scale)
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
