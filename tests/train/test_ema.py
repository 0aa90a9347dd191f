"""EMA matches the closed-form update for both warmups, stays fp32, applies/restores and resumes."""
import math

import numpy as np
import paddle
import pytest

from paddle_recipes.train.ema import ModelEMA, ema_decay


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


def test_cached_views_follow_optimizer_steps_reallocation_and_swapped_layers():
    """update() reuses 1-D views of the weights between calls; it must stay the closed form when the optimizer
    updates in place, when set_value / set_state_dict may reallocate, when a layer is swapped for a new one, and
    after the EMA's own set_state_dict."""
    model = _model()
    opt = paddle.optimizer.Adam(learning_rate=0.1, parameters=model.parameters())
    ema = ModelEMA(model, decay=0.5, warmup="none")
    expected = {k: v.numpy().astype("float64") for k, v in model.state_dict().items()}
    x = paddle.randn([8, 4])

    def step_and_check(change):
        change()
        ema.update(model)
        for k, v in model.state_dict().items():
            expected[k] = 0.5 * expected[k] + 0.5 * v.numpy().astype("float64")
            np.testing.assert_allclose(ema.shadow[k].numpy(), expected[k], rtol=1e-6, atol=1e-6, err_msg=k)

    def adam_step():
        model(x).square().mean().backward()
        opt.step()
        opt.clear_grad()

    for _ in range(3):
        step_and_check(adam_step)  # in place: the cached views must see it
    step_and_check(lambda: model.set_state_dict({k: v * 2 for k, v in model.state_dict().items()}))
    step_and_check(lambda: model[0].weight.set_value(np.full([4, 4], 3.0, "float32")))

    def recast():  # the same tensor objects at new addresses, with new values
        model.to(dtype="float64")
        model.set_state_dict({k: v + 1 for k, v in model.state_dict().items()})
        model.to(dtype="float32")
    step_and_check(recast)

    def swap():
        model[0] = paddle.nn.Linear(4, 4)  # new parameter objects under the same names
        opt._parameter_list = model.parameters()
    step_and_check(swap)
    step_and_check(adam_step)
    restored = {k: v.numpy().astype("float64") for k, v in ema.shadow.items()}
    ema.set_state_dict({"shadow": {k: v * 0 for k, v in ema.shadow.items()}, "num_updates": 9})
    expected.update({k: 0 * v for k, v in restored.items()})
    step_and_check(adam_step)
