"""PP-OCRv3's rec backbone MobileNetV1Enhance, ported as one file (paddle_recipes/nn/mobilenetv1_enhance.py) plus one
line of the catalogue (paddle_recipes/nn/catalog.py).

Its manifest (tests/fixtures/ppocr_manifests/MobileNetV1Enhance_rec.json) is DERIVED BY READING PaddleOCR's
ppocr/modeling/backbones/rec_mv1_enhance.py, not by running it: no PaddleOCR modeling code is on this machine (the
paddleocr 2.10 wheel ships none, and the repository is too large to fetch). tests/scripts/make_mv1_enhance_manifest.py
transcribes PaddleOCR's constructor calls and layer shape rules without importing paddle_recipes, so the comparison
below holds our network against an independent account of PaddleOCR's: state_dict names and shapes, output shape.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import paddle
import pytest

from paddle_recipes.config import ConfigError, UnknownNameError, load_config
from paddle_recipes.nn import catalog
from paddle_recipes.nn.mobilenetv1_enhance import MobileNetV1Enhance
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.tasks.ocr_rec.config import RecConfig
from paddle_recipes.tasks.ocr_rec.models import build_rec_model

REPO = Path(__file__).resolve().parents[2]
MANIFEST = json.loads((REPO / "tests/fixtures/ppocr_manifests/MobileNetV1Enhance_rec.json").read_text("utf-8"))
V3_YAML = REPO / "tests/fixtures/PP-OCRv3_mobile_rec_nrtr.yml"


@pytest.mark.parametrize("setting", sorted(MANIFEST["settings"]))
def test_names_shapes_and_output_equal_paddleocrs(setting):
    m = MANIFEST["settings"][setting]
    net = MobileNetV1Enhance(**m["kwargs"])
    assert {f"backbone.{k}": list(v.shape) for k, v in net.state_dict().items()} == m["tensors"]
    x = paddle.rand(m["input_shape"])
    for mode in ("train", "eval"):
        getattr(net, mode)()
        assert net(x).shape == m["output_shape"], mode
    assert net.out_channels == m["output_shape"][1]


def test_the_catalogue_builds_it_by_name_case_insensitively():
    kw = MANIFEST["settings"]["PP-OCRv3"]["kwargs"]
    net = catalog.build_backbone("mobilenetv1enhance", "rec", **kw)
    assert isinstance(net, MobileNetV1Enhance)
    assert catalog.export_name("MobileNetV1Enhance", "rec") == "PP-OCRv3_mobile_rec"
    assert catalog.paddlex_network("en_PP-OCRv3_mobile_rec", "rec").cls is MobileNetV1Enhance
    with pytest.raises(UnknownNameError, match=r"^Architecture\.Backbone\.name: unknown name 'MobileNetV1Enhanse'; "
                                               r"valid names: .* \(did you mean 'MobileNetV1Enhance'\?\)$"):
        catalog.build_backbone("MobileNetV1Enhanse", "rec")
    with pytest.raises(UnknownNameError, match=r"'MobileNetV1Enhance' is a rec network, not a det one; det backbones built "
                                               r"here: PPLCNetV3, "):
        catalog.build_backbone("MobileNetV1Enhance", "det")  # a rec network only
    with pytest.raises(ValueError, match=r"Architecture\.Backbone: MobileNetV1Enhance does not take \['scal'\] \(it takes "):
        catalog.build_backbone("MobileNetV1Enhance", "rec", scal=0.5)
    with pytest.raises(ValueError, match="last_pool_type must be max or avg, got 'mean'"):
        MobileNetV1Enhance(last_pool_type="mean")


def test_ppocrv3_yaml_builds_through_the_recipe_config():
    """The PaddleOCR-format PP-OCRv3 file (MobileNetV1Enhance 0.5 + MultiHead with the SVTR CTC branch) loads as the
    OCR recipe's -c reads it (its translators + typed config) and builds PaddleOCR's network: backbone as the
    manifest, CTC output [B, 40, classes] at 48 x 320; a key the network does not take is one line."""
    cfg = load_config(V3_YAML, [], RecConfig, translators=OcrRec.config_translators)
    assert (cfg.Architecture.Backbone.name, cfg.Architecture.Backbone.last_conv_stride) == ("MobileNetV1Enhance", [1, 2])
    model = build_rec_model(cfg.Architecture, 97)
    want = MANIFEST["settings"]["PP-OCRv3"]["tensors"]
    assert {k: list(v.shape) for k, v in model.state_dict().items() if k.startswith("backbone.")} == want
    assert model.ctc_head.fc.weight.shape == [64, 97]  # the SVTR neck's dims -> the CTC classes
    model.eval()
    assert model(paddle.rand([2, 3, 48, 320])).shape == [2, 40, 97]
    with pytest.raises(ConfigError, match=r"Architecture\.Backbone: MobileNetV1Enhance does not take \['layers'\]"):
        load_config(V3_YAML, ["Architecture.Backbone.layers=34"], RecConfig, translators=OcrRec.config_translators)


@pytest.mark.slow
def test_ppocrv3_yaml_trains_evaluates_exports_through_dash_c(tmp_path):
    """recipes/ocr_rec.py -c <the PP-OCRv3 file> -o <data, length>: 2 steps, eval, export named PP-OCRv3_mobile_rec."""
    from test_paddleocr_recipe import DICT_A, run, write_label_set

    data = write_label_set(tmp_path / "data", DICT_A)
    out = tmp_path / "out"
    opts = [f"Global.save_model_dir={out}", f"Global.save_inference_dir={out}", "Global.epoch_num=1",
            "Global.max_steps=2", "Global.print_batch_step=1", "Global.eval_batch_step=[0,2]",
            f"Global.character_dict_path={data / 'dict.txt'}"]
    for i, split in enumerate(("Train", "Eval")):
        opts += [f"{split}.dataset.data_dir={data}", f"{split}.dataset.label_file_list=[{data / 'train.txt'}]",
                 f"{split}.loader.batch_size_per_card=4", f"{split}.loader.num_workers=0",
                 f"{split}.dataset.transforms.{3 if split == 'Train' else 2}.RecResizeImg.image_shape=[3,48,96]"]
    argv = ["-c", str(V3_YAML), "-o", *opts]
    summary = run(argv)
    assert summary["global_step"] == 2 and all(np.isfinite(h["loss"]) for h in summary["history"])
    assert run(["--mode", "eval", *argv])["num_samples"] == 16
    report = run(["--mode", "export", *argv])
    assert report["same_decoded_text"] is True and report["model_name"] == "PP-OCRv3_mobile_rec"
