"""recipes/ocr_det.py end to end on the smoke preset: train on synthetic pages, eval, predict, export parity,
own label files with bad lines, a wrong data path."""
from __future__ import annotations

import json
import math
import shutil

import pytest

from conftest import run_python

RECIPE = "recipes/ocr_det.py"
SMOKE = "recipes/configs/ocr_det_smoke.yml"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ocr_det")
    out, synth = tmp / "out", tmp / "synth"
    opts = [f"Global.output_dir={out}", f"Synthetic.root={synth}"]
    proc = run_python([RECIPE, "-c", SMOKE, "-o", *opts, "Global.epochs=1", "Global.log_every=1"])
    return {"tmp": tmp, "out": out, "synth": synth, "opts": opts, "log": proc.stdout + proc.stderr}


def test_smoke_trains_and_evaluates_val_and_heldout(smoke):
    s = json.loads((smoke["out"] / "summary.json").read_text())
    assert s["global_step"] == 3 and s["main_metric"] == "hmean"  # 12 pages / batch 4
    assert all(math.isfinite(r["loss"]) and r["loss"] > 0 for r in s["history"])
    for key in ("hmean", "precision", "recall", "heldout_hmean"):
        assert 0.0 <= s["final_eval"][key] <= 1.0, key
    log = smoke["log"]
    for key in ("loss_shrink_maps:", "loss_threshold_maps:", "loss_binary_maps:", "cur metric, precision: ",
                "data summary: train: no samples skipped", "12 train images"):
        assert key in log, key
    assert (smoke["synth"] / "heldout" / "label.txt").is_file() and (smoke["synth"] / "train" / "crop_label.txt").is_file()


def test_predict_writes_paddleocr_det_results(smoke):
    images = smoke["synth"] / "val" / "images"
    proc = run_python([RECIPE, "-c", SMOKE, "-o", *smoke["opts"], f"Predict.images={images}", "--mode", "predict"])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["images"] == 4 and report["skipped"] == 0
    lines = (smoke["out"] / "predict" / "det_results.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    for line in lines:
        path, boxes = line.split("\t")
        assert path.endswith(".jpg") and all(len(b["points"]) == 4 for b in json.loads(boxes))
    assert (smoke["out"] / "predict" / "00000000.jpg").is_file()


def test_export_parity_with_paddle_inference(smoke):
    proc = run_python([RECIPE, "-c", SMOKE, "-o", *smoke["opts"], "--mode", "export"])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # probabilities of the fused (re-parameterized) network, oneDNN fp32 vs dygraph. Each of the 28 fused blocks equals
    # its training form to 6e-7 of scale, but this 60-step smoke model amplifies rounding: fused vs un-fused dygraph
    # alone differ by 6.2e-3 here (a wrong graph differs by 1e-1 and more); the boxes must be the same
    assert report["repeat_upsample_layers"] == 1 and report["rep_blocks_fused"] == 28 and report["max_abs_diff"] < 2e-2
    assert report["same_boxes"] and report["model_name"] == "PP-OCRv5_mobile_det"
    for f in ("inference.json", "inference.pdiparams", "inference.yml"):  # PaddleOCR's det inference folder
        assert (smoke["out"] / "inference" / f).is_file()


def test_own_label_files_with_bad_lines_are_counted(smoke):
    val = smoke["synth"] / "val"
    own = smoke["tmp"] / "own"
    shutil.copytree(val, own)
    lines = (own / "label.txt").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].split("\t")[0] + "\t[{\"transcription\": \"x\", \"points\": [[1, 2]"
    (own / "label.txt").write_text("\n".join(lines + ["images/nope.jpg\t" + lines[0].split("\t")[1]]) + "\n",
                                   encoding="utf-8")
    data = [f"Eval.dataset.data_dir={own}", f"Eval.dataset.label_file_list=[{own / 'label.txt'}]"]
    proc = run_python([RECIPE, "-c", SMOKE, "-o", *smoke["opts"], *data, "--mode", "eval"])
    metrics = json.loads(proc.stdout.strip().splitlines()[-1])
    assert metrics["skipped"]["eval"]["malformed_json"] == 1 and metrics["skipped"]["eval"]["missing_image"] == 1
    assert "heldout_hmean" not in metrics  # own eval data: no synthetic heldout set
    bad = run_python([RECIPE, "-c", SMOKE, "-o", *smoke["opts"], f"Eval.dataset.data_dir={own}",
                      f"Eval.dataset.label_file_list=[{own / 'missing.txt'}]", "--mode", "eval"], check=False)
    assert bad.returncode == 2
    err = [line for line in bad.stderr.splitlines() if line.strip()]
    assert "missing.txt is not a file" in err[-1] and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_resume_equals_uninterrupted_run(smoke):
    """1 epoch + resume to 2 epochs gives the weights of 2 uninterrupted epochs (crops follow the sample keys)."""
    import numpy as np

    from paddle_recipes.checkpoint.serialization import load_weights_file  # the restricted unpickler

    straight = smoke["tmp"] / "straight"
    run_python([RECIPE, "-c", SMOKE, "-o", f"Global.output_dir={straight}", f"Synthetic.root={smoke['synth']}",
                "Global.epochs=2"])
    resumed = smoke["tmp"] / "resumed"
    shutil.copytree(smoke["out"] / "checkpoints", resumed / "checkpoints")
    run_python([RECIPE, "-c", SMOKE, "-o", f"Global.output_dir={resumed}", f"Synthetic.root={smoke['synth']}",
                "Global.epochs=2", "Global.resume=auto"])
    a, b = (load_weights_file(d / "checkpoints" / "step_00000006" / "model.pdparams", return_numpy=True)
            for d in (straight, resumed))
    assert sorted(a) == sorted(b)
    assert max(float(np.abs(np.asarray(a[k]) - np.asarray(b[k])).max()) for k in a) == 0.0
