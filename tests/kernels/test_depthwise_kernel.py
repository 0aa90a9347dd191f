"""Global.cpu_depthwise_kernel (paddle_recipes.kernels.depthwise): our compiled depthwise conv equals paddle's
(output and both gradients) over strides, paddings, kernel shapes and a bias; switching a PP-OCR network keeps its
weights and names, its eval forward bit for bit, and its training loss curve to float tolerance; through
build_training with to_static too; jit.save never holds the custom op; a failed build is one line.

Tolerance: the kernel sums the same products in another order (rows of taps; the weight gradient in double), so
outputs differ by a few float32 ulp of the largest term (relative 1e-5 of the tensor's max here). Loss curves:
Adam normalises each gradient by its running magnitude, so an ulp-level gradient difference moves the weights by up
to ~lr x 1e-6 relative; after 4 steps the losses agree to relative 1e-4 (measured: see each test).
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
import pytest
from conftest import SMALL_DET_ARCH, needs_cxx, rel_err, square_loss_grads
from conftest import RandomImages as Pages

from paddle_recipes.kernels import depthwise as dk
from paddle_recipes.config import ConfigError, from_dict
from paddle_recipes.runtime.distributed import DistInfo
from paddle_recipes.train.build import build_training
from paddle_recipes.train.config import TrainingConfig

pytestmark = needs_cxx("cpu_depthwise_kernel")
DET_ARCH = SMALL_DET_ARCH


@pytest.fixture
def kernel_calls(monkeypatch) -> list:
    """One entry per call of the compiled op (the real kernel still computes)."""
    calls = []
    kernel = dk.load_kernel()
    monkeypatch.setattr(dk, "_module", type("Counting", (), {"pr_depthwise_conv2d": staticmethod(
        lambda *a: calls.append(1) or kernel.pr_depthwise_conv2d(*a))})())
    return calls


@pytest.mark.parametrize("shape,kernel,stride,padding", [
    ((2, 5, 9, 13), (3, 3), (1, 1), (1, 1)),
    ((2, 5, 9, 13), (5, 3), (2, 1), (2, 0)),     # non-square kernel, stride and padding
    ((3, 4, 7, 6), (1, 1), (1, 1), (0, 0)),      # the 1x1 branch of a rep block
    ((1, 3, 8, 8), (3, 3), (2, 2), (0, 1)),
    ((2, 6, 10, 11), (5, 5), (2, 2), (2, 2)),    # odd sizes, stride 2: last column / row
    ((2, 4, 3, 40), (3, 3), (1, 1), (3, 3)),     # padding wider than the input's height
])
def test_output_and_both_gradients_equal_paddles(shape, kernel, stride, padding):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(shape).astype("float32")
    w0 = rng.standard_normal((shape[1], 1, *kernel)).astype("float32")
    results, upstream = [], None
    for conv in (lambda x, w: F.conv2d(x, w, stride=list(stride), padding=list(padding), groups=shape[1]),
                 lambda x, w: dk.depthwise_conv2d(x, w, stride, padding)):
        x, w = paddle.to_tensor(x0, stop_gradient=False), paddle.to_tensor(w0, stop_gradient=False)
        y = conv(x, w)
        if upstream is None:
            upstream = rng.standard_normal(y.shape).astype("float32")
        (y * paddle.to_tensor(upstream)).sum().backward()
        results.append((y.numpy(), x.grad.numpy(), w.grad.numpy()))
    (y_ref, dx_ref, dw_ref), (y, dx, dw) = results
    assert y.shape == y_ref.shape
    assert rel_err(y_ref, y) < 1e-5 and rel_err(dx_ref, dx) < 1e-5 and rel_err(dw_ref, dw) < 1e-5


def test_only_exact_cases_are_switched_and_the_layer_keeps_its_parameters():
    net = paddle.nn.Sequential(
        paddle.nn.Conv2D(4, 4, 3, padding=1, groups=4),                  # yes
        paddle.nn.Conv2D(4, 4, [5, 3], stride=2, padding=[2, 1], groups=4, bias_attr=False),  # yes
        paddle.nn.Conv2D(4, 4, 3, padding=2, dilation=2, groups=4),      # dilation
        paddle.nn.Conv2D(4, 8, 3, padding=1, groups=4),                  # depth multiplier 2
        paddle.nn.Conv2D(8, 8, 3, padding=1, groups=2),                  # grouped, not depthwise
        paddle.nn.Conv2D(8, 8, 3, padding="SAME", groups=8),             # string padding
        paddle.nn.Conv2D(8, 8, 3, padding=1, groups=8, padding_mode="reflect"))
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    params = [id(p) for p in net.parameters()]
    assert dk.use_depthwise_kernel(net) == 2
    assert [type(m).__name__ for m in net] == ["DepthwiseKernelConv2D"] * 2 + ["Conv2D"] * 5
    assert [id(p) for p in net.parameters()] == params  # the same Parameter objects: the optimizer keeps them
    assert list(net.state_dict()) == list(before)
    assert dk.use_depthwise_kernel(net) == 0  # idempotent


def test_a_layer_with_bias_trains_as_paddles_and_evaluates_with_paddles_kernel():
    paddle.seed(0)
    ref = paddle.nn.Conv2D(6, 6, 3, stride=2, padding=1, groups=6)
    ours = paddle.nn.Conv2D(6, 6, 3, stride=2, padding=1, groups=6)
    ours.set_state_dict(ref.state_dict())
    dk.use_depthwise_kernel(ours)
    x0 = np.random.default_rng(1).standard_normal((2, 6, 11, 9)).astype("float32")
    grads = square_loss_grads((ref, ours), x0)  # y, dx, dW, db
    for a, b in zip(*grads):
        assert rel_err(a, b) < 1e-5
    ref.eval(), ours.eval()
    x = paddle.to_tensor(x0)
    assert np.array_equal(ref(x).numpy(), ours(x).numpy())  # eval: paddle's kernel itself, bit for bit


def _det_loop(kernel: bool, to_static: bool = False, steps: int = 4, nudge: bool = False):
    """conftest.det_loss_curve of a small PP-OCRv4 det network (PPLCNetV3 rep blocks), the kernel on or off."""
    from conftest import det_loss_curve

    return det_loss_curve(DET_ARCH, steps, nudge, dk.use_depthwise_kernel if kernel else None, to_static)


def test_ppocr_det_network_same_loss_curve_and_same_eval():
    """Every depthwise conv of the network switched. Step 1's loss equals paddle's to 1e-6. Later steps: this
    network is chaotic at float precision (biases before BatchNorm have a true gradient of 0, so theirs is rounding
    noise that Adam scales to full lr-sized steps; hardswish kinks flip): paddle itself, started from weights one
    ulp away, drifts by ~1e-3 in 4 steps. The kernel's curve must stay within 4x that noise floor."""
    off, model_off, _ = _det_loop(False)
    on, model_on, n = _det_loop(True)
    floor, _, _ = _det_loop(False, nudge=True)
    depthwise = [m for m in model_off.sublayers() if isinstance(m, paddle.nn.Conv2D)
                 and m._groups == m._in_channels == m._out_channels > 1]
    assert n == len(depthwise) > 20
    assert on[0] == pytest.approx(off[0], rel=1e-6)  # first step: same weights, same forward up to ulps
    noise = rel_err(off, floor)
    assert 0 < noise and rel_err(off, on) <= 4 * noise + 1e-6, (off, on, floor)
    x = paddle.to_tensor(np.random.default_rng(2).standard_normal([1, 3, 64, 64]).astype("float32"))
    model_on.eval()
    model_off.set_state_dict(model_on.state_dict())  # same weights: the eval forward is paddle's, bit for bit
    model_off.eval()
    assert np.array_equal(model_on(x)["maps"].numpy(), model_off(x)["maps"].numpy())


