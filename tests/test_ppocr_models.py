"""Parity of our PaddleOCR recognition presets with PaddleOCR's own models (no download).

Fixtures in tests/fixtures/ppocr_manifests/ were produced by building PaddleOCR's models with
PaddleOCR's code (scratch run, not part of the repo):
  <preset>.json          state_dict names -> shapes (count, element total) of the published model;
  <preset>.outputs.json  PaddleOCR's outputs for a fixed input with the deterministic weights of
                         ``det_value`` below (eval: CTC logits + softmax; train with dropout off:
                         CTC logits and NRTR logits for fixed labels).
"""
import functools
import json
import zlib
from pathlib import Path

import numpy as np
import paddle
import pytest

from paddle_recipes.tasks.ocr.ppocr_losses import MultiLoss
from paddle_recipes.tasks.ocr.ppocr_models import build_ppocr_rec_model

FIXTURES = Path(__file__).parent / "fixtures" / "ppocr_manifests"
PRESETS = ["PP-OCRv4_mobile_rec", "PP-OCRv5_mobile_rec", "PP-OCRv5_server_rec", "rec_r34_vd_none_bilstm_ctc"]


def det_value(name, shape):
    """Deterministic tensor for a parameter name (same rule used on PaddleOCR's model)."""
    rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
    shape = list(shape)
    if name.endswith("_variance"):
        return rng.uniform(0.5, 1.5, shape).astype("float32")
    n = rng.standard_normal(shape)
    if len(shape) <= 1:
        base = 1.0 if name.endswith((".weight", ".scale")) else 0.0
        return (base + 0.1 * n).astype("float32")
    fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
    return (0.5 * n / np.sqrt(max(fan_in, 1))).astype("float32")


