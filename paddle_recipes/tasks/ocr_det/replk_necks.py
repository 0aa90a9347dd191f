"""PaddleOCR's PP-OCRv6 det necks, parameter for parameter: ``UniRepLKFPN`` (PP-OCRv6 tiny/small) and
``UniRepLKPAN`` (PP-OCRv6 medium/base); PaddleOCR's earlier names ``RepLKFPN`` / ``RepLKPAN`` are the same layers.

Both are the v4/v5 necks (``RSEFPN`` / ``LKPAN``, see necks.py) with their kxk convs replaced by UniRepLKNet's
dilated re-parameterisable depthwise blocks (``DilatedReparamBlock``): a depthwise kxk conv + BN (``lk_origin``,
``origin_bn``) plus parallel dilated depthwise convs + BN (``dil_conv_k{k}_{r}``, ``dil_bn_k{k}_{r}``), summed.
Training keeps the branches (that is what PaddleOCR's checkpoints hold); export folds them, as PaddleOCR does.

Input: the 4 backbone maps (strides 4, 8, 16, 32). Output: eval [B, out_channels, H/4, W/4]; train a dict
``{"fuse": that map, "aux_p4": out4, "aux_p3": out3, "aux_p2": out2}`` whose top-down sums (``out_channels``
channels at strides 16, 8, 4) feed DBHead's auxiliary heads (``aux_in_channels``), as PaddleOCR.
"""
from __future__ import annotations

from typing import Sequence

import paddle.nn as nn

from ...nn.catalog import DET, NECK, register
from ...nn.reparam import fuse_branches, fused_param_attrs, unfuse_into
from .necks import SEModule, RSELayer, IntraCL, neck_conv

# kernel size -> the (kernel, dilation) of its parallel branches (UniRepLKNet's table, as PaddleOCR)
DILATED_BRANCHES = {5: ((3, 1), (3, 2)), 7: ((5, 1), (3, 2), (3, 3)), 9: ((5, 1), (5, 2), (3, 3), (3, 4)),
                    11: ((5, 1), (5, 2), (3, 3), (3, 4), (3, 5)), 13: ((5, 1), (7, 2), (3, 3), (3, 4), (3, 5))}


class DilatedReparamBlock(nn.Layer):
    """Depthwise kxk conv + BN plus one depthwise (k_i, dilation r_i) conv + BN per branch, summed; 'same'
    padding, no biases. ``kernel_size``: 5, 7, 9, 11 or 13. ``fuse()`` / ``load_fused()``: see nn/reparam.py."""
    fused_conv_name = "lk_origin"

    def __init__(self, channels: int, kernel_size: int = 9):
        super().__init__()
        if kernel_size not in DILATED_BRANCHES:
            raise ValueError(f"DilatedReparamBlock: kernel_size must be one of {sorted(DILATED_BRANCHES)}, "
                             f"got {kernel_size!r}")
        self.branches, self.fused = DILATED_BRANCHES[kernel_size], False
        self.lk_origin = nn.Conv2D(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels,
                                   bias_attr=False)
        self.origin_bn = nn.BatchNorm2D(channels)
        for k, r in self.branches:
            self.add_sublayer(f"dil_conv_k{k}_{r}", nn.Conv2D(channels, channels, k, padding=r * (k - 1) // 2,
                                                              dilation=r, groups=channels, bias_attr=False))
            self.add_sublayer(f"dil_bn_k{k}_{r}", nn.BatchNorm2D(channels))

    def pairs(self):
        return [(self.lk_origin, self.origin_bn)] + [
            (getattr(self, f"dil_conv_k{k}_{r}"), getattr(self, f"dil_bn_k{k}_{r}")) for k, r in self.branches]

    def fuse(self):
        """Fold every branch into ``lk_origin`` (a kxk depthwise conv with bias, UniRepLKNet's deploy form;
        in place, once)."""
        if self.fused:
            return
        k = self.lk_origin
        w, b = fuse_branches(self.pairs(), k.weight.shape, k._groups)
        w_attr, b_attr = fused_param_attrs(k, self.origin_bn)
        self.lk_origin = nn.Conv2D(k._in_channels, k._out_channels, k._kernel_size, padding=k._padding,
                                   groups=k._groups, weight_attr=w_attr, bias_attr=b_attr)
        self.lk_origin.weight.set_value(w)
        self.lk_origin.bias.set_value(b)
        self.origin_bn = None
        for kk, r in self.branches:
            setattr(self, f"dil_conv_k{kk}_{r}", None)
            setattr(self, f"dil_bn_k{kk}_{r}", None)
        self.fused = True

    def load_fused(self, weight, bias):
        """Training form from the fused (weight, bias): see nn.reparam.unfuse_into."""
        unfuse_into(self.pairs(), weight, bias)

    def forward(self, x):
        if self.fused:
            return self.lk_origin(x)
        out = self.origin_bn(self.lk_origin(x))
        for k, r in self.branches:
            out = out + getattr(self, f"dil_bn_k{k}_{r}")(getattr(self, f"dil_conv_k{k}_{r}")(x))
        return out


