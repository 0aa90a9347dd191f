"""benchmarks/: the harness runs end to end (tiny sizes) and the report schema is complete.

No test asserts a timing: figures on a shared machine are noise; only structure, bookkeeping
(warm-up exclusion, ratios, AMP honesty) and numerical parity of conv-BN fusion are checked.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_python

sys.path.insert(0, str(REPO_ROOT))

from benchmarks.harness import metrics, report  # noqa: E402
from benchmarks.harness.published import EPOCH_SIZES, LABEL  # noqa: E402
from benchmarks.harness.rows import ocr_rows  # noqa: E402
from paddle_recipes.train.meters import StepTimer  # noqa: E402


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def make_history(steps: list[tuple[float, float]], batch: int, accum: int = 1) -> list[dict]:
    """History rows as Trainer._log writes them, from (reader_s, compute_s) per optimizer step."""
    clock = FakeClock()
    timer = StepTimer(window=accum, time_fn=clock, memory_fn=lambda: (100.0, "cpu_max_rss"))
    hist = []
    for i, (reader, compute) in enumerate(steps, 1):
        for _ in range(accum):
            timer.reader_start()
            clock.t += reader / accum
            timer.reader_done()
            clock.t += compute / accum
            timer.batch_done(batch)
        hist.append({"global_step": i, "loss": 1.0 / i, "time": 1000.0 + clock.t, **timer.summary()})
    return hist


def test_window_excludes_warmup_and_counts_all_processes():
    # 2 slow warm-up steps (5 s), then 4 steps of 0.1 s data wait + 0.4 s compute, batch 64, accum 3
    hist = make_history([(0.0, 5.0)] * 2 + [(0.1, 0.4)] * 4, batch=64, accum=3)
    f = metrics.window_figures(hist, warmup=2, world_size=2)
    assert f["timed_steps"] == 4 and f["timed_micro_batches"] == 12
    assert f["ips_per_proc"] == pytest.approx(3 * 64 / 0.5)
    assert f["ips"] == pytest.approx(2 * 3 * 64 / 0.5)
    assert f["reader_fraction"] == pytest.approx(0.2)
    assert f["batch_cost"] == pytest.approx(0.5 / 3)
    assert f["wall_ips"] == pytest.approx(f["ips"])
    with_warm = metrics.window_figures(hist, warmup=0, world_size=2)
    assert with_warm["ips"] < f["ips"] / 2  # the warm-up steps would have dominated
    ep = metrics.projected_epoch_minutes(f["ips"], {"x": 46080})
    assert ep["x"] == pytest.approx(46080 / f["ips"] / 60)
    with pytest.raises(metrics.HistoryError, match="not after warm-up"):
        metrics.window_figures(hist, warmup=6)


def test_time_to_target_uses_train_time_of_first_hit():
    hist = make_history([(0.0, 1.0)] * 6, batch=32)
    evals = [{"step": 2, "value": 0.1, "time": 2000.0}, {"step": 4, "value": 0.6, "time": 2001.0},
             {"step": 6, "value": 0.9, "time": 2002.0}]
    r = metrics.time_to_target(hist, evals, "acc", 0.5)
    assert r["reached"] and r["step"] == 4 and r["train_seconds"] == pytest.approx(4.0) and r["best"] == 0.9
    assert not metrics.time_to_target(hist, evals, "acc", 0.95)["reached"]


def test_amp_only_row_is_not_a_speedup_where_amp_is_off():
    from paddle_recipes.train.amp import Amp, AmpConfig

    amp = Amp(AmpConfig(enable=True))
    if amp.in_effect:
        pytest.skip("AMP is in effect on this device")
    rows = {r.name: r for r in ocr_rows()}
    fast = make_history([(0.0, 0.5)] * 5, batch=64)
    slow = make_history([(0.0, 1.0)] * 5, batch=64)
    recs = {"baseline": {"raw": {"history": slow, "amp": Amp(AmpConfig()).describe(), "world_size": 1}},
            "amp": {"raw": {"history": fast, "amp": amp.describe(), "world_size": 1}},
            "loader": {"raw": {"history": fast, "amp": Amp(AmpConfig()).describe(), "world_size": 1}},
            "all": {"raw": {"history": fast, "amp": amp.describe(), "world_size": 1}}}
    out = [report.train_row(rows[k], recs[k], warmup=1) for k in recs]
    report.apply_speedups(out)
    base, amp_row, loader, all_row = out
    assert base["speedup"] == 1.0
    assert amp_row["measured_ratio"] == pytest.approx(2.0)
    assert amp_row["speedup"] is None and not amp_row["counted_as_speedup"]
    assert "not in effect on CPU" in amp_row["note"]
    assert loader["counted_as_speedup"] and loader["speedup"] == pytest.approx(2.0)
    # "all together" still counts (its other knobs are real) but says its AMP part is not in effect
    assert all_row["counted_as_speedup"] and "not in effect on CPU" in all_row["note"]


def quick_run(tmp_path, suites: str, rows: str) -> tuple[dict, Path]:
    out = tmp_path / "report"
    run_python(["benchmarks/run.py", "--suite", suites, "--quick", "--rows", rows, "--out", out,
                "--work-dir", tmp_path / "work", "--no-progress"], timeout=900)
    return json.loads((out / "report.json").read_text()), out


@pytest.mark.slow  # 21 s; CI runs -m slow too
def test_quick_run_writes_complete_report(tmp_path):
    # 4 processes: OCR baseline / AMP / DDP x2 (shared with the DDP suite's 1x1 and 2x1 points), fusion
    rep, out = quick_run(tmp_path, "ocr,ddp,throughput",
                         "ocr/baseline,ocr/amp,ocr/ddp2,ddp/p1_t1,ddp/p2_t1,throughput/resnet50/infer")
    m = rep["machine"]
    for k in ("paddle_version", "device", "logical_cpus", "cpu_model", "python", "amp_fp16_in_effect"):
        assert k in m, k
    assert rep["published_label"] == LABEL and rep["load"]["before"] and rep["load"]["after"]
    assert set(rep["suites"]) == {"ocr", "ddp", "throughput"}

    train_rows = rep["suites"]["ocr"]["rows"] + rep["suites"]["ddp"]["rows"]
    for r in train_rows:
        for k in report.ROW_FIELDS:
            assert k in r, (r["name"], k)
        assert r["error"] is None, r["error"]
        assert r["threads"] >= 1 and r["loadavg_before"] and r["loadavg_after"]
        f = r["figures"]
        for k in metrics.COLUMNS + ("projected_epoch_min",):
            assert f[k] is not None, (r["name"], k)
        assert set(f["projected_epoch_min"]) == set(EPOCH_SIZES)
        assert math.isfinite(f["ips"]) and f["ips"] > 0 and 0 <= f["reader_fraction"] <= 1
        assert r["series"] and all("loss" in p and "ips" in p for p in r["series"])
        if r["published"]:
            assert r["published"]["label"] == LABEL and r["published"]["quote"]
    ocr = {r["name"]: r for r in rep["suites"]["ocr"]["rows"]}
    assert ocr["ddp2"]["figures"]["world_size"] == 2 and ocr["ddp2"]["nproc"] == 2
    if not m["amp_fp16_in_effect"]:
        a = ocr["amp"]
        assert a["amp_requested"] and not a["amp_in_effect"] and not a["counted_as_speedup"]
        assert a["speedup"] is None and "not in effect on CPU" in a["note"]
    sc = rep["suites"]["ddp"]["scaling"]["p2_t1"]
    assert sc["efficiency"] == pytest.approx(sc["ips_ratio"] / 2)

    (entry,) = rep["suites"]["throughput"]["table"]
    assert entry["conv_bn_pairs"] > 0 and entry["infer_fused_ips"] > 0
    assert entry["parity"]["max_rel_diff"] < 1e-4  # folding BN into conv keeps the outputs
    if entry.get("inference_error") is None:  # exported model in Paddle Inference: same outputs
        assert entry["inference_parity"]["max_rel_diff"] < 1e-4 and entry["paddle_inference_ips"] > 0

    md = (out / "report.md").read_text()
    assert LABEL in md and "45 -> 18" in md
    if not m["amp_fp16_in_effect"]:
        assert "not in effect on CPU" in md
    for png in ("speedups.png", "ips_over_steps.png", "loss_vs_time.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png


@pytest.mark.slow
def test_quick_time_to_accuracy_report(tmp_path):
    rep, out = quick_run(tmp_path, "tta", "tta/*")
    tta = rep["suites"]["tta"]
    assert {r["role"] for r in tta["rows"]} == {"baseline", "speedup"}
    for r in tta["rows"]:
        assert r["error"] is None, r["error"]
        assert r["tta"]["curve"] and r["tta"]["metric"] == tta["metric"] and r["series"]
    assert tta["rows"][1]["nproc"] == 2
    # quick mode sets target 0.0, so both runs reach it at their first evaluation
    assert all(r["tta"]["reached"] for r in tta["rows"]) and tta["time_ratio"] > 0
    assert "Time to accuracy" in (out / "report.md").read_text()
