"""Our OCR export runs in PaddleOCR's own inference and agrees with our predictor.

The real paddleocr 3.x runs in a side venv (.ci/setup_paddleocr_venv.sh, called by .ci/run); without
it the cross-package test is skipped locally and fails under CI=true. paddleocr 2.x is optional
(`.ci/setup_paddleocr_venv.sh 2`, not run by CI): its test skips without that venv.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import cv2
import numpy as np
import paddle
import pytest
import yaml

from paddle_recipes.export import create_predictor, predict
from paddle_recipes.tasks.ocr_rec.charset import CharDict
from paddle_recipes.tasks.ocr_rec.evaluate import recognize_files
from paddle_recipes.tasks.ocr_rec.export_paddleocr import (SoftmaxOutput, export_rec_for_paddleocr, model_name_for,
                                                           paddlex_rec_config, resolve_model_name)
from paddle_recipes.tasks.ocr_rec.models import build_rec_model
from paddle_recipes.tasks.ocr_rec.transforms import decode_image, infer_widths, pad_batch, resize_norm_infer
from paddle_recipes.nn.reparam import fused_copy
from test_ppocr_import import V5, needs_v5, v5_rec  # noqa: F401 (fixture)

REPO = Path(__file__).resolve().parents[2]
VENV_PY = Path(os.environ.get("PADDLEOCR_VENV", REPO / ".venv-paddleocr")) / "bin" / "python"
VENV2_PY = Path(os.environ.get("PADDLEOCR2_VENV", REPO / ".venv-paddleocr2")) / "bin" / "python"
IMAGE_SHAPE = [3, 32, 128]
CHARS = list("0123456789abcdefghijklmnopqrstuvwxyz") + ["中", "文", "字"]
ARCH = {"Backbone": {"name": "LCNetRec", "scale": 0.25}, "Neck": {"name": "Conv", "hidden_size": 32},
        "Head": {"name": "CTCHead"}}
# (height, width) of the 20 test lines: training ratio 4 (32x128), narrower, wider (canvas grows
# beyond W), and one past PaddleX's 3200 px cap (squashed).
SIZES = [(32, 128), (32, 60), (40, 90), (24, 200), (32, 256), (48, 500), (28, 300), (64, 180), (32, 320),
         (36, 700), (20, 2400), (32, 100), (30, 420), (44, 150), (32, 640), (26, 96), (50, 400), (32, 128),
         (38, 260), (32, 1000)]


def _lines(tmp_path: Path) -> list[str]:
    """Colored text lines (so a BGR/RGB mix-up changes the input) of the sizes above."""
    rng = np.random.default_rng(0)
    files = []
    for i, (h, w) in enumerate(SIZES):
        bg = rng.integers(0, 256, 3)
        img = np.clip(bg + rng.normal(0, 25, (h, w, 3)), 0, 255).astype(np.uint8)
        text = "".join(rng.choice(list("ab12xyz789"), size=max(2, w // max(h, 1))))
        cv2.putText(img, text, (2, int(h * 0.75)), cv2.FONT_HERSHEY_SIMPLEX, h / 40.0,
                    tuple(int(v) for v in rng.integers(0, 256, 3)), max(1, h // 16))
        f = tmp_path / f"line_{i:02d}.png"
        cv2.imwrite(str(f), img)
        files.append(str(f))
    return files


def _model(files: list[str]):
    """A small recognizer whose outputs depend on the image: BN statistics taken from the test lines
    (one train-mode pass with momentum 0), head weights scaled so logits spread over several units.
    Untrained, so texts are arbitrary, but non-empty and different per image."""
    paddle.seed(0)
    model = build_rec_model(ARCH, len(CHARS) + 1)
    bns = [m for m in model.sublayers() if isinstance(m, paddle.nn.BatchNorm2D)]
    for bn in bns:
        bn._momentum = 0.0
    imgs = [resize_norm_infer(decode_image(Path(f).read_bytes()), IMAGE_SHAPE) for f in files]
    model.train()
    with paddle.no_grad():
        model(paddle.to_tensor(pad_batch([a[:, :, :640] for a in imgs])))
        for bn in bns:
            bn._momentum = 0.9
        model.head.fc.weight.set_value(model.head.fc.weight.numpy() * 3.0)
    model.eval()
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ppocr")
    files = _lines(tmp)
    model = _model(files)
    report = export_rec_for_paddleocr(model, CHARS, IMAGE_SHAPE, tmp / "inference", model_name="PP-OCRv5_server_rec")
    assert not any(m.training for m in model.sublayers(include_self=True))  # still in eval mode
    return model, files, report, tmp


def test_infer_widths_follow_paddlex_rule():
    # canvas = int(H * max(W/H, w/h)); resized = min(ceil(H*w/h), canvas); > 3200 -> squashed to 3200
    assert infer_widths(32, 64, IMAGE_SHAPE) == (64, 128)        # narrow: padded up to W
    assert infer_widths(30, 420, IMAGE_SHAPE) == (448, 448)      # wide: canvas grows, ratio kept
    assert infer_widths(7, 100, IMAGE_SHAPE) == (457, 457)       # int(457.14) wins over ceil (458)
    assert infer_widths(20, 2400, IMAGE_SHAPE) == (3200, 3200)   # 3840 > 3200: squashed
    x = resize_norm_infer(np.full((32, 64, 3), 255, np.uint8), IMAGE_SHAPE)
    assert x.shape == (3, 32, 128) and np.all(x[:, :, :64] == 1.0) and np.all(x[:, :, 64:] == 0.0)


def test_decode_image_is_bgr():
    img = np.zeros((4, 4, 3), np.uint8)
    img[..., 2] = 200  # red in OpenCV's BGR order
    ok, buf = cv2.imencode(".png", img)
    assert ok
    dec = decode_image(buf.tobytes())
    assert dec[0, 0].tolist() == [0, 0, 200]  # channel 0 = blue, as PaddleOCR's DecodeImage(img_mode=BGR)


def test_inference_yml_layout(exported):
    _, _, report, tmp = exported
    out = tmp / "inference"
    assert sorted(report["files"]) == ["character_dict.txt", "inference.json", "inference.pdiparams",
                                       "inference.yml"]
    cfg = yaml.safe_load((out / "inference.yml").read_text(encoding="utf-8"))
    assert cfg["Global"]["model_name"] == "PP-OCRv5_server_rec"
    ops = [next(iter(op)) for op in cfg["PreProcess"]["transform_ops"]]
    assert ops == ["DecodeImage", "MultiLabelEncode", "RecResizeImg", "KeepKeys"]
    assert cfg["PreProcess"]["transform_ops"][0]["DecodeImage"]["img_mode"] == "BGR"
    assert cfg["PreProcess"]["transform_ops"][2]["RecResizeImg"]["image_shape"] == IMAGE_SHAPE
    assert cfg["PostProcess"] == {"name": "CTCLabelDecode", "character_dict": CHARS}
    assert CharDict.from_file(out / "character_dict.txt").chars == CHARS
    for chk in report["checks"]:  # Paddle Inference == dygraph softmax (to float32 conv accumulation) at W and 2W
        assert chk["max_abs_diff"] < 1e-4 and chk["same_decoded_text"]
    assert [c["output_shape"][1] for c in report["checks"]] == [32, 64]  # T follows the free width


def test_bad_model_name_and_channels_are_errors():
    with pytest.raises(ValueError, match="not a text-recognition model paddlex"):
        paddlex_rec_config(CHARS, IMAGE_SHAPE, model_name="MyRec")
    with pytest.raises(ValueError, match="C=3"):
        paddlex_rec_config(CHARS, [1, 32, 128])
    assert resolve_model_name("") == "PP-OCRv5_server_rec"
    assert resolve_model_name("PP-OCRv5_mobile_rec") == "PP-OCRv5_mobile_rec"
    assert paddlex_rec_config(CHARS, IMAGE_SHAPE, "")["Global"]["model_name"] == "PP-OCRv5_server_rec"


def test_model_name_follows_the_exported_network():
    """inference.yml's Global.model_name: PaddleOCR's model of the exported network when not given, a given name must
    name that network; networks PaddleX has no name for (our presets, the ResNet CRNN) take any accepted name."""
    assert model_name_for("PPLCNetV3") == "PP-OCRv5_mobile_rec"
    assert model_name_for("PPHGNetV2_B4") == "PP-OCRv5_server_rec"
    assert model_name_for("PPLCNetV4") == "PP-OCRv6_medium_rec"  # PP-OCRv6_base_rec is no PaddleX name
    assert model_name_for("PPLCNetV4", "PP-OCRv6_tiny_rec") == "PP-OCRv6_tiny_rec"
    assert model_name_for("LCNetRec") == model_name_for("ResNet") == "PP-OCRv5_server_rec"
    for name in ("PP-OCRv4_mobile_rec", "en_PP-OCRv4_mobile_rec", "latin_PP-OCRv5_mobile_rec"):
        assert model_name_for("PPLCNetV3", name) == name
    assert model_name_for("LCNetRec", "PP-OCRv5_mobile_rec") == "PP-OCRv5_mobile_rec"
    with pytest.raises(ValueError, match=r"'PP-OCRv5_server_rec' is PaddleX's name of a PPHGNetV2_B4 network, but "
                                         r"this export is a PPLCNetV3; use '' \(= 'PP-OCRv5_mobile_rec'\)"):
        model_name_for("PPLCNetV3", "PP-OCRv5_server_rec")
    with pytest.raises(ValueError, match="PPLCNetV3 network, but this export is a PPHGNetV2_B4"):
        model_name_for("PPHGNetV2_B4", "PP-OCRv5_mobile_rec")
    with pytest.raises(ValueError, match="not a text-recognition model paddlex"):
        model_name_for("LCNetRec", "MyRec")


def test_legacy_pdmodel_matches_dygraph(exported, tmp_path):
    """legacy=True writes inference.pdmodel (paddleocr 2.x format); Paddle Inference loads it and gives
    the dygraph softmax on real lines of several widths."""
    model, files, _, _ = exported
    model.train()  # the export runs in eval mode and hands the model back in the mode it came in
    report = export_rec_for_paddleocr(model, CHARS, IMAGE_SHAPE, tmp_path / "legacy", legacy=True)
    assert model.training and all(m.training for m in model.sublayers())
    model.eval()
    assert report["format"] == "pdmodel"
    assert {"inference.pdmodel", "inference.pdiparams", "inference.yml"} <= set(report["files"])
    assert "inference.json" not in report["files"]
    pred = create_predictor(tmp_path / "legacy" / "inference", device="cpu", threads=1)
    net = SoftmaxOutput(model)
    for group in (files[:4], files[4:8], files[8:12]):
        x = pad_batch([resize_norm_infer(decode_image(Path(f).read_bytes()), IMAGE_SHAPE) for f in group])
        (got,) = predict(pred, {"x": x})
        with paddle.no_grad():
            ref = net(paddle.to_tensor(x)).numpy()
        assert got.shape == ref.shape and np.abs(got - ref).max() < 1e-4


def test_legacy_export_of_a_bilstm_model(tmp_path):
    """nn.LSTM keeps a never-allocated ``_dropout_state`` buffer that paddle 3.3's legacy exporter chokes on;
    the export works on a copy, and the .pdmodel gives the dygraph softmax at W and 2W."""
    paddle.seed(0)
    model = build_rec_model({"Backbone": {"name": "LCNetRec", "scale": 0.25},
                             "Neck": {"name": "BiLSTM", "hidden_size": 8}, "Head": {"name": "CTCHead"}}, len(CHARS) + 1)
    model.eval()
    report = export_rec_for_paddleocr(model, CHARS, IMAGE_SHAPE, tmp_path / "lstm", legacy=True)
    assert report["format"] == "pdmodel" and "inference.pdmodel" in report["files"]
    assert [c["output_shape"][1] for c in report["checks"]] == [32, 64]
    assert all(c["max_abs_diff"] < 1e-4 and c["same_decoded_text"] for c in report["checks"])
    assert not model.neck.lstm._dropout_state._is_initialized()  # the caller's model is untouched


@pytest.fixture
def paddleocr_python():
    """The side venv's python; skip without it (local dev), fail without it under CI=true."""
    if not VENV_PY.is_file():
        msg = (f"no paddleocr venv at {VENV_PY.parent.parent}: run .ci/setup_paddleocr_venv.sh "
               "(paddleocr==3.7.0 paddlex==3.7.2 paddlepaddle==3.3.1) to enable this test")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    return VENV_PY


