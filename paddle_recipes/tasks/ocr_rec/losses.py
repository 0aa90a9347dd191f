"""CTC loss wrapper around ``paddle.nn.functional.ctc_loss`` (warp-ctc)."""
from __future__ import annotations

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ...config import ConfigError, check_name
from .charset import BLANK

MULTILOSS_PARTS = ["CTCLoss", "NRTRLoss"]


@dataclass
class LossConfig:
    """PaddleOCR's Loss section. name: CTCLoss | MultiLoss (CTC + NRTR with label smoothing, for
    MultiHead models; ppocr_losses.MultiLoss). loss_config_list: MultiLoss's parts, PaddleOCR's form
    [{CTCLoss: null}, {NRTRLoss: null}] (the only one taken; None = that). zero_infinity: zero the CTC
    loss of impossible alignments."""
    name: str = "CTCLoss"
    loss_config_list: Optional[List[Dict[str, Any]]] = None
    zero_infinity: bool = True

    def __post_init__(self):
        check_name("Loss.name", self.name, ("CTCLoss", "MultiLoss"))
        parts = self.loss_config_list
        if parts is None:
            return
        if self.name != "MultiLoss":
            raise ConfigError(f"Loss.loss_config_list: only MultiLoss takes it, not {self.name}")
        names = [next(iter(p)) if isinstance(p, dict) and len(p) == 1 else p for p in parts]
        if names != MULTILOSS_PARTS or any(next(iter(p.values())) for p in parts):
            raise ConfigError(f"Loss.loss_config_list: {parts!r}: only [{{CTCLoss: null}}, {{NRTRLoss: null}}] "
                              "(PaddleOCR's PP-OCRv4/v5 MultiLoss) is supported here")


class CTCLoss(nn.Layer):
    """CTC loss for logits [B, T, C] and zero-padded labels [B, L] with lengths [B].

    Raw logits go to warp-ctc, which normalizes them with its own softmax (so no
    log_softmax here; paddle's CPU log_softmax over ~3000 classes is also very slow).
    Every time step is used (input_lengths = T). Per-sample losses (negative
    log-likelihood summed over the sequence) are averaged over the batch.
    ``zero_infinity`` replaces impossible alignments (label needs more steps than T)
    by 0 instead of inf. The computation runs in float32 also under AMP.
    """

    def __init__(self, blank: int = BLANK, zero_infinity: bool = True):
        super().__init__()
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, logits, labels, label_lengths):
        b, t = logits.shape[0], logits.shape[1]
        log_probs = logits.astype("float32").transpose([1, 0, 2])  # [T, B, C]; warp-ctc applies softmax
        input_lengths = paddle.full([b], t, dtype="int64")
        loss = F.ctc_loss(log_probs, labels.astype("int32"), input_lengths, label_lengths.astype("int64"),
                          blank=self.blank, reduction="none", zero_infinity=self.zero_infinity)
        return loss.mean()

