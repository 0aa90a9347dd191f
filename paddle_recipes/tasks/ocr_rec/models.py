"""CTC text-line recognizers written on paddle.nn: backbone -> im2seq -> neck -> CTC head.

Backbones come from the catalogue of networks (``paddle_recipes.nn.catalog``): ours (``LCNetRec``,
``ResNet34vd``, ``DenseConvRec``) map an image [B, C, H, W] to a feature map [B, C', 1, T] (H collapsed,
T = W / width_stride) and take the ``BiLSTM`` / ``Conv`` / ``Im2Seq`` necks and the ``CTCHead`` of this module
(class ``LinearCTCHead``), listed in the catalogue as ours (``register(..., ours=True)``). These are OUR OWN
DESIGNS: PaddleOCR weights do not load into them.
PaddleOCR's own recognizers (PP-OCRv4/v5 mobile: ``PPLCNetV3`` + ``MultiHead``; the CRNN
``rec_r34_vd_none_bilstm_ctc``: ``ResNet`` + ``SequenceEncoder`` + ``CTCHead``) are assembled in
``ppocr_models.py``; ``build_rec_model`` dispatches to them when ``Backbone.name`` is one of PaddleOCR's
networks in the catalogue (case-insensitive).
"""
from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from dataclasses import asdict, dataclass, field, is_dataclass, make_dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

import paddle.nn as nn
import paddle.nn.functional as F

from ...config import ConfigError, check_name
from ...nn.catalog import (BACKBONE, HEAD, NECK, REC, build, build_backbone, check_args, check_kwargs, find,
                           find_backbone, networks, register)
from ...nn.layers import ConvBN
from . import ppocr_models
from .ctc_init import set_blank_bias


# --------------------------------------------------------------------- necks
@register(NECK, "Im2Seq", REC, ours=True)
class Im2Seq(nn.Layer):
    """[B, C, 1, T] -> [B, T, C]."""

    def __init__(self, in_channels: int):
        super().__init__()
        self.out_channels = in_channels

    def forward(self, x):
        return x.squeeze(axis=2).transpose([0, 2, 1])


@register(NECK, "BiLSTM", REC, ours=True)
class BiLSTMNeck(nn.Layer):
    """im2seq + 2-layer bidirectional LSTM; output dim = 2 * hidden_size."""

    def __init__(self, in_channels: int, hidden_size: int = 48, num_layers: int = 2):
        super().__init__()
        self.im2seq = Im2Seq(in_channels)
        self.lstm = nn.LSTM(in_channels, hidden_size, num_layers=num_layers, direction="bidirect")
        self.out_channels = 2 * hidden_size

    def forward(self, x):
        y, _ = self.lstm(self.im2seq(x))
        return y


@register(NECK, "Conv", REC, ours=True)
class ConvNeck(nn.Layer):
    """Light neck: im2seq + 1x1 reduction + 1-D context conv (kernel 5) along time, residual.

    context_groups: groups of the context conv; 0 (default) = hidden_size, i.e. depthwise; 1 = dense
    (hidden_size x more FLOPs, but paddle's CPU depthwise kernels are ~6x slower per FLOP than dense
    ones: docs/cards/dense_conv_backbone.md). Must divide hidden_size.
    """

    def __init__(self, in_channels: int, hidden_size: int = 96, context_groups: int = 0):
        super().__init__()
        groups = context_groups or hidden_size
        if groups < 1 or hidden_size % groups:
            raise ConfigError(f"Architecture.Neck.context_groups: {context_groups} must divide hidden_size "
                              f"{hidden_size} (0 = depthwise, 1 = dense)")
        self.reduce = ConvBN(in_channels, hidden_size, 1, act="hardswish")
        self.context = nn.Conv2D(hidden_size, hidden_size, (1, 5), padding=(0, 2), groups=groups)
        self.im2seq = Im2Seq(hidden_size)
        self.out_channels = hidden_size

    def forward(self, x):
        x = self.reduce(x)
        x = x + F.hardswish(self.context(x))
        return self.im2seq(x)


# ---------------------------------------------------------------------- head
@register(HEAD, "CTCHead", REC, ours=True, fixed=("in_channels", "num_classes"))
class LinearCTCHead(nn.Layer):
    """Our CTC head (config name ``CTCHead`` with our backbones; PaddleOCR's is ``ppocr_heads.CTCHead``):
    linear (optionally via a mid layer) to ``num_classes`` logits per time step: [B, T, num_classes].

    The last bias is added after reshaping back to [B, T, C]: Paddle Inference's fc-fusion pass
    mis-fuses a matmul + bias on reshaped 3-D inputs (wrong logits / shape errors at export).
    """

    def __init__(self, in_channels: int, num_classes: int, mid_channels: int = 0, init_blank_prob: float = 0.0):
        super().__init__()
        self.num_classes = num_classes
        self.mid = nn.Sequential(nn.Linear(in_channels, mid_channels), nn.Hardswish()) if mid_channels else None
        self.fc = nn.Linear(mid_channels or in_channels, num_classes, bias_attr=False)
        self.bias = self.create_parameter([num_classes], is_bias=True)
        if init_blank_prob:  # start off the CTC blank plateau (docs/cards/ctc_blank_bias.md)
            set_blank_bias(self.bias, init_blank_prob)

    def forward(self, x):
        if self.mid is not None:
            x = self.mid(x)
        t, c = x.shape[1], x.shape[2]
        return self.fc(x.reshape([-1, c])).reshape([-1, t, self.num_classes]) + self.bias


