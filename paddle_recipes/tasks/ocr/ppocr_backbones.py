"""PaddleOCR's recognition backbones, parameter for parameter.

Written from PaddleOCR's published architecture facts (layer order, strides, channel
rules, sub-layer names) so that the ``state_dict`` keys and shapes equal those of
PaddleOCR's ``best_accuracy.pdparams`` files and the forward pass computes the same
function. Nothing here is PaddleOCR code.

* ``PPLCNetV3`` (PP-OCRv4/v5 mobile rec, ``scale: 0.95``): re-parameterisable depthwise
  separable blocks with learnable affine blocks ("lab"). Input 3xHxW -> [B, C, 1, W/8]
  (train: adaptive pool to [1, 40]; eval: 3x2 average pool, exactly as PaddleOCR, so
  eval expects H = 48).
* ``ResNet`` (``rec_r34_vd_none_bilstm_ctc``, ``layers: 34``): vd-ResNet for text. Stem of
  three 3x3 convs + 3x3/2 max-pool, stages 2-4 start with stride (2, 1) (height only),
  2x2/2 max-pool at the end -> [B, 512, H/32, W/4] (H = 32 -> 1).
"""
from __future__ import annotations

from typing import Sequence

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle import ParamAttr
from paddle.nn.initializer import Constant, KaimingNormal
from paddle.regularizer import L2Decay

from ...nn.rec_pool import rec_sequence_pool


# ------------------------------------------------------------------ PPLCNetV3
# Rec layout per stage: (kernel, in_c, out_c, stride, use_se) before scaling.
LCNETV3_REC_STAGES = {
    "blocks2": [(3, 16, 32, 1, False)],
    "blocks3": [(3, 32, 64, 1, False), (3, 64, 64, 1, False)],
    "blocks4": [(3, 64, 128, (2, 1), False), (3, 128, 128, 1, False)],
    "blocks5": [(3, 128, 256, (1, 2), False)] + [(5, 256, 256, 1, False)] * 4,
    "blocks6": [(5, 256, 512, (2, 1), True), (5, 512, 512, 1, True),
                (5, 512, 512, (2, 1), False), (5, 512, 512, 1, False)],
}
# Det layout (``det: true``): square strides; stages 3-6 each halve H and W (outputs at 1/4 .. 1/32).
LCNETV3_DET_STAGES = {
    "blocks2": [(3, 16, 32, 1, False)],
    "blocks3": [(3, 32, 64, 2, False), (3, 64, 64, 1, False)],
    "blocks4": [(3, 64, 128, 2, False), (3, 128, 128, 1, False)],
    "blocks5": [(3, 128, 256, 2, False)] + [(5, 256, 256, 1, False)] * 4,
    "blocks6": [(5, 256, 512, 2, True), (5, 512, 512, 1, True),
                (5, 512, 512, 1, False), (5, 512, 512, 1, False)],
}
LCNETV3_DET_OUT = (16, 24, 56, 480)  # 1x1 projection widths of the 4 det outputs (times ``scale``)


def make_divisible(v: float, divisor: int = 16, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of ``divisor`` without losing more than 10%."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


class LearnableAffineBlock(nn.Layer):
    """y = scale * x + bias with scalar parameters (learning rate x ``lab_lr``)."""

    def __init__(self, scale_value=1.0, bias_value=0.0, lr_mult=1.0, lab_lr=0.1):
        super().__init__()
        attr = ParamAttr(learning_rate=lr_mult * lab_lr)
        self.scale = self.create_parameter([1], attr=attr, default_initializer=Constant(scale_value))
        self.bias = self.create_parameter([1], attr=ParamAttr(learning_rate=lr_mult * lab_lr),
                                          default_initializer=Constant(bias_value))

    def forward(self, x):
        return self.scale * x + self.bias


class ConvBNLayer(nn.Layer):
    """Conv (no bias, 'same' padding) + BN without activation; BN params are not weight-decayed."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, groups=1, lr_mult=1.0):
        super().__init__()
        self.conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride=stride,
                              padding=(kernel_size - 1) // 2, groups=groups, bias_attr=False,
                              weight_attr=ParamAttr(initializer=KaimingNormal(), learning_rate=lr_mult))
        self.bn = nn.BatchNorm2D(out_channels,
                                 weight_attr=ParamAttr(regularizer=L2Decay(0.0), learning_rate=lr_mult),
                                 bias_attr=ParamAttr(regularizer=L2Decay(0.0), learning_rate=lr_mult))

    def forward(self, x):
        return self.bn(self.conv(x))


class Act(nn.Layer):
    """hardswish (or relu) followed by a learnable affine block."""

    def __init__(self, act="hswish", lr_mult=1.0, lab_lr=0.1):
        super().__init__()
        self.act = nn.Hardswish() if act == "hswish" else nn.ReLU()
        self.lab = LearnableAffineBlock(lr_mult=lr_mult, lab_lr=lab_lr)

    def forward(self, x):
        return self.lab(self.act(x))


class LearnableRepLayer(nn.Layer):
    """Sum of ``num_conv_branches`` kxk conv-BN branches, a 1x1 conv-BN branch (k > 1) and a BN
    identity branch (same channels, stride 1); then an affine block and Act (skipped for an
    integer stride of 2). Training-time form only (no re-parameterisation)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, groups=1,
                 num_conv_branches=1, lr_mult=1.0, lab_lr=0.1):
        super().__init__()
        self.stride = stride
        if in_channels == out_channels and stride == 1:
            self.identity = nn.BatchNorm2D(in_channels, weight_attr=ParamAttr(learning_rate=lr_mult),
                                           bias_attr=ParamAttr(learning_rate=lr_mult))
        else:
            self.identity = None
        self.conv_kxk = nn.LayerList([
            ConvBNLayer(in_channels, out_channels, kernel_size, stride, groups=groups, lr_mult=lr_mult)
            for _ in range(num_conv_branches)])
        self.conv_1x1 = (ConvBNLayer(in_channels, out_channels, 1, stride, groups=groups, lr_mult=lr_mult)
                         if kernel_size > 1 else None)
        self.lab = LearnableAffineBlock(lr_mult=lr_mult, lab_lr=lab_lr)
        self.act = Act(lr_mult=lr_mult, lab_lr=lab_lr)

    def forward(self, x):
        out = 0
        if self.identity is not None:
            out += self.identity(x)
        if self.conv_1x1 is not None:
            out += self.conv_1x1(x)
        for branch in self.conv_kxk:
            out += branch(x)
        out = self.lab(out)
        return out if self.stride == 2 else self.act(out)


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


