"""PaddleOCR's MobileNetV3 of its rec / cls models (``ppocr/modeling/backbones/rec_mobilenet_v3.py``), weight for weight.

    net = MobileNetV3(scale=0.35, model_name="small")     # ch_ppocr_mobile_v2.0_cls's backbone
    net(paddle.zeros([1, 3, 48, 192])).shape              # [1, 200, 1, 48] (width kept: stride (2, 1) blocks, then a 2x2 max pool)

State-dict keys equal PaddleOCR's: ``conv1.conv.weight``, ``conv1.bn.{weight,bias,_mean,_variance}``,
``blocks.<i>.{expand_conv,bottleneck_conv,linear_conv}.{conv,bn}.*``, ``blocks.<i>.mid_se.conv{1,2}.{weight,bias}``,
``conv2.*``. The rec variant keeps the width: the stride-2 blocks stride (2, 1) (``small_stride`` / ``large_stride``
give the height strides), and a 2x2 max pool ends the network. Facts from PaddleOCR's source (read, not copied):
block tables (k, expand, out, se, act, stride), ``make_divisible`` with divisor 8, SE = mean -> 1x1 (c/4) -> relu ->
1x1 -> hardsigmoid(slope 0.2, offset 0.5), a residual add when stride 1 and in == out channels.
"""
from __future__ import annotations

import paddle.nn.functional as F
from paddle import nn

from .catalog import BACKBONE, CLS, register
from .layers import SELayer, make_divisible

__all__ = ["MobileNetV3", "SCALES"]

SCALES = (0.35, 0.5, 0.75, 1.0, 1.25)
# (kernel, expanded channels, out channels, SE, activation, stride index or 1); stride index i -> the i-th stride
_LARGE = [(3, 16, 16, False, "relu", 0), (3, 64, 24, False, "relu", 1), (3, 72, 24, False, "relu", None),
          (5, 72, 40, True, "relu", 2), (5, 120, 40, True, "relu", None), (5, 120, 40, True, "relu", None),
          (3, 240, 80, False, "hardswish", None), (3, 200, 80, False, "hardswish", None),
          (3, 184, 80, False, "hardswish", None), (3, 184, 80, False, "hardswish", None),
          (3, 480, 112, True, "hardswish", None), (3, 672, 112, True, "hardswish", None),
          (5, 672, 160, True, "hardswish", 3), (5, 960, 160, True, "hardswish", None),
          (5, 960, 160, True, "hardswish", None)]
_SMALL = [(3, 16, 16, True, "relu", 0), (3, 72, 24, False, "relu", 1), (3, 88, 24, False, "relu", None),
          (5, 96, 40, True, "hardswish", 2), (5, 240, 40, True, "hardswish", None),
          (5, 240, 40, True, "hardswish", None), (5, 120, 48, True, "hardswish", None),
          (5, 144, 48, True, "hardswish", None), (5, 288, 96, True, "hardswish", 3),
          (5, 576, 96, True, "hardswish", None), (5, 576, 96, True, "hardswish", None)]
_TABLES = {"large": (_LARGE, 960), "small": (_SMALL, 576)}


class SEModule(SELayer):
    """SELayer with PaddleOCR's MobileNetV3 gate: hardsigmoid(slope 0.2, offset 0.5)."""

    def forward(self, x):
        return x * F.hardsigmoid(self.conv2(self.relu(self.conv1(self.avg_pool(x)))), slope=0.2, offset=0.5)


class ConvBNLayer(nn.Layer):
    """conv (no bias) -> BN -> relu | hardswish | none (act None)."""

    def __init__(self, cin: int, cout: int, kernel: int, stride=1, groups: int = 1, act: str | None = None):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, kernel, stride=stride, padding=(kernel - 1) // 2, groups=groups,
                              bias_attr=False)
        self.bn = nn.BatchNorm2D(cout)
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        if self.act == "relu":
            return F.relu(x)
        return F.hardswish(x) if self.act == "hardswish" else x


class ResidualUnit(nn.Layer):
    """1x1 expand -> kxk depthwise (stride) -> optional SE -> 1x1 linear, + input when shapes allow."""

    def __init__(self, cin: int, mid: int, cout: int, kernel: int, stride, use_se: bool, act: str):
        super().__init__()
        self.if_shortcut = stride == 1 and cin == cout
        self.if_se = use_se
        self.expand_conv = ConvBNLayer(cin, mid, 1, act=act)
        self.bottleneck_conv = ConvBNLayer(mid, mid, kernel, stride=stride, groups=mid, act=act)
        if use_se:
            self.mid_se = SEModule(mid)
        self.linear_conv = ConvBNLayer(mid, cout, 1)

    def forward(self, inputs):
        x = self.bottleneck_conv(self.expand_conv(inputs))
        if self.if_se:
            x = self.mid_se(x)
        x = self.linear_conv(x)
        return inputs + x if self.if_shortcut else x


# PaddleOCR's rec_mobilenet_v3 is this class too (its rec use is untested: listed as not built, nn/__init__.py)
@register(BACKBONE, "MobileNetV3", CLS, export_name={CLS: "ch_ppocr_mobile_v2.0_cls"})
class MobileNetV3(nn.Layer):
    """PaddleOCR's rec/cls MobileNetV3. model_name "small" | "large"; scale one of SCALES; small_stride /
    large_stride: 4 height strides of the stride blocks (defaults [2, 2, 2, 2] / [1, 2, 2, 2]; the first
    large one strides both axes); disable_se drops every SE block. out_channels: channels of the output."""

    def __init__(self, in_channels: int = 3, model_name: str = "small", scale: float = 0.5,
                 large_stride: list | None = None, small_stride: list | None = None, disable_se: bool = False):
        super().__init__()
        if model_name not in _TABLES:
            raise ValueError(f"MobileNetV3 model_name {model_name!r}: one of {list(_TABLES)}")
        if scale not in SCALES:
            raise ValueError(f"MobileNetV3 scale {scale}: one of {list(SCALES)}")
        small_stride = list(small_stride or [2, 2, 2, 2])
        large_stride = list(large_stride or [1, 2, 2, 2])
        for name, s in (("small_stride", small_stride), ("large_stride", large_stride)):
            if len(s) != 4:
                raise ValueError(f"MobileNetV3 {name} needs 4 values, got {s}")
        table, squeeze = _TABLES[model_name]
        heights = small_stride if model_name == "small" else large_stride
        self.conv1 = ConvBNLayer(in_channels, make_divisible(16 * scale, 8), 3, stride=2, act="hardswish")
        cin, blocks = make_divisible(16 * scale, 8), []
        for k, exp, c, se, act, si in table:
            if si is None:
                stride = 1
            elif model_name == "large" and si == 0:
                stride = heights[0]
            else:
                stride = (heights[si], 1)
            cout = make_divisible(scale * c, 8)
            blocks.append(ResidualUnit(cin, make_divisible(scale * exp, 8), cout, k, stride, se and not disable_se, act))
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.out_channels = make_divisible(scale * squeeze, 8)
        self.conv2 = ConvBNLayer(cin, self.out_channels, 1, act="hardswish")
        self.pool = nn.MaxPool2D(kernel_size=2, stride=2, padding=0)

    def forward(self, x):
        return self.pool(self.conv2(self.blocks(self.conv1(x))))