@pytest.mark.slow  # ~60 s: a to_static trace of the det network
def test_with_to_static_the_program_runs_the_kernel(kernel_calls):
    calls = kernel_calls
    off, _, _ = _det_loop(False, steps=1)
    on, _, n = _det_loop(True, to_static=True, steps=1)
    assert n > 20 and len(calls) == n  # traced once: every switched layer put the op in the program
    assert on[0] == pytest.approx(off[0], rel=1e-6)


def _train(tmp_path, kernel: bool):
    from conftest import det_fit

    return det_fit(tmp_path / str(kernel), DET_ARCH, cpu_depthwise_kernel=kernel)


def test_the_yaml_key_through_build_training(tmp_path, caplog, kernel_calls):
    """The Trainer's training steps call the kernel once per switched layer and step; the first loss is paddle's."""
    calls = kernel_calls
    off, _ = _train(tmp_path, False)
    assert not calls
    with caplog.at_level("INFO", logger="paddle_recipes.train.build"):
        on, model = _train(tmp_path, True)
    switched = sum(isinstance(m, dk.DepthwiseKernelConv2D) for m in model.sublayers())
    assert switched > 20 and len(on) == len(off) == 4 and len(calls) == 4 * switched
    assert on[0] == pytest.approx(off[0], rel=1e-5)
    assert f"Global.cpu_depthwise_kernel: {switched} depthwise conv layers train with our CPU kernel" in caplog.text