ALGORITHMS = ("CRNN", "SVTR_LCNet", "SVTR_HGNet", "SVTR")  # Architecture.algorithm labels (PaddleOCR's names)
MODEL_TYPES = {"rec"}


def _field_type(tp: Any) -> Any:
    """A constructor annotation as a config field type: Sequence[X] -> List[X] (in unions too), Optional[X] -> X
    (every field is optional), none -> None (the other parts' annotation decides)."""
    if tp is inspect.Parameter.empty:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        kept = tuple(_field_type(a) for a in args if a is not type(None))
        return kept[0] if len(kept) == 1 else Union[kept]
    if origin is collections.abc.Sequence:
        return List[args[0]] if args else list
    return tp


def _section_fields(kind: str, skip: Tuple[str, ...] = ()) -> List[Tuple[str, Any, Any]]:
    """(key, Optional[type], None) for every key a rec `kind` of nn.catalog accepts (``Network.config_types``: the
    constructor's arguments but those the builder passes, and its extra keys), `skip` aside: a part registered in
    the catalogue brings its own keys. Two parts that annotate a key differently make it Any."""
    found: Dict[str, Any] = {}
    for part in networks(REC, kind=kind):
        for key, tp in part.config_types().items():
            tp = _field_type(tp)
            if key in skip or tp is None and key in found:
                continue
            found[key] = tp if found.get(key) in (None, tp) else Any
    return [(key, Optional[Any if tp is None else tp], field(default=None)) for key, tp in found.items()]


def _section_config(kind: str, default: str, doc: str, skip: Tuple[str, ...] = (), **namespace) -> type:
    """A typed Architecture section: ``name`` (default `default`) plus ``_section_fields(kind, skip)``."""
    cls = make_dataclass(f"{kind.capitalize()}Config", [("name", str, field(default=default)),
                                                       *_section_fields(kind, skip)], namespace=namespace)
    cls.__module__, cls.__doc__ = __name__, doc
    return cls


BackboneConfig = _section_config(BACKBONE, "LCNetRec", skip=("det",), doc="""name: a rec network of nn.catalog
    (case-insensitive): ours (LCNetRec: light PP-LCNet-like; ResNet34vd; DenseConvRec) or PaddleOCR's (PPLCNetV3,
    PPHGNetV2_B4, ResNet, MobileNetV1Enhance, ...). The other fields are the constructor arguments of those networks
    (see each class in paddle_recipes/nn/), None = the network's default; a value the chosen network does not take
    is a one-line error listing what it takes. Ours: scale (channel multiplier), width_stride (input width / time
    steps).""")

NeckConfig = _section_config(NECK, "Conv", doc="""name: a rec neck of nn.catalog: ours (Conv: light 1-D context |
    BiLSTM | Im2Seq) or PaddleOCR's SequenceEncoder (encoder_type reshape | fc | rnn | svtr | lightsvtr). The other
    fields are the keys those necks take (Network.config_types), None = the neck's default; one the chosen neck does
    not take is a one-line error. E.g. hidden_size: Conv channels, BiLSTM / rnn size per direction, fc size;
    context_groups (Conv): groups of its context conv, 0 = depthwise (default), 1 = dense.
    Absent or null Neck section: no neck (PaddleOCR MultiHead models; our backbones then use Im2Seq).""")


def _check_blank_prob(self) -> None:
    if self.init_blank_prob and not 0.0 < self.init_blank_prob < 1.0:
        raise ConfigError(f"Architecture.Head.init_blank_prob must be in (0, 1) (0 = plain init), "
                          f"got {self.init_blank_prob}")


HeadConfig = _section_config(HEAD, "CTCHead", __post_init__=_check_blank_prob, doc="""name: a rec head of
    nn.catalog: CTCHead (ours, or PaddleOCR's with a PaddleOCR backbone) | MultiHead (PaddleOCR: CTC branch + NRTR
    branch). The other fields are the keys those heads take (Network.config_types), None = the default; one the
    chosen head does not take is a one-line error. E.g. mid_channels: hidden FC before the classifier; fc_decay: L2
    on PaddleOCR's CTC classifier; head_list: MultiHead's parts, PaddleOCR's form [{CTCHead: {Neck: {...}, Head:
    {...}}}, {NRTRHead: {...}}]; init_blank_prob: softmax probability of the CTC blank at init, via the CTC output
    bias (0 = plain init; 0.8 leaves the blank plateau in far fewer steps: docs/cards/ctc_blank_bias.md), a
    paddle-recipes extension key on a PaddleOCR YAML (compat.paddleocr).""")