class DilatedReparamConv(nn.Layer):
    """A kxk conv replaced by ``dw`` (DilatedReparamBlock) -> 1x1 ``pw`` (no bias) -> ``bn``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 9):
        super().__init__()
        self.dw = DilatedReparamBlock(in_channels, kernel_size)
        self.pw = neck_conv(in_channels, out_channels, 1)
        self.bn = nn.BatchNorm2D(out_channels)

    def forward(self, x):
        return self.bn(self.pw(self.dw(x)))


class _AuxOutputs(IntraCL):
    """Train-mode output of the v6 necks: the fused map and the top-down sums for DBHead's auxiliary heads."""

    def _output(self, fuse, outs):
        if self.training:
            return {"fuse": fuse, "aux_p4": outs[2], "aux_p3": outs[1], "aux_p2": outs[0]}
        return fuse


@register(NECK, "UniRepLKFPN", DET, aliases=("RepLKFPN",))
class UniRepLKFPN(_AuxOutputs):
    """RSEFPN whose 3x3 RSE level convs are ``inp_conv_dw[i]`` (DilatedReparamBlock, ``dilated_kernel_size``) ->
    ``inp_conv_pw[i]`` (1x1 to ``out_channels // 4``) -> ``inp_conv_se[i]`` (SE, added to its input when
    ``shortcut``); ``ins_conv[i]``: 1x1 RSE to ``out_channels``; optional ``intracl``."""

    def __init__(self, in_channels: Sequence[int], out_channels: int, shortcut: bool = True,
                 dilated_kernel_size: int = 7, intracl: bool = False):
        super().__init__()
        self.out_channels, self.shortcut = out_channels, shortcut
        self._make_intracl(intracl)
        c = out_channels // 4
        self.ins_conv = nn.LayerList([RSELayer(cin, out_channels, 1, shortcut) for cin in in_channels])
        self.inp_conv_dw = nn.LayerList([DilatedReparamBlock(out_channels, dilated_kernel_size) for _ in in_channels])
        self.inp_conv_pw = nn.LayerList([neck_conv(out_channels, c, 1) for _ in in_channels])
        self.inp_conv_se = nn.LayerList([SEModule(c) for _ in in_channels])

    def _level(self, i, x):
        x = self.inp_conv_pw[i](self.inp_conv_dw[i](x))
        return x + self.inp_conv_se[i](x) if self.shortcut else self.inp_conv_se[i](x)

    def forward(self, x):
        outs = self._top_down([conv(c) for conv, c in zip(self.ins_conv, x)])
        ps = self._apply_intracl([self._level(i, o) for i, o in enumerate(outs)])
        return self._output(self._fuse(*ps), outs)


@register(NECK, "UniRepLKPAN", DET, aliases=("RepLKPAN",))
class UniRepLKPAN(_AuxOutputs):
    """LKPAN whose 9x9 ``inp_conv[i]`` and ``pan_lat_conv[i]`` are DilatedReparamConv (kernel 9); 1x1
    ``ins_conv``, 3x3/2 ``pan_head_conv``, optional ``intracl`` as LKPAN. ``mode`` is accepted and has no
    effect (PaddleOCR's class takes it and ignores it)."""

    def __init__(self, in_channels: Sequence[int], out_channels: int, mode: str = "large", intracl: bool = False):
        super().__init__()
        self.out_channels = out_channels
        c = out_channels // 4
        self.ins_conv = nn.LayerList([neck_conv(cin, out_channels, 1) for cin in in_channels])
        self.inp_conv = nn.LayerList([DilatedReparamConv(out_channels, c, 9) for _ in in_channels])
        self.pan_head_conv = nn.LayerList([neck_conv(c, c, 3, stride=2) for _ in in_channels[1:]])
        self.pan_lat_conv = nn.LayerList([DilatedReparamConv(c, c, 9) for _ in in_channels])
        self._make_intracl(intracl)

    def forward(self, x):
        outs = self._top_down([conv(c) for conv, c in zip(self.ins_conv, x)])
        return self._output(self._pan_fuse(outs), outs)
