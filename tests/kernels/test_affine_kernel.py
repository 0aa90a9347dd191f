"""Global.cpu_affine_kernel (paddle_recipes.kernels.affine): our scalar affine (LearnableAffineBlock) and channel
bias (a conv's bias) ops give paddle's forward and input gradient bit for bit and its parameter gradients to
float32 rounding; switching a PP-OCR network keeps its weights, names and first loss exactly and its training loss
curve to the float noise floor; through build_training (with the depthwise kernel too) and to_static; jit.save
never holds the custom ops.

Tolerance: the parameter gradients are sums over the tensor, ours in double and paddle's in float32 in another
order, so they agree to relative ~1e-6; everything else is exact.
"""
from __future__ import annotations

import numpy as np
import paddle
import pytest
from conftest import SMALL_DET_ARCH, needs_cxx, rel_err, square_loss_grads

from paddle_recipes.kernels import affine as ak
from paddle_recipes.kernels import depthwise as dk
from paddle_recipes.nn.layers import LearnableAffineBlock

pytestmark = needs_cxx("cpu_affine_kernel")
DET_ARCH = SMALL_DET_ARCH


@pytest.fixture
def op_calls(monkeypatch) -> dict:
    """Calls of each compiled op (the real ops still compute)."""
    calls = {"pr_scalar_affine": 0, "pr_channel_bias": 0}
    ops = ak.load_kernel()

    def counting(name):
        def call(*a):
            calls[name] += 1
            return getattr(ops, name)(*a)
        return staticmethod(call)
    monkeypatch.setattr(ak, "_module", type("Counting", (), {n: counting(n) for n in calls})())
    return calls


