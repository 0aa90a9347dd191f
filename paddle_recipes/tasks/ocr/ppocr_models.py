"""PaddleOCR recognition models assembled from PaddleOCR-style ``Architecture`` sections.

``build_ppocr_rec_model(arch, num_classes)`` takes the same section PaddleOCR's configs hold
(a dict, or a dataclass with ``Backbone`` / ``Neck`` / ``Head``)::

    Backbone: {name: PPLCNetV3, scale: 0.95}   # or {name: PPLCNetV4, model_size: medium} (PP-OCRv6)
                                               # | {name: PPHGNetV2_B4, text_rec: true} | {name: ResNet, layers: 34}
    Neck:     {name: SequenceEncoder, encoder_type: rnn, hidden_size: 256}   # optional
    Head:     {name: CTCHead, fc_decay: 0.0}          # or MultiHead with head_list
              # + init_blank_prob: 0.8 (ours, not PaddleOCR's: the CTC output bias starts at that blank probability)

``num_classes`` is the CTC class count including the blank (our ``CharDict`` count = PaddleOCR's
``CTCLabelDecode`` count: dict lines + space + blank). For ``MultiHead`` the NRTR branch gets
``num_classes + 3`` classes as in PaddleOCR (its vocabulary adds one more, the padding id 0).
Names are matched case-insensitively. Unknown options are a ``ValueError`` naming them.
"""
from __future__ import annotations

import inspect
from dataclasses import asdict, is_dataclass
from typing import Any, Dict, List

import paddle.nn as nn

from ...nn.lcnetv4 import PPLCNetV4
from .ctc_init import set_blank_bias
from .ppocr_backbones import PPHGNetV2_B4, PPLCNetV3, ResNet
from .ppocr_heads import IMAGE_ENCODERS, CTCHead, MultiHead, SequenceEncoder  # noqa: F401 (IMAGE_ENCODERS: arg check)

PPOCR_BACKBONES = {"pplcnetv3": PPLCNetV3, "pplcnetv4": PPLCNetV4, "pphgnetv2_b4": PPHGNetV2_B4, "resnet": ResNet}
PPOCR_NECKS = {"sequenceencoder": SequenceEncoder}
PPOCR_HEADS = {"ctchead": CTCHead, "multihead": MultiHead}
NRTR_EXTRA_CLASSES = 3  # PaddleOCR: NRTRLabelDecode count = CTCLabelDecode count + 3


class PPOCRRecModel(nn.Layer):
    """backbone -> [neck] -> head with PaddleOCR's sub-layer names (``backbone.``, ``neck.``, ``head.``).

    forward(x, targets=None):
      * train: CTCHead -> logits [B, T, C]; MultiHead -> {"ctc": logits, "ctc_neck", "gtc": NRTR logits}
        (``targets`` = [label_ctc, label_gtc, length] tensors, see ``nrtr_labels``);
      * eval: CTC softmax probabilities [B, T, C] (PaddleOCR's inference output), or logits after
        ``set_eval_output("logits")``.
    """

    def __init__(self, backbone: nn.Layer, neck: nn.Layer | None, head: nn.Layer):
        super().__init__()
        self.backbone = backbone
        if neck is not None:
            self.neck = neck
        self.head = head
        self.has_neck = neck is not None

    @property
    def ctc_head(self) -> CTCHead:
        return self.head.ctc_head if isinstance(self.head, MultiHead) else self.head

    @property
    def outputs_probabilities(self) -> bool:
        """True when eval mode returns softmax probabilities (the default; read by the export and predict)."""
        return not self.ctc_head.return_logits

    @property
    def needs_gtc(self) -> bool:
        """MultiHead: training needs NRTR labels (label_gtc) and MultiLoss."""
        return isinstance(self.head, MultiHead)

    def set_eval_output(self, kind: str) -> None:
        """'probs' (default, PaddleOCR's export output) or 'logits' (for a loss in eval mode)."""
        if kind not in ("probs", "logits"):
            raise ValueError(f"eval output must be 'probs' or 'logits', got {kind!r}")
        self.ctc_head.return_logits = kind == "logits"

    def class_dependent_params(self) -> List[str]:
        """state_dict key prefixes whose shapes depend on the dictionary size (the output layers
        re-initialised when fine-tuning on another dict)."""
        ctc = "head.ctc_head." if isinstance(self.head, MultiHead) else "head."
        prefixes = [f"{ctc}{self.ctc_head.class_layer}."]
        if isinstance(self.head, MultiHead):
            prefixes += ["head.gtc_head.embedding.", "head.gtc_head.tgt_word_prj."]
        return prefixes

    def forward(self, x, targets=None):
        x = self.backbone(x)
        if self.has_neck:
            x = self.neck(x)
        if isinstance(self.head, MultiHead):
            return self.head(x, targets)
        return self.head(x)