class LCNetV3Block(nn.Layer):
    """Depthwise rep-layer (stride) -> optional SE -> pointwise rep-layer."""

    def __init__(self, in_channels, out_channels, stride, dw_size, use_se=False, conv_kxk_num=4,
                 lr_mult=1.0, lab_lr=0.1):
        super().__init__()
        self.use_se = use_se
        self.dw_conv = LearnableRepLayer(in_channels, in_channels, dw_size, stride=stride, groups=in_channels,
                                         num_conv_branches=conv_kxk_num, lr_mult=lr_mult, lab_lr=lab_lr)
        if use_se:
            self.se = SELayer(in_channels, lr_mult=lr_mult)
        self.pw_conv = LearnableRepLayer(in_channels, out_channels, 1, stride=1,
                                         num_conv_branches=conv_kxk_num, lr_mult=lr_mult, lab_lr=lab_lr)

    def forward(self, x):
        x = self.dw_conv(x)
        if self.use_se:
            x = self.se(x)
        return self.pw_conv(x)


class PPLCNetV3(nn.Layer):
    """PP-LCNetV3 (PP-OCRv4/v5 mobile). ``scale``: channel multiplier (0.95 in PaddleOCR's rec
    configs, 0.75 in its det configs). ``conv_kxk_num``: kxk branches per rep-layer.
    ``lr_mult_list``: 6 learning-rate multipliers (stem, blocks2..6). ``lab_lr``: extra multiplier
    for the affine blocks.

    * rec (``det: false``): output [B, 512*scale rounded, 1, 40] for a 48x320 input.
    * det (``det: true``): the outputs of blocks3..6 (strides 4, 8, 16, 32), each projected by a
      1x1 conv (``layer_list``, with bias) to int((16, 24, 56, 480) * scale) channels."""

    def __init__(self, scale: float = 1.0, conv_kxk_num: int = 4,
                 lr_mult_list: Sequence[float] = (1.0,) * 6, lab_lr: float = 0.1,
                 in_channels: int = 3, det: bool = False):
        super().__init__()
        if len(lr_mult_list) != 6:
            raise ValueError(f"PPLCNetV3: lr_mult_list needs 6 values, got {len(lr_mult_list)}")
        self.scale, self.det = scale, det
        self.conv1 = ConvBNLayer(in_channels, make_divisible(16 * scale), 3, 2, lr_mult=lr_mult_list[0])
        plan_by_stage = LCNETV3_DET_STAGES if det else LCNETV3_REC_STAGES
        for stage, (name, plan) in enumerate(plan_by_stage.items(), start=1):
            blocks = [LCNetV3Block(make_divisible(cin * scale), make_divisible(cout * scale), stride=s,
                                   dw_size=k, use_se=se, conv_kxk_num=conv_kxk_num,
                                   lr_mult=lr_mult_list[stage], lab_lr=lab_lr)
                      for k, cin, cout, s, se in plan]
            setattr(self, name, nn.Sequential(*blocks))
        self.out_channels = make_divisible(512 * scale)
        if det:
            stage_out = [make_divisible(plan_by_stage[f"blocks{i}"][-1][2] * scale) for i in range(3, 7)]
            self.out_channels = [int(c * scale) for c in LCNETV3_DET_OUT]
            self.layer_list = nn.LayerList([nn.Conv2D(cin, cout, 1)
                                            for cin, cout in zip(stage_out, self.out_channels)])

    def forward(self, x):
        x = self.blocks2(self.conv1(x))
        if self.det:
            outs = []
            for i, stage in enumerate((self.blocks3, self.blocks4, self.blocks5, self.blocks6)):
                x = stage(x)
                outs.append(self.layer_list[i](x))
            return outs
        x = self.blocks6(self.blocks5(self.blocks4(self.blocks3(x))))
        return rec_sequence_pool(x, self.training, "PPLCNetV3")


# ------------------------------------------------------------- ResNet (rec vd)
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


# ---------------------------------------------------------------- PPHGNetV2
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
