"""PaddleOCR's DB necks, parameter for parameter: ``DBFPN`` (ResNet DB), ``RSEFPN`` (PP-OCRv4/v5
mobile), ``LKPAN`` (PP-OCRv4/v5 server, optional ``intracl`` blocks).

Each takes the 4 backbone maps (strides 4, 8, 16, 32), fuses them top-down (nearest 2x upsampling
and addition), reduces each level to ``out_channels // 4`` and returns their concatenation at
stride 4: [B, out_channels, H/4, W/4].
"""
from __future__ import annotations

from typing import Sequence

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle import ParamAttr
from paddle.nn.initializer import KaimingUniform

from ...nn.catalog import DET, NECK, register


def neck_conv(cin, cout, k, stride=1, bias=False):
    """Conv with 'same' padding and PaddleOCR's neck initialiser (Kaiming uniform)."""
    return nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2,
                     weight_attr=ParamAttr(initializer=KaimingUniform()), bias_attr=None if bias else False)


def upsample_nearest(x, factor: int, repeat: bool = False):
    """Nearest-neighbour upsampling by an integer ``factor``: paddle's interpolation (as PaddleOCR), or
    the same values by repeating rows and columns (``repeat``: for exported models, whose nearest_interp
    with a scale attribute the oneDNN CPU executor of paddle 3.3 cannot run)."""
    if repeat:
        return x.repeat_interleave(factor, axis=2).repeat_interleave(factor, axis=3)
    return F.upsample(x, scale_factor=factor, mode="nearest", align_mode=1)


class _Neck(nn.Layer):
    """Top-down fusion and output concatenation shared by the necks. ``repeat_upsample``: see upsample_nearest."""

    repeat_upsample = False

    def _top_down(self, ins):
        """[in2, in3, in4, in5] -> [out2, out3, out4, in5]: each level plus the 2x upsampled level above."""
        outs = [ins[3]]
        for level in (2, 1, 0):
            outs.insert(0, ins[level] + upsample_nearest(outs[0], 2, self.repeat_upsample))
        return outs

    def _fuse(self, p2, p3, p4, p5):
        r = self.repeat_upsample
        return paddle.concat([upsample_nearest(p5, 8, r), upsample_nearest(p4, 4, r), upsample_nearest(p3, 2, r), p2],
                             axis=1)


