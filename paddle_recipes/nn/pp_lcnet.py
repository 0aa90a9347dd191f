"""PaddleClas's PP-LCNet (``ppcls/arch/backbone/legendary_models/pp_lcnet.py``), weight for weight: the network of
PaddleX's ``PP-LCNet_x0_25_textline_ori`` / ``PP-LCNet_x1_0_textline_ori`` (stride_list [2, [2, 1], [2, 1], [2, 1],
[2, 1]], 2 classes, input [3, 80, 160]) and of its image classifiers (stride_list [2, 2, 2, 2, 2]).

    net = PPLCNet(scale=0.25, class_num=2, stride_list=TEXTLINE_STRIDES)
    net(paddle.zeros([1, 3, 80, 160])).shape     # [1, 2]: logits (PaddleClas), or softmax in eval when eval_softmax

State-dict keys equal PaddleClas's: ``conv1.{conv,bn}.*``, ``blocks2`` .. ``blocks6`` ``.<i>.{dw_conv,pw_conv}.{conv,bn}.*``
and ``.<i>.se.conv{1,2}.{weight,bias}``, ``last_conv.weight``, ``fc.{weight,bias}``. Facts from PaddleClas (read, not
copied): the block table [k, in, out, stride, se], channels ``make_divisible(c * scale, 8)``, stride_list[0] for the
stem and stride_list[i] (i >= 1) for the first block of blocks<i + 2> (blocks2 strides 1), hardswish everywhere, SE = mean -> 1x1 (c/4) -> relu ->
1x1 -> hardsigmoid (slope 1/6), then avg pool -> 1x1 last_conv (no bias, class_expand) -> hardswish -> dropout
(downscale_in_infer: scaled by 1 - p at inference) -> flatten -> fc.
"""
from __future__ import annotations

import paddle.nn.functional as F
from paddle import nn

from .catalog import BACKBONE, CLS, register
from .layers import SELayer, make_divisible

__all__ = ["PPLCNet", "TEXTLINE_STRIDES"]

TEXTLINE_STRIDES = [2, [2, 1], [2, 1], [2, 1], [2, 1]]  # PaddleX's textline_ori models keep the width
# blocks<n>: [kernel, in, out, stride (of the first block: stride_list), SE]
_BLOCKS = {2: [(3, 16, 32, False)],
           3: [(3, 32, 64, False), (3, 64, 64, False)],
           4: [(3, 64, 128, False), (3, 128, 128, False)],
           5: [(3, 128, 256, False)] + [(5, 256, 256, False)] * 5,
           6: [(5, 256, 512, True), (5, 512, 512, True)]}


class ConvBNLayer(nn.Layer):
    """conv (no bias, Kaiming normal init) -> BN -> hardswish."""

    def __init__(self, cin: int, kernel: int, cout: int, stride, groups: int = 1):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, kernel, stride=stride, padding=(kernel - 1) // 2, groups=groups,
                              weight_attr=nn.initializer.KaimingNormal(), bias_attr=False)
        self.bn = nn.BatchNorm2D(cout)

    def forward(self, x):
        return F.hardswish(self.bn(self.conv(x)))


class DepthwiseSeparable(nn.Layer):
    """kxk depthwise (stride) -> optional SE -> 1x1 pointwise."""

    def __init__(self, cin: int, cout: int, stride, kernel: int, use_se: bool):
        super().__init__()
        self.use_se = use_se
        self.dw_conv = ConvBNLayer(cin, kernel, cin, stride, groups=cin)
        if use_se:
            self.se = SELayer(cin)  # PaddleClas's SE (hardsigmoid slope 1/6)
        self.pw_conv = ConvBNLayer(cin, 1, cout, 1)

    def forward(self, x):
        x = self.dw_conv(x)
        return self.pw_conv(self.se(x) if self.use_se else x)


# a whole classifier: its fc is the head (class_num its classes); the cls builder passes eval_softmax
@register(BACKBONE, "PPLCNet", CLS, paddlex={CLS: r"PP-LCNet_x\d_\d+_textline_ori$"}, fixed=("eval_softmax",),
          classes="class_num")
class PPLCNet(nn.Layer):
    """PaddleClas PPLCNetBaseNet. scale: channel multiplier (0.25 for x0_25); class_num: outputs; stride_list: 5
    strides (int or [h, w]); dropout_prob: before fc; class_expand: last_conv channels; eval_softmax: return softmax
    probabilities in eval mode (PaddleOCR's ClsHead convention; PaddleClas adds it only at export)."""

    def __init__(self, scale: float = 1.0, class_num: int = 1000, stride_list=(2, 2, 2, 2, 2),
                 dropout_prob: float = 0.2, class_expand: int = 1280, eval_softmax: bool = False):
        super().__init__()
        strides = [list(s) if isinstance(s, (list, tuple)) else s for s in stride_list]
        if len(strides) != 5:
            raise ValueError(f"PPLCNet stride_list needs 5 strides, got {list(stride_list)}")
        if class_num < 1:
            raise ValueError(f"PPLCNet class_num must be >= 1, got {class_num}")
        self.eval_softmax = eval_softmax
        self.conv1 = ConvBNLayer(3, 3, make_divisible(16 * scale, 8), strides[0])
        for n, table in _BLOCKS.items():
            layers = [DepthwiseSeparable(make_divisible(cin * scale, 8), make_divisible(cout * scale, 8),
                                         strides[n - 2] if n > 2 and i == 0 else 1, k, se)
                      for i, (k, cin, cout, se) in enumerate(table)]
            setattr(self, f"blocks{n}", nn.Sequential(*layers))
        self.avg_pool = nn.AdaptiveAvgPool2D(1)
        self.last_conv = nn.Conv2D(make_divisible(512 * scale, 8), class_expand, 1, bias_attr=False)
        self.dropout = nn.Dropout(p=dropout_prob, mode="downscale_in_infer")
        self.fc = nn.Linear(class_expand, class_num)

    def class_dependent_params(self) -> list:
        """state_dict prefixes whose shapes follow the classes (re-initialised on a label-set change): the fc."""
        return ["fc."]

    def forward(self, x):
        x = self.conv1(x)
        for n in _BLOCKS:
            x = getattr(self, f"blocks{n}")(x)
        x = self.dropout(F.hardswish(self.last_conv(self.avg_pool(x))))
        x = self.fc(x.flatten(start_axis=1))
        return F.softmax(x, axis=1) if self.eval_softmax and not self.training else x