def _forward_backward(fn, arrays, upstream):
    ts = [paddle.to_tensor(a, stop_gradient=False) for a in arrays]
    y = fn(*ts)
    (y * paddle.to_tensor(upstream)).sum().backward()
    return [y.numpy()] + [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("shape", [(2, 5, 7, 9), (3, 4), (1, 6, 33), (2, 3, 4, 5, 6), (4, 48, 40, 40)])
def test_scalar_affine_is_paddles_multiply_add(shape):
    rng = np.random.default_rng(0)
    x, up = rng.standard_normal(shape).astype("float32"), rng.standard_normal(shape).astype("float32")
    s, b = np.array([0.731], "float32"), np.array([-0.29], "float32")
    (y0, dx0, ds0, db0), (y, dx, ds, db) = (_forward_backward(f, (x, s, b), up) for f in (
        lambda x, s, b: s * x + b, ak.scalar_affine))
    assert np.array_equal(y0, y) and np.array_equal(dx0, dx)  # bit for bit
    terms = [x.astype(np.float64) * up, up.astype(np.float64)]  # the sums ds and db, in float64
    for ours, paddles, t in ((ds[0], ds0[0], terms[0]), (db[0], db0[0], terms[1])):
        exact, scale = t.sum(), np.abs(t).sum()
        assert abs(paddles - exact) <= 1e-5 * scale  # paddle's float32 sum: its own rounding
        assert abs(ours - exact) <= 1e-7 * scale + 1e-7 * abs(exact)  # ours: summed in double, rounded once


@pytest.mark.parametrize("shape", [(2, 5, 7, 9), (3, 4), (1, 6, 33), (2, 3, 4, 5, 6)])
def test_channel_bias_is_paddles_broadcast_add(shape):
    rng = np.random.default_rng(1)
    x, up = rng.standard_normal(shape).astype("float32"), rng.standard_normal(shape).astype("float32")
    b = rng.standard_normal(shape[1]).astype("float32")
    view = [1, -1] + [1] * (len(shape) - 2)
    (y0, dx0, db0), (y, dx, db) = (_forward_backward(f, (x, b), up) for f in (
        lambda x, b: x + b.reshape(view), ak.channel_bias))
    assert np.array_equal(y0, y) and np.array_equal(dx0, dx)
    assert rel_err(db0, db) < 1e-5
    exact = up.astype(np.float64).swapaxes(0, 1).reshape(shape[1], -1).sum(axis=1)
    assert np.max(np.abs(db - exact)) <= 1e-7 * np.max(np.abs(up)) * up.size / shape[1]


def test_wrong_inputs_are_one_clear_error():
    x = paddle.ones([2, 3, 4, 4])
    with pytest.raises(Exception, match="scale and bias must hold one value each"):
        ak.scalar_affine(x, paddle.ones([3]), paddle.ones([1]))
    with pytest.raises(Exception, match="bias must hold one value per channel"):
        ak.channel_bias(x, paddle.ones([4]))
    with pytest.raises(Exception, match="float32 only"):
        ak.channel_bias(x.astype("float64"), paddle.ones([3], "float64"))


class OwnForwardConv(paddle.nn.Conv2D):
    def forward(self, x):
        return super().forward(x) * 2


def test_only_eligible_layers_are_switched_and_keep_their_parameters():
    net = paddle.nn.Sequential(
        LearnableAffineBlock(),                                                   # yes
        paddle.nn.Conv2D(4, 4, 3, padding=1),                                     # yes: a bias
        paddle.nn.Conv2DTranspose(4, 4, 2, stride=2),                             # yes
        paddle.nn.Conv2D(4, 4, 3, padding=1, bias_attr=False),                    # no bias
        paddle.nn.Conv2D(4, 4, 3, padding=1, data_format="NHWC"),                 # channels last
        paddle.nn.Conv2D(4, 4, 3, padding=1, padding_mode="reflect"),             # not zero padding
        OwnForwardConv(4, 4, 3, padding=1),                                       # a subclass with its own forward
        paddle.nn.Conv2D(4, 4, 3, padding=1, groups=4))                           # depthwise + bias: after dk
    dk.use_depthwise_kernel(net)
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    params = [id(p) for p in net.parameters()]
    assert ak.use_affine_kernel(net) == 4
    assert [type(m).__name__ for m in net] == [
        "AffineKernelLAB", "BiasKernelConv2D", "BiasKernelConv2DTranspose", "Conv2D", "Conv2D", "Conv2D",
        "OwnForwardConv", "BiasKernelDepthwiseConv2D"]
    assert [id(p) for p in net.parameters()] == params
    assert {k: v.numpy() for k, v in net.state_dict().items()}.keys() == before.keys()
    assert ak.use_affine_kernel(net) == 0  # idempotent


@pytest.mark.parametrize("make", [
    lambda: paddle.nn.Conv2D(3, 5, 3, stride=2, padding=1),
    lambda: paddle.nn.Conv2DTranspose(3, 5, 2, stride=2),
    lambda: paddle.nn.Conv2DTranspose(3, 5, 3, stride=2, padding=1, output_padding=1),
    lambda: paddle.nn.Conv2D(3, 3, 3, padding=1, groups=3),  # our depthwise conv, then the bias op
    lambda: LearnableAffineBlock(scale_value=0.9, bias_value=0.1),
], ids=["conv", "conv_transpose", "conv_transpose_output_padding", "depthwise", "lab"])
def test_a_switched_layer_trains_as_paddles_and_evaluates_with_paddles_ops(make, op_calls):
    paddle.seed(0)
    ref, ours = make(), make()
    ours.set_state_dict(ref.state_dict())
    dk.use_depthwise_kernel(ours)
    assert ak.use_affine_kernel(ours) == 1
    x0 = np.random.default_rng(2).standard_normal((2, 3, 9, 11)).astype("float32")
    out = square_loss_grads((ref, ours), x0)
    assert sum(op_calls.values()) == 1
    depthwise = isinstance(ours, dk.DepthwiseKernelConv2D)
    for i, (a, b) in enumerate(zip(*out)):  # y, dx, then weight (bias) or scale, bias
        if i < 2 and not depthwise:
            assert np.array_equal(a, b), i
        else:
            assert rel_err(a, b) < 1e-5, i
    ref.eval(), ours.eval()
    x = paddle.to_tensor(x0)
    assert np.array_equal(ref(x).numpy(), ours(x).numpy())  # eval: paddle's ops, bit for bit
    assert sum(op_calls.values()) == 1


def _det_loop(affine: bool, steps: int = 4, nudge: bool = False, to_static: bool = False):
    """conftest.det_loss_curve of a small PP-OCRv4 det network (PPLCNetV3 LABs, DB head transposed convs with
    biases), the depthwise kernel on in both, the affine ops on or off."""
    from conftest import det_loss_curve

    def switch(model):
        dk.use_depthwise_kernel(model)
        return ak.use_affine_kernel(model) if affine else 0
    return det_loss_curve(DET_ARCH, steps, nudge, switch, to_static)


def test_det_network_first_loss_exact_and_curve_within_the_float_noise_floor():
    off, model_off, _ = _det_loop(False)
    on, model_on, n = _det_loop(True)
    floor, _, _ = _det_loop(False, nudge=True)
    labs = sum(isinstance(m, LearnableAffineBlock) for m in model_off.sublayers())
    biased = sum(isinstance(m, (paddle.nn.Conv2D, paddle.nn.Conv2DTranspose)) and m.bias is not None
                 for m in model_off.sublayers())
    assert n == labs + biased and labs > 20 and biased >= 4
    assert on[0] == off[0]  # same weights: the forward is paddle's bit for bit
    noise = max(abs(a - b) / abs(a) for a, b in zip(off, floor))
    assert 0 < noise and max(abs(a - b) / abs(a) for a, b in zip(off, on)) <= 4 * noise + 1e-6, (off, on, floor)
    x = paddle.to_tensor(np.random.default_rng(2).standard_normal([1, 3, 64, 64]).astype("float32"))
    model_on.eval()
    model_off.set_state_dict(model_on.state_dict())
    model_off.eval()
    assert np.array_equal(model_on(x)["maps"].numpy(), model_off(x)["maps"].numpy())


@pytest.mark.slow  # ~60 s: a to_static trace of the det network
def test_with_to_static_the_program_runs_the_ops(op_calls):
    off, model_off, _ = _det_loop(False, steps=1)
    on, _, n = _det_loop(True, steps=1, to_static=True)
    runs = _forward_calls(model_off, lambda m: isinstance(m, LearnableAffineBlock) or (
        isinstance(m, (paddle.nn.Conv2D, paddle.nn.Conv2DTranspose)) and m.bias is not None))
    assert n > 20 and sum(op_calls.values()) == runs  # traced once: every switched layer run put its op in
    assert on[0] == pytest.approx(off[0], rel=1e-6)


def test_jit_save_after_training_holds_no_custom_op(tmp_path):
    """A model trained with both kernels (affine ops and depthwise conv) exports, and the file runs in a process that
    never built either (export traces eval mode)."""
    _, model, n = _det_loop(True, steps=1)
    assert n > 0
    from conftest import det_export_output_elsewhere

    assert rel_err(*det_export_output_elsewhere(model, tmp_path)) < 1e-5


def _train(tmp_path, affine: bool):
    from conftest import det_fit

    return det_fit(tmp_path / str(affine), DET_ARCH, cpu_depthwise_kernel=True, cpu_affine_kernel=affine)


def _forward_calls(model, pick) -> int:
    """How many times the layers pick(layer) selects run in one training forward of model (2 x 3 x 64 x 64)."""
    calls = []
    hooks = [m.register_forward_post_hook(lambda *a: calls.append(1)) for m in model.sublayers() if pick(m)]
    model.train()
    model(paddle.zeros([2, 3, 64, 64]))
    for h in hooks:
        h.remove()
    return len(calls)


def test_the_yaml_key_through_build_training_with_the_depthwise_kernel(tmp_path, caplog, op_calls):
    off, model_off = _train(tmp_path, False)
    assert not sum(op_calls.values())
    lab_calls = _forward_calls(model_off, lambda m: isinstance(m, LearnableAffineBlock))
    bias_calls = _forward_calls(model_off, lambda m: isinstance(m, (paddle.nn.Conv2D, paddle.nn.Conv2DTranspose))
                                and m.bias is not None)
    with caplog.at_level("INFO", logger="paddle_recipes.train.build"):
        on, model = _train(tmp_path, True)
    labs = sum(isinstance(m, ak.AffineKernelLAB) for m in model.sublayers())
    depthwise_with_bias = [m for m in model.sublayers() if isinstance(m, ak.BiasKernelDepthwiseConv2D)]
    switched = labs + sum(isinstance(m, (ak.BiasKernelConv2D, ak.BiasKernelConv2DTranspose)) for m in model.sublayers())
    assert labs > 20 and not depthwise_with_bias  # PPLCNetV3's depthwise convs carry no bias
    biased = [m for m in model_off.sublayers() if isinstance(m, (paddle.nn.Conv2D, paddle.nn.Conv2DTranspose))
              and m.bias is not None]
    assert lab_calls > 20 and bias_calls >= len(biased) == switched - labs >= 4
    assert len(on) == len(off) == 4  # 4 steps
    assert op_calls["pr_scalar_affine"] == 4 * lab_calls and op_calls["pr_channel_bias"] == 4 * bias_calls
    assert on[0] == off[0]
    assert f"Global.cpu_affine_kernel: {switched} LearnableAffineBlock and conv bias layers train with our CPU " \
           "kernel" in caplog.text
