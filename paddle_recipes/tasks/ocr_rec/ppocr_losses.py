"""PP-OCRv4/v5 training objective: ``MultiLoss`` = CTC (on the CTC branch) + NRTR (on the GTC
branch), weights 1.0 / 1.0 as in PaddleOCR's configs, and the NRTR label encoding it needs.

NRTR ids (PaddleOCR's ``NRTRLabelEncode``): 0 = padding ("blank"), 1 = <unk>, 2 = <s>, 3 = </s>,
then the dictionary: dict char j (0-based, space last if used) -> j + 4. Our CTC ids are j + 1
(blank 0), so NRTR id = CTC id + 3. A label is ``[2, ids..., 3, 0, 0, ...]`` of width
``max_text_length``; PaddleOCR drops samples with ``len(text) >= max_text_length - 1``.
"""
from __future__ import annotations

from typing import Dict, Sequence

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from .losses import CTCLoss

NRTR_PAD, NRTR_UNK, NRTR_SOS, NRTR_EOS = 0, 1, 2, 3
NRTR_OFFSET = 3  # NRTR id = CTC id + 3


def nrtr_fits(length: int, max_text_length: int = 25) -> bool:
    """True when a label of ``length`` chars fits NRTR's [<s>, text, </s>] (PaddleOCR's rule)."""
    return 0 < length < max_text_length - 1


def nrtr_labels(ctc_labels: np.ndarray, lengths: Sequence[int], max_text_length: int = 25) -> np.ndarray:
    """CTC labels [B, L] (0-padded class ids, blank 0) + lengths [B] -> NRTR labels
    [B, max_text_length] int64 = [<s>=2, id+3 ..., </s>=3, 0 ...]. Call from collate and add the
    result as ``batch["label_gtc"]``. Raises ValueError (naming the row) for a label that does not
    fit (see ``nrtr_fits``): filter such samples in the dataset first."""
    ctc_labels = np.asarray(ctc_labels)
    out = np.zeros([len(lengths), max_text_length], dtype=np.int64)
    for row, n in enumerate(lengths):
        n = int(n)
        if not nrtr_fits(n, max_text_length):
            raise ValueError(f"label row {row}: length {n} does not fit NRTR (needs 1..{max_text_length - 2} "
                             f"chars for max_text_length {max_text_length})")
        out[row, 0] = NRTR_SOS
        out[row, 1:n + 1] = ctc_labels[row, :n].astype(np.int64) + NRTR_OFFSET
        out[row, n + 1] = NRTR_EOS
    return out


class NRTRLoss(nn.Layer):
    """Cross-entropy of the NRTR logits [B, N, V] against label_gtc[:, 1 : 2 + max(length)], ignoring
    padding (id 0). ``smoothing`` (default, as PaddleOCR): label smoothing eps 0.1 spread over the
    other V - 1 classes, mean over non-padding positions.

    With smoothing it is computed without a [B*N, V] log-softmax or one-hot: with soft = (1 - eps) at the target t and
    d = eps / (V - 1) elsewhere (summing to 1), -sum_j soft_j log p_j = lse - (1 - eps - d) z_t - d sum_j z_j,
    lse = logsumexp(z). The same value and gradient (softmax - soft) as PaddleOCR's one_hot / log_softmax form,
    closer to float64 (tests/ocr_rec/test_nrtr_loss.py); paddle's CPU log_softmax over V ~ 6600 classes and its
    gradient cost seconds a batch, this milliseconds."""

    def __init__(self, smoothing: bool = True, eps: float = 0.1):
        super().__init__()
        self.smoothing, self.eps = smoothing, eps

    def forward(self, logits, label_gtc, length):
        tgt = label_gtc[:, 1: 2 + int(length.max())].reshape([-1])
        logits = logits.astype("float32").reshape([-1, logits.shape[-1]])
        if not self.smoothing:  # paddle's fused softmax cross-entropy: fast and exact already
            return F.cross_entropy(logits, tgt, ignore_index=NRTR_PAD, reduction="mean")
        keep = tgt != NRTR_PAD
        shift = logits.max(axis=1, keepdim=True).detach()  # lse's gradient does not depend on the shift
        z = logits - shift
        lse = paddle.log(paddle.exp(z).sum(axis=1))
        z_t = paddle.take_along_axis(z, tgt.unsqueeze(1).astype("int64"), axis=1).squeeze(1)
        d = self.eps / (logits.shape[1] - 1)
        loss = lse - (1 - self.eps - d) * z_t - d * z.sum(axis=1)
        return loss.masked_select(keep).mean()


class MultiLoss(nn.Layer):
    """CTC loss on ``predicts["ctc"]`` (weight_1) + NRTR loss on ``predicts["gtc"]`` (weight_2).
    forward(predicts, label_ctc [B, L], length [B], label_gtc [B, max_text_length]) ->
    {"loss", "CTCLoss", "NRTRLoss"} (scalars); predicts without "gtc" (no GTC branch): {"loss", "CTCLoss"}.
    ``zero_infinity`` as our CTCLoss (PaddleOCR: off)."""

    def __init__(self, weight_1: float = 1.0, weight_2: float = 1.0, smoothing: bool = True,
                 zero_infinity: bool = True):
        super().__init__()
        self.weight_1, self.weight_2 = weight_1, weight_2
        self.ctc = CTCLoss(zero_infinity=zero_infinity)
        self.nrtr = NRTRLoss(smoothing=smoothing)

    def forward(self, predicts: Dict[str, paddle.Tensor], label_ctc, length, label_gtc):
        ctc = self.ctc(predicts["ctc"], label_ctc, length) * self.weight_1
        if "gtc" not in predicts:  # a MultiHead without its GTC branch (finetune_released): CTC only
            return {"loss": ctc, "CTCLoss": ctc}
        nrtr = self.nrtr(predicts["gtc"], label_gtc, length) * self.weight_2
        return {"loss": ctc + nrtr, "CTCLoss": ctc, "NRTRLoss": nrtr}