def test_paddleocr3_text_recognition_agrees_with_our_predictor(paddleocr_python, exported):
    """paddleocr 3.x TextRecognition(model_name=..., model_dir=<our export>) == recognize_files on 20 lines of widths
    60..2400 px (texts equal, scores within 1e-5: Paddle Inference vs dygraph float32, measured 8.9e-7 here),
    same batching (4 per batch, padded to the widest)."""
    model, files, report, tmp = exported
    assert_paddleocr3_agrees(paddleocr_python, model, files, CharDict(CHARS), IMAGE_SHAPE, report, tmp)


def assert_paddleocr3_agrees(python: Path, model, files: list, charset, image_shape, report: dict, cwd: Path) -> None:
    """paddleocr 3.x TextRecognition(model_name=report's, model_dir=report's) on ``files`` (batches of 4) reads
    the texts our recognize_files reads (non-empty and varied enough to mean something), scores within 1e-5."""
    ours, bad = recognize_files(model, files, charset, image_shape, batch_size=4)
    assert not bad
    texts = [t for _, t, _ in ours]
    print("our texts:", texts)
    n = len(files)  # a meaningful comparison: 20 files -> >= 18 read, >= 15 distinct
    assert sum(1 for t in texts if t) >= n - n // 10 and len(set(texts)) >= 3 * n // 4, texts
    theirs = _run_json(python, "paddleocr_rec_predict.py", [report["out_dir"], report["model_name"], 4, *files], cwd)
    assert [t for t, _ in theirs] == texts
    diffs = [abs(s - c) for (_, s), (_, _, c) in zip(theirs, ours)]
    print(f"paddleocr 3.x ({report['model_name']}) vs ours on {len(files)} lines: texts equal "
          f"{len(files)}/{len(files)}, max score diff {max(diffs):.2e}")
    assert max(diffs) < 1e-5  # Paddle Inference vs dygraph, both float32 (README's bound)


