"""PaddleOCR's DB heads, parameter for parameter: ``DBHead`` and ``PFHeadLocal`` (PP-OCRv4/v5 server).

Input: the neck's fused map [B, C, H/4, W/4]. Each branch (``binarize``, ``thresh``) is 3x3 conv ->
BN-relu -> 2x2/2 transposed conv -> BN-relu -> 2x2/2 transposed conv to 1 channel -> sigmoid, giving
a full-resolution map [B, 1, H, W]. The approximate binary map is 1 / (1 + exp(-k (P - T))).

Outputs (dicts, as PaddleOCR):
* eval: ``{"maps": P}`` (probability map, [B, 1, H, W]);
* train: ``{"maps": concat([P, T, B], 1)}`` ([B, 3, H, W]), plus ``aux_maps_p4/p3/p2`` with PP-OCRv6's
  auxiliary heads (DBHead ``aux_in_channels``).
"""
from __future__ import annotations

import math
from typing import Sequence

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle import ParamAttr
from paddle.nn.initializer import Constant, KaimingUniform, Uniform

from ...nn.catalog import DET, HEAD, register
from .necks import upsample_nearest


def _bn_relu(c):
    return nn.BatchNorm(c, act="relu", param_attr=ParamAttr(initializer=Constant(1.0)),
                        bias_attr=ParamAttr(initializer=Constant(1e-4)))


def _deconv(cin, cout, k):
    bound = 1.0 / math.sqrt(cin)
    return nn.Conv2DTranspose(cin, cout, k, stride=2, weight_attr=ParamAttr(initializer=KaimingUniform()),
                              bias_attr=ParamAttr(initializer=Uniform(-bound, bound)))


