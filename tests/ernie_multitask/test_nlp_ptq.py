"""Tests for paddle_recipes.tasks.ernie_multitask.ptq: INT8 post-training quantization agrees with fp32, exports, reports sizes."""
from __future__ import annotations

import numpy as np
import paddle
import pytest
from paddle import nn
from paddle.static import InputSpec

from paddle_recipes.export import create_predictor, export_model, predict
from paddle_recipes.tasks.ernie_multitask.ptq import quant_size_report, quantize_ptq, save_quantized


class TinyConvNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(1, 8, 3, padding=1)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = nn.functional.max_pool2d(nn.functional.relu(self.conv(x)), 2)
        return self.fc2(nn.functional.relu(self.fc1(x.flatten(1))))


def _toy_task(n, seed):
    """4 classes = which quadrant of an 8x8 image holds a bright blob."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 0.3, (n, 1, 8, 8)).astype("float32")
    y = rng.integers(0, 4, n)
    for i, c in enumerate(y):
        r, q = divmod(int(c), 2)
        x[i, 0, r * 4:r * 4 + 4, q * 4:q * 4 + 4] += 1.5
    return paddle.to_tensor(x), paddle.to_tensor(y)


def test_ptq_agrees_with_fp32_and_exports(tmp_path):
    paddle.seed(0)
    model = TinyConvNet()
    opt = paddle.optimizer.Adam(0.01, parameters=model.parameters())
    xs, ys = _toy_task(512, 0)
    for _ in range(60):
        loss = nn.functional.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
        opt.clear_grad()
    model.eval()
    xt, yt = _toy_task(256, 1)
    fp32_pred = model(xt).argmax(-1)
    assert float((fp32_pred == yt).astype("float32").mean()) > 0.9  # the toy net learned the task
    w_before = model.fc1.weight.numpy().copy()
    qmodel = quantize_ptq(model, [xs[i:i + 64] for i in range(0, 256, 64)])
    np.testing.assert_array_equal(model.fc1.weight.numpy(), w_before)  # original untouched
    q_out = qmodel(xt)
    agree = float((q_out.argmax(-1) == fp32_pred).astype("float32").mean())
    assert agree >= 0.95, agree
    assert float((q_out - model(xt)).abs().max()) > 0  # it really is quantized
    w = qmodel.fc1.weight.numpy()
    np.testing.assert_array_equal(w, np.round(w))  # int8-valued weights
    assert np.abs(w).max() <= 127

    spec = [InputSpec([None, 1, 8, 8], "float32", "x")]
    fp32 = export_model(model, spec, tmp_path / "fp32" / "model")
    report = save_quantized(qmodel, spec, tmp_path / "int8" / "model", fp32_prefix=fp32.prefix)
    assert report["format"] == "pdmodel" and report["total_bytes"] > 0
    assert report["quantized_weight_elements"] == 8 * 9 + 128 * 32 + 32 * 4
    assert report["packed_ratio_vs_fp32_params"] < 0.35
    pred = create_predictor(report["prefix"])
    (out,) = predict(pred, [xt.numpy()])
    np.testing.assert_allclose(out, q_out.numpy(), atol=1e-4)
    with pytest.raises(ValueError, match="calib_batches is empty"):
        quantize_ptq(model, [])


class DictMLP(nn.Layer):
    """Keyword inputs (like a transformer student taking input_ids=...)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(30, 16)
        self.norm = nn.LayerNorm(16)
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, input_ids, mask=None):
        h = self.norm(self.emb(input_ids)).mean(1)
        return self.fc2(nn.functional.gelu(self.fc1(h)))


def test_ptq_dict_batches_layer_types_and_size_report():
    paddle.seed(3)
    m = DictMLP()
    m.eval()
    ids = paddle.randint(0, 30, [128, 6])
    q = quantize_ptq(m, [{"input_ids": ids[i:i + 32]} for i in range(0, 128, 32)])
    kinds = {type(layer).__name__ for layer in q.sublayers()}
    assert "QuantedLinear" in kinds and "ObserveWrapper" not in kinds  # only Conv2D/Linear by default
    assert isinstance(q.emb, nn.Embedding) and isinstance(q.norm, nn.LayerNorm)
    agree = float((q(ids).argmax(-1) == m(ids).argmax(-1)).astype("float32").mean())
    assert agree >= 0.9, agree
    rep = quant_size_report(q)
    assert rep["quantized_weight_elements"] == 16 * 32 + 32 * 3
    other = 30 * 16 + 2 * 16 + 32 + 3  # emb, norm, biases stay fp32 (plus a few scalar scales)
    assert rep["int8_packed_bytes_estimate"] - (rep["quantized_weight_elements"] + 4 * other) < 4 * 40
    assert rep["fp32_param_bytes"] - rep["int8_packed_bytes_estimate"] == 3 * rep["quantized_weight_elements"]
