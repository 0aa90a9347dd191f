"""PaddleOCR's ResNet-vd family, parameter for parameter: ``ResNet`` (text recognition, e.g.
``rec_r34_vd_none_bilstm_ctc``) and ``ResNet_vd`` (DB detection with ResNet18/50-vd).

Written from PaddleOCR's published architecture facts so that the ``state_dict`` keys and shapes equal
PaddleOCR's checkpoints; nothing here is PaddleOCR code.

* ``ResNet`` (rec): stem of three 3x3 convs + 3x3/2 max-pool, stages 2-4 start with stride (2, 1)
  (height only), 2x2/2 max-pool at the end -> [B, 512, H/32, W/4] (H = 32 -> 1).
* ``ResNet_vd`` (det): the same blocks with square strides: stem conv1_1 of stride 2, 3x3/2 max-pool,
  stages 2-4 start with stride 2 (their conv shortcut is a 2x2 ceil-mode average pool then a 1x1 conv,
  the "vd" shortcut). Returns the 4 stage outputs (strides 4, 8, 16, 32), channels [64, 128, 256, 512]
  (x4 for ``layers`` >= 50).
"""
from __future__ import annotations

from typing import Sequence

import paddle.nn as nn
import paddle.nn.functional as F

from .catalog import BACKBONE, DET, REC, register


class ResConvBN(nn.Layer):
    """Conv + BN (+ relu). ``is_vd_mode``: a ceil-mode average pool of the stride precedes a
    stride-1 conv (the vd shortcut). Sub-layer names ``_conv`` / ``_batch_norm`` as PaddleOCR."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, is_vd_mode=False, act=None):
        super().__init__()
        self.is_vd_mode = is_vd_mode
        self.act = act
        if is_vd_mode:
            self._pool2d_avg = nn.AvgPool2D(kernel_size=stride, stride=stride, padding=0, ceil_mode=True)
        self._conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride=1 if is_vd_mode else stride,
                               padding=(kernel_size - 1) // 2, bias_attr=False)
        self._batch_norm = nn.BatchNorm2D(out_channels)

    def forward(self, x):
        if self.is_vd_mode:
            x = self._pool2d_avg(x)
        x = self._batch_norm(self._conv(x))
        return F.relu(x) if self.act == "relu" else x


class ResBasicBlock(nn.Layer):
    """3x3 (stride) relu -> 3x3, plus shortcut (identity or 1x1 conv-BN, vd-pooled when strided)."""

    def __init__(self, in_channels, out_channels, stride, shortcut=True, if_first=False):
        super().__init__()
        self.conv0 = ResConvBN(in_channels, out_channels, 3, stride=stride, act="relu")
        self.conv1 = ResConvBN(out_channels, out_channels, 3)
        self.shortcut = shortcut
        if not shortcut:
            self.short = ResConvBN(in_channels, out_channels, 1, stride=stride,
                                   is_vd_mode=not if_first and stride[0] != 1)

    def forward(self, x):
        y = self.conv1(self.conv0(x))
        return F.relu((x if self.shortcut else self.short(x)) + y)


class ResBottleneckBlock(nn.Layer):
    """1x1 -> 3x3 (stride) -> 1x1 (x4 channels), plus shortcut as in ResBasicBlock."""

    def __init__(self, in_channels, out_channels, stride, shortcut=True, if_first=False):
        super().__init__()
        self.conv0 = ResConvBN(in_channels, out_channels, 1, act="relu")
        self.conv1 = ResConvBN(out_channels, out_channels, 3, stride=stride, act="relu")
        self.conv2 = ResConvBN(out_channels, out_channels * 4, 1)
        self.shortcut = shortcut
        if not shortcut:
            self.short = ResConvBN(in_channels, out_channels * 4, 1, stride=stride,
                                   is_vd_mode=not if_first and stride[0] != 1)

    def forward(self, x):
        y = self.conv2(self.conv1(self.conv0(x)))
        return F.relu((x if self.shortcut else self.short(x)) + y)


RESNET_DEPTHS = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
                 152: [3, 8, 36, 3], 200: [3, 12, 48, 3]}


@register(BACKBONE, "ResNet", REC)
class ResNet(nn.Layer):
    """PaddleOCR's recognition ResNet-vd (``layers`` in 18/34/50/101/152/200). Blocks are named
    ``bb_{stage}_{block}``; the first block of every stage has a conv shortcut; stages 2-4
    start with stride (2, 1). Output [B, 512 (x4 for >= 50), H/32, W/4]."""

    def __init__(self, in_channels: int = 3, layers: int = 50):
        super().__init__()
        if layers not in RESNET_DEPTHS:
            raise ValueError(f"ResNet: layers must be one of {sorted(RESNET_DEPTHS)}, got {layers}")
        depth = RESNET_DEPTHS[layers]
        bottleneck = layers >= 50
        stage_in = [64, 256, 512, 1024] if bottleneck else [64, 64, 128, 256]
        filters = [64, 128, 256, 512]
        self.conv1_1 = ResConvBN(in_channels, 32, 3, act="relu")
        self.conv1_2 = ResConvBN(32, 32, 3, act="relu")
        self.conv1_3 = ResConvBN(32, 64, 3, act="relu")
        self.pool2d_max = nn.MaxPool2D(kernel_size=3, stride=2, padding=1)
        block_cls = ResBottleneckBlock if bottleneck else ResBasicBlock
        expansion = 4 if bottleneck else 1
        self.block_list = []
        for s, n in enumerate(depth):
            for i in range(n):
                cin = stage_in[s] if i == 0 else filters[s] * expansion
                stride = (2, 1) if i == 0 and s != 0 else (1, 1)
                block = block_cls(cin, filters[s], stride, shortcut=i != 0, if_first=s == i == 0)
                self.block_list.append(self.add_sublayer(f"bb_{s}_{i}", block))
        self.out_channels = filters[-1] * expansion
        self.out_pool = nn.MaxPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, x):
        x = self.pool2d_max(self.conv1_3(self.conv1_2(self.conv1_1(x))))
        for block in self.block_list:
            x = block(x)
        return self.out_pool(x)


@register(BACKBONE, "ResNet_vd", DET)
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
