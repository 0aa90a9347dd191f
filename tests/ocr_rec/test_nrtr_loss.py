"""NRTRLoss (PP-OCRv4/v5 MultiLoss's GTC branch) without a [B*N, V] log-softmax: the same value and gradient as the
textbook one_hot / log_softmax form PaddleOCR writes (label smoothing eps 0.1 over V - 1 classes, padding id 0
ignored), closer to a float64 reference, stable for large logits. tests/ocr_rec/test_ppocr_models.py also checks it
against PaddleOCR's own MultiLoss values."""
from __future__ import annotations

import numpy as np
import paddle
import pytest

from benchmarks.nrtr_loss_cost import float64_reference as float64
from benchmarks.nrtr_loss_cost import log_softmax_form as textbook  # PaddleOCR's one_hot x log_softmax form
from paddle_recipes.tasks.ocr_rec.ppocr_losses import NRTRLoss

V = 6625  # ppocr_keys_v1 + space + blank: PP-OCRv4's NRTR vocabulary size order


def batch(scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    b, n = 4, 7
    length = rng.integers(1, n - 1, b)
    label = np.zeros([b, n + 2], np.int64)  # PaddleOCR's label_gtc: sos (2) + chars + eos (3) + padding 0
    for i, k in enumerate(length):
        label[i, 0], label[i, 1:1 + k], label[i, 1 + k] = 2, rng.integers(4, V, k), 3
    logits = (rng.standard_normal([b, int(length.max()) + 1, V]) * scale).astype("float32")
    return logits, label, length


def run(fn, logits, label, length, **kw):
    z = paddle.to_tensor(logits, stop_gradient=False)
    loss = fn(z, paddle.to_tensor(label), paddle.to_tensor(length), **kw)
    loss.backward()
    return float(loss), z.grad.numpy().reshape(-1, V)


@pytest.mark.parametrize("smoothing", [True, False])
def test_same_value_and_gradient_as_the_log_softmax_form_and_closer_to_float64(smoothing):
    logits, label, length = batch()
    ours = run(lambda z, y, n: NRTRLoss(smoothing=smoothing)(z, y, n), logits, label, length)
    ref = run(lambda z, y, n: textbook(z, y, n, smoothing), logits, label, length)
    exact_loss, exact_grad = float64(logits, label, length, smoothing)
    assert ours[0] == pytest.approx(ref[0], rel=1e-6) and ours[0] == pytest.approx(exact_loss, rel=1e-6)
    scale = np.abs(exact_grad).max()
    assert np.abs(ours[1] - ref[1]).max() / scale < 1e-4
    ours_err, ref_err = (float(np.abs(g - exact_grad).max()) for g in (ours[1], ref[1]))
    assert ours_err / scale < 1e-5
    if smoothing:  # at least as close to float64 as the log_softmax form (without: the same F.cross_entropy)
        assert ours_err <= ref_err
    padded = np.concatenate([label[:, 1:2 + int(length.max())].reshape(-1)]) == 0
    assert padded.any() and not ours[1][padded].any()  # padding positions get no gradient


def test_large_logits_stay_finite_and_exact():
    logits, label, length = batch(scale=60.0, seed=1)  # exp(60) overflows float32 without the shift
    loss, grad = run(lambda z, y, n: NRTRLoss()(z, y, n), logits, label, length)
    exact_loss, exact_grad = float64(logits, label, length)
    assert np.isfinite(loss) and np.isfinite(grad).all()
    assert loss == pytest.approx(exact_loss, rel=1e-5)
    assert np.abs(grad - exact_grad).max() / np.abs(exact_grad).max() < 1e-5
