"""The OCR recipe speaks PaddleOCR on the way out: eval lines `cur metric` / `best metric` at
Global.eval_batch_step, no train acc without cal_metric_during_train, `--mode export` in PaddleOCR's
inference layout (softmax, free width, Export.model_name / Export.legacy), `--mode predict` with
infer_rec.py's lines and results file, and paddleocr 3.x's TextRecognition on the export agreeing
with `--mode predict` (when the side venv exists; CI builds it)."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT, run_python

RECIPE = "recipes/ocr_rec.py"
SMOKE = "recipes/configs/ocr_rec_smoke.yml"
VENV_PY = Path(os.environ.get("PADDLEOCR_VENV", REPO_ROOT / ".venv-paddleocr")) / "bin" / "python"
NUM = r"[0-9.e+-]+"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """2 optimizer steps of the smoke config, evaluated after each (eval_batch_step [0, 1]), no train metric."""
    tmp = tmp_path_factory.mktemp("ocr_io")
    out = tmp / "out"
    opts = [f"Global.output_dir={out}", f"Synthetic.root={tmp / 'synth'}"]
    proc = run_python([RECIPE, "-c", SMOKE, "-o", *opts, "Global.max_steps=2", "Global.log_every=1",
                       "Global.eval_batch_step=[0,1]", "Global.eval_every_epochs=0",
                       "Global.cal_metric_during_train=false"])
    return {"tmp": tmp, "out": out, "opts": opts, "log": proc.stdout + proc.stderr,
            "images": tmp / "synth" / "val" / "images"}


def test_eval_lines_by_step_and_no_train_metric(trained):
    log = trained["log"]
    cur = re.findall(rf"INFO \S+: cur metric, acc: {NUM}, norm_edit_dis: {NUM}, fps: {NUM}\n", log)
    best = re.findall(rf"INFO \S+: best metric, acc: {NUM}, norm_edit_dis: {NUM}, fps: {NUM}, best_epoch: 1\n", log)
    assert len(cur) == 2 and len(best) == 2, log[-3000:]  # after step 1 and step 2; no extra final eval
    summary = json.loads((trained["out"] / "summary.json").read_text())
    assert [e["global_step"] for e in summary["eval_history"]] == [1, 2]
    assert summary["history"] and all("acc" not in row for row in summary["history"])
    assert (trained["out"] / "checkpoints" / "best").is_dir()


def test_export_writes_paddleocr_layout_with_parity_report(trained):
    proc = run_python([RECIPE, "-c", SMOKE, "--mode", "export", "-o", *trained["opts"],
                       "Export.model_name=PP-OCRv5_mobile_rec"])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    folder = trained["out"] / "inference"
    assert {"inference.json", "inference.pdiparams", "inference.yml", "character_dict.txt",
            "export_report.json"} <= {p.name for p in folder.iterdir()}
    assert json.loads((folder / "export_report.json").read_text())["max_abs_diff"] == report["max_abs_diff"]
    assert report["format"] == "pir-json" and report["max_abs_diff"] < 1e-5 and report["same_decoded_text"]
    assert report["input"]["shape"] == [None, 3, 32, None]
    assert [(c["width"], c["same_decoded_text"]) for c in report["free_width_checks"]] == [(128, True), (256, True)]
    yml = yaml.safe_load((folder / "inference.yml").read_text(encoding="utf-8"))
    assert yml["Global"]["model_name"] == "PP-OCRv5_mobile_rec" and yml["PostProcess"]["name"] == "CTCLabelDecode"
    assert len(yml["PostProcess"]["character_dict"]) == 3062


def test_export_legacy_and_bad_keys(trained):
    legacy = trained["tmp"] / "legacy"
    proc = run_python([RECIPE, "-c", SMOKE, "--mode", "export", "-o", *trained["opts"], "Export.legacy=true",
                       f"Export.out_prefix={legacy / 'inference'}"])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["format"] == "pdmodel" and (legacy / "inference.pdmodel").is_file()
    assert not (legacy / "inference.json").exists() and report["max_abs_diff"] < 1e-5
    assert yaml.safe_load((legacy / "inference.yml").read_text(encoding="utf-8"))["Global"]["model_name"] == \
        "PP-OCRv5_server_rec"  # "" = the default name
    bad = run_python([RECIPE, "-c", SMOKE, "--mode", "export", "-o", *trained["opts"], "Export.model_name=MyRec"],
                     check=False)
    errors = [line for line in bad.stderr.splitlines() if line.startswith("ocr_rec: error:")]
    assert bad.returncode == 2 and len(errors) == 1 and "Export.model_name: model_name 'MyRec'" in errors[0], bad.stderr
    bad = run_python([RECIPE, "-c", SMOKE, "--mode", "export", "-o", *trained["opts"],
                      f"Export.out_prefix={legacy / 'model'}"], check=False)
    assert bad.returncode == 2 and "must end in /inference" in bad.stderr


def _predict_lines(stdout: str) -> list[tuple[str, str, float]]:
    """(image, text, score) from PaddleOCR infer_rec.py's `infer_img: P` + `\\t result: T\\tS` log lines."""
    lines = stdout.splitlines()
    out = []
    for i, line in enumerate(lines):
        if "INFO" in line and "infer_img: " in line:
            text, score = lines[i + 1].split("\t result: ")[1].split("\t")
            out.append((line.split("infer_img: ")[1], text, float(score)))
    return out


@pytest.fixture(scope="module")
def predicted(trained):
    res = trained["tmp"] / "res" / "predicts_rec.txt"
    proc = run_python([RECIPE, "-c", SMOKE, "--mode", "predict", "-o", *trained["opts"],
                       f"Predict.images={trained['images']}", f"Predict.save_res_path={res}"])
    return _predict_lines(proc.stdout), res


def test_predict_prints_infer_rec_lines_and_writes_results_file(predicted):
    rows, res = predicted
    assert len(rows) == 16 and all(0.0 <= s <= 1.0 for _, _, s in rows)
    file_rows = [line.split("\t") for line in res.read_text(encoding="utf-8").splitlines()]
    assert [(f, t, float(s)) for f, t, s in file_rows] == rows


def test_paddleocr_text_recognition_on_the_export_agrees_with_predict(trained, predicted):
    """paddleocr 3.x TextRecognition(model_dir=<--mode export>) == --mode predict (batch 1, PaddleOCR's default)."""
    if not VENV_PY.is_file():
        msg = f"no paddleocr venv at {VENV_PY.parent.parent}: run .ci/setup_paddleocr_venv.sh to enable this test"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    folder = trained["out"] / "inference"
    if not (folder / "inference.json").is_file():
        run_python([RECIPE, "-c", SMOKE, "--mode", "export", "-o", *trained["opts"]])
    model_name = yaml.safe_load((folder / "inference.yml").read_text(encoding="utf-8"))["Global"]["model_name"]
    rows, _ = predicted
    files = [f for f, _, _ in rows]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1", PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK="True")
    proc = subprocess.run([str(VENV_PY), str(REPO_ROOT / "tests" / "scripts" / "paddleocr_rec_predict.py"),
                           str(folder), model_name, "1", *files], capture_output=True, text=True, env=env,
                          cwd=trained["tmp"], timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])["results"]
    assert [t for t, _ in theirs] == [t for _, t, _ in rows]
    # relative: an almost untrained model's scores are small (~1/num_classes)
    rel = max(abs(s - c) / max(c, 1e-12) for (_, s), (_, _, c) in zip(theirs, rows))
    print(f"paddleocr 3.x vs --mode predict on {len(rows)} images: texts equal, max relative score diff {rel:.2e}")
    assert rel < 1e-4
