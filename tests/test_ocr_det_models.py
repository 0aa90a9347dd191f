"""Parity of our PaddleOCR det (DB) presets with PaddleOCR's own models (no download).

Fixtures in tests/fixtures/ppocr_det/ come from tests/scripts/make_ppocr_det_fixtures.py, which
builds PaddleOCR's models with PaddleOCR's code from the Architecture section of its YAML:
  <preset>.json          that section + the state_dict manifest (names -> shapes, counts);
  <preset>.outputs.json  float64 outputs for fixed inputs with ``det_value`` weights: eval (batch 1)
                         and train (batch 2, batch statistics) probability maps and the binarize
                         branch's pre-sigmoid logits (strided slices, per-row sums of squares).
Our model runs the same recipe in float64 (tight tolerance) and in float32, whose tolerance is
derived from the numerics on this CPU: 10 x |ours32 - ours64| plus a floor of 1e-6 x max|ref|.
"""
import functools
import json
import sys
from pathlib import Path

import numpy as np
import paddle
import pytest

from paddle_recipes.tasks.ocr_det.models import PPOCR_DET_PRESETS, build_ppocr_det_model

sys.path.insert(0, str(Path(__file__).parent / "scripts"))
from make_ppocr_det_fixtures import output_fixture, set_det_weights  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "ppocr_det"
PRESETS = sorted(PPOCR_DET_PRESETS)
KEYS = ("eval_maps", "eval_logits", "train_maps", "train_logits")


