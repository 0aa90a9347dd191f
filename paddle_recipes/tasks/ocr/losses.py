"""CTC loss wrapper around ``paddle.nn.functional.ctc_loss`` (warp-ctc)."""
from __future__ import annotations

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from dataclasses import dataclass

from ...config import check_name
from .charset import BLANK


@dataclass
class LossConfig:
    """PaddleOCR's Loss section. name: CTCLoss. zero_infinity: zero the loss of impossible alignments."""
    name: str = "CTCLoss"
    zero_infinity: bool = True

    def __post_init__(self):
        check_name("Loss.name", self.name, ("CTCLoss",))


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