@needs_v5
def test_paddleocr3_reads_our_export_of_the_released_v5_rec(paddleocr_python, v5_rec, tmp_path):
    """PaddleX's released PP-OCRv5_mobile_rec folder imported (tests/paddleocr/test_ppocr_import.py), fused as --mode export
    writes it and exported: paddleocr 3.7's TextRecognition(model_name='PP-OCRv5_mobile_rec', model_dir=<ours>)
    reads 12 real photo crops (tests/fixtures/real_crops) as our recognize_files does, scores within 1e-5
    (measured 3.3e-6; ~12 s, most of it paddleocr's start and the export)."""
    model = fused_copy(v5_rec[0])[0]
    charset = CharDict.from_file(V5 / "PP-OCRv5_mobile_rec", use_space_char=True)  # inference.yml's dict
    report = export_rec_for_paddleocr(model, charset.chars, [3, 48, 320], tmp_path / "v5",
                                      model_name="PP-OCRv5_mobile_rec", check_widths=(0,), check_batch=1)
    assert report["checks"][0]["output_shape"][2] == 18385
    files = sorted(str(f) for f in (REPO / "tests" / "fixtures" / "real_crops" / "images").glob("*.jpg"))[::25][:12]
    assert_paddleocr3_agrees(python=paddleocr_python, model=model, files=files, charset=charset,
                             image_shape=[3, 48, 320], report=report, cwd=tmp_path)


