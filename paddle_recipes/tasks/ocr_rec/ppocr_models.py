"""PaddleOCR recognition models assembled from PaddleOCR-style ``Architecture`` sections.

``build_ppocr_rec_model(arch, num_classes)`` takes the same section PaddleOCR's configs hold
(a dict, or a dataclass with ``Backbone`` / ``Neck`` / ``Head``)::

    Backbone: {name: PPLCNetV3, scale: 0.95}   # any rec network of nn.catalog (PaddleOCR's), e.g.
                                               # {name: PPHGNetV2_B4, text_rec: true} | {name: ResNet, layers: 34}
    Neck:     {name: SequenceEncoder, encoder_type: rnn, hidden_size: 256}   # optional
    Head:     {name: CTCHead, fc_decay: 0.0}          # or MultiHead with head_list
              # + init_blank_prob: 0.8 (ours, not PaddleOCR's: the CTC output bias starts at that blank probability)

``num_classes`` is the CTC class count including the blank (our ``CharDict`` count = PaddleOCR's
``CTCLabelDecode`` count: dict lines + space + blank). For ``MultiHead`` the NRTR branch gets
``num_classes + 3`` classes as in PaddleOCR (its vocabulary adds one more, the padding id 0).
Names are matched case-insensitively (PaddleOCR's necks and heads of ``nn.catalog``, registered in ppocr_heads.py).
Unknown options are a ``ValueError`` naming them.
"""
from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any, Dict, List

import paddle.nn as nn

from ...nn.catalog import HEAD, NECK, REC, arch_dict, arch_section, build, build_backbone, find, lookup
from .ctc_init import set_blank_bias
from .ppocr_losses import NRTR_OFFSET
from .ppocr_heads import CTCHead, MultiHead

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
        if isinstance(self.head, MultiHead) and "gtc_head" in self.head.training_branches():
            prefixes += ["head.gtc_head.embedding.", "head.gtc_head.tgt_word_prj."]
        return prefixes

    def class_row_offsets(self) -> Dict[str, int]:
        """class_dependent_params() -> how many non-character rows precede the characters (weights.dict_remap): the
        CTC blank (1); the NRTR vocabulary's <blank>, <unk>, <s>, </s> (4; its last row, padding, follows them)."""
        return {p: NRTR_OFFSET + 1 if p.startswith("head.gtc_head.") else 1 for p in self.class_dependent_params()}

    def training_branches(self) -> List[str]:
        """Sub-layer names of the branches only training runs (MultiHead's GTC branch): what an inference model
        lacks (finetune_released)."""
        return [f"head.{n}" for n in self.head.training_branches()] if isinstance(self.head, MultiHead) else []

    def drop_training_branches(self) -> List[str]:
        """Remove training_branches() (MultiHead: CTC loss only, the CTC neck's use_guide off); returns their names."""
        return [f"head.{n}" for n in self.head.drop_training_branches()] if isinstance(self.head, MultiHead) else []

    def forward(self, x, targets=None):
        x = self.backbone(x)
        if self.has_neck:
            x = self.neck(x)
        if isinstance(self.head, MultiHead):
            return self.head(x, targets)
        return self.head(x)


def is_ppocr_arch(arch_cfg: Any) -> bool:
    """True when the Backbone name is one of PaddleOCR's rec networks (nn.catalog: not ``ours``)."""
    arch = asdict(arch_cfg) if is_dataclass(arch_cfg) else dict(arch_cfg or {})
    backbone = arch.get("Backbone") or {}
    backbone = asdict(backbone) if is_dataclass(backbone) else backbone
    net = lookup(backbone.get("name", ""), REC)
    return net is not None and not net.ours


def build_ppocr_rec_model(arch_cfg: Any, num_classes: int, in_channels: int = 3) -> PPOCRRecModel:
    """Build a PaddleOCR recognizer from an ``Architecture`` section (see module docstring)."""
    arch = arch_dict(arch_cfg)
    if arch.get("Transform"):
        raise ValueError("Architecture.Transform: rectification transforms (TPS, ...) are not supported")
    b_kw = arch_section(arch.get("Backbone"), "Backbone")
    backbone = build_backbone(b_kw.pop("name"), REC, in_channels=in_channels, **b_kw)
    channels = backbone.out_channels
    neck = None
    n_kw = arch_section(arch.get("Neck"), "Neck")
    if n_kw is not None:
        neck = build(n_kw.pop("name"), REC, NECK, n_kw, ours=False, in_channels=channels)
        channels = neck.out_channels
    h_kw = arch_section(arch.get("Head"), "Head")
    blank_prob = h_kw.pop("init_blank_prob", None)
    part = find(h_kw.pop("name"), REC, HEAD, ours=False)
    counts = {"out_channels": num_classes,  # the class counts a head takes: those in its catalogue entry's fixed
              "out_channels_list": {"CTCLabelDecode": num_classes, "NRTRLabelDecode": num_classes + NRTR_EXTRA_CLASSES}}
    head = build(part.name, REC, HEAD, h_kw, ours=False, in_channels=channels,
                 **{k: v for k, v in counts.items() if k in part.fixed})
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
PPOCR_CRNN_R34_ARCH = {
    "model_type": "rec", "algorithm": "CRNN",
    "Backbone": {"name": "ResNet", "layers": 34},
    "Neck": {"name": "SequenceEncoder", "encoder_type": "rnn", "hidden_size": 256},
    "Head": {"name": "CTCHead", "fc_decay": 0.0},
}
