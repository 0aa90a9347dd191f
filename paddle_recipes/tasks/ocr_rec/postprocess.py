"""Greedy CTC decoding: argmax per step, collapse repeats, drop blanks."""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from .charset import BLANK, CharDict


def softmax_np(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    z = logits - logits.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def ctc_greedy_decode(probs: np.ndarray, charset: CharDict, is_logits: bool = True,
                      with_confidence: bool = True) -> List[Tuple[str, float]]:
    """Decode [B, T, C] scores into (text, confidence) per sample.

    Confidence = mean probability of the kept (non-blank, non-repeated) steps;
    an empty prediction gets confidence 0.0. ``with_confidence=False`` skips the softmax
    (argmax of logits is the same) and returns confidence 0.0, for cheap training accuracy.
    """
    probs = np.asarray(probs, dtype=np.float32)
    if probs.ndim == 2:
        probs = probs[None]
    if is_logits and with_confidence:
        probs = softmax_np(probs)
    ids = probs.argmax(axis=-1)
    # the max is the value at the argmax: gathered, not a second pass over [B, T, C]
    best = np.take_along_axis(probs, ids[..., None], axis=-1)[..., 0] if with_confidence else None
    keep = np.ones(ids.shape, dtype=bool)  # the whole batch at once: not a repeat of the step before, not blank
    keep[:, 1:] = ids[:, 1:] != ids[:, :-1]
    keep &= ids != BLANK
    out = []
    for b in range(ids.shape[0]):
        k = keep[b]
        text = charset.decode_ids(ids[b][k].tolist())
        conf = float(best[b][k].mean()) if with_confidence and k.any() else 0.0
        out.append((text, conf))
    return out