def load_manifest(preset):
    return json.loads((FIXTURES / f"{preset}.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)  # one model per preset for both tests (names/shapes don't change)
def build(preset):
    m = load_manifest(preset)
    return m, build_ppocr_rec_model(m["architecture"], m["num_classes_ctc"])


@pytest.mark.parametrize("preset", PRESETS)
def test_state_dict_equals_paddleocr_manifest(preset):
    m, model = build(preset)
    ours = {k: list(v.shape) for k, v in model.state_dict().items()}
    assert len(ours) == m["num_tensors"] == len(m["tensors"])
    assert sorted(set(m["tensors"]) - set(ours)) == []
    assert sorted(set(ours) - set(m["tensors"])) == []
    assert {k: s for k, s in ours.items() if s != m["tensors"][k]} == {}
    assert sum(int(np.prod(s)) for s in ours.values()) == m["num_elements"]


def _set_det_weights(model):
    sd = model.state_dict()
    model.set_state_dict({k: (v if k.endswith(".pe") else paddle.to_tensor(det_value(k, v.shape)))
                          for k, v in sd.items()})


@pytest.mark.parametrize("preset", PRESETS)
def test_outputs_equal_paddleocr(preset):
    """Same weights + same input -> PaddleOCR's outputs (eval CTC logits/probs; train CTC + NRTR)."""
    m, model = build(preset)
    ref = json.loads((FIXTURES / f"{preset}.outputs.json").read_text())
    _set_det_weights(model)
    x = paddle.to_tensor(np.random.RandomState(0).uniform(-1, 1, ref["input_shape"]).astype("float32"))
    model.eval()
    with paddle.no_grad():
        probs = model(x).numpy()
        model.set_eval_output("logits")
        logits = model(x).numpy()
        model.set_eval_output("probs")
    assert list(probs.shape) == ref["eval_probs_shape"]
    np.testing.assert_allclose(logits[:, :, :16], ref["eval_logits_slice_0_16"], atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose((logits.astype("float64") ** 2).sum(-1), ref["eval_logits_sumsq"], rtol=1e-4)
    np.testing.assert_allclose(probs[:, :, :16], ref["eval_slice_0_16"], rtol=1e-3, atol=1e-8)
    np.testing.assert_allclose(probs.max(-1), ref["eval_max"], rtol=1e-3)
    assert probs.argmax(-1).tolist() == ref["eval_argmax"]
    if "train_gtc_shape" not in ref:
        return
    model.train()
    for layer in model.sublayers():  # dropout off, batch-norm in train mode (batch statistics)
        if isinstance(layer, paddle.nn.Dropout):
            layer.eval()
    targets = [paddle.to_tensor(np.array(ref[k], dtype="int64"))
               for k in ("train_label_ctc", "train_label_gtc", "train_length")]
    with paddle.no_grad():
        out = model(x, targets)
    ctc, gtc = out["ctc"].numpy(), out["gtc"].numpy()
    assert list(ctc.shape) == ref["train_ctc_shape"] and list(gtc.shape) == ref["train_gtc_shape"]
    np.testing.assert_allclose(ctc[:, :, :16], ref["train_ctc_slice_0_16"], atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose((ctc.astype("float64") ** 2).sum(-1), ref["train_ctc_sumsq"], rtol=1e-4)
    np.testing.assert_allclose(gtc[:, :, :16], ref["train_gtc_slice_0_16"], atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose((gtc.astype("float64") ** 2).sum(-1), ref["train_gtc_sumsq"], rtol=1e-4)
    assert gtc.argmax(-1).tolist() == ref["train_gtc_argmax"]
    if "train_loss" in ref:  # PaddleOCR's MultiLoss (CTCLoss + NRTRLoss with label smoothing) on the same outputs
        loss = MultiLoss()(out, targets[0], targets[2], targets[1])
        for key in ("CTCLoss", "NRTRLoss", "loss"):
            np.testing.assert_allclose(float(loss[key]), ref["train_loss"][key], rtol=1e-4)


def test_unknown_architecture_keys_are_rejected():
    with pytest.raises(ValueError, match="unknown keys.*'scal'"):
        build_ppocr_rec_model({"Backbone": {"name": "PPLCNetV3", "scal": 0.95},
                               "Head": {"name": "CTCHead"}}, 10)
    with pytest.raises(ValueError, match="unknown 'NoSuchNet'"):
        build_ppocr_rec_model({"Backbone": {"name": "NoSuchNet"}, "Head": {"name": "CTCHead"}}, 10)


def test_build_rec_model_dispatches_to_paddleocr_networks():
    from paddle_recipes.tasks.ocr.models import RecModel, build_rec_model
    from paddle_recipes.tasks.ocr.ppocr_models import PPOCR_CRNN_R34_ARCH, PPOCRRecModel

    arch = {**PPOCR_CRNN_R34_ARCH, "Backbone": {"name": "resnet", "layers": 34}}  # case-insensitive
    assert isinstance(build_rec_model(arch, 37), PPOCRRecModel)
    own = build_rec_model({"Backbone": {"name": "LCNetRec"}, "Neck": {"name": "Conv"}, "Head": {"name": "CTCHead"}}, 37)
    assert isinstance(own, RecModel)


@pytest.mark.parametrize("preset", ["PP-OCRv4_mobile_rec", "rec_r34_vd_none_bilstm_ctc"])
def test_paddleocr_yaml_architecture_parses_into_dataclasses(preset):
    """PaddleOCR's own Architecture section (from its YAML) -> our dataclasses -> the manifest's network."""
    from paddle_recipes.config import ConfigError, from_dict
    from paddle_recipes.tasks.ocr.models import build_rec_model
    from paddle_recipes.tasks.ocr.ppocr_config import PPOCRArchitectureConfig

    m = load_manifest(preset)
    cfg = from_dict(PPOCRArchitectureConfig, m["architecture"], "Architecture")
    model = build_rec_model(cfg, m["num_classes_ctc"])
    assert {k: list(v.shape) for k, v in model.state_dict().items()} == m["tensors"]
    with pytest.raises(ConfigError, match="unknown key 'Architecture.Backbone.scal'"):
        from_dict(PPOCRArchitectureConfig, {"Backbone": {"name": "PPLCNetV3", "scal": 1}}, "Architecture")
    with pytest.raises(ValueError, match=r"Architecture.Backbone \(ResNet\): unknown keys \['scale'\]"):
        build_rec_model(from_dict(PPOCRArchitectureConfig, {**m["architecture"], "Backbone": {
            "name": "ResNet", "layers": 34, "scale": 0.5}}, "Architecture"), 10)
