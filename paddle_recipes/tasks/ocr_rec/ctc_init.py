"""CTC head blank-bias initialisation (docs/cards/ctc_blank_bias.md).

At the usual init (bias 0, small weights) every class has probability ~1/C. CTC training first
spends steps pushing the blank up (most frames are blank), then sits on the "all blank" plateau.
Starting with the blank already at its prior probability skips the first phase and puts the
non-blank logits where their gradients are largest.

    Architecture.Head.init_blank_prob: 0.8       # the recipe's key: our CTCHead, PaddleOCR's CTCHead and MultiHead's
                                                 # CTC branch get their output bias at construction (also on a
                                                 # PaddleOCR YAML: -o Architecture.Head.init_blank_prob=0.8)
    init_ctc_blank_bias(model, blank_prob=0.8)   # functional, for your own model: returns the bias value set

A resumed run or a ``Global.pretrained_model`` load overwrites the constructed bias with the loaded one.
blank_prob: target softmax probability of the blank at init when the other logits are ~0
(0 < p < 1). ``blank_prob = 1 - mean_label_len / T`` is the frame prior (``frame_prior``).
"""
from __future__ import annotations

import math

import paddle

from ...runtime.distributed import unwrap


def blank_logit(blank_prob: float, num_classes: int) -> float:
    """Bias b of the blank so that softmax([b, 0, ..., 0])[0] == blank_prob (other biases 0)."""
    if not 0.0 < blank_prob < 1.0:
        raise ValueError(f"blank_prob must be in (0, 1), got {blank_prob}")
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2, got {num_classes}")
    return math.log(blank_prob * (num_classes - 1) / (1.0 - blank_prob))


def frame_prior(mean_label_len: float, time_steps: int) -> float:
    """Fraction of CTC frames that are blank when labels average ``mean_label_len`` chars over T steps."""
    if time_steps <= 0:
        raise ValueError("time_steps must be > 0")
    return min(0.99, max(0.01, 1.0 - float(mean_label_len) / time_steps))


def find_ctc_bias(model: paddle.nn.Layer) -> paddle.Tensor:
    """The output bias [num_classes] of the model's CTC head (``head.bias``, or ``head.fc.bias``)."""
    m = unwrap(model)
    head = getattr(m, "head", m)
    bias = getattr(head, "bias", None)
    if bias is None and getattr(head, "fc", None) is not None:
        bias = head.fc.bias
    if bias is None or len(bias.shape) != 1:
        raise ValueError(f"{type(m).__name__}: no 1-D CTC output bias found (expected model.head.bias "
                         "or model.head.fc.bias)")
    return bias


def set_blank_bias(bias: paddle.Tensor, blank_prob: float, blank: int = 0) -> float:
    """Set a CTC output bias [num_classes] to [b at ``blank``, 0 elsewhere] with b = blank_logit; returns b."""
    c = int(bias.shape[0])
    b = blank_logit(blank_prob, c)
    value = paddle.zeros([c], dtype=bias.dtype)
    value[blank] = b
    bias.set_value(value)
    return b


def init_ctc_blank_bias(model: paddle.nn.Layer, blank_prob: float = 0.8, blank: int = 0,
                        scale_fc: float | None = None) -> float:
    """Set the CTC output bias to [b at ``blank``, 0 elsewhere]; returns b.

    scale_fc: optionally multiply the head's last weight by this (e.g. 0.1) so the other logits
    start near 0 and the blank probability really is ``blank_prob``.
    """
    b = set_blank_bias(find_ctc_bias(model), blank_prob, blank)
    if scale_fc is not None:
        head = getattr(unwrap(model), "head", None)
        fc = getattr(head, "fc", None)
        if fc is None:
            raise ValueError("scale_fc needs model.head.fc")
        fc.weight.set_value(fc.weight * scale_fc)
    return b
