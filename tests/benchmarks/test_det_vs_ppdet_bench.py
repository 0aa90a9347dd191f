"""benchmarks/det_vs_ppdet.py --quick: both sides really train (steps as requested, finite losses), one evaluator
scores both, and the report has its schema. Never asserts a timing."""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ppdet") is None, reason="paddledet not installed")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("det_vs_ppdet")
    out = tmp / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/det_vs_ppdet.py"), "--quick", "--work-dir",
                           str(tmp / "work"), "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "report.md").read_text().count("## (") == 2  # both phases written
    return json.loads((out / "report.json").read_text())


def _finite(xs):
    return bool(xs) and all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


@pytest.mark.slow  # shares the 13 s --quick run; CI runs -m slow too
def test_report_schema(report):
    for key in ("suite", "quick", "command", "machine", "versions", "threads", "load", "data", "setups",
                "differences", "ips", "map"):
        assert key in report, key
    assert report["quick"] is True and report["threads"] == 1
    assert set(report["versions"]) == {"paddle", "ppdet", "pycocotools"}
    assert report["versions"]["ppdet"].startswith("2.")
    assert len(report["load"]["before"]) == 3 and len(report["load"]["after"]) == 3
    assert set(report["setups"]) == {"ips", "map"}
    for phase in ("ips", "map"):
        for k in ("median", "min", "max", "n"):
            assert k in next(iter(report[phase]["summary"].values()))


@pytest.mark.slow  # shares the 13 s --quick run; CI runs -m slow too
def test_ips_both_sides_trained_the_requested_steps(report):
    ips = report["ips"]
    n = ips["warmup"] + ips["steps"]
    assert len(ips["pairs"]) == 1
    pair = ips["pairs"][0]
    for side, script in (("ours", "det_worker.py train"), ("ppdet", "ppdet_driver.py")):
        run, res = pair[side]["run"], pair[side]["result"]
        assert run["returncode"] == 0 and script in run["command"]
        assert res["side"] == side and res["steps"] == n
        assert len(res["step_times_s"]) == n and res["step_times_s"] == sorted(res["step_times_s"])
        assert _finite(res["losses"]) and len(res["losses"]) == n and res["losses_finite"]
        assert pair[side]["ips"] > 0
    assert pair["ratio"] == pytest.approx(pair["ours"]["ips"] / pair["ppdet"]["ips"], rel=1e-3)


@pytest.mark.slow  # shares the 13 s --quick run; CI runs -m slow too
def test_map_both_sides_trained_one_epoch_and_one_evaluator_scored_them(report):
    m = report["map"]
    st = report["setups"]["map"]
    steps = report["data"]["num_train"] // st["batch"]  # --quick: 1 epoch, budget 0 -> epochs
    assert m["budget_s"] == 0.0 and st["epochs"] == 1
    pair = m["pairs"][0]
    for side in ("ours_train", "ppdet_train"):
        res = pair[side]
        assert res["run"]["returncode"] == 0
        assert res["steps"] == steps and res["epochs_done"] == 1.0 and not res["stopped_by_budget"]
        assert _finite(res["losses"]) and res["losses_finite"]
    assert pair["ppdet_train"]["ema_steps"] == steps  # ppdet's EMA really ran every step
    assert pair["eval_run"]["returncode"] == 0
    for name, fmt in (("ours", "ours"), ("ppdet", "ppdet"), ("ppdet_raw_ema", "ppdet")):
        ev = pair[name]
        assert ev["format"] == fmt and ev["num_images"] == report["data"]["num_val"]
        assert 0.0 <= ev["mAP50"] <= 1.0 and 0.0 <= ev["mAP"] <= ev["mAP50"]
        assert ("422 tensors loaded" if fmt == "ppdet" else "tensors loaded") in ev["loaded"]  # strict, full map


class _FakeClock:
    def __init__(self, times):
        self.times = iter(times)

    def __call__(self):
        return next(self.times)


def test_budget_stop_on_both_sides(monkeypatch):
    """The same-budget stop (not exercised by --quick, which trains fixed epochs): both clocks stop at the first
    step whose end crosses the budget, measured from training start."""
    sys.path.insert(0, str(REPO))
    from benchmarks.harness import det_worker, ppdet_driver

    ticks = [100.0, 100.4, 100.9, 101.2, 101.3]  # start, then step ends at 0.4 / 0.9 / 1.2 / 1.3 s
    monkeypatch.setattr(det_worker.time, "perf_counter", _FakeClock(ticks))
    ours, trainer = det_worker.StepClock(budget_s=1.0), type("T", (), {"stop_training": False})()
    ours.on_fit_start(trainer)
    stops = []
    for _ in range(3):
        ours.on_step_end(trainer)
        stops.append(trainer.stop_training)
    assert stops == [False, False, True] and ours.stopped_by_budget
    assert ours.times == pytest.approx([0.4, 0.9, 1.2])

    monkeypatch.setattr(ppdet_driver.time, "perf_counter", _FakeClock(ticks))
    from ppdet.utils.stats import TrainingStats

    stats = TrainingStats(20)
    import paddle

    stats.update({"loss": paddle.to_tensor(0.5)})  # ppdet's TrainingStats takes the model's output tensors
    clock = ppdet_driver.make_clock(max_steps=0, budget_s=1.0, log_every=100)(None)
    clock.on_train_begin({})
    clock.on_step_end({"training_staus": stats})
    clock.on_step_end({"training_staus": stats})
    with pytest.raises(ppdet_driver.StopTraining):
        clock.on_step_end({"training_staus": stats})
    assert clock.stopped_by_budget and clock.losses == [0.5] * 3
    steps_clock = ppdet_driver.make_clock(max_steps=2, budget_s=0.0, log_every=100)(None)
    monkeypatch.setattr(ppdet_driver.time, "perf_counter", _FakeClock(ticks))
    steps_clock.on_train_begin({})
    steps_clock.on_step_end({"training_staus": stats})
    with pytest.raises(ppdet_driver.StopTraining):
        steps_clock.on_step_end({"training_staus": stats})
    assert not steps_clock.stopped_by_budget
