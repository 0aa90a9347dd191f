"""PaddleOCR's PP-HGNetV2-B4 (PP-OCRv5 server rec and det), parameter for parameter.

Written from PaddleOCR's published architecture facts (stage tables, layer order, sub-layer names) so that the
``state_dict`` keys and shapes equal PaddleOCR's checkpoints and the forward pass computes the same function.
Nothing here is PaddleOCR code.
"""
from __future__ import annotations

from typing import Sequence

import paddle
import paddle.nn as nn
from paddle import ParamAttr
from paddle.nn.initializer import KaimingNormal
from paddle.regularizer import L2Decay

from .catalog import BACKBONE, DET, REC, register
from .layers import LearnableAffineBlock
from .rec_pool import rec_sequence_pool


class HGConvBNAct(nn.Layer):
    """Conv (no bias) + BN (+ relu, + optional affine block). ``padding`` "SAME" or None (= (k-1)//2)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 use_act=True, use_lab=False, lr_mult=1.0):
        super().__init__()
        self.use_act, self.use_lab = use_act, use_lab
        self.conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride,
                              padding=(kernel_size - 1) // 2 if padding is None else padding, groups=groups,
                              weight_attr=ParamAttr(learning_rate=lr_mult, initializer=KaimingNormal()),
                              bias_attr=False)
        self.bn = nn.BatchNorm2D(out_channels,
                                 weight_attr=ParamAttr(regularizer=L2Decay(0.0), learning_rate=lr_mult),
                                 bias_attr=ParamAttr(regularizer=L2Decay(0.0), learning_rate=lr_mult))
        if use_act:
            self.act = nn.ReLU()
            if use_lab:
                self.lab = LearnableAffineBlock(lr_mult=lr_mult, lab_lr=0.01)

    def forward(self, x):
        x = self.bn(self.conv(x))
        if self.use_act:
            x = self.act(x)
            if self.use_lab:
                x = self.lab(x)
        return x


class HGLightConvBNAct(nn.Layer):
    """1x1 conv-BN (no act) then depthwise kxk conv-BN-relu."""

    def __init__(self, in_channels, out_channels, kernel_size, use_lab=False, lr_mult=1.0):
        super().__init__()
        self.conv1 = HGConvBNAct(in_channels, out_channels, 1, use_act=False, use_lab=use_lab, lr_mult=lr_mult)
        self.conv2 = HGConvBNAct(out_channels, out_channels, kernel_size, groups=out_channels, use_lab=use_lab,
                                 lr_mult=lr_mult)

    def forward(self, x):
        return self.conv2(self.conv1(x))


class HGStem(nn.Layer):
    """stem1 (3x3/2) -> [2x2 max-pool 'SAME' || stem2a -> stem2b (2x2 'SAME')] concat -> stem3 (3x3, stride 1
    for text recognition, else 2) -> stem4 (1x1)."""

    def __init__(self, in_channels, mid_channels, out_channels, use_lab=False, lr_mult=1.0, text_rec=False):
        super().__init__()
        kw = dict(use_lab=use_lab, lr_mult=lr_mult)
        self.stem1 = HGConvBNAct(in_channels, mid_channels, 3, stride=2, **kw)
        self.stem2a = HGConvBNAct(mid_channels, mid_channels // 2, 2, padding="SAME", **kw)
        self.stem2b = HGConvBNAct(mid_channels // 2, mid_channels, 2, padding="SAME", **kw)
        self.stem3 = HGConvBNAct(mid_channels * 2, mid_channels, 3, stride=1 if text_rec else 2, **kw)
        self.stem4 = HGConvBNAct(mid_channels, out_channels, 1, **kw)
        self.pool = nn.MaxPool2D(kernel_size=2, stride=1, ceil_mode=True, padding="SAME")

    def forward(self, x):
        x = self.stem1(x)
        x = paddle.concat([self.pool(x), self.stem2b(self.stem2a(x))], 1)
        return self.stem4(self.stem3(x))


class HGBlock(nn.Layer):
    """``layer_num`` chained convs; the input and every output are concatenated, squeezed (1x1 to
    out/2) and excited (1x1 to out); ``identity`` adds the input."""

    def __init__(self, in_channels, mid_channels, out_channels, kernel_size=3, layer_num=6, identity=False,
                 light_block=True, use_lab=False, lr_mult=1.0):
        super().__init__()
        self.identity = identity
        self.layers = nn.LayerList()
        for i in range(layer_num):
            cin = in_channels if i == 0 else mid_channels
            if light_block:
                self.layers.append(HGLightConvBNAct(cin, mid_channels, kernel_size, use_lab=use_lab, lr_mult=lr_mult))
            else:
                self.layers.append(HGConvBNAct(cin, mid_channels, kernel_size, use_lab=use_lab, lr_mult=lr_mult))
        total = in_channels + layer_num * mid_channels
        self.aggregation_squeeze_conv = HGConvBNAct(total, out_channels // 2, 1, use_lab=use_lab, lr_mult=lr_mult)
        self.aggregation_excitation_conv = HGConvBNAct(out_channels // 2, out_channels, 1, use_lab=use_lab,
                                                       lr_mult=lr_mult)

    def forward(self, x):
        outs = [x]
        y = x
        for layer in self.layers:
            y = layer(y)
            outs.append(y)
        y = self.aggregation_excitation_conv(self.aggregation_squeeze_conv(paddle.concat(outs, axis=1)))
        return y + x if self.identity else y


class HGStage(nn.Layer):
    """Optional depthwise 3x3 strided downsample (conv-BN) then ``block_num`` HGBlocks."""

    def __init__(self, in_channels, mid_channels, out_channels, block_num, layer_num=6, is_downsample=True,
                 light_block=True, kernel_size=3, use_lab=False, stride=2, lr_mult=1.0):
        super().__init__()
        self.is_downsample = is_downsample
        if is_downsample:
            self.downsample = HGConvBNAct(in_channels, in_channels, 3, stride=stride, groups=in_channels,
                                          use_act=False, use_lab=use_lab, lr_mult=lr_mult)
        self.blocks = nn.Sequential(*[
            HGBlock(in_channels if i == 0 else out_channels, mid_channels, out_channels, kernel_size, layer_num,
                    identity=i != 0, light_block=light_block, use_lab=use_lab, lr_mult=lr_mult)
            for i in range(block_num)])

    def forward(self, x):
        if self.is_downsample:
            x = self.downsample(x)
        return self.blocks(x)


# (in, mid, out, blocks, downsample, light, kernel, layers, stride) per stage, text-recognition layout
PPHGNETV2_B4_REC_STAGES = [
    (48, 48, 128, 1, True, False, 3, 6, (2, 1)),
    (128, 96, 512, 1, True, False, 3, 6, (1, 2)),
    (512, 192, 1024, 3, True, True, 5, 6, (2, 1)),
    (1024, 384, 2048, 1, True, True, 5, 6, (2, 1)),
]
# detection layout (``det: true``): no downsample in stage 1, square stride 2 in stages 2-4
PPHGNETV2_B4_DET_STAGES = [
    (48, 48, 128, 1, False, False, 3, 6, 2),
    (128, 96, 512, 1, True, False, 3, 6, 2),
    (512, 192, 1024, 3, True, True, 5, 6, 2),
    (1024, 384, 2048, 1, True, True, 5, 6, 2),
]


@register(BACKBONE, "PPHGNetV2_B4", (REC, DET), paddlex={REC: r"PP-OCRv5_server_rec$"},
          export_name={REC: "PP-OCRv5_server_rec", DET: "PP-OCRv5_server_det"})
class PPHGNetV2_B4(nn.Layer):
    """PP-HGNetV2-B4, PP-OCRv5 server.

    * rec (``text_rec: True``): output [B, 2048, 1, 40] for 48x320 (train: adaptive pool to [1, 40];
      eval: 3x2 average pool). Like PaddleOCR's checkpoints it holds the (unused) classification
      ``last_conv`` and ``fc`` (``class_expand`` 2048, ``class_num`` 1000), so the names match.
    * det (``det: True``): the 4 stage outputs [128, 512, 1024, 2048] channels at strides 4, 8, 16, 32
      (the stem's third conv has stride 2). The unused ``last_conv`` is kept, ``fc`` is not (as PaddleOCR)."""

    def __init__(self, in_channels: int = 3, text_rec: bool | None = None, use_lab: bool = False,
                 lr_mult_list: Sequence[float] = (1.0,) * 5, class_expand: int = 2048, class_num: int = 1000,
                 det: bool = False):
        super().__init__()
        text_rec = not det if text_rec is None else text_rec  # None: the layout that ``det`` implies
        if det == text_rec:
            raise ValueError("PPHGNetV2_B4: set exactly one of text_rec: true (recognition) or det: true "
                             "(detection); the classification layout is not implemented")
        self.det = det
        plan = PPHGNETV2_B4_DET_STAGES if det else PPHGNETV2_B4_REC_STAGES
        self.stem = HGStem(in_channels, 32, 48, use_lab=use_lab, lr_mult=lr_mult_list[0], text_rec=text_rec)
        self.stages = nn.LayerList([
            HGStage(cin, mid, cout, nb, ln, down, light, k, use_lab,
                    list(stride) if isinstance(stride, tuple) else stride, lr_mult=lr_mult_list[i + 1])
            for i, (cin, mid, cout, nb, down, light, k, ln, stride) in enumerate(plan)])
        self.last_conv = nn.Conv2D(plan[-1][2], class_expand, 1, bias_attr=False)
        if det:
            self.out_channels = [p[2] for p in plan]
        else:
            self.out_channels = plan[-1][2]
            self.fc = nn.Linear(class_expand, class_num)

    def forward(self, x):
        x = self.stem(x)
        outs = []
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        if self.det:
            return outs
        return rec_sequence_pool(x, self.training, "PPHGNetV2_B4")
