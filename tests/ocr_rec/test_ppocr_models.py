"""Parity of our PaddleOCR recognition presets with PaddleOCR's own models (no download).

Fixtures in tests/fixtures/ppocr_manifests/ were produced by building PaddleOCR's models with
PaddleOCR's code (scratch run, not part of the repo):
  <preset>.json          state_dict names -> shapes (count, element total) of the published model;
  <preset>.outputs.json  PaddleOCR's outputs for a fixed input with the deterministic weights of
                         ``det_value`` (tests/ppocr_parity.py) (eval: CTC logits + softmax; train with dropout off:
                         CTC logits and NRTR logits for fixed labels).
"""
import functools
import json
from pathlib import Path

import numpy as np
import paddle
import pytest

from paddle_recipes.tasks.ocr_rec.ppocr_losses import MultiLoss
from ppocr_parity import (EVAL_RTOL32, TRAIN_RTOL32, assert_matches_float32_reference, assert_matches_reference,
                          det_value, fixed_input)
from paddle_recipes.tasks.ocr_rec.ppocr_models import build_ppocr_rec_model

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ppocr_manifests"
PRESETS = ["PP-OCRv4_mobile_rec", "PP-OCRv5_mobile_rec", "PP-OCRv5_server_rec", "rec_r34_vd_none_bilstm_ctc"]
V6_PRESETS = ["PP-OCRv6_tiny_rec", "PP-OCRv6_small_rec", "PP-OCRv6_medium_rec", "PP-OCRv6_base_rec"]


