"""Parity of our PaddleOCR det (DB) presets with PaddleOCR's own models (no download).

Fixtures in tests/fixtures/ppocr_det/ come from tests/scripts/make_ppocr_det_fixtures.py, which
builds PaddleOCR's models with PaddleOCR's code from the Architecture section of its YAML:
  <preset>.json          that section + the state_dict manifest (names -> shapes, counts);
  <preset>.outputs.json  float64 outputs for ``fixed_input`` with ``det_value`` weights: eval (batch 1)
                         and train (batch 2, batch statistics) probability maps and the binarize
                         branch's pre-sigmoid logits (PP-OCRv6: also the train maps of DBHead's
                         auxiliary heads), kept as the rec fixtures keep theirs
                         (``ppocr_parity.summarize`` over image rows).
Our model runs the same recipe in float64 and in float32 and is compared with the rec tests' rules
(tests/ppocr_parity.py): float64 within 1e-6 of the output's RMS scale, float32 within 1e-4 (eval) and
1e-2 (train-mode batch-norm) of it, argmax wherever the top-2 margin is clear.
"""
import json
import sys
from pathlib import Path

import numpy as np
import paddle
import pytest

from paddle_recipes.tasks.ocr_det.models import PPOCR_DET_PRESETS, build_ppocr_det_model
from ppocr_parity import EVAL_RTOL32, TRAIN_RTOL32, assert_matches_reference

sys.path.insert(0, str(Path(__file__).parent.parent / "scripts"))
from make_ppocr_det_fixtures import det_outputs, set_det_weights  # noqa: E402

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ppocr_det"
PRESETS = sorted(PPOCR_DET_PRESETS)
KEYS = ("eval_maps", "eval_logits", "train_maps", "train_logits")


def load_manifest(preset):
    return json.loads((FIXTURES / f"{preset}.json").read_text(encoding="utf-8"))


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
def test_outputs_equal_paddleocr(preset):
    """Same weights + same input -> PaddleOCR's float64 outputs: ours in float64 to 1e-6 of their scale, ours in
    float32 within the float32-rounding bounds of eval and train mode (tests/ppocr_parity.py), on any CPU."""
    ref = json.loads((FIXTURES / f"{preset}.outputs.json").read_text())
    assert ref["dtype"] == "float64"
    model = build_ppocr_det_model(load_manifest(preset)["architecture"])
    outs = {}
    for dtype in ("float64", "float32"):
        set_det_weights(model, dtype)  # for each dtype: the train-mode forward moved the BN statistics
        outs[dtype] = det_outputs(model)
    aux = sorted(k for k in ref if k.startswith("train_aux_maps_"))  # PP-OCRv6's auxiliary heads
    assert aux == sorted(k for k in outs["float64"] if k.startswith("train_aux_maps_"))
    for key in KEYS + tuple(aux):
        rtol32 = TRAIN_RTOL32 if key.startswith("train") else EVAL_RTOL32
        assert_matches_reference(f"{preset}.{key}", outs["float64"][key], outs["float32"][key], ref[key], rtol32)


def test_bad_architecture_is_one_clear_error():
    arch = PPOCR_DET_PRESETS["PP-OCRv5_mobile_det"]
    with pytest.raises(ValueError, match=r"Architecture.Neck: RSEFPN does not take \['out_channel'\] \(it takes "):
        build_ppocr_det_model({**arch, "Neck": {"name": "RSEFPN", "out_channel": 96}})
    with pytest.raises(ValueError, match="set det: true"):
        build_ppocr_det_model({**arch, "Backbone": {"name": "PPLCNetV3", "scale": 0.75}})
    with pytest.raises(ValueError, match=r"Architecture.Head.name: unknown name 'DBHeadX'; valid names: DBHead, "
                                         r"PFHeadLocal \(did you mean 'DBHead'\?\)$"):  # from nn.catalog
        build_ppocr_det_model({**arch, "Head": {"name": "DBHeadX"}})
    with pytest.raises(ValueError, match=r"Architecture.Neck: DBFPN needs out_channels$"):
        build_ppocr_det_model({**arch, "Neck": {"name": "dbfpn"}})
    with pytest.raises(ValueError, match="only DB"):
        build_ppocr_det_model({**arch, "algorithm": "EAST"})


@pytest.mark.parametrize("preset", ["PP-OCRv5_mobile_det", "PP-OCRv5_server_det", "PP-OCRv6_tiny_det"])
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
    from paddle_recipes.nn.dense_conv import DenseConvDet
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


def test_v6_aux_heads_train_with_the_v6_loss():
    """PP-OCRv6 tiny in train mode: the neck's aux maps reach DBHead's aux heads (maps [B, 3, H, W] each, eval returns
    only the probability map), DBLoss with the YAML's DiceFocalLoss + aux weights adds weight x aux loss per level,
    and the gradient reaches every aux head."""
    from make_ppocr_det_fixtures import V6_LOSS
    from paddle_recipes.tasks.ocr_det.losses import DBLoss

    paddle.seed(0)
    model = build_ppocr_det_model(PPOCR_DET_PRESETS["PP-OCRv6_tiny_det"])
    x = paddle.rand([2, 3, 64, 64])
    model.eval()
    with paddle.no_grad():
        assert list(model(x)) == ["maps"] and model(x)["maps"].shape == [2, 1, 64, 64]
    model.train()
    out = model(x)
    assert sorted(out) == ["aux_maps_p2", "aux_maps_p3", "aux_maps_p4", "maps"]
    assert all(v.shape == [2, 3, 64, 64] for v in out.values())
    rng = np.random.RandomState(0)
    labels = [None] + [paddle.to_tensor(a.astype("float32")) for a in (
        rng.uniform(0.3, 0.7, (2, 64, 64)), rng.uniform(size=(2, 64, 64)) < 0.4, rng.uniform(size=(2, 64, 64)) < 0.2,
        rng.uniform(size=(2, 64, 64)) < 0.9)]
    losses = DBLoss(**V6_LOSS)(out, labels)
    main = losses["loss_shrink_maps"] + losses["loss_threshold_maps"] + losses["loss_binary_maps"]
    aux = 0.2 * losses["loss_aux_maps_p4"] + 0.3 * losses["loss_aux_maps_p3"] + 0.4 * losses["loss_aux_maps_p2"]
    np.testing.assert_allclose(float(losses["loss"]), float(main + aux), rtol=1e-6)
    losses["loss"].backward()
    for level in ("p4", "p3", "p2"):
        grad = getattr(model.head, f"aux_binarize_{level}").conv1.weight.grad
        assert grad is not None and float(grad.abs().sum()) > 0
