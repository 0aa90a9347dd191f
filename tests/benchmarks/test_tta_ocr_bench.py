"""benchmarks/tta_ocr.py: time-to-accuracy analysis (pure functions) and the --quick pipeline (schema only).

No timing is asserted: the quick run's figures are meaningless; only structure and bookkeeping are checked.
"""
from __future__ import annotations

import json
import sys

import pytest

from conftest import REPO_ROOT, run_python

sys.path.insert(0, str(REPO_ROOT))

from benchmarks.harness import tta as T  # noqa: E402
from benchmarks.harness.tta_worker import parse_methods  # noqa: E402


def run(points, train_s=10.0):
    return {"result": {"points": points, "train_s": train_s, "eval_s": 1.0, "flops_fwd_per_sample": 1e6,
                       "achieved_gflops": 2.0}, "loadavg_before": [0.1]}


def pts(accs, step=10, batch=32, sec=5.0):
    return [{"step": i * step, "samples": i * step * batch, "train_s": i * sec, "acc": a} for i, a in enumerate(accs)]


def test_time_to_first_point_at_target():
    p = pts([0.0, 0.5, 0.91, 0.89, 0.96])
    assert T.time_to(p, 0.9) == 10.0 and T.time_to(p, 0.9, "step") == 20 and T.time_to(p, 0.9, "samples") == 640
    assert T.time_to(p, 0.95) == 20.0 and T.time_to(p, 0.99) is None


def test_summary_medians_ratios_and_misses():
    rows = T.suite_rows(["baseline", "all"])
    base = T.summarize_row(rows[0], [run(pts([0, 0.9, 0.95], sec=s)) for s in (10, 30, 20)], (0.9, 0.95), 100.0)
    fast = T.summarize_row(rows[1], [run(pts([0, 0.95], sec=s)) for s in (4, 5)] + [{"result": None}], (0.9, 0.95),
                           100.0)
    assert base["time_s_to_90"] == 20.0 and base["time_s_to_95"] == 40.0 and base["reached_95"] == 3
    assert fast["failed"] == 1 and fast["time_s_to_90"] == 4.5 and fast["reached_95"] == 2
    assert fast["utilisation"] == pytest.approx(0.02)
    T.add_ratios([base, fast], (0.9, 0.95))
    assert fast["speedup_to_90"] == pytest.approx(20 / 4.5) and base["speedup_to_90"] == 1.0
    assert fast["speedup_to_90_at_least"] is None


def test_lower_bound_when_the_baseline_misses_the_target():
    rows = T.suite_rows(["baseline", "all"])
    base = T.summarize_row(rows[0], [run(pts([0, 0.5, 0.8]), train_s=100.0)], (0.9,), None)
    fast = T.summarize_row(rows[1], [run(pts([0, 0.95], sec=4))], (0.9,), None)
    T.add_ratios([base, fast], (0.9,))
    assert fast["speedup_to_90"] is None and fast["speedup_to_90_at_least"] == pytest.approx(25.0)
    assert base["utilisation"] is None
    md = T.to_markdown({"targets": [0.9, 0.95], "machine": {}, "command": "c", "data": "d", "eval_every_samples": 1,
                        "eval_n": 1, "repeats": 1, "threads": 1, "parallel": 1, "peak_gflops": None, "load": {},
                        "rows": [base, fast]})
    assert ">= x25.00 (baseline missed it)" in md


def test_rows_are_baseline_methods_and_all():
    rows = T.suite_rows()
    names = [r.name for r in rows]
    assert names[0] == "baseline" and names[-1] == "all" and len(set(names)) == len(names)
    b = rows[0].worker_args()
    assert (b["optimizer"], b["lr"], b["warmup_epochs"], b["batch"], b["weight_decay"]) == ("adam", 1e-3, 5, 128, 3e-5)
    for r in rows[1:-1]:  # each method row changes something vs the baseline
        assert r.worker_args() != b, r.name
    with pytest.raises(SystemExit, match="unknown"):
        T.suite_rows(["nope"])


