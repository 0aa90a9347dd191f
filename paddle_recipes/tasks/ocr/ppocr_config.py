"""Dataclass form of PaddleOCR's rec ``Architecture`` section, for ``paddle_recipes.config.from_dict``.

A PaddleOCR YAML ``Architecture:`` section parses as is. Every option is ``Optional``: ``None`` (the
default) means "the network's default", a set value is passed to the network, and an option the
chosen network does not take is an error naming it (from ``build_ppocr_rec_model``); unknown keys
are rejected by the config system. ``Head.head_list`` keeps PaddleOCR's list-of-dicts form
(``[{CTCHead: {Neck: {...}, Head: {...}}}, {NRTRHead: {...}}]``) and is checked by ``MultiHead``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class PPOCRBackboneConfig:
    """name: PPLCNetV3 (scale; conv_kxk_num, lr_mult_list, lab_lr) | PPHGNetV2_B4 (text_rec) |
    ResNet (layers)."""
    name: str = "PPLCNetV3"
    scale: Optional[float] = None
    conv_kxk_num: Optional[int] = None
    lr_mult_list: Optional[List[float]] = None
    lab_lr: Optional[float] = None
    text_rec: Optional[bool] = None
    layers: Optional[int] = None


@dataclass
class PPOCRNeckConfig:
    """name: SequenceEncoder; encoder_type: reshape | fc | rnn | svtr; hidden_size (rnn/fc, per direction)."""
    name: str = "SequenceEncoder"
    encoder_type: str = "rnn"
    hidden_size: Optional[int] = None


@dataclass
class PPOCRHeadConfig:
    """name: CTCHead (fc_decay, mid_channels) | MultiHead (head_list)."""
    name: str = "MultiHead"
    head_list: Optional[List[Dict[str, Any]]] = None
    fc_decay: Optional[float] = None
    mid_channels: Optional[int] = None


@dataclass
class PPOCRArchitectureConfig:
    """PaddleOCR's ``Architecture`` for rec models. ``Neck`` is absent for MultiHead models.
    ``model_type`` / ``algorithm`` are informational (as in PaddleOCR); ``Transform`` must be empty."""
    model_type: str = "rec"
    algorithm: str = "SVTR_LCNet"
    Transform: Optional[Dict[str, Any]] = None
    Backbone: PPOCRBackboneConfig = field(default_factory=PPOCRBackboneConfig)
    Neck: Optional[PPOCRNeckConfig] = None
    Head: PPOCRHeadConfig = field(default_factory=PPOCRHeadConfig)

    def __post_init__(self):
        if self.Transform:
            raise ValueError("Architecture.Transform: rectification transforms (TPS, ...) are not supported")
