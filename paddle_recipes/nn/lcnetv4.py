"""PP-LCNetV4, the PP-OCRv6 backbone, parameter for parameter (own code, PaddleOCR's names).

Written from PaddleOCR's published facts (``ppocr/modeling/backbones/rec_lcnetv4.py``: stage
tables, layer order, sub-layer names) so the ``state_dict`` keys and shapes equal PaddleOCR's
checkpoints and the forward pass computes the same function. Shared by text recognition
(``det=False``) and text detection (``det=True``); it imports nothing task-specific.

Block: token mixer (depthwise kxk conv-BN, or for stride 1 and equal channels the
re-parameterisable ``RepDWConv`` = BN(dw-conv-BN(x) + dw-1x1(x) + x); optional squeeze-excite),
then channel mixer (1x1 expand x2 -> GELU -> 1x1 compress, + residual for stride 1 and equal
channels). Training-time form; ``RepDWConv.fuse()`` gives the deploy form (used by export and import).

Layouts (``model_size``; PaddleOCR's released configs):
* rec: tiny (simple stem 24->48, out 160), small (branch stem 48->96, out 384), medium (branch
  stem 64->128, out 768). Input 3xHxW; stages 4-5 stride (2, 1); output [B, C, 1, W/8]: train
  adaptive pool to [1, 40], eval 3x2 average pool (so eval needs H = 48, as PaddleOCR).
* det: tiny/small/medium, branch stem (stride 4) and 4 stages (strides 1, 2, 2, 2) -> 4 maps.
* PaddleOCR's earlier rec form (``use_rep``, ``stem_type``, ``config_name``, ``stem_channels``;
  e.g. the PP-OCRv6 *base* YAML) builds the same blocks; ``config_name`` in tiny/small/base.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import paddle
import paddle.nn as nn
from paddle import ParamAttr
from paddle.nn.initializer import Constant
from paddle.regularizer import L2Decay

from .catalog import BACKBONE, DET, REC, register
from .layers import ConvBN, SELayer

from .rec_pool import rec_sequence_pool
from .reparam import bn_affine, fuse_branches, fused_param_attrs, identity_kernel, set_passthrough, unfuse_into

# One block: (kernel, in_channels, out_channels, stride, use_se).
Block = Tuple[int, int, int, object, bool]


def _stage(spec: str) -> List[Block]:
    """'k:cin>cout/s[+se] ...' -> blocks; s is 1, 2 or 21 (= (2, 1)); '+' marks squeeze-excite."""
    out = []
    for item in spec.split():
        se = item.endswith("+")
        k, rest = item.rstrip("+").split(":")
        chans, s = rest.split("/")
        cin, cout = chans.split(">")
        stride = (2, 1) if s == "21" else int(s)
        out.append((int(k), int(cin), int(cout), stride, se))
    return out


def _repeat(c: int, pattern: str) -> str:
    """'+-+' -> stride-1 blocks c>c with SE on '+' positions."""
    return " ".join(f"3:{c}>{c}/1{'+' if p == '+' else ''}" for p in pattern)


# rec: stem (mid, out), stem type and blocks2..blocks6 (blocks6 empty in every v6 layout)
REC_LAYOUTS: Dict[str, dict] = {
    "tiny": {"stem": (24, 48), "stem_type": "simple", "stages": [
        _stage("3:48>48/1+"), _stage("3:48>48/1"),
        _stage("3:48>96/21 " + _repeat(96, "+-")),
        _stage("3:96>160/21 " + _repeat(160, "+--")), []]},
    "small": {"stem": (48, 96), "stem_type": "branch", "stages": [
        _stage("3:96>96/1+"), _stage(_repeat(96, "--")),
        _stage("3:96>192/21 " + _repeat(192, "+-+-+-")),
        _stage("3:192>384/21 " + _repeat(384, "+-")), []]},
    "medium": {"stem": (64, 128), "stem_type": "branch", "stages": [
        _stage("3:128>128/1+"), _stage("3:128>256/1 " + _repeat(256, "-+")),
        _stage("3:256>512/21 " + _repeat(512, "+-+-+-")),
        _stage("3:512>768/21 " + _repeat(768, "+-")), []]},
}
# PaddleOCR's earlier config_name tables (stem from stem_type / stem_channels); tiny and small equal the above
LEGACY_REC_STAGES: Dict[str, List[List[Block]]] = {
    "tiny": REC_LAYOUTS["tiny"]["stages"],
    "small": REC_LAYOUTS["small"]["stages"],
    "base": [_stage("3:128>128/1+"), _stage(_repeat(128, "--")),
             _stage("3:128>384/21 " + _repeat(384, "+-+-+--")),
             _stage("3:384>640/21 " + _repeat(640, "+-+")), []],
}
# det: stem (mid, out) and blocks_s1..blocks_s4
DET_LAYOUTS: Dict[str, dict] = {
    size: {"stem": (c[0] // 2, c[0]), "stages": [
        _stage(_repeat(c[0], "+-")),
        _stage(f"3:{c[0]}>{c[1]}/2 " + _repeat(c[1], "+-")),
        _stage(f"3:{c[1]}>{c[2]}/2 " + _repeat(c[2], "+-+-")),
        _stage(f"3:{c[2]}>{c[3]}/2 " + _repeat(c[3], "+-"))]}
    for size, c in {"tiny": (32, 48, 64, 160), "small": (48, 96, 192, 384),
                    "medium": (128, 256, 512, 896)}.items()}


class ConvBNReLU(nn.Layer):
    """Conv (no bias; padding "SAME" or (k-1)//2) + BN (not weight-decayed) + ReLU; learning rate x lr_mult."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=None, lr_mult=1.0):
        super().__init__()
        self.conv = nn.Conv2D(in_channels, out_channels, kernel_size, stride,
                              padding=(kernel_size - 1) // 2 if padding is None else padding,
                              weight_attr=ParamAttr(learning_rate=lr_mult), bias_attr=False)
        no_decay = dict(regularizer=L2Decay(0.0), learning_rate=lr_mult)
        self.bn = nn.BatchNorm2D(out_channels, weight_attr=ParamAttr(**no_decay), bias_attr=ParamAttr(**no_decay))
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class BranchStem(nn.Layer):
    """Stride-4 stem: stem1 (3x3/2) -> [2x2 max-pool 'SAME' || stem2a -> stem2b (2x2 'SAME')] concat ->
    stem3 (3x3/2) -> stem4 (1x1)."""

    def __init__(self, in_channels, mid_channels, out_channels, lr_mult=1.0):
        super().__init__()
        self.stem1 = ConvBNReLU(in_channels, mid_channels, 3, 2, lr_mult=lr_mult)
        self.stem2a = ConvBNReLU(mid_channels, mid_channels // 2, 2, 1, padding="SAME", lr_mult=lr_mult)
        self.stem2b = ConvBNReLU(mid_channels // 2, mid_channels, 2, 1, padding="SAME", lr_mult=lr_mult)
        self.stem3 = ConvBNReLU(mid_channels * 2, mid_channels, 3, 2, lr_mult=lr_mult)
        self.stem4 = ConvBNReLU(mid_channels, out_channels, 1, 1, lr_mult=lr_mult)
        self.pool = nn.MaxPool2D(kernel_size=2, stride=1, padding="SAME")

    def forward(self, x):
        x = self.stem1(x)
        x = paddle.concat([self.pool(x), self.stem2b(self.stem2a(x))], axis=1)
        return self.stem4(self.stem3(x))


def simple_stem(in_channels: int, mid_channels: int, out_channels: int) -> nn.Sequential:
    """Two stride-2 3x3 conv-BN with a GELU between (names ``0.*`` and ``2.*``)."""
    return nn.Sequential(ConvBN(in_channels, mid_channels, 3, 2, act=None), nn.GELU(),
                         ConvBN(mid_channels, out_channels, 3, 2, act=None))


class RepDWConv(nn.Layer):
    """BN(dw kxk conv-BN(x) + dw 1x1 conv(x) + x): three branches. ``fuse()`` re-parameterizes it into one dw conv
    with bias (``reparam_conv``); ``load_fused(weight, bias)`` goes back to this form (nn/reparam.py): the kxk
    branch carries weight - identity, both BNs pass through, the 1x1 branch is zero."""
    fused_conv_name = "reparam_conv"

    def __init__(self, channels, kernel_size=3):
        super().__init__()
        self.conv = ConvBN(channels, channels, kernel_size, 1, groups=channels, act=None)
        self.conv1 = nn.Conv2D(channels, channels, 1, 1, 0, groups=channels, bias_attr=False)
        self.bn = nn.BatchNorm2D(channels)
        Constant(1.0)(self.bn.weight)
        Constant(0.0)(self.bn.bias)

    def fuse(self):
        """Replace the branches and the BN by ``reparam_conv`` (their eval-mode function; in place, once)."""
        if getattr(self, "reparam_conv", None) is not None:
            return
        k = self.conv.conv
        w, b = fuse_branches([(k, self.conv.bn), (self.conv1, None), (None, None)], k.weight.shape, k._groups)
        a, c = bn_affine(self.bn)
        w_attr, b_attr = fused_param_attrs(k, self.conv.bn)
        self.reparam_conv = nn.Conv2D(k._in_channels, k._out_channels, k._kernel_size, padding=k._padding,
                                      groups=k._groups, weight_attr=w_attr, bias_attr=b_attr)
        self.reparam_conv.weight.set_value((w * a[:, None, None, None]).astype("float32"))
        self.reparam_conv.bias.set_value((b * a + c).astype("float32"))
        self.conv, self.conv1, self.bn = None, None, None

    def load_fused(self, weight, bias):
        unfuse_into([(self.conv.conv, self.conv.bn), (self.conv1, None)],
                    weight - identity_kernel(weight.shape).astype("float32"), bias)
        set_passthrough(self.bn, 0.0)

    def forward(self, x):
        if getattr(self, "reparam_conv", None) is not None:
            return self.reparam_conv(x)
        return self.bn(self.conv(x) + self.conv1(x) + x)


class LCNetV4Block(nn.Layer):
    """token_mixer (``rep_dw`` or ``dw_conv``, then optional ``se``) -> channel_mixer (``expand``, GELU,
    ``compress``), residual when stride 1 and in == out. ``use_rep``: RepDWConv where it applies."""

    def __init__(self, in_channels, out_channels, stride, kernel_size=3, use_se=False, lr_mult=1.0,
                 expand_ratio=2, use_rep=True):
        super().__init__()
        self.has_residual = in_channels == out_channels and stride == 1
        self.token_mixer = nn.Sequential()
        if use_rep and self.has_residual:
            self.token_mixer.add_sublayer("rep_dw", RepDWConv(in_channels, kernel_size))
        else:
            self.token_mixer.add_sublayer("dw_conv", ConvBN(in_channels, in_channels, kernel_size, stride,
                                                            groups=in_channels, act=None))
        if use_se:
            self.token_mixer.add_sublayer("se", SELayer(in_channels, lr_mult=lr_mult))
        hidden = int(in_channels * expand_ratio)
        self.channel_mixer = nn.Sequential()
        self.channel_mixer.add_sublayer("expand", ConvBN(in_channels, hidden, 1, act=None))
        self.channel_mixer.add_sublayer("act", nn.GELU())
        compress = ConvBN(hidden, out_channels, 1, act=None)
        if self.has_residual:  # the residual branch starts as the identity: its last BN scale is 0
            Constant(0.0)(compress.bn.weight)
        self.channel_mixer.add_sublayer("compress", compress)

    def forward(self, x):
        x = self.token_mixer(x)
        return x + self.channel_mixer(x) if self.has_residual else self.channel_mixer(x)


def _blocks(plan: Sequence[Block], lr_mult: float = 1.0, use_rep: bool = True) -> nn.Sequential:
    return nn.Sequential(*[LCNetV4Block(cin, cout, s, k, se, lr_mult=lr_mult, use_rep=use_rep)
                           for k, cin, cout, s, se in plan])


@register(BACKBONE, "PPLCNetV4", (REC, DET), paddlex={REC: r"PP-OCRv6_\w+_rec$"},  # v6 base: no PaddleX name
          export_name={REC: "PP-OCRv6_medium_rec", DET: "PP-OCRv6_{model_size}_det"})
class PPLCNetV4(nn.Layer):
    """PP-LCNetV4 (see module docstring). ``model_size``: tiny | small | medium. ``det``: detection
    layout (4 feature maps, ``out_channels`` a list) instead of recognition ([B, C, 1, W/8]).
    ``lr_mult_list``: 6 learning-rate multipliers (rec: stem, blocks2..blocks6).
    Earlier PaddleOCR rec form, used when any of its keys is given (and ``model_size`` is not):
    ``config_name`` (tiny | small | base), ``stem_type`` (simple | branch, default simple),
    ``stem_channels`` (default 96), ``use_rep`` (default False: plain depthwise token mixers)."""

    def __init__(self, model_size: str | None = None, det: bool = False, in_channels: int = 3,
                 lr_mult_list: Sequence[float] = (1.0,) * 6, use_rep: bool | None = None,
                 stem_type: str | None = None, config_name: str | None = None, stem_channels: int | None = None):
        super().__init__()
        self.det = det
        legacy = {k: v for k, v in dict(use_rep=use_rep, stem_type=stem_type, config_name=config_name,
                                        stem_channels=stem_channels).items() if v is not None}
        if len(lr_mult_list) != 6:
            raise ValueError(f"PPLCNetV4: lr_mult_list needs 6 values, got {len(lr_mult_list)}")
        if det:
            if legacy:
                raise ValueError(f"PPLCNetV4(det=True): {sorted(legacy)} are rec-only options; use model_size")
            layout = self._layout(DET_LAYOUTS, model_size or "small", "det")
            self.stem = BranchStem(in_channels, *layout["stem"])
            for i, plan in enumerate(layout["stages"], start=1):
                setattr(self, f"blocks_s{i}", _blocks(plan))
            self.out_channels = [plan[-1][2] for plan in layout["stages"]]
            return
        if legacy and model_size is not None:
            raise ValueError(f"PPLCNetV4: model_size={model_size!r} and the earlier form's {sorted(legacy)} "
                             "cannot be combined; give one of them")
        if legacy:
            stages = self._layout(LEGACY_REC_STAGES, config_name or "small", "config_name")
            out = stem_channels or 96
            stem, kind, rep = (out // 2, out), stem_type or "simple", bool(use_rep)
            if kind not in ("simple", "branch"):
                raise ValueError(f"PPLCNetV4: stem_type must be simple or branch, got {kind!r}")
        else:
            layout = self._layout(REC_LAYOUTS, model_size or "small", "rec")
            stages, stem, kind, rep = layout["stages"], layout["stem"], layout["stem_type"], True
        if kind == "branch":
            self.conv1 = BranchStem(in_channels, *stem, lr_mult=lr_mult_list[0])
        else:
            self.conv1 = simple_stem(in_channels, *stem)
        for i, plan in enumerate(stages, start=2):
            setattr(self, f"blocks{i}", _blocks(plan, lr_mult_list[i - 1], rep))
        self.out_channels = next((plan[-1][2] for plan in reversed(stages) if plan), stem[1])

    @staticmethod
    def _layout(table: dict, name: str, what: str):
        if name not in table:
            hint = (" (PP-OCRv6 base is PaddleOCR's earlier form: config_name: base)"
                    if name == "base" and what == "rec" else "")
            raise ValueError(f"PPLCNetV4: {what} layout {name!r} unknown; choose one of {sorted(table)}{hint}")
        return table[name]

    def forward(self, x):
        if self.det:
            x = self.stem(x)
            outs = []
            for i in range(1, 5):
                x = getattr(self, f"blocks_s{i}")(x)
                outs.append(x)
            return outs
        x = self.conv1(x)
        x = self.blocks6(self.blocks5(self.blocks4(self.blocks3(self.blocks2(x)))))
        if not self.training and x.shape[2] < 3:
            raise ValueError(f"PPLCNetV4 (rec, eval): feature height {x.shape[2]} < 3; eval needs input height 48")
        return rec_sequence_pool(x, self.training, "PPLCNetV4")
