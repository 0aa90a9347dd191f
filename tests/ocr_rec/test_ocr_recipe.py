"""recipes/ocr_rec.py end to end on the smoke preset: train (1 and 2 processes), eval, predict,
export parity, resume, bad input during training, wrong data path."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from conftest import run_launch, run_python
from paddle_recipes.tasks.ocr_rec.fonts import fonts_for

RECIPE = "recipes/ocr_rec.py"
SMOKE = "recipes/configs/ocr_rec_smoke.yml"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One 1-process smoke training (1 epoch = 4 steps), shared by the eval/predict/export/resume tests."""
    tmp = tmp_path_factory.mktemp("ocr_rec")
    out, synth = tmp / "out", tmp / "synth"
    opts = [f"Global.output_dir={out}", f"Synthetic.root={synth}"]
    proc = run_python([RECIPE, "-c", SMOKE, "-o", *opts, "Global.epochs=1", "Global.log_every=1",
                       "Global.use_visualdl=true"])
    return {"tmp": tmp, "out": out, "synth": synth, "opts": opts, "log": proc.stdout + proc.stderr}


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_smoke_trains_one_process(smoke):
    s = _summary(smoke["out"])
    assert s["world_size"] == 1 and s["global_step"] == 4 and s["epoch"] == 1
    losses = [row["loss"] for row in s["history"]]
    assert len(losses) == 4 and all(math.isfinite(v) and v > 0 for v in losses)
    assert (smoke["out"] / "checkpoints" / "latest").is_file()
    assert (smoke["out"] / "checkpoints" / "best").is_dir()
    log = smoke["log"]
    for key in ("epoch: [1/1]", "loss:", "acc:", "avg_reader_cost:", "avg_batch_cost:", "ips:", "eta:"):
        assert key in log, key
    assert "cur metric, acc: " in log and "norm_edit_dis" in log and "best_epoch: 1" in log
    assert "data summary: Train.dataset: no samples skipped" in log
    assert (smoke["out"] / "vdl" / "scalars.jsonl").is_file()
    # val (train fonts) and heldout (eval fonts only) are scored overall and per font, in the log and summary.json
    ev = s["final_eval"]
    train_fonts, eval_fonts = ({f.name for f in fonts_for(side)} for side in ("train", "eval"))
    assert ev["num_samples"] == 16 and ev["heldout_num_samples"] == 16
    assert set(ev["val"]["per_tag"]) <= train_fonts and set(ev["heldout"]["per_tag"]) <= eval_fonts
    assert sum(v["n"] for v in ev["heldout"]["per_tag"].values()) == 16 and len(ev["heldout"]["per_tag"]) >= 2
    for pre, report in (("", ev["val"]), ("heldout_", ev["heldout"])):  # overall = the fonts' sum, mean = per font
        per = list(report["per_tag"].values())
        assert ev[pre + "acc"] == pytest.approx(sum(v["acc"] * v["n"] for v in per) / ev[pre + "num_samples"], abs=1e-12)
        assert ev[pre + "mean_font_acc"] == pytest.approx(sum(v["acc"] for v in per) / len(per), abs=1e-12)
        for v in per:  # accuracies are whole lines out of n
            assert v["acc"] * v["n"] == pytest.approx(round(v["acc"] * v["n"]), abs=1e-9)
    assert "heldout_acc" in s["eval_history"][-1] and s["main_metric"] == "acc"
    for font in ev["heldout"]["per_tag"]:
        assert f"{font} " in log.split("heldout per font:")[1].splitlines()[0], font
    # both PaddleOCR formats were generated
    assert (smoke["synth"] / "train" / "label.txt").is_file() and (smoke["synth"] / "train" / "lmdb" / "data.mdb").is_file()


def test_eval_mode(smoke):
    proc = run_python([RECIPE, "-c", SMOKE, "--mode", "eval", "-o", *smoke["opts"]])
    metrics = json.loads(proc.stdout.strip().splitlines()[-1])
    assert metrics["num_samples"] == 16 and metrics["heldout"]["num_samples"] == 16
    assert set(metrics["heldout"]["per_tag"]) <= {f.name for f in fonts_for("eval")}
    assert metrics["weights"].endswith("ema.pdparams")
    # the `best` EMA weights are those of training's last eval: eval mode must score them identically
    ev = _summary(smoke["out"])["final_eval"]
    for key in ("acc", "norm_edit_dis", "num_samples", "heldout_acc", "heldout_norm_edit_dis", "heldout_mean_font_acc"):
        assert metrics[key] == ev[key], key
    assert metrics["heldout"]["per_tag"] == ev["heldout"]["per_tag"]


