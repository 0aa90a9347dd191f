"""Tests for paddle_recipes.profiling."""
from __future__ import annotations

import json
import warnings

import numpy as np
import paddle
import pytest

from paddle_recipes.profiling import NanGuard, NonFiniteLossError, empty_cache, profiler_window


def test_nan_guard_skips_counts_and_raises():
    g = NanGuard(max_consecutive=3)
    assert g.check(paddle.to_tensor(1.5), step=0)
    with pytest.warns(RuntimeWarning, match="step 1"):
        assert not g.check(paddle.to_tensor(float("nan")), step=1)
    with pytest.warns(RuntimeWarning, match="step 2"):
        assert not g.check(float("inf"), step=2)
    assert g.check(np.float32(0.25), step=3)          # a finite loss resets the run
    assert (g.skipped, g.consecutive, g.last_bad_step) == (2, 0, 2)
    with pytest.warns(RuntimeWarning):
        g.check(float("nan"), 4)
        g.check(float("-inf"), 5)
    with pytest.raises(NonFiniteLossError, match="3 consecutive steps.*step 6"):
        g.check(paddle.to_tensor([float("nan")]), 6)
    assert g.skipped == 5
    g2 = NanGuard()
    g2.set_state_dict(g.state_dict())
    assert g2.skipped == 5


def test_nan_guard_in_a_training_loop_keeps_weights_finite():
    paddle.seed(0)
    lin = paddle.nn.Linear(4, 1)
    opt = paddle.optimizer.SGD(0.1, parameters=lin.parameters())
    g = NanGuard(max_consecutive=2)
    x = paddle.randn([8, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for step in range(6):
            xb = x * float("nan") if step == 2 else x
            loss = lin(xb).mean()
            if not g.check(loss, step):
                opt.clear_grad()
                continue
            loss.backward()
            opt.step()
            opt.clear_grad()
    assert g.skipped == 1
    assert all(np.isfinite(p.numpy()).all() for p in lin.parameters())


def test_profiler_window_writes_trace(tmp_path):
    a = paddle.randn([32, 32])
    with profiler_window(1, 3, tmp_path / "prof") as prof:
        for _ in range(5):
            a = paddle.tanh(a @ a)
            prof.step()
    traces = prof.traces()
    assert len(traces) == 1
    trace = json.loads(traces[0].read_text())
    names = {e.get("name", "") for e in trace["traceEvents"]}
    assert any("matmul" in n for n in names)


def test_profiler_disabled_is_noop(tmp_path):
    with profiler_window(1, 3, tmp_path / "off", enabled=False) as prof:
        prof.step()
    assert not (tmp_path / "off").exists()
    with pytest.raises(ValueError):
        profiler_window(3, 3, tmp_path)


def test_empty_cache_reports_gpu_use():
    on_gpu = paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0
    assert empty_cache() is on_gpu  # on CPU only gc.collect() runs
