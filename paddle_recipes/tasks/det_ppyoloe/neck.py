"""CustomCSPPAN neck (PP-YOLOE): a top-down FPN then a bottom-up PAN built from CSP stages.

The deepest FPN stage carries an SPP block (max-pools 5/9/13, concat, 1x1 conv).
Base FPN widths are [768, 384, 192] (deep -> shallow), scaled by ``width_mult``;
the returned features are shallow -> deep (strides 8/16/32) with channels ``out_channels``.
"""
from __future__ import annotations

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from ...nn.catalog import NECK, PPYOLOE, register
from .backbone import BasicBlock, ConvBN, scale_depth, scale_width


class Upsample2x(nn.Layer):
    """Nearest-neighbour x2 upsampling.

    mode "interp": ``F.interpolate`` (fast, TensorRT-native). mode "repeat": two
    ``repeat_interleave`` calls, numerically identical; used for CPU Paddle Inference exports,
    because paddle 3.3.1's oneDNN executor rejects nearest_interp_v2 from a PIR program
    ("ConvertPirAttribute2RuntimeAttribute not support ArrayAttribute<DoubleAttribute>").
    """

    def __init__(self, mode: str = "interp"):
        super().__init__()
        if mode not in ("interp", "repeat"):
            raise ValueError(f"upsample mode must be 'interp' or 'repeat', got {mode!r}")
        self.mode = mode

    def forward(self, x):
        if self.mode == "repeat":
            return paddle.repeat_interleave(paddle.repeat_interleave(x, 2, axis=2), 2, axis=3)
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


class SPP(nn.Layer):
    """Concat of the input and its stride-1 max-pools (kernels 5, 9, 13), then a 1x1 ConvBN."""

    def __init__(self, ch_in: int, ch_out: int, pool_sizes=(5, 9, 13), act: str = "swish"):
        super().__init__()
        self.pool_sizes = tuple(pool_sizes)
        self.conv = ConvBN(ch_in * (1 + len(self.pool_sizes)), ch_out, 1, act=act)

    def forward(self, x):
        feats = [x] + [F.max_pool2d(x, k, stride=1, padding=k // 2) for k in self.pool_sizes]
        return self.conv(paddle.concat(feats, axis=1))


class CSPStage(nn.Layer):
    """Two 1x1 paths; n BasicBlocks (no shortcut) on one, SPP after the middle block if ``spp``; concat; 1x1."""

    def __init__(self, ch_in: int, ch_out: int, num_blocks: int, spp: bool = False, act: str = "swish"):
        super().__init__()
        ch_mid = ch_out // 2
        self.conv1 = ConvBN(ch_in, ch_mid, 1, act=act)
        self.conv2 = ConvBN(ch_in, ch_mid, 1, act=act)
        layers = []
        for i in range(num_blocks):
            layers.append(BasicBlock(ch_mid, ch_mid, shortcut=False, act=act))
            if spp and i == (num_blocks - 1) // 2:
                layers.append(SPP(ch_mid, ch_mid, act=act))
        self.blocks = nn.Sequential(*layers)
        self.conv3 = ConvBN(ch_mid * 2, ch_out, 1, act=act)

    def forward(self, x):
        return self.conv3(paddle.concat([self.conv1(x), self.blocks(self.conv2(x))], axis=1))


@register(NECK, "CustomCSPPAN", PPYOLOE, fixed=("in_channels", "width_mult", "depth_mult"))
class CustomCSPPAN(nn.Layer):
    """FPN (deep -> shallow, with upsampling) followed by PAN (shallow -> deep, stride-2 convs).

    Args:
        in_channels: backbone channels, shallow -> deep (strides 8/16/32).
        width_mult, depth_mult: scale the base widths [768, 384, 192] and the block count 3.
    """

    def __init__(self, in_channels, width_mult: float = 1.0, depth_mult: float = 1.0, act: str = "swish"):
        super().__init__()
        fpn_ch = [scale_width(c, width_mult) for c in (768, 384, 192)]  # deep -> shallow
        n = scale_depth(3, depth_mult)
        ins = list(reversed(list(in_channels)))
        self.fpn_stages = nn.LayerList()
        self.fpn_routes = nn.LayerList()
        ch_route = 0
        for i, (c_in, c_out) in enumerate(zip(ins, fpn_ch)):
            self.fpn_stages.append(CSPStage(c_in + ch_route, c_out, n, spp=(i == 0), act=act))
            if i < len(ins) - 1:
                ch_route = c_out // 2
                self.fpn_routes.append(ConvBN(c_out, ch_route, 1, act=act))
        self.pan_routes = nn.LayerList()
        self.pan_stages = nn.LayerList()
        for i in reversed(range(len(ins) - 1)):  # from the shallowest FPN output going deeper
            c_prev = fpn_ch[i + 1]
            self.pan_routes.append(ConvBN(c_prev, c_prev, 3, stride=2, act=act))
            self.pan_stages.append(CSPStage(c_prev + fpn_ch[i], fpn_ch[i], n, act=act))
        self.out_channels = list(reversed(fpn_ch))
        self.upsample = Upsample2x("interp")

    def forward(self, feats):
        fpn_feats = []
        route = None
        for i, feat in enumerate(reversed(feats)):
            if route is not None:
                feat = paddle.concat([route, feat], axis=1)
            route = self.fpn_stages[i](feat)
            fpn_feats.append(route)
            if i < len(feats) - 1:
                route = self.upsample(self.fpn_routes[i](route))
        outs = [fpn_feats[-1]]
        route = fpn_feats[-1]
        for j, i in enumerate(reversed(range(len(feats) - 1))):
            route = paddle.concat([self.pan_routes[j](route), fpn_feats[i]], axis=1)
            route = self.pan_stages[j](route)
            outs.append(route)
        return outs  # shallow -> deep