class SEModule(nn.Layer):
    """Squeeze-excite of the neck: mean -> 1x1 (c/4, bias) -> relu -> 1x1 (c, bias) ->
    hardsigmoid(slope 0.2, offset 0.5) -> scale."""

    def __init__(self, in_channels, reduction=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2D(1)
        self.conv1 = nn.Conv2D(in_channels, in_channels // reduction, 1)
        self.conv2 = nn.Conv2D(in_channels // reduction, in_channels, 1)

    def forward(self, x):
        w = self.conv2(F.relu(self.conv1(self.avg_pool(x))))
        return x * F.hardsigmoid(w, slope=0.2, offset=0.5)


class RSELayer(nn.Layer):
    """kxk conv (no bias) then SE, plus the conv output when ``shortcut``."""

    def __init__(self, in_channels, out_channels, kernel_size, shortcut=True):
        super().__init__()
        self.in_conv = neck_conv(in_channels, out_channels, kernel_size)
        self.se_block = SEModule(out_channels)
        self.shortcut = shortcut

    def forward(self, x):
        x = self.in_conv(x)
        return x + self.se_block(x) if self.shortcut else self.se_block(x)


class IntraCLBlock(nn.Layer):
    """Intra-instance collaborative learning block: reduce channels by ``reduce_factor``, three rounds of
    (kxk + kx1 + 1xk) convs for k = 7, 5, 3, restore channels, BN, relu, residual add."""

    def __init__(self, in_channels=96, reduce_factor=4):
        super().__init__()
        c = in_channels // reduce_factor
        self.conv1x1_reduce_channel = nn.Conv2D(in_channels, c, 1)
        self.conv1x1_return_channel = nn.Conv2D(c, in_channels, 1)
        for k in (7, 5, 3):
            setattr(self, f"v_layer_{k}x1", nn.Conv2D(c, c, (k, 1), padding=(k // 2, 0)))
            setattr(self, f"q_layer_1x{k}", nn.Conv2D(c, c, (1, k), padding=(0, k // 2)))
            setattr(self, f"c_layer_{k}x{k}", nn.Conv2D(c, c, k, padding=k // 2))
        self.bn = nn.BatchNorm2D(in_channels)

    def forward(self, x):
        y = self.conv1x1_reduce_channel(x)
        for k in (7, 5, 3):
            y = (getattr(self, f"c_layer_{k}x{k}")(y) + getattr(self, f"v_layer_{k}x1")(y)
                 + getattr(self, f"q_layer_1x{k}")(y))
        return x + F.relu(self.bn(self.conv1x1_return_channel(y)))


class IntraCL(_Neck):
    """Mixin: ``incl1..4`` (one IntraCLBlock per level, reduce factor 2) when ``intracl``."""

    def _make_intracl(self, intracl):
        self.intracl = bool(intracl)
        if self.intracl:
            for i in range(1, 5):
                setattr(self, f"incl{i}", IntraCLBlock(self.out_channels // 4, reduce_factor=2))

    def _apply_intracl(self, ps):
        return [getattr(self, f"incl{i + 1}")(p) for i, p in enumerate(ps)] if self.intracl else ps

    def _pan_fuse(self, outs):
        """LKPAN's path after the top-down sums ``outs``: ``inp_conv``, bottom-up ``pan_head_conv`` sums,
        ``pan_lat_conv``, optional intracl, upsample and concatenate."""
        f = [conv(o) for conv, o in zip(self.inp_conv, outs)]
        pan = [f[0]]
        for i in range(1, 4):
            pan.append(f[i] + self.pan_head_conv[i - 1](pan[-1]))
        return self._fuse(*self._apply_intracl([conv(p) for conv, p in zip(self.pan_lat_conv, pan)]))


@register(NECK, "DBFPN", DET)
class DBFPN(_Neck):
    """1x1 lateral convs ``in{2..5}_conv`` to ``out_channels``, top-down sum, 3x3 ``p{2..5}_conv`` to
    ``out_channels // 4``, upsample and concatenate. ``use_asf`` (DB++) is not implemented."""

    def __init__(self, in_channels: Sequence[int], out_channels: int, use_asf: bool = False):
        super().__init__()
        if use_asf:
            raise ValueError("DBFPN: use_asf (DB++ adaptive scale fusion) is not implemented")
        self.out_channels = out_channels
        for i, cin in enumerate(in_channels):
            setattr(self, f"in{i + 2}_conv", neck_conv(cin, out_channels, 1))
        for level in (5, 4, 3, 2):
            setattr(self, f"p{level}_conv", neck_conv(out_channels, out_channels // 4, 3))

    def forward(self, x):
        ins = [getattr(self, f"in{i + 2}_conv")(c) for i, c in enumerate(x)]
        outs = self._top_down(ins)
        return self._fuse(*[getattr(self, f"p{i + 2}_conv")(o) for i, o in enumerate(outs)])


@register(NECK, "RSEFPN", DET)
class RSEFPN(IntraCL):
    """DBFPN with RSELayers: ``ins_conv[i]`` (1x1 RSE to ``out_channels``), ``inp_conv[i]`` (3x3 RSE to
    ``out_channels // 4``); ``shortcut`` adds the conv output around each SE; optional ``intracl``."""

    def __init__(self, in_channels: Sequence[int], out_channels: int, shortcut: bool = True,
                 intracl: bool = False):
        super().__init__()
        self.out_channels = out_channels
        self._make_intracl(intracl)
        self.ins_conv = nn.LayerList([RSELayer(c, out_channels, 1, shortcut) for c in in_channels])
        self.inp_conv = nn.LayerList([RSELayer(out_channels, out_channels // 4, 3, shortcut)
                                      for _ in in_channels])

    def forward(self, x):
        outs = self._top_down([conv(c) for conv, c in zip(self.ins_conv, x)])
        return self._fuse(*self._apply_intracl([conv(o) for conv, o in zip(self.inp_conv, outs)]))


class DSConv(nn.Layer):
    """LKPAN 'lite' conv: depthwise kxk (BN) -> 1x1 to 4x (BN, relu) -> 1x1 to out, plus a 1x1
    ``conv_end`` of the input when the channel counts differ. No biases."""

    def __init__(self, in_channels, out_channels, kernel_size, padding, stride=1, **_ignored):
        super().__init__()
        self.conv1 = nn.Conv2D(in_channels, in_channels, kernel_size, stride, padding, groups=in_channels,
                               bias_attr=False)
        self.bn1 = nn.BatchNorm2D(in_channels)
        self.conv2 = nn.Conv2D(in_channels, in_channels * 4, 1, bias_attr=False)
        self.bn2 = nn.BatchNorm2D(in_channels * 4)
        self.conv3 = nn.Conv2D(in_channels * 4, out_channels, 1, bias_attr=False)
        self.has_end = in_channels != out_channels
        if self.has_end:
            self.conv_end = nn.Conv2D(in_channels, out_channels, 1, bias_attr=False)

    def forward(self, x):
        y = self.conv3(F.relu(self.bn2(self.conv2(self.bn1(self.conv1(x))))))
        return y + self.conv_end(x) if self.has_end else y


@register(NECK, "LKPAN", DET)
class LKPAN(IntraCL):
    """Large-kernel PAN: 1x1 ``ins_conv`` to ``out_channels``, top-down sum, 9x9 ``inp_conv`` to
    ``out_channels // 4``, bottom-up path (3x3/2 ``pan_head_conv`` added to the level above), 9x9
    ``pan_lat_conv``, optional ``intracl``, upsample and concatenate. ``mode``: 'large' (plain 9x9
    convs) or 'lite' (DSConv)."""

    def __init__(self, in_channels: Sequence[int], out_channels: int, mode: str = "large",
                 intracl: bool = False):
        super().__init__()
        if mode.lower() not in ("large", "lite"):
            raise ValueError(f"LKPAN: mode must be 'large' or 'lite', got {mode!r}")
        self.out_channels = out_channels
        c = out_channels // 4

        def big(cin, cout):
            return neck_conv(cin, cout, 9) if mode.lower() == "large" else DSConv(cin, cout, 9, 4)

        self.ins_conv = nn.LayerList([neck_conv(cin, out_channels, 1) for cin in in_channels])
        self.inp_conv = nn.LayerList([big(out_channels, c) for _ in in_channels])
        self.pan_head_conv = nn.LayerList([neck_conv(c, c, 3, stride=2) for _ in in_channels[1:]])
        self.pan_lat_conv = nn.LayerList([big(c, c) for _ in in_channels])
        self._make_intracl(intracl)

    def forward(self, x):
        return self._pan_fuse(self._top_down([conv(c) for conv, c in zip(self.ins_conv, x)]))