def load_manifest(preset):
    return json.loads((FIXTURES / f"{preset}.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def ours(preset):
    """(float64 fingerprint, float32 fingerprint) of our model built from PaddleOCR's YAML section."""
    arch = load_manifest(preset)["architecture"]
    model = build_ppocr_det_model(arch)
    set_det_weights(model, "float64")
    f64 = output_fixture(model)
    set_det_weights(model, "float32")  # again: the train-mode forward moved the BN statistics
    f32 = output_fixture(model)
    return f64, f32


@pytest.mark.parametrize("preset", PRESETS)
def test_state_dict_equals_paddleocr_manifest(preset):
    m = load_manifest(preset)
    got = {k: list(v.shape) for k, v in build_ppocr_det_model(m["architecture"]).state_dict().items()}
    assert len(got) == m["num_tensors"] == len(m["tensors"])
    assert sorted(set(m["tensors"]) - set(got)) == [] and sorted(set(got) - set(m["tensors"])) == []
    assert {k: s for k, s in got.items() if s != m["tensors"][k]} == {}
    assert sum(int(np.prod(s)) for s in got.values()) == m["num_elements"]


@pytest.mark.parametrize("preset", PRESETS)
def test_preset_constant_equals_paddleocr_yaml(preset):
    arch = {k: v for k, v in load_manifest(preset)["architecture"].items() if v is not None}
    assert arch == PPOCR_DET_PRESETS[preset]


@pytest.mark.parametrize("preset", PRESETS)
def test_outputs_equal_paddleocr_float64(preset):
    ref = json.loads((FIXTURES / f"{preset}.outputs.json").read_text())
    f64, _ = ours(preset)
    for key in KEYS:
        assert f64[key]["shape"] == ref[key]["shape"], key
        for part in ("slice", "rowsumsq"):
            np.testing.assert_allclose(f64[key][part], ref[key][part], rtol=1e-6, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("preset", PRESETS)
def test_outputs_float32_within_numerics_of_paddleocr(preset):
    ref = json.loads((FIXTURES / f"{preset}.outputs.json").read_text())
    f64, f32 = ours(preset)
    for key in KEYS:
        for part in ("slice", "rowsumsq"):
            r, a64, a32 = (np.asarray(d[key][part], dtype="float64") for d in (ref, f64, f32))
            tol = 10 * np.abs(a32 - a64).max() + 1e-6 * np.abs(r).max()
            assert np.abs(a32 - r).max() <= tol, (key, part, np.abs(a32 - r).max(), tol)
            assert np.abs(a32 - a64).max() < 1e-2 * max(np.abs(r).max(), 1.0), (key, part)  # float32 is sane


def test_bad_architecture_is_one_clear_error():
    arch = PPOCR_DET_PRESETS["PP-OCRv5_mobile_det"]
    with pytest.raises(ValueError, match=r"Architecture.Neck \(RSEFPN\): unknown keys \['out_channel'\]"):
        build_ppocr_det_model({**arch, "Neck": {"name": "RSEFPN", "out_channel": 96}})
    with pytest.raises(ValueError, match="set det: true"):
        build_ppocr_det_model({**arch, "Backbone": {"name": "PPLCNetV3", "scale": 0.75}})
    with pytest.raises(ValueError, match="unknown 'DBHeadX'"):
        build_ppocr_det_model({**arch, "Head": {"name": "DBHeadX"}})
    with pytest.raises(ValueError, match="only DB"):
        build_ppocr_det_model({**arch, "algorithm": "EAST"})


@pytest.mark.parametrize("preset", ["PP-OCRv5_mobile_det", "PP-OCRv5_server_det"])
def test_repeat_upsample_for_export_gives_identical_maps(preset):
    from paddle_recipes.tasks.ocr_det.models import use_repeat_upsample

    paddle.seed(1)
    model = build_ppocr_det_model(PPOCR_DET_PRESETS[preset])
    model.eval()
    x = paddle.rand([1, 3, 64, 96])
    with paddle.no_grad():
        ref = model(x)["maps"].numpy()
        assert use_repeat_upsample(model) == (2 if preset.endswith("server_det") else 1)  # neck (+ PFHeadLocal)
        np.testing.assert_array_equal(model(x)["maps"].numpy(), ref)


def test_det_forward_shapes_and_eval_train_contract():
    paddle.seed(0)
    model = build_ppocr_det_model(PPOCR_DET_PRESETS["PP-OCRv5_mobile_det"])
    x = paddle.rand([2, 3, 96, 64])
    model.eval()
    with paddle.no_grad():
        p = model(x)["maps"]
    assert p.shape == [2, 1, 96, 64] and float(p.min()) >= 0 and float(p.max()) <= 1
    model.train()
    maps = model(x)["maps"]
    assert maps.shape == [2, 3, 96, 64]
    b = 1 / (1 + paddle.exp(-50 * (maps[:, 0] - maps[:, 1])))  # binary = step(P - T), k = 50
    np.testing.assert_allclose(maps[:, 2].numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_dense_conv_det_is_a_dense_four_stage_det_backbone():
    """The default recipe's backbone (ours): strides 4..32, the channels it reports, no depthwise conv, and the
    default architecture (+ DBFPN 64 + DBHead) gives full-size maps and exports with identical maps."""
    from paddle_recipes.tasks.ocr_det.backbones import DenseConvDet
    from paddle_recipes.tasks.ocr_det.models import use_repeat_upsample

    paddle.seed(0)
    bb = DenseConvDet(scale=0.5)
    assert bb.out_channels == [16, 24, 32, 48]
    feats = bb(paddle.rand([1, 3, 64, 96]))
    assert [list(f.shape) for f in feats] == [[1, c, 64 // s, 96 // s] for c, s in zip(bb.out_channels, (4, 8, 16, 32))]
    assert all(m._groups == 1 for m in bb.sublayers() if isinstance(m, paddle.nn.Conv2D))
    with pytest.raises(ValueError, match="DenseConvDet: stage_channels and depths need 4 entries"):
        DenseConvDet(depths=(1, 1, 1))
    model = build_ppocr_det_model({"Backbone": {"name": "DenseConvDet"}, "Neck": {"name": "DBFPN", "out_channels": 64},
                                   "Head": {"name": "DBHead", "k": 50}})
    model.eval()
    x = paddle.rand([1, 3, 64, 96])
    with paddle.no_grad():
        ref = model(x)["maps"].numpy()
        assert ref.shape == (1, 1, 64, 96) and use_repeat_upsample(model) == 1
        np.testing.assert_array_equal(model(x)["maps"].numpy(), ref)