def load_manifest(preset):
    return json.loads((FIXTURES / f"{preset}.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)  # one model per preset for both tests (names/shapes don't change)
def build(preset):
    m = load_manifest(preset)
    return m, build_ppocr_rec_model(m["architecture"], m["num_classes_ctc"])


@pytest.mark.parametrize("preset", PRESETS + V6_PRESETS)
def test_state_dict_equals_paddleocr_manifest(preset):
    m, model = build(preset)
    ours = {k: list(v.shape) for k, v in model.state_dict().items()}
    assert len(ours) == m["num_tensors"] == len(m["tensors"])
    assert sorted(set(m["tensors"]) - set(ours)) == []
    assert sorted(set(ours) - set(m["tensors"])) == []
    assert {k: s for k, s in ours.items() if s != m["tensors"][k]} == {}
    assert list(ours) == list(m["tensors"])  # same order as PaddleOCR's state_dict
    assert sum(int(np.prod(s)) for s in ours.values()) == m["num_elements"]


def _with_det_weights(model, dtype):
    """The model cast to ``dtype`` with the deterministic parity weights (positional tables kept)."""
    if dtype != "float32":  # (.to() breaks an LSTM's flattened weight buffer, so only when needed)
        model.to(dtype=dtype)
    model.set_state_dict({k: (v if k.endswith(".pe") else paddle.to_tensor(det_value(k, v.shape, dtype)))
                          for k, v in model.state_dict().items()})
    return model


def _run(model, x, targets):
    """eval (probs, logits) and, with targets, train-mode (dropout off) MultiHead outputs + MultiLoss."""
    model.eval()
    with paddle.no_grad():
        model.set_eval_output("logits")
        logits = model(x).numpy()
        model.set_eval_output("probs")
        res = {"eval_probs": model(x).numpy(), "eval_logits": logits}
        if targets is None:
            return res
        model.train()
        for layer in model.sublayers():  # dropout off, batch-norm in train mode (batch statistics)
            if isinstance(layer, paddle.nn.Dropout):
                layer.eval()
        out = model(x, targets)
        loss = MultiLoss()(out, targets[0], targets[2], targets[1])
    res.update(train_ctc=out["ctc"].numpy(), train_gtc=out["gtc"].numpy(),
               train_loss={k: float(loss[k]) for k in ("CTCLoss", "NRTRLoss", "loss")})
    return res


# the default suite keeps one model of each family's block types; the larger presets run with -m slow (CI runs both)
SLOW_PARITY = {"PP-OCRv4_mobile_rec", "PP-OCRv5_server_rec", "PP-OCRv6_medium_rec", "PP-OCRv6_base_rec"}


@pytest.mark.parametrize("preset", [pytest.param(p, marks=pytest.mark.slow) if p in SLOW_PARITY else p
                                    for p in PRESETS + V6_PRESETS])
def test_outputs_equal_paddleocr(preset):
    """Same weights + same input -> PaddleOCR's outputs, recorded in float64 with PaddleOCR's own code
    (tests/scripts/make_ppocr_rec_fixtures.py). Ours in float64 must equal them to 1e-6 of their scale;
    ours in float32 within float32-rounding bounds for eval and train mode (tests/ppocr_parity.py), so
    the test holds on any CPU, including train-mode batch-norm that amplifies float32 differences."""
    ref = json.loads((FIXTURES / f"{preset}.outputs.json").read_text())
    m = load_manifest(preset)
    outs = {}
    for dtype in ("float64", "float32") if ref["dtype"] == "float64" else ("float32",):
        model = _with_det_weights(build_ppocr_rec_model(m["architecture"], m["num_classes_ctc"]), dtype)
        targets = None
        if "train_ctc" in ref:
            targets = [paddle.to_tensor(np.array(ref[k], dtype="int64"))
                       for k in ("train_label_ctc", "train_label_gtc", "train_length")]
        outs[dtype] = _run(model, paddle.to_tensor(fixed_input(ref["input_shape"], dtype)), targets)
    if ref["dtype"] == "float32":  # eval-only reference (see FLOAT32_ONLY in the fixture script)
        for key in ("eval_probs", "eval_logits"):
            assert_matches_float32_reference(f"{preset}.{key}", outs["float32"][key], ref[key])
        return
    for key in ("eval_probs", "eval_logits", "train_ctc", "train_gtc"):
        if key in ref:
            rtol32 = TRAIN_RTOL32 if key.startswith("train") else EVAL_RTOL32
            assert_matches_reference(f"{preset}.{key}", outs["float64"][key], outs["float32"][key], ref[key], rtol32)
    if "train_loss" in ref:  # PaddleOCR's MultiLoss (CTCLoss + NRTRLoss, label smoothing) on the same outputs
        for key, want in ref["train_loss"].items():  # 1e-5: PaddleOCR's smoothing targets are float32 one-hots
            np.testing.assert_allclose(outs["float64"]["train_loss"][key], want, rtol=1e-5)
            np.testing.assert_allclose(outs["float32"]["train_loss"][key], want, rtol=1e-3)  # from train-mode logits


def test_unknown_architecture_keys_are_rejected():
    with pytest.raises(ValueError, match=r"Architecture\.Backbone: PPLCNetV3 does not take \['scal'\]"):
        build_ppocr_rec_model({"Backbone": {"name": "PPLCNetV3", "scal": 0.95},
                               "Head": {"name": "CTCHead"}}, 10)
    with pytest.raises(ValueError, match=r"Architecture.Backbone.name: unknown name 'NoSuchNet'; valid names: "):
        build_ppocr_rec_model({"Backbone": {"name": "NoSuchNet"}, "Head": {"name": "CTCHead"}}, 10)


def test_build_rec_model_dispatches_to_paddleocr_networks():
    from paddle_recipes.tasks.ocr_rec.models import RecModel, build_rec_model
    from paddle_recipes.tasks.ocr_rec.ppocr_models import PPOCR_CRNN_R34_ARCH, PPOCRRecModel

    arch = {**PPOCR_CRNN_R34_ARCH, "Backbone": {"name": "resnet", "layers": 34}}  # case-insensitive
    assert isinstance(build_rec_model(arch, 37), PPOCRRecModel)
    own = build_rec_model({"Backbone": {"name": "LCNetRec"}, "Neck": {"name": "Conv"}, "Head": {"name": "CTCHead"}}, 37)
    assert isinstance(own, RecModel)


@pytest.mark.parametrize("preset", ["PP-OCRv4_mobile_rec", "rec_r34_vd_none_bilstm_ctc"])
def test_paddleocr_yaml_architecture_parses_into_dataclasses(preset):
    """PaddleOCR's own Architecture section (from its YAML; Transform: null is the translator's) -> our
    ArchitectureConfig -> the manifest's network."""
    from paddle_recipes.config import ConfigError, from_dict
    from paddle_recipes.tasks.ocr_rec.models import ArchitectureConfig, build_rec_model

    m = load_manifest(preset)
    arch = {k: v for k, v in m["architecture"].items() if k != "Transform"}
    model = build_rec_model(from_dict(ArchitectureConfig, arch, "Architecture"), m["num_classes_ctc"])
    assert {k: list(v.shape) for k, v in model.state_dict().items()} == m["tensors"]
    with pytest.raises(ConfigError, match="unknown key 'Architecture.Backbone.scal'"):
        from_dict(ArchitectureConfig, {"Backbone": {"name": "PPLCNetV3", "scal": 1}}, "Architecture")
    with pytest.raises(ConfigError, match=r"Architecture.Backbone: ResNet does not take \['scale'\]"):
        from_dict(ArchitectureConfig, {**arch, "Backbone": {"name": "ResNet", "layers": 34, "scale": 0.5}},
                  "Architecture")


@pytest.mark.parametrize("backbone", ["PPLCNetV3", "PPHGNetV2_B4", "PPLCNetV4"])
def test_training_width_other_than_320_is_named_once(backbone, monkeypatch, caplog):
    """The v4/v5/v6 rec backbones pool training features to 40 columns and eval features to W/8: they agree only
    at input width 320. A training batch at another width gets one warning naming the backbone and the width."""
    from paddle_recipes.nn import rec_pool
    from paddle_recipes.nn.lcnetv4 import PPLCNetV4
    from paddle_recipes.nn.pphgnetv2 import PPHGNetV2_B4
    from paddle_recipes.nn.pplcnetv3 import PPLCNetV3

    monkeypatch.setattr(rec_pool, "_warned", set())
    net = {"PPLCNetV3": lambda: PPLCNetV3(scale=0.25), "PPHGNetV2_B4": lambda: PPHGNetV2_B4(text_rec=True),
           "PPLCNetV4": lambda: PPLCNetV4(model_size="tiny")}[backbone]()
    net.train()
    warnings = lambda: [r.getMessage() for r in caplog.records if r.name == rec_pool.__name__]  # noqa: E731
    with caplog.at_level("WARNING", logger=rec_pool.__name__):
        assert net(paddle.rand([1, 3, 48, 320])).shape[2:] == [1, 40]
        assert warnings() == []  # PaddleOCR's width: training and eval agree
        assert net(paddle.rand([1, 3, 48, 96])).shape[2:] == [1, 40]
        net(paddle.rand([1, 3, 48, 160]))
    assert len(warnings()) == 1 and warnings()[0].startswith(f"{backbone}: training batch with 24 feature columns "
                                                            "(input width 96 px), pooled to 40")
    net.eval()
    assert net(paddle.rand([1, 3, 48, 96])).shape[2:] == [1, 12]  # eval: W/8 columns, unchanged