def _run_json(python: Path, script: str, args: list, cwd: Path) -> list:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1", PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK="True")
    proc = subprocess.run([str(python), str(REPO / "tests" / "scripts" / script), *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])["results"]


def test_paddleocr2_predict_rec_reads_legacy_export(exported, tmp_path):
    """paddleocr 2.x TextRecognizer (tools/infer/predict_rec.py) on our legacy=True export == recognize_files
    with batch 1 (2.x shares one canvas per batch of aspect-sorted lines; with 1 line per batch that is
    PaddleX's per-image rule). The line past 3200 px is left out: 2.x has no width cap."""
    if not VENV2_PY.is_file():
        pytest.skip(f"no paddleocr 2.x venv at {VENV2_PY.parent.parent} (optional): "
                    ".ci/setup_paddleocr_venv.sh 2 builds it (paddleocr==2.10.0 paddlepaddle==3.3.1)")
    model, files, _, _ = exported
    files = [f for f, (h, w) in zip(files, SIZES) if IMAGE_SHAPE[1] * w / h <= 3200]
    report = export_rec_for_paddleocr(model, CHARS, IMAGE_SHAPE, tmp_path / "legacy", legacy=True)
    ours, _ = recognize_files(model, files, CharDict(CHARS), IMAGE_SHAPE, batch_size=1)
    shape = ",".join(str(v) for v in IMAGE_SHAPE)
    theirs = _run_json(VENV2_PY, "paddleocr2_rec_predict.py",
                       [report["out_dir"], Path(report["out_dir"]) / "character_dict.txt", shape, 1, *files], tmp_path)
    assert [t for t, _ in theirs] == [t for _, t, _ in ours]
    assert max(abs(s - c) for (_, s), (_, _, c) in zip(theirs, ours)) < 1e-4