def test_predict_prints_text_and_confidence(smoke):
    folder = smoke["tmp"] / "predict_in"
    folder.mkdir(exist_ok=True)
    for name in ("00000000.jpg", "00000001.jpg"):
        shutil.copy(smoke["synth"] / "val" / "images" / name, folder / name)
    (folder / "broken.png").write_bytes(b"not an image")
    proc = run_python([RECIPE, "-c", SMOKE, "--mode", "predict", "-o", *smoke["opts"], f"Predict.images={folder}"])
    names = [Path(line.split("infer_img: ")[1]).name for line in proc.stdout.splitlines() if "infer_img: " in line]
    assert names == ["00000000.jpg", "00000001.jpg"]  # PaddleOCR infer_rec.py's lines
    rows = [line.split("\t result: ")[1].split("\t") for line in proc.stdout.splitlines() if "\t result: " in line]
    for text, conf in rows:
        assert 0.0 <= float(conf) <= 1.0
    assert "broken.png" in proc.stdout + proc.stderr and "skipped 1" in proc.stdout + proc.stderr
    # a single image works too
    one = run_python([RECIPE, "-c", SMOKE, "--mode", "predict", "-o", *smoke["opts"],
                      f"Predict.images={folder / '00000000.jpg'}"])
    assert sum("\t result: " in line for line in one.stdout.splitlines()) == 1


def test_export_parity_with_paddle_inference(smoke):
    proc = run_python([RECIPE, "-c", SMOKE, "--mode", "export", "-o", *smoke["opts"]])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["max_abs_diff"] <= 1e-4
    assert report["same_decoded_text"] is True
    assert (smoke["out"] / "inference" / "inference.pdiparams").is_file()  # PaddleOCR's layout
    assert (smoke["out"] / "inference" / "character_dict.txt").is_file()


def test_resume_continues_from_checkpoint(smoke):
    """Runs last: continue the 1-epoch run to 2 epochs from output_dir/checkpoints."""
    proc = run_python([RECIPE, "-c", SMOKE, "-o", *smoke["opts"], "Global.epochs=2", "Global.resume=auto",
                       "Global.log_every=1"])
    log = proc.stdout + proc.stderr
    assert "resumed from" in log and "global_step 4" in log
    s = _summary(smoke["out"])
    assert s["resumed_from"] and s["global_step"] == 8 and s["epoch"] == 2
    steps = [row["global_step"] for row in s["history"]]
    assert steps == [5, 6, 7, 8]  # only the second epoch was trained


