"""Our cls exports in PaddleOCR's own inference: paddleocr 2.x TextClassifier (predict_cls) on the legacy export of
ch_ppocr_mobile_v2.0_cls carrying the released weights, paddleocr 3.x TextLineOrientationClassification on the
PaddleX export of PP-LCNet_x0_25_textline_ori: the same labels and scores as our classify_files. Side venvs as in
tests/paddleocr/test_paddleocr_inference.py (3.x: fails under CI=true without it; 2.x optional: skips)."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import paddle
import pytest

from paddle_recipes.formats.ppocr_inference import write_inference_dir
from paddle_recipes.tasks.ocr_cls.config import ClsInput
from paddle_recipes.tasks.ocr_cls.export_paddleocr import inference_yml
from paddle_recipes.tasks.ocr_cls.models import ClsArchitecture, build_cls_model
from paddle_recipes.tasks.ocr_cls.predict import classify_files
from paddle_recipes.tasks.ocr_cls.transforms import rotate180

from test_ocr_cls_models import ROOT, official_cls, rendered_lines  # noqa: F401
from test_paddleocr_inference import VENV2_PY, paddleocr_python  # noqa: F401


def lines_on_disk(tmp_path):
    import cv2
    files = []
    for i, im in enumerate(rendered_lines(4)):
        for turned in (False, True):
            f = tmp_path / f"l{i}{'r' if turned else ''}.png"
            cv2.imwrite(str(f), rotate180(im) if turned else im)
            files.append(str(f))
    return files


def run_json(python, script, *args):
    proc = subprocess.run([str(python), str(ROOT / "tests/scripts" / script), *map(str, args)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])["results"]


def export(net, spec, out, name, legacy):
    net.eval()
    write_inference_dir(net, [paddle.static.InputSpec([None, *spec.image_shape], "float32", "x")], out,
                        inference_yml(spec, name), legacy=legacy)


@pytest.mark.slow  # ~40 s: paddleocr 2.x starts in a subprocess
def test_paddleocr2_predict_cls_reads_the_legacy_export_of_the_released_weights(official_cls, tmp_path):  # noqa
    if not VENV2_PY.is_file():
        pytest.skip(f"no paddleocr 2.x venv at {VENV2_PY.parent.parent} (optional)")
    _, weights, _ = official_cls
    net = build_cls_model(ClsArchitecture(name="ch_ppocr_mobile_v2.0_cls"), 2)
    net.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
    spec = ClsInput((3, 48, 192), "ppocr", ("0", "180"), 1)
    export(net, spec, tmp_path / "inf", "ch_ppocr_mobile_v2.0_cls", legacy=True)
    files = lines_on_disk(tmp_path)
    ours, bad = classify_files(net, files, spec)
    theirs = run_json(VENV2_PY, "paddleocr2_cls_predict.py", tmp_path / "inf", "3,48,192", "0,180", *files)
    assert not bad and [lab for _, lab, _ in ours] == [lab for lab, _ in theirs] == ["0", "180"] * 4
    assert np.abs(np.array([s for *_, s in ours]) - np.array([s for _, s in theirs])).max() < 1e-5


@pytest.mark.slow  # ~30 s: paddlex starts in a subprocess
def test_paddleocr3_textline_orientation_reads_the_paddlex_export(paddleocr_python, tmp_path):  # noqa: F811
    from paddle_recipes.tasks.ocr_cls.transforms import preprocess
    import cv2

    paddle.seed(0)
    net = build_cls_model(ClsArchitecture(name="PP-LCNet_x0_25_textline_ori"), 2)
    spec = ClsInput((3, 80, 160), "paddlex", ("0_degree", "180_degree"), 1)
    files = lines_on_disk(tmp_path)
    for bn in net.sublayers():  # BN statistics of these lines (one train-mode pass, momentum 0): outputs spread
        if isinstance(bn, paddle.nn.BatchNorm2D):
            bn._momentum = 0.0
    net.train()
    net(paddle.to_tensor(np.stack([preprocess(cv2.imread(f), spec.image_shape, spec.mode) for f in files])))
    export(net, spec, tmp_path / "inf", "PP-LCNet_x0_25_textline_ori", legacy=False)
    ours, bad = classify_files(net, files, spec, batch_size=1)
    theirs = run_json(paddleocr_python, "paddleocr_cls_predict.py", tmp_path / "inf", "PP-LCNet_x0_25_textline_ori",
                      *files)
    scores = np.array([s for *_, s in ours])
    assert not bad and scores.max() - scores.min() > 0.01  # the inputs matter
    assert [lab for _, lab, _ in ours] == [lab for lab, _ in theirs]
    assert np.abs(scores - np.array([s for _, s in theirs])).max() < 1e-5
