"""PaddleOCR's PP-LCNetV3 (PP-OCRv4/v5 mobile rec and det), parameter for parameter.

Written from PaddleOCR's published architecture facts (layer order, strides, channel
rules, sub-layer names) so that the ``state_dict`` keys and shapes equal those of
PaddleOCR's ``best_accuracy.pdparams`` files and the forward pass computes the same
function. Nothing here is PaddleOCR code.

Re-parameterisable depthwise separable blocks with learnable affine blocks ("lab").
rec (``scale: 0.95``): input 3xHxW -> [B, C, 1, W/8] (train: adaptive pool to [1, 40]; eval:
3x2 average pool, exactly as PaddleOCR, so eval expects H = 48). det (``det: true``, ``scale: 0.75``):
4 feature maps at strides 4, 8, 16, 32.
"""
from __future__ import annotations

from typing import Sequence

import paddle.nn as nn
from paddle import ParamAttr
from paddle.nn.initializer import KaimingNormal
from paddle.regularizer import L2Decay

from .catalog import BACKBONE, DET, REC, register
from .layers import LearnableAffineBlock, SELayer, make_divisible
from .rec_pool import rec_sequence_pool
from .reparam import fuse_branches, fused_param_attrs, unfuse_into

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
    integer stride of 2). ``fuse()`` re-parameterizes it into ``reparam_conv`` (kxk conv with bias, PaddleOCR's
    deploy form and name); ``load_fused(weight, bias)`` goes back to the training form (see nn.reparam)."""
    fused_conv_name = "reparam_conv"

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

    def branches(self):
        """(conv, bn | None) pairs summed before the affine block; bn-only pairs are (None, bn)."""
        pairs = [(b.conv, b.bn) for b in self.conv_kxk]
        if self.conv_1x1 is not None:
            pairs.append((self.conv_1x1.conv, self.conv_1x1.bn))
        if self.identity is not None:
            pairs.append((None, self.identity))
        return pairs

    def fuse(self):
        """Replace the branches by one ``reparam_conv`` computing their eval-mode sum (in place; once)."""
        if getattr(self, "reparam_conv", None) is not None:
            return
        k = self.conv_kxk[0].conv
        weight, bias = fuse_branches(self.branches(), k.weight.shape, k._groups)
        w_attr, b_attr = fused_param_attrs(k, self.conv_kxk[0].bn)  # lr_mult_list carries over
        self.reparam_conv = nn.Conv2D(k._in_channels, k._out_channels, k._kernel_size, stride=k._stride,
                                      padding=k._padding, groups=k._groups, weight_attr=w_attr, bias_attr=b_attr)
        self.reparam_conv.weight.set_value(weight)
        self.reparam_conv.bias.set_value(bias)
        self.identity, self.conv_1x1, self.conv_kxk = None, None, nn.LayerList()

    def load_fused(self, weight, bias):
        """Training form from a fused (weight, bias): see nn.reparam.unfuse_into."""
        unfuse_into(self.branches(), weight, bias)

    def forward(self, x):
        if getattr(self, "reparam_conv", None) is not None:
            out = self.lab(self.reparam_conv(x))
            return out if self.stride == 2 else self.act(out)
        out = 0
        if self.identity is not None:
            out += self.identity(x)
        if self.conv_1x1 is not None:
            out += self.conv_1x1(x)
        for branch in self.conv_kxk:
            out += branch(x)
        out = self.lab(out)
        return out if self.stride == 2 else self.act(out)


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


@register(BACKBONE, "PPLCNetV3", (REC, DET), paddlex={REC: r"PP-OCRv[45]_mobile_rec$"},
          export_name={REC: "PP-OCRv5_mobile_rec", DET: "PP-OCRv5_mobile_det"})
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
        if self.det:  # all stages first, then the projections: PaddleOCR's op order
            outs = []
            for stage in (self.blocks3, self.blocks4, self.blocks5, self.blocks6):
                x = stage(x)
                outs.append(x)
            return [proj(o) for proj, o in zip(self.layer_list, outs)]
        x = self.blocks6(self.blocks5(self.blocks4(self.blocks3(x))))
        return rec_sequence_pool(x, self.training, "PPLCNetV3")