def test_a_failed_build_is_one_line_and_leaves_the_model_unchanged(tmp_path, monkeypatch):
    broken = tmp_path / "depthwise_conv2d.cc"
    broken.write_text("#include \"paddle/extension.h\"\nthis is not C++;\n")
    monkeypatch.setattr(dk, "SOURCE", broken)
    monkeypatch.setattr(dk, "_module", None)
    monkeypatch.setenv("PADDLE_RECIPES_CACHE", str(tmp_path / "cache"))
    net = paddle.nn.Sequential(paddle.nn.Conv2D(4, 4, 3, padding=1, groups=4))
    with pytest.raises(dk.KernelBuildError) as exc:
        dk.use_depthwise_kernel(net)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("building depthwise_conv2d.cc in ") and "error" in msg.lower()
    assert type(net[0]) is paddle.nn.Conv2D
    assert sorted(f.name for f in (tmp_path / "cache" / "kernels").iterdir()) == [dk.cache_dir().name + ".lock"]
    cfg = from_dict(TrainingConfig, {"Global": {"output_dir": str(tmp_path / "run"), "cpu_depthwise_kernel": True},
                                     "Train": {"loader": {"batch_size_per_card": 2}}})
    with pytest.raises(ConfigError) as exc:
        build_training(cfg, net, Pages(), step=lambda m, x: {"loss": m(x).mean()}, info=DistInfo())
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("Global.cpu_depthwise_kernel: building depthwise_conv2d.cc")
    assert msg.endswith("install a C++ compiler (g++) or set Global.cpu_depthwise_kernel: false")


def test_the_build_cache_is_keyed_by_source_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("PADDLE_RECIPES_CACHE", str(tmp_path))
    first = dk.cache_dir()
    assert first.parent == tmp_path / "kernels" and first == dk.cache_dir()
    copy = tmp_path / "depthwise_conv2d.cc"
    copy.write_text(dk.SOURCE.read_text() + "\n// changed\n")
    monkeypatch.setattr(dk, "SOURCE", copy)
    assert dk.cache_dir() != first  # another source builds into another folder


@pytest.mark.slow  # ~30 s: two builds
def test_a_build_killed_half_way_leaves_nothing_that_looks_built(tmp_path):
    """kill -9 during the compile: the next process builds the kernel and runs it (the half-built files sit in a
    staging folder that is never taken for the cache and is removed by the next build)."""
    import os
    import signal
    import time

    env = {**os.environ, "PADDLE_RECIPES_CACHE": str(tmp_path), "OMP_NUM_THREADS": "1"}
    code = ("from paddle_recipes.kernels import depthwise as dk; import paddle\n"
            "y = dk.depthwise_conv2d(paddle.ones([1, 2, 4, 4]), paddle.ones([2, 1, 3, 3]), 1, 1)\n"
            "print('center', float(y[0, 0, 1, 1]))\n")
    building = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    kernels = tmp_path / "kernels"
    deadline = time.time() + 60
    while not any(kernels.glob("*.building-*/**/*_setup.py")) and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # inside the compiler
    os.killpg(building.pid, signal.SIGKILL)
    building.wait()
    assert any(kernels.glob("*.building-*")) and not any(p.is_dir() and ".building-" not in p.name
                                                          for p in kernels.iterdir())
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "center 9.0" in done.stdout, done.stdout + done.stderr
    assert not any(kernels.glob("*.building-*"))
    assert "No ccache" not in done.stderr and "Compiling" not in done.stdout + done.stderr  # a clean console