def _section(cfg: Any, where: str) -> Dict[str, Any] | None:
    if cfg is None:
        return None
    d = asdict(cfg) if is_dataclass(cfg) else dict(cfg)
    d = {k: v for k, v in d.items() if v is not None}
    if "name" not in d:
        raise ValueError(f"Architecture.{where}: missing 'name'")
    return d


def _construct(registry: Dict[str, type], where: str, kwargs: Dict[str, Any], **fixed):
    name = kwargs.pop("name")
    cls = registry.get(str(name).lower())
    if cls is None:
        raise ValueError(f"Architecture.{where}.name: unknown {name!r}; choose one of "
                         f"{sorted(c.__name__ for c in registry.values())}")
    params = inspect.signature(cls.__init__).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            raise ValueError(f"Architecture.{where} ({cls.__name__}): unknown keys {unknown}")
    return cls(**fixed, **kwargs)


def is_ppocr_arch(arch_cfg: Any) -> bool:
    """True when the Backbone name is one of PaddleOCR's (PPLCNetV3/V4, PPHGNetV2_B4, ResNet)."""
    arch = asdict(arch_cfg) if is_dataclass(arch_cfg) else dict(arch_cfg or {})
    backbone = arch.get("Backbone") or {}
    backbone = asdict(backbone) if is_dataclass(backbone) else backbone
    return str(backbone.get("name", "")).lower() in PPOCR_BACKBONES


def arch_dict(arch_cfg: Any) -> Dict[str, Any]:
    """An ``Architecture`` section (dict or dataclass) as a dict; keys other than PaddleOCR's are an error."""
    arch = asdict(arch_cfg) if is_dataclass(arch_cfg) else dict(arch_cfg or {})
    unknown = sorted(set(arch) - {"model_type", "algorithm", "Transform", "Backbone", "Neck", "Head"})
    if unknown:
        raise ValueError(f"Architecture: unknown keys {unknown}")
    return arch


def build_ppocr_rec_model(arch_cfg: Any, num_classes: int, in_channels: int = 3) -> PPOCRRecModel:
    """Build a PaddleOCR recognizer from an ``Architecture`` section (see module docstring)."""
    arch = arch_dict(arch_cfg)
    if arch.get("Transform"):
        raise ValueError("Architecture.Transform: rectification transforms (TPS, ...) are not supported")
    b_kw = _section(arch.get("Backbone"), "Backbone")
    backbone = _construct(PPOCR_BACKBONES, "Backbone", b_kw, in_channels=in_channels)
    channels = backbone.out_channels
    neck = None
    n_kw = _section(arch.get("Neck"), "Neck")
    if n_kw is not None:
        neck = _construct(PPOCR_NECKS, "Neck", n_kw, in_channels=channels)
        channels = neck.out_channels
    h_kw = _section(arch.get("Head"), "Head")
    blank_prob = h_kw.pop("init_blank_prob", None)
    if str(h_kw["name"]).lower() == "multihead":
        head = _construct(PPOCR_HEADS, "Head", h_kw, in_channels=channels, out_channels_list={
            "CTCLabelDecode": num_classes, "NRTRLabelDecode": num_classes + NRTR_EXTRA_CLASSES})
    else:
        head = _construct(PPOCR_HEADS, "Head", h_kw, in_channels=channels, out_channels=num_classes)
    model = PPOCRRecModel(backbone, neck, head)
    if blank_prob:  # our extension: the CTC output (MultiHead: its CTC branch) starts at this blank probability
        ctc = model.ctc_head
        set_blank_bias(getattr(ctc, ctc.class_layer).bias, blank_prob)
    return model


# PaddleOCR's published architectures (copy into a config's Architecture section).
PPOCR_MOBILE_REC_ARCH = {
    "model_type": "rec", "algorithm": "SVTR_LCNet",
    "Backbone": {"name": "PPLCNetV3", "scale": 0.95},
    "Head": {"name": "MultiHead", "head_list": [
        {"CTCHead": {"Neck": {"name": "svtr", "dims": 120, "depth": 2, "hidden_dims": 120,
                              "kernel_size": [1, 3], "use_guide": True},
                     "Head": {"fc_decay": 0.00001}}},
        {"NRTRHead": {"nrtr_dim": 384, "max_text_length": 25}}]},
}
PPOCR_SERVER_REC_ARCH = {**PPOCR_MOBILE_REC_ARCH, "algorithm": "SVTR_HGNet",
                         "Backbone": {"name": "PPHGNetV2_B4", "text_rec": True}}
PPOCR_CRNN_R34_ARCH = {
    "model_type": "rec", "algorithm": "CRNN",
    "Backbone": {"name": "ResNet", "layers": 34},
    "Neck": {"name": "SequenceEncoder", "encoder_type": "rnn", "hidden_size": 256},
    "Head": {"name": "CTCHead", "fc_decay": 0.0},
}