def _bad_label_data(root: Path, synth: Path) -> Path:
    """The smoke train images as a label-file set, plus one line of each bad-input kind."""
    d = root / "bad_data"
    shutil.copytree(synth / "train" / "images", d / "images")
    lines = (synth / "train" / "label.txt").read_text(encoding="utf-8").splitlines()
    (d / "images" / "corrupt.jpg").write_bytes(b"\xff\xd8\xff garbage")
    lines += ["images/corrupt.jpg\t啊阿",
              "images/does_not_exist.jpg\t啊阿",
              "images/00000001.jpg\t啊☃阿",
              "images/00000002.jpg\t",
              "images/00000003.jpg\t啊阿埃挨哎唉哀皑"]  # 8 chars > max_text_length 6
    (d / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d


def test_two_processes_with_bad_input(smoke):
    """2 GLOO ranks on a label-file set with every bad-input kind: trains, counts, summarizes."""
    d = _bad_label_data(smoke["tmp"], smoke["synth"])
    out = smoke["tmp"] / "out2"
    # batch 8 x 2 ranks: the corrupt image is hit every epoch
    run_launch(RECIPE, ["-c", SMOKE, "-o", f"Global.output_dir={out}", f"Synthetic.root={smoke['synth']}",
                        "Train.dataset.format=label_file", f"Train.dataset.data_dir={d}",
                        f"Train.dataset.label_file_list=[{d / 'train.txt'}]", "Train.loader.batch_size_per_card=8",
                        "Train.loader.num_workers=1", "Global.epochs=1", "Global.log_every=1"],
               nproc=2, log_dir=smoke["tmp"] / "launch2")
    s = _summary(out)
    assert s["world_size"] == 2 and s["global_step"] == 4  # 64 good + 1 corrupt lines / (8 x 2) = 4 steps
    assert all(math.isfinite(row["loss"]) for row in s["history"])
    assert (out / "checkpoints" / "latest").is_file()
    skipped = json.loads((out / "skipped.json").read_text(encoding="utf-8"))["Train.dataset"]
    assert skipped == {"unknown_char": 1, "empty": 1, "too_long": 1, "missing_image": 1, "corrupt_image": 1,
                       "malformed_line": 0, "too_large": 0, "missing_chars": [["☃", 1]]}  # the characters to add to the dict
    assert s["skipped"]["Train.dataset"]["missing_chars"] == [["☃", 1]]
    log = (out / "train.log").read_text(encoding="utf-8")
    assert "data summary: Train.dataset: skipped 5 samples" in log and "characters not in the dict" in log
    assert "'☃'x1" in log
    # held-out-font sums all-reduced over the 2 ranks' shards
    assert s["final_eval"]["heldout_num_samples"] == 16
    assert sum(v["n"] for v in s["final_eval"]["heldout"]["per_tag"].values()) == 16
    for where in ("train.txt:65", "train.txt:66", "train.txt:67", "train.txt:68", "train.txt:69"):
        assert where in log, where


def test_wrong_data_path_is_a_clear_error(tmp_path):
    proc = run_python([RECIPE, "-c", SMOKE, "-o", f"Global.output_dir={tmp_path}", "Train.dataset.format=lmdb",
                       "Train.dataset.data_dir=/no/such/rec_data"], check=False)
    assert proc.returncode != 0
    assert "error: Train.dataset.data_dir: data_dir '/no/such/rec_data' does not exist" in proc.stderr
    assert "Traceback" not in proc.stderr  # a one-line message, not a stack dump
    bad_key = run_python([RECIPE, "-c", SMOKE, "-o", "Global.epoch=3"], check=False)
    assert bad_key.returncode != 0 and "unknown key 'Global.epoch'; did you mean 'epochs'" in bad_key.stderr
    bad_dict = run_python([RECIPE, "-c", SMOKE, "--mode", "eval", "-o", "Global.character_dict_path=/no/dict.txt"],
                          check=False)
    assert bad_dict.returncode != 0 and "character dict file not found: '/no/dict.txt'" in bad_dict.stderr
    # unknown component name: one line listing the valid names (export builds the model before any data)
    bad_name = run_python([RECIPE, "-c", SMOKE, "--mode", "export", "-o", f"Global.output_dir={tmp_path}",
                           "Architecture.Backbone.name=ResNet9"], check=False)
    assert bad_name.returncode == 2 and "Traceback" not in bad_name.stderr
    assert ("ocr_rec: error: Architecture.Backbone.name: unknown name 'ResNet9'; valid names: DenseConvRec, LCNetRec, MobileNetV1Enhance, "
            "PPHGNetV2_B4, PPLCNetV3, PPLCNetV4, ResNet, ResNet34vd (did you mean 'ResNet'?)" in bad_name.stderr)
    bad_loss = run_python([RECIPE, "-c", SMOKE, "-o", "Loss.name=AttnLoss"], check=False)
    assert bad_loss.returncode == 2 and "Loss.name: unknown name 'AttnLoss'; valid names: CTCLoss" in bad_loss.stderr


def test_global_weights_in_train_mode(smoke, tmp_path):
    """Global.weights in --mode train: a missing path is a one-line error; an existing one initialises the model."""
    missing = run_python([RECIPE, "-c", SMOKE, "-o", *smoke["opts"][1:], f"Global.output_dir={tmp_path / 'a'}",
                          "Global.weights=/no/such/model"], check=False)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert ("ocr_rec: error: pretrained weights not found: /no/such/model (tried /no/such/model and "
            "/no/such/model.pdparams)") in missing.stderr
    best = smoke["out"] / "checkpoints" / "best" / "model"  # PaddleOCR-style prefix without .pdparams
    proc = run_python([RECIPE, "-c", SMOKE, "-o", *smoke["opts"][1:], f"Global.output_dir={tmp_path / 'b'}",
                       f"Global.pretrained_model={best}", "Global.epochs=1", "Global.eval_every_epochs=0",
                       "Global.save_every_epochs=0"])
    assert f"pretrained {best}.pdparams: loaded " in proc.stdout + proc.stderr
    s = _summary(tmp_path / "b")
    assert s["global_step"] == 4 and s["final_eval"] == {} and not (tmp_path / "b" / "checkpoints").exists()
