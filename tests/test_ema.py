"""EMA matches the closed-form update for both warmups, stays fp32, applies/restores and resumes."""
import math

import numpy as np
import paddle
import pytest

from paddle_recipes.ema import ModelEMA, ema_decay


def _model():
    paddle.seed(3)
    return paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.BatchNorm1D(4))


def _perturb(model, step):
    with paddle.no_grad():
        for i, p in enumerate(model.parameters()):
            p.set_value(p + 0.1 * (step + 1) * (i + 1))


@pytest.mark.parametrize("warmup", ["threshold", "exponential"])
def test_closed_form(warmup):
    model = _model()
    decay, warmup_steps = 0.9, 5
    ema = ModelEMA(model, decay=decay, warmup=warmup, warmup_steps=warmup_steps)
    expected = {k: v.numpy().astype("float64") for k, v in model.state_dict().items()}
    for n in range(12):
        _perturb(model, n)
        if warmup == "threshold":
            d = min(decay, (1 + n) / (10 + n))
        else:
            d = decay * (1 - math.exp(-(n + 1) / warmup_steps))
        assert ema.update(model) == pytest.approx(d)
        for k, v in model.state_dict().items():
            expected[k] = d * expected[k] + (1 - d) * v.numpy().astype("float64")
    for k, v in ema.ema_state_dict().items():
        assert v.dtype == paddle.float32
        np.testing.assert_allclose(v.numpy(), expected[k], rtol=1e-5, atol=1e-5)


def test_decay_values():
    assert ema_decay(0, 0.9998, "threshold") == pytest.approx(0.1)
    assert ema_decay(10**6, 0.9998, "threshold") == pytest.approx(0.9998)
    assert ema_decay(1999, 0.9998, "exponential", 2000) == pytest.approx(0.9998 * (1 - math.exp(-1)))
    assert ema_decay(5, 0.5, "none") == 0.5
    with pytest.raises(ValueError, match="unknown EMA warmup"):
        ema_decay(0, 0.9, "cosine")


def test_apply_restore_and_resume():
    model = _model()
    ema = ModelEMA(model, decay=0.5, warmup="none")
    for n in range(3):
        _perturb(model, n)
        ema.update(model)
    trained = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with ema.apply_to(model):
        for k, v in model.state_dict().items():
            np.testing.assert_allclose(v.numpy(), ema.shadow[k].numpy())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), trained[k])
    # resume: a fresh EMA loaded from state continues exactly like the original
    state = ema.state_dict()
    other = ModelEMA(_model(), decay=0.5, warmup="none")
    other.set_state_dict(state)
    _perturb(model, 7)
    ema.update(model)
    other.update(model)
    assert other.num_updates == ema.num_updates == 4
    for k in ema.shadow:
        np.testing.assert_array_equal(other.shadow[k].numpy(), ema.shadow[k].numpy())


def test_fp16_model_keeps_fp32_shadow():
    model = _model()
    ema = ModelEMA(model, decay=0.9)
    model16 = _model()
    model16.to(dtype="float16")
    ema.update(model16)
    assert all(v.dtype == paddle.float32 for v in ema.shadow.values() if v.dtype != paddle.int64)