class Head(nn.Layer):
    """One DB branch. ``kernel_list``: kernels of the conv and the two transposed convs (default
    [3, 2, 2]). ``fix_nan``: in training, NaNs after each BN are replaced by 0 (PaddleOCR's option)."""

    def __init__(self, in_channels: int, kernel_list: Sequence[int] = (3, 2, 2), fix_nan: bool = False):
        super().__init__()
        c = in_channels // 4
        self.conv1 = nn.Conv2D(in_channels, c, kernel_list[0], padding=kernel_list[0] // 2, bias_attr=False)
        self.conv_bn1 = _bn_relu(c)
        self.conv2 = _deconv(c, c, kernel_list[1])
        self.conv_bn2 = _bn_relu(c)
        self.conv3 = _deconv(c, 1, kernel_list[2])
        self.fix_nan = fix_nan

    def _clean(self, x):
        return paddle.where(paddle.isnan(x), paddle.zeros_like(x), x) if self.fix_nan and self.training else x

    def forward(self, x, return_f: bool = False):
        x = self._clean(self.conv_bn1(self.conv1(x)))
        f = self._clean(self.conv_bn2(self.conv2(x)))
        out = F.sigmoid(self.conv3(f))
        return (out, f) if return_f else out


AUX_LEVELS = (("p4", 4), ("p3", 2), ("p2", 1))  # PP-OCRv6 auxiliary heads: level, upsampling to stride 4


@register(HEAD, "DBHead", DET)
class DBHead(nn.Layer):
    """Differentiable binarization head. ``k``: steepness of the step function (50). ``aux_in_channels`` > 0
    (PP-OCRv6): one more binarize/thresh pair per neck level p4, p3, p2 (``aux_binarize_p4``, ``aux_thresh_p4``,
    ...), fed in training with the neck's ``aux_p*`` maps upsampled bilinearly to stride 4; their train maps are
    returned as ``aux_maps_p4`` / ``aux_maps_p3`` / ``aux_maps_p2`` ([B, 3, H, W] each) for DBLoss's aux terms."""

    def __init__(self, in_channels: int, k: float = 50, kernel_list: Sequence[int] = (3, 2, 2),
                 fix_nan: bool = False, aux_in_channels: int = 0):
        super().__init__()
        self.k = k
        self.binarize = Head(in_channels, kernel_list, fix_nan)
        self.thresh = Head(in_channels, kernel_list, fix_nan)
        self.aux_in_channels = aux_in_channels
        if aux_in_channels > 0:
            for level, _ in AUX_LEVELS:
                setattr(self, f"aux_binarize_{level}", Head(aux_in_channels, kernel_list, fix_nan))
                setattr(self, f"aux_thresh_{level}", Head(aux_in_channels, kernel_list, fix_nan))

    def _aux_maps(self, feats: dict) -> dict:
        """The auxiliary heads' train maps for the neck's ``aux_p*`` maps present in ``feats``."""
        out = {}
        if self.aux_in_channels <= 0:
            return out
        for level, scale in AUX_LEVELS:
            if f"aux_{level}" not in feats:
                continue
            f = feats[f"aux_{level}"]
            if scale > 1:
                f = F.interpolate(f, scale_factor=scale, mode="bilinear", align_corners=False)
            p, t = getattr(self, f"aux_binarize_{level}")(f), getattr(self, f"aux_thresh_{level}")(f)
            out[f"aux_maps_{level}"] = paddle.concat([p, t, self.step_function(p, t)], axis=1)
        return out

    def step_function(self, x, y):
        return paddle.reciprocal(1 + paddle.exp(-self.k * (x - y)))

    def _train_maps(self, x, shrink_maps, first):
        threshold_maps = self.thresh(x)
        binary_maps = self.step_function(shrink_maps, threshold_maps)
        return paddle.concat([first, threshold_maps, binary_maps], axis=1), binary_maps

    def forward(self, x, targets=None):
        feats = x if isinstance(x, dict) else {}  # a PP-OCRv6 neck in training: {"fuse", "aux_p4", ...}
        x = feats.get("fuse", x)
        shrink_maps = self.binarize(x)
        if not self.training:
            return {"maps": shrink_maps}
        return {"maps": self._train_maps(x, shrink_maps, shrink_maps)[0], **self._aux_maps(feats)}


class LocalModule(nn.Layer):
    """Refinement of PFHeadLocal: concat(initial map, features) -> 3x3 conv-BN-relu (``last_3``) ->
    1x1 conv with bias (``last_1``)."""

    def __init__(self, in_c: int, mid_c: int):
        super().__init__()
        self.last_3 = nn.Sequential()
        self.last_3.add_sublayer("conv", nn.Conv2D(in_c + 1, mid_c, 3, padding=1, bias_attr=False))
        self.last_3.add_sublayer("bn", nn.BatchNorm2D(mid_c))
        self.last_3.add_sublayer("relu", nn.ReLU())
        self.last_1 = nn.Conv2D(mid_c, 1, 1)

    def forward(self, x, init_map):
        return self.last_1(self.last_3(paddle.concat([init_map, x], axis=1)))


@register(HEAD, "PFHeadLocal", DET)
class PFHeadLocal(DBHead):
    """DBHead whose probability map is refined at full resolution: the binarize branch's last
    features (upsampled 2x) and its map go through ``cbn_layer``; eval returns the mean of the plain
    and refined maps, train puts the refined map first. ``mode``: 'large' (mid channels C/4) or
    'small' (C/8)."""

    repeat_upsample = False  # see necks.upsample_nearest

    def __init__(self, in_channels: int, k: float = 50, mode: str = "small",
                 kernel_list: Sequence[int] = (3, 2, 2), fix_nan: bool = False):
        super().__init__(in_channels, k, kernel_list, fix_nan)
        if mode not in ("large", "small"):
            raise ValueError(f"PFHeadLocal: mode must be 'large' or 'small', got {mode!r}")
        self.cbn_layer = LocalModule(in_channels // 4, in_channels // 4 if mode == "large" else in_channels // 8)

    def forward(self, x, targets=None):
        x = x["fuse"] if isinstance(x, dict) else x
        shrink_maps, f = self.binarize(x, return_f=True)
        f = upsample_nearest(f, 2, self.repeat_upsample)
        cbn_maps = F.sigmoid(self.cbn_layer(f, shrink_maps))
        if not self.training:
            return {"maps": 0.5 * (shrink_maps + cbn_maps)}
        maps, binary_maps = self._train_maps(x, shrink_maps, cbn_maps)
        return {"maps": maps, "distance_maps": cbn_maps, "cbn_maps": binary_maps}
