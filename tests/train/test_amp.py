"""The loss scaler's skip / shrink / grow logic, through our own code paths, on CPU."""
import math

import numpy as np
import paddle
import pytest

from paddle_recipes.train.amp import Amp, AmpConfig, DynamicLossScaler, any_nonfinite, unscale_and_check


def _setup(lr=0.1):
    paddle.seed(0)
    model = paddle.nn.Linear(4, 2)
    opt = paddle.optimizer.SGD(learning_rate=lr, parameters=model.parameters())
    return model, opt


def _loss(model, factor=1.0):
    return (model(paddle.ones([3, 4])) ** 2).mean() * factor


def test_overflow_step_is_skipped_and_scale_shrinks():
    model, opt = _setup()
    scaler = DynamicLossScaler(init_scale=1024.0, decr_ratio=0.5, decr_every_n_nan_or_inf=1)
    before = [p.numpy().copy() for p in model.parameters()]
    scaler.scale(_loss(model, float("inf"))).backward()
    assert scaler.step(opt) is False
    opt.clear_grad()
    assert scaler.scale_value == 512.0
    assert scaler.skipped_steps == 1
    for a, p in zip(before, model.parameters()):
        np.testing.assert_array_equal(a, p.numpy())


def test_nan_counts_and_decr_every_n():
    model, opt = _setup()
    scaler = DynamicLossScaler(init_scale=64.0, decr_every_n_nan_or_inf=2)
    for expected in (64.0, 32.0, 32.0, 16.0):
        scaler.scale(_loss(model, float("nan"))).backward()
        assert not scaler.step(opt)
        opt.clear_grad()
        assert scaler.scale_value == expected
    # a good step resets the bad-streak counter
    scaler.scale(_loss(model)).backward()
    assert scaler.step(opt)
    assert scaler.bad_steps == 0


def test_good_steps_grow_scale_and_unscaled_update_is_exact():
    model, opt = _setup()
    ref, ref_opt = _setup()
    scaler = DynamicLossScaler(init_scale=8.0, incr_ratio=2.0, incr_every_n_steps=3)
    scales = []
    for _ in range(7):
        scaler.scale(_loss(model)).backward()
        assert scaler.step(opt)
        opt.clear_grad()
        _loss(ref).backward()
        ref_opt.step()
        ref_opt.clear_grad()
        scales.append(scaler.scale_value)
    assert scales == [8.0, 8.0, 16.0, 16.0, 16.0, 32.0, 32.0]
    for a, b in zip(model.parameters(), ref.parameters()):  # scaling by powers of 2 is exact
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=0, atol=1e-6)


def test_min_scale_floor_and_state_roundtrip():
    model, opt = _setup()
    scaler = DynamicLossScaler(init_scale=2.0, min_scale=1.0)
    for _ in range(3):
        scaler.scale(_loss(model, float("inf"))).backward()
        scaler.step(opt)
        opt.clear_grad()
    assert scaler.scale_value == 1.0
    other = DynamicLossScaler()
    other.set_state_dict(scaler.state_dict())
    assert other.state_dict() == scaler.state_dict()


def test_static_scaling_does_not_change():
    model, opt = _setup()
    scaler = DynamicLossScaler(init_scale=128.0, dynamic=False, incr_every_n_steps=1)
    for f in (1.0, float("inf"), 1.0):
        scaler.scale(_loss(model, f)).backward()
        scaler.step(opt)
        opt.clear_grad()
    assert scaler.scale_value == 128.0


def test_amp_on_cpu_reports_not_in_effect_and_still_guards():
    amp = Amp(AmpConfig(enable=True, level="O2"))
    assert paddle.device.get_device() == "cpu"
    assert not amp.in_effect
    assert "NOT in effect" in amp.describe() and "cpu" in amp.describe().lower()
    model, opt = _setup()
    model2, opt2 = amp.prepare(model, opt)
    assert model2 is model and opt2 is opt and model.weight.dtype == paddle.float32
    with amp.autocast():
        loss = _loss(model, float("inf"))
    amp.backward(loss)
    assert amp.step(opt) is False  # non-finite step skipped even in fp32


def test_forced_scaling_path_through_amp():
    amp = Amp(AmpConfig(enable=True, force_loss_scaling=True, init_loss_scaling=256.0, incr_every_n_steps=2))
    assert amp.scaler.enabled and "dynamic loss scaling from 256" in amp.describe()
    model, opt = _setup()
    amp.backward(_loss(model, float("inf")))
    assert not amp.step(opt)
    opt.clear_grad()
    assert amp.scaler.scale_value == 128.0
    for _ in range(2):
        amp.backward(_loss(model))
        assert amp.step(opt)
        opt.clear_grad()
    assert amp.scaler.scale_value == 256.0


def test_amp_off_message_and_bad_config():
    assert Amp(AmpConfig()).describe().startswith("AMP off")
    with pytest.raises(ValueError, match="level"):
        AmpConfig(level="O3")
    with pytest.raises(ValueError, match="dtype"):
        AmpConfig(dtype="float8")


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_check_only_guard_finds_any_bad_element_and_writes_nothing(bad, dtype):
    grads = [paddle.ones([3, 4]).astype(dtype), paddle.full([5], 2.0).astype(dtype)]
    assert not any_nonfinite(grads)
    grads[1][2] = bad
    before = [g.astype("float32").numpy().copy() for g in grads]
    assert any_nonfinite(grads) and unscale_and_check(grads, 1.0)
    for g, b in zip(grads, before):  # scale 1.0: a check, no write pass
        np.testing.assert_array_equal(g.astype("float32").numpy(), b)


def test_check_only_guard_has_no_false_alarm_when_the_sum_overflows():
    assert not any_nonfinite([paddle.full([4], 3e38), paddle.full([3], 60000.0).astype("float16")])
    assert any_nonfinite([paddle.to_tensor([math.inf, -math.inf])])  # +inf and -inf in one tensor


def test_unscale_below_one_still_scales_in_place():
    g = [paddle.full([3], 2.0)]
    assert not unscale_and_check(g, 0.5)
    np.testing.assert_array_equal(g[0].numpy(), [1.0, 1.0, 1.0])
