"""PaddleOCR's MobileNetV1Enhance (the PP-OCRv3 mobile rec backbone), parameter for parameter.

Written from PaddleOCR's published facts (``ppocr/modeling/backbones/rec_mv1_enhance.py``: block table, layer
order, sub-layer names) so that the ``state_dict`` keys and shapes equal PaddleOCR's checkpoints and the forward
pass computes the same function. Nothing here is PaddleOCR code.

``conv1`` (3x3/2 conv-BN-hardswish), then 13 depthwise-separable blocks ``block_list.0`` .. ``12``: a depthwise
kxk conv-BN-hardswish (``_depthwise_conv``), an optional squeeze-excite (``_se``), a pointwise 1x1
conv-BN-hardswish (``_pointwise_conv``). Channels are int(c * scale), not rounded. Blocks 3, 5 and 11 halve the
height only; the last block's stride is ``last_conv_stride``. Then a pool: 2x2/2 max (``last_pool_type`` max, the
default), or an average pool whose kernel and stride are ``last_pool_kernel_size`` (avg).
PP-OCRv3 (scale 0.5, last_conv_stride [1, 2], avg [2, 2]): [B, 3, 48, 320] -> [B, 512, 1, 40].
"""
from __future__ import annotations

from typing import Sequence, Tuple, Union

import paddle.nn as nn
from paddle import ParamAttr
from paddle.nn.initializer import KaimingNormal
from paddle.regularizer import L2Decay

from .catalog import BACKBONE, REC, register
from .layers import SELayer

Stride = Union[int, Sequence[int]]
# One block: (depthwise kernel, in_channels, out_channels, stride, squeeze-excite) before scaling;
# stride None = last_conv_stride.
BLOCKS: Tuple[Tuple[int, int, int, object, bool], ...] = (
    (3, 32, 64, 1, False), (3, 64, 128, 1, False),
    (3, 128, 128, 1, False), (3, 128, 256, (2, 1), False),
    (3, 256, 256, 1, False), (3, 256, 512, (2, 1), False),
    *[(5, 512, 512, 1, False)] * 5,
    (5, 512, 1024, (2, 1), True), (5, 1024, 1024, None, True),
)


class ConvBNHardswish(nn.Layer):
    """Conv (no bias, padding (k-1)//2, Kaiming init) + BN (not weight-decayed) + hardswish; sub-layers ``_conv`` /
    ``_batch_norm`` as PaddleOCR's."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, groups=1):
        super().__init__()
        self._conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride=stride, padding=(kernel_size - 1) // 2,
                               groups=groups, weight_attr=ParamAttr(initializer=KaimingNormal()), bias_attr=False)
        self._batch_norm = nn.BatchNorm2D(out_channels, weight_attr=ParamAttr(regularizer=L2Decay(0.0)),
                                          bias_attr=ParamAttr(regularizer=L2Decay(0.0)))
        self._act = nn.Hardswish()

    def forward(self, x):
        return self._act(self._batch_norm(self._conv(x)))


class DepthwiseSeparable(nn.Layer):
    """Depthwise kxk (stride) -> optional squeeze-excite -> pointwise 1x1, each conv-BN-hardswish."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, use_se=False):
        super().__init__()
        self.use_se = use_se
        self._depthwise_conv = ConvBNHardswish(in_channels, in_channels, kernel_size, stride, groups=in_channels)
        if use_se:
            self._se = SELayer(in_channels)
        self._pointwise_conv = ConvBNHardswish(in_channels, out_channels, 1)

    def forward(self, x):
        x = self._depthwise_conv(x)
        if self.use_se:
            x = self._se(x)
        return self._pointwise_conv(x)


def _pair(v: Stride) -> Union[int, Tuple[int, ...]]:
    return v if isinstance(v, int) else tuple(int(x) for x in v)


@register(BACKBONE, "MobileNetV1Enhance", REC, paddlex={REC: r"PP-OCRv3_mobile_rec$"},
          export_name={REC: "PP-OCRv3_mobile_rec"})
class MobileNetV1Enhance(nn.Layer):
    """PaddleOCR's MobileNetV1Enhance (see module docstring). ``scale``: channel multiplier (0.5 in PP-OCRv3).
    ``last_conv_stride``: stride of the last block (int or [h, w]; PP-OCRv3: [1, 2]). ``last_pool_type``: max
    (2x2/2) or avg (kernel = stride = ``last_pool_kernel_size``, [h, w]). Output [B, int(1024 * scale), H/32, W/4]
    with the defaults."""

    def __init__(self, in_channels: int = 3, scale: float = 0.5, last_conv_stride: Stride = 1,
                 last_pool_type: str = "max", last_pool_kernel_size: Sequence[int] = (3, 2)):
        super().__init__()
        if last_pool_type not in ("max", "avg"):
            raise ValueError(f"MobileNetV1Enhance: last_pool_type must be max or avg, got {last_pool_type!r}")
        self.scale = scale
        self.conv1 = ConvBNHardswish(in_channels, int(32 * scale), 3, stride=2)
        self.block_list = nn.Sequential(*[
            DepthwiseSeparable(int(cin * scale), int(cout * scale), k,
                               _pair(last_conv_stride if stride is None else stride), use_se=se)
            for k, cin, cout, stride, se in BLOCKS])
        if last_pool_type == "avg":
            kernel = _pair(last_pool_kernel_size)
            self.pool = nn.AvgPool2D(kernel_size=kernel, stride=kernel, padding=0)
        else:
            self.pool = nn.MaxPool2D(kernel_size=2, stride=2, padding=0)
        self.out_channels = int(1024 * scale)

    def forward(self, x):
        return self.pool(self.block_list(self.conv1(x)))