@dataclass
class ArchitectureConfig:
    """PaddleOCR's Architecture section. model_type: "rec". algorithm: a label (CRNN | SVTR_LCNet |
    SVTR_HGNet | SVTR), checked, not used to build. Backbone / Neck / Head: see their classes; names and
    arguments are checked here against the chosen networks' signatures."""
    model_type: str = "rec"
    algorithm: str = "CRNN"
    Backbone: BackboneConfig = field(default_factory=BackboneConfig)
    Neck: Optional[NeckConfig] = None
    Head: HeadConfig = field(default_factory=HeadConfig)

    def __post_init__(self):
        check_name("Architecture.model_type", self.model_type, MODEL_TYPES)
        check_name("Architecture.algorithm", self.algorithm, ALGORITHMS)
        check_architecture(self)

    @property
    def is_multihead(self) -> bool:
        return self.Head.name.lower() == "multihead"


class RecModel(nn.Layer):
    """backbone -> neck -> head. ``forward(x)`` returns CTC logits [B, T, num_classes]."""

    def __init__(self, backbone: nn.Layer, neck: nn.Layer, head: nn.Layer):
        super().__init__()
        self.backbone, self.neck, self.head = backbone, neck, head

    outputs_probabilities = False  # forward gives logits in train and eval

    def class_dependent_params(self) -> List[str]:
        """state_dict prefixes whose shapes follow the dictionary (re-initialised on a dict change)."""
        return ["head.fc.", "head.bias"]

    def class_row_offsets(self) -> Dict[str, int]:
        """class_dependent_params() -> non-character rows before the characters: the CTC blank (weights.dict_remap)."""
        return dict.fromkeys(self.class_dependent_params(), 1)

    def forward(self, x):
        return self.head(self.neck(self.backbone(x)))


def _as_kwargs(cfg: Any) -> Dict[str, Any]:
    d = asdict(cfg) if is_dataclass(cfg) else dict(cfg or {})
    return {k: v for k, v in d.items() if v is not None}


def check_architecture(arch: "ArchitectureConfig") -> None:
    """Names and arguments of the Backbone / Neck / Head sections against the catalogue (nn.catalog): the neck
    and head of PaddleOCR's family when the backbone is one of theirs, else of ours. One-line ConfigErrors."""
    b = _as_kwargs(arch.Backbone)
    network = find_backbone(b.pop("name"), REC)
    check_kwargs(network.cls, "Backbone", b, fixed=("in_channels",))
    for kind, section in ((NECK, arch.Neck), (HEAD, arch.Head)):
        if section is not None:
            kwargs = _as_kwargs(section)
            check_args(find(kwargs.pop("name"), REC, kind, ours=network.ours), kwargs)


def build_rec_model(arch_cfg: Any, num_classes: int, in_channels: int = 3) -> nn.Layer:
    """Build a recognizer from ``arch_cfg`` (dataclass or dict with Backbone / Neck / Head sections,
    each holding ``name`` plus constructor arguments). A PaddleOCR backbone name (PPLCNetV3, PPHGNetV2_B4,
    ResNet, ...: nn.catalog) builds PaddleOCR's network (``ppocr_models.PPOCRRecModel``, PaddleOCR's parameter
    names). A null Neck with our backbones means Im2Seq (no context layer). Bad names or arguments: one-line
    ConfigError."""
    try:
        if ppocr_models.is_ppocr_arch(arch_cfg):
            return ppocr_models.build_ppocr_rec_model(arch_cfg, num_classes, in_channels)
        return _build_own(arch_cfg, num_classes, in_channels)
    except ValueError as exc:  # e.g. a bad head_list entry: one line for the CLI
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(str(exc)) from None


def _build_own(arch_cfg: Any, num_classes: int, in_channels: int) -> "RecModel":
    arch = _as_kwargs(arch_cfg)
    b_kw = _as_kwargs(arch.get("Backbone"))
    backbone = build_backbone(b_kw.pop("name", None), REC, in_channels=in_channels, **b_kw)
    n_kw = _as_kwargs(arch.get("Neck")) if arch.get("Neck") is not None else {"name": "Im2Seq"}
    neck = build(n_kw.pop("name", None), REC, NECK, n_kw, ours=True, in_channels=backbone.out_channels)
    h_kw = _as_kwargs(arch.get("Head"))
    head = build(h_kw.pop("name", None), REC, HEAD, h_kw, ours=True, in_channels=neck.out_channels,
                 num_classes=num_classes)
    return RecModel(backbone, neck, head)