def test_worker_command_carries_methods_and_eval_cadence(tmp_path):
    row = next(r for r in T.suite_rows() if r.name == "all")
    cmd = T.worker_command(row, "data", tmp_path / "o.json", epochs=3, eval_every_samples=3200, eval_n=100,
                           stop_at=0.95, seed=43)
    m = parse_methods(cmd[cmd.index("--methods") + 1])
    assert m["blank_bias"] == "0.8" and m["backbone"] == "DenseConvRec" and m["metric_every"] == "50"
    assert cmd[cmd.index("--eval-every") + 1] == str(3200 // row.worker_args()["batch"])
    assert "--warmup-epochs" not in cmd and cmd[cmd.index("--warmup-steps") + 1] == "100"
    with pytest.raises(SystemExit, match="unknown method"):
        parse_methods("fast=1")


@pytest.mark.slow  # a real --quick run; CI runs -m slow too
def test_quick_pipeline_writes_report_and_plots(tmp_path):
    out = tmp_path / "tta"
    run_python(["benchmarks/tta_ocr.py", "--quick", "--rows", "baseline,all", "--out", out,
                "--work-dir", tmp_path / "work"], timeout=300)
    rep = json.loads((out / "report.json").read_text())
    assert [r["name"] for r in rep["rows"]] == ["baseline", "all"] and rep["quick"] is True
    for r in rep["rows"]:
        assert r["failed"] == 0 and r["repeats"] == 1
        for k in ("time_s_to_90", "steps_to_95", "samples_to_90", "speedup_to_95", "achieved_gflops", "utilisation",
                  "flops_fwd_per_sample", "eval_s"):
            assert k in r
        pts_ = rep["runs"][r["name"]][0]["result"]["points"]
        assert pts_[0]["step"] == 0 and pts_[-1]["step"] == 4
        assert all(a["train_s"] <= b["train_s"] and a["samples"] < b["samples"] for a, b in zip(pts_, pts_[1:]))
    assert rep["runs"]["all"][0]["result"]["methods"]["backbone"] == "DenseConvRec"
    assert rep["runs"]["baseline"][0]["result"]["decodes"] == 4  # metric every step, as PaddleOCR
    assert rep["runs"]["all"][0]["result"]["decodes"] == 0        # every 50 steps: none in 4
    # every row is the real OCR recipe: its summary.json holds the row's settings as the recipe's own keys,
    # and the curve is its eval history
    for name, keys in (("baseline", {"Backbone": "LCNetRec", "blank": 0.0, "metric": 1, "ema": False}),
                       ("all", {"Backbone": "DenseConvRec", "blank": 0.8, "metric": 50, "ema": True})):
        res = rep["runs"][name][0]["result"]
        s = json.loads(open(res["summary"]).read())
        c = s["config"]
        assert (c["Architecture"]["Backbone"]["name"], c["Architecture"]["Head"]["init_blank_prob"],
                c["Global"]["cal_metric_during_train"], c["EMA"]["enable"]) == tuple(keys.values())
        assert [e["global_step"] for e in s["eval_history"]] == [p["step"] for p in res["points"]]
        assert [e["acc"] for e in s["eval_history"]] == [p["acc"] for p in res["points"]]
    for png in ("acc_vs_time.png", "acc_vs_steps.png", "acc_vs_samples.png"):
        assert (out / png).stat().st_size > 0
    assert "| baseline |" in (out / "report.md").read_text()


def test_budget_stops_at_the_first_eval_point_past_it(monkeypatch):
    """--budget-min: training time (eval excluded) past the budget stops the run at that eval point."""
    from benchmarks.harness import tta_worker as W

    clock = {"t": 0.0}
    monkeypatch.setattr(W.time, "perf_counter", lambda: clock["t"])

    class FakeTrainer:  # the Trainer's public surface the clock uses; evaluate() calls on_eval_end as it does
        global_step, samples_seen, stop_training, train_loader, train_step = 0, 0, False, range(100), None

        def evaluate(self):
            clock["t"] += 100.0  # eval takes 100 s: must not count towards the budget
            ev.on_eval_end(self, {"acc": 0.0})
            return {"acc": 0.0}

    tr, ev = FakeTrainer(), W.TtaClock(stop_at=0.0, budget_s=60.0)
    ev.on_fit_start(tr)
    for step in range(1, 101):
        clock["t"] += 1.0  # 1 s of training per step
        tr.global_step = step
        ev.on_step_end(tr)
        if step % 10 == 0:  # Global.eval_batch_step [0, 10]
            tr.evaluate()
        if tr.stop_training:
            break
    assert tr.global_step == 60 and [p["train_s"] for p in ev.points][-2:] == [50.0, 60.0]
    assert ev.points[0] == {"step": 0, "samples": 0, "train_s": 0.0, "eval_s": 100.0, "acc": 0.0}
    assert ev.eval_s == 700.0 and ev.steps_per_epoch == 100


def test_max_steps_and_target_stop_the_run():
    from benchmarks.harness import tta_worker as W

    class T:
        global_step, samples_seen, stop_training = 7, 0, False

    ev, tr = W.TtaClock(max_steps=7), T()
    ev.t0 = ev.t_step = 0.0
    ev.on_step_end(tr)
    assert tr.stop_training
    ev, tr = W.TtaClock(stop_at=0.9), T()
    ev.t0 = ev.t_step = 0.0
    ev.on_eval_end(tr, {"acc": 0.89})
    assert not tr.stop_training
    ev.on_eval_end(tr, {"acc": 0.9})
    assert tr.stop_training


def test_worker_overrides_are_recipe_keys(tmp_path):
    """Every row's settings load into the OCR recipe's typed config (unknown keys would be rejected)."""
    from benchmarks.harness import tta_worker as W
    from paddle_recipes.config import load_config
    from paddle_recipes.tasks.ocr_rec.config import CurriculumSamplerConfig, RecConfig

    args = W.parse_args(["--data", str(tmp_path), "--out", str(tmp_path / "o.json"), "--warmup-epochs", "5",
                         "--ema", "0.999"])
    methods = W.parse_methods("blank_bias=0.8,metric_every=50,curriculum=75:3,backbone=DenseConvRec,scale=1.0,"
                              "context_groups=1")
    cfg = load_config(str(W.BASE_CONFIG), W.recipe_overrides(args, methods, tmp_path / "run"), RecConfig)
    assert cfg.Train.sampler == CurriculumSamplerConfig(warm_steps=75, short_len=3)
    assert (cfg.Architecture.Head.init_blank_prob, cfg.Global.metric_every, cfg.Architecture.Backbone.name,
            cfg.Architecture.Backbone.scale, cfg.Architecture.Neck.context_groups) == (0.8, 50, "DenseConvRec", 1.0, 1)
    assert (cfg.Optimizer.warmup_epochs, cfg.Optimizer.warmup_steps, cfg.EMA.enable, cfg.EMA.decay) == (5, 0, True, 0.999)
    assert cfg.Global.eval_batch_step == [0, 50] and cfg.Global.log_every == 50 and not cfg.AMP.enable
    plain = load_config(str(W.BASE_CONFIG), W.recipe_overrides(args, {}, tmp_path / "run"), RecConfig)
    assert plain.Train.sampler is None and plain.Architecture.Head.init_blank_prob == 0.0 and plain.Global.metric_every == 1


def test_concurrent_runs_never_share_a_slot():
    """A short job that ends early frees its own slot: the next job must not land on a slot still busy
    (pinning by job index would put job 2 on job 0's cores here)."""
    import threading
    import time

    durations = [0.4, 0.05, 0.3, 0.05, 0.2, 0.05]
    spans, lock = [], threading.Lock()

    def run(i, slot):
        t0 = time.monotonic()
        time.sleep(durations[i])
        with lock:
            spans.append((slot, t0, time.monotonic()))
        return i

    assert T.run_on_slots(len(durations), 2, run) == list(range(len(durations)))
    assert {s for s, _, _ in spans} == {0, 1}
    for a in range(len(spans)):
        for b in range(a + 1, len(spans)):
            (sa, a0, a1), (sb, b0, b1) = spans[a], spans[b]
            if a0 < b1 and b0 < a1:  # ran at the same time
                assert sa != sb, (spans[a], spans[b])
