"""Tests for paddle_recipes.train.meters with an injected fake clock (exact figures)."""
from __future__ import annotations

import re

import pytest

from paddle_recipes.train.meters import ScalarWriter, StepTimer, format_eta, peak_memory_mb


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def advance(self, dt):
        self.t += dt


def _run(timer, clock, steps):
    """steps: list of (reader_s, compute_s, samples)."""
    for reader, compute, n in steps:
        clock.advance(reader)
        timer.reader_done()
        clock.advance(compute)
        timer.batch_done(n)


def test_window_and_total_math():
    clock = FakeClock()
    t = StepTimer(total_steps=10, window=2, time_fn=clock, memory_fn=lambda: (123.4, "cuda_max_reserved"))
    _run(t, clock, [(0.5, 0.5, 8), (0.25, 0.75, 16), (0.0, 2.0, 32)])
    s = t.summary()
    # window = last 2 steps: reader 0.25+0 over 2, batch 1+2 over 2, samples 48 over 3 s
    assert s["steps"] == 2
    assert s["reader_cost"] == pytest.approx(0.125)
    assert s["batch_cost"] == pytest.approx(1.5)
    assert s["avg_samples"] == pytest.approx(24.0)
    assert s["ips"] == pytest.approx(16.0)
    assert s["reader_fraction"] == pytest.approx(0.25 / 3.0)
    # eta: 7 remaining steps * 1.5 s
    assert s["eta_seconds"] == pytest.approx(10.5) and s["eta"] == "0:00:10"
    tot = s["total"]
    assert tot["steps"] == 3 and tot["time_s"] == pytest.approx(4.0)
    assert tot["reader_cost"] == pytest.approx(0.75 / 3) and tot["batch_cost"] == pytest.approx(4.0 / 3)
    assert tot["ips"] == pytest.approx(56 / 4.0) and tot["reader_fraction"] == pytest.approx(0.75 / 4.0)
    assert s["max_mem_reserved_mb"] == 123.4 and s["mem_kind"] == "cuda_max_reserved"


def test_start_excludes_outside_time_and_missing_reader_done():
    clock = FakeClock()
    t = StepTimer(window=5, time_fn=clock, memory_fn=lambda: (1.0, "cpu_max_rss"))
    clock.advance(50)      # e.g. evaluation between epochs
    t.reader_start()       # restart: the 50 s are not reader time
    clock.advance(0.1)
    t.reader_done()
    clock.advance(0.9)
    t.batch_done(4)
    clock.advance(2.0)     # a step without reader_done(): reader counted as 0
    t.batch_done(4)
    s = t.summary()
    assert s["total"]["reader_cost"] == pytest.approx(0.05)
    assert s["total"]["time_s"] == pytest.approx(3.0)
    assert s["eta"] == "unknown" and s["eta_seconds"] is None


def test_format_line_paddleocr_style():
    clock = FakeClock()
    t = StepTimer(total_steps=20, window=20, time_fn=clock, memory_fn=lambda: (123.0, "cuda_max_reserved"))
    for _ in range(20):
        clock.advance(0.00123)
        t.reader_done()
        clock.advance(0.1 - 0.00123)
        t.batch_done(64)
    line = t.format_line(1, 10, 20, {"loss": 1.23456, "lr": 0.001, "acc": 0.5, "n": 3})
    assert line == ("epoch: [1/10], global_step: 20, lr: 0.001000, loss: 1.234560, acc: 0.500000, n: 3, "
                    "avg_reader_cost: 0.00123 s, avg_batch_cost: 0.10000 s, avg_samples: 64.0, "
                    "ips: 640.00000 samples/s, eta: 0:00:00, max_mem_reserved: 123 MB")
    # 600 steps left at 0.1 s each
    t.total_steps = 620
    assert "eta: 0:01:00" in t.format_line(1, 10, 20, {})


def test_cpu_memory_is_labelled():
    mb, kind = peak_memory_mb()
    assert kind == "cpu_max_rss" and mb > 10  # this process holds paddle: tens of MB at least
    t = StepTimer(total_steps=None)
    t.reader_done()
    t.batch_done(1)
    line = t.format_line(1, 1, 1, {"loss": 0.5})
    assert re.search(r"cpu_max_rss: \d+ MB$", line) and "max_mem_reserved" not in line
    assert "eta" not in line


def test_format_eta_and_bad_window():
    assert format_eta(3661) == "1:01:01" and format_eta(None) == "unknown"
    with pytest.raises(ValueError):
        StepTimer(window=0)


def test_scalar_writer_jsonl(tmp_path):
    with ScalarWriter(tmp_path / "log", use_visualdl=False) as w:
        w.add_scalar("train/loss", 1.5, 10)
        w.add_scalars({"lr": 0.1, "acc": 0.25}, step=11, prefix="train/")
    rows = ScalarWriter.read(tmp_path / "log" / "scalars.jsonl")
    assert [(r["tag"], r["step"], r["value"]) for r in rows] == [
        ("train/loss", 10, 1.5), ("train/lr", 11, 0.1), ("train/acc", 11, 0.25)]


def test_scalar_writer_visualdl_when_available(tmp_path):
    pytest.importorskip("visualdl")
    w = ScalarWriter(tmp_path / "log")
    assert w.vdl is not None
    w.add_scalar("train/loss", 2.0, 1)
    w.close()
    assert list((tmp_path / "log" / "vdl").glob("vdlrecords.*"))
    assert ScalarWriter.read(w.path)[0]["value"] == 2.0  # the JSONL log is written too
