"""PaddleOCR det YAMLs through the det recipe's -c (compat.paddleocr_det), on our fixtures of the real files
(tests/fixtures/paddleocr_det_configs, written by tests/scripts/make_paddleocr_det_fixtures.py: PP-OCRv3..v6 and
the ResNet DB files). Each file either translates with every key accounted for and builds the network of our
preset (PaddleOCR's manifest: names and shapes), then trains one step on a 4-image label set; or exits with one
line naming the piece not built here."""
from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from paddle_recipes.compat.paddleocr_det import translate_det_config
from paddle_recipes.config import from_dict
from paddle_recipes.recipes.ocr_det import OcrDet
from paddle_recipes.tasks.ocr_det.config import DetConfig
from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "paddleocr_det_configs"
MANIFESTS = REPO / "tests" / "fixtures" / "ppocr_det"
SLOW = pytest.mark.slow

# file -> the preset whose PaddleOCR manifest (tests/fixtures/ppocr_det) its network must equal
TRAINS = {"PP-OCRv5/PP-OCRv5_mobile_det.yml": "PP-OCRv5_mobile_det",
          "PP-OCRv4/PP-OCRv4_mobile_det.yml": "PP-OCRv4_mobile_det",
          "PP-OCRv4/PP-OCRv4_mobile_seal_det.yml": "PP-OCRv4_mobile_det",
          "PP-OCRv5/PP-OCRv5_server_det.yml": "PP-OCRv5_server_det",
          "det_r50_vd_db.yml": "det_r50_vd_db",
          "ch_ppocr_v2.0/ch_det_res18_db_v2.0.yml": "ch_det_res18_db_v2.0",
          "PP-OCRv3/PP-OCRv3_server_det.yml": "PP-OCRv3_server_det",
          "PP-OCRv6/PP-OCRv6_tiny_det.yml": "PP-OCRv6_tiny_det",
          "PP-OCRv6/PP-OCRv6_small_det.yml": "PP-OCRv6_small_det",
          "PP-OCRv6/PP-OCRv6_medium_det.yml": "PP-OCRv6_medium_det"}
# file -> (the key the one-line error names, a fragment of its message)
EXITS = {"PP-OCRv3/PP-OCRv3_det_cml.yml": ("Architecture.name", "distillation models"),
         "PP-OCRv3/PP-OCRv3_det_dml.yml": ("Architecture.name", "distillation models"),
         "PP-OCRv4/PP-OCRv4_det_cml.yml": ("Architecture.name", "distillation models"),
         "PP-OCRv3/PP-OCRv3_mobile_det.yml": ("Architecture.Backbone.name", "'MobileNetV3' is not built here"),
         "ch_ppocr_v2.0/ch_det_mv3_db_v2.0.yml": ("Architecture.Backbone.name", "'MobileNetV3' is not built here"),
         "PP-OCRv4/PP-OCRv4_server_det.yml": ("Architecture.Backbone.name", "'PPHGNet_small' is not built here"),
         "PP-OCRv4/PP-OCRv4_server_seal_det.yml": ("Architecture.Backbone.name", "'PPHGNet_small' is not built here"),
         "PP-OCRv6/PP-OCRv6_base_det.yml": ("Architecture.Backbone", "det layout 'base' unknown")}
# trained in the default suite; the others are slow
CHEAP = ("PP-OCRv5/PP-OCRv5_mobile_det.yml", "PP-OCRv6/PP-OCRv6_tiny_det.yml")


def load(name: str) -> dict:
    return yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))


def leaves(node, path=""):
    """Dotted leaf paths of a YAML mapping, lists of mappings walked as [i] (the report's path form)."""
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list) and any(isinstance(v, dict) for v in node):
        for i, v in enumerate(node):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path


def test_fixtures_cover_every_file_of_the_generator():
    found = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.yml"))
    assert found == sorted([*TRAINS, *EXITS])


@pytest.mark.parametrize("name", sorted(TRAINS))
def test_every_key_is_mapped_or_reported(name):
    data = load(name)
    _, report = translate_det_config(data, name, DetConfig)
    missing = []
    for path in leaves(data):  # a leaf counts when it, or an op/section holding it, is accounted for
        parts = [path] + [path[:i] for i in range(len(path)) if path[i] in ".["]
        if not any(report.accounts_for(p) for p in parts):
            missing.append(path)
    assert missing == []
    assert set(report.no_effect).isdisjoint(report.mapped)


def _manifest(preset):
    return json.loads((MANIFESTS / f"{preset}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(n for n, p in TRAINS.items() if p))
def test_network_equals_the_presets_paddleocr_manifest(name):
    cfg = from_dict(DetConfig, translate_det_config(load(name), name, DetConfig)[0])
    m = _manifest(TRAINS[name])
    got = {k: list(v.shape) for k, v in build_ppocr_det_model(cfg.Architecture).state_dict().items()}
    assert got == m["tensors"] and len(got) == m["num_tensors"]


def test_values_follow_paddleocr():
    """Optimizer / lr / regularizer, PostProcess (class defaults for absent keys), the data ops' values."""
    v5 = from_dict(DetConfig, translate_det_config(load("PP-OCRv5/PP-OCRv5_mobile_det.yml"), "v5", DetConfig)[0])
    o = v5.Optimizer
    assert (o.name, o.lr, o.schedule, o.warmup_epochs, o.weight_decay, o.warmup_steps) == ("adam", 0.001, "cosine",
                                                                                           2, 5e-05, 0)
    assert (v5.Global.epochs, v5.Global.eval_batch_step, v5.Global.eval_every_epochs, v5.Global.log_every,
            v5.Global.keep_every_epochs) == (500, [0, 1500], 0, 100, 10)
    p = v5.PostProcess
    assert (p.thresh, p.box_thresh, p.max_candidates, p.unclip_ratio, p.box_type, p.score_mode) == (
        0.3, 0.6, 1000, 1.5, "quad", "fast")
    t = v5.Train.transform
    assert (t.size, t.max_tries, t.keep_ratio, t.shrink_ratio, t.min_text_size, t.thresh_min, t.thresh_max,
            t.augment, t.max_rotate, t.scale) == ([640, 640], 50, True, 0.4, 8, 0.3, 0.7, True, 10.0, [0.5, 3.0])
    assert (v5.Train.loader.batch_size_per_card, v5.Train.loader.drop_last, v5.Eval.loader.batch_size_per_card) == (
        8, False, 1)
    assert (v5.Eval.transform.limit_side_len, v5.Eval.transform.limit_type) == (736, "min")
    assert v5.Predict.save_res_path == "./checkpoints/det_db/predicts_db.txt"
    r50 = from_dict(DetConfig, translate_det_config(load("det_r50_vd_db.yml"), "r50", DetConfig)[0])
    assert (r50.Optimizer.schedule, r50.Optimizer.weight_decay, r50.PostProcess.box_thresh) == ("constant", 0.0, 0.7)
    assert r50.Eval.transform.image_shape == [736, 1280] and r50.Train.transform.size == [640, 640]
    seal = from_dict(DetConfig, translate_det_config(load("PP-OCRv4/PP-OCRv4_mobile_seal_det.yml"), "s", DetConfig)[0])
    assert (seal.Eval.transform.resize_long, seal.Train.transform.shrink_ratio, seal.PostProcess.box_type,
            seal.PostProcess.unclip_ratio, seal.Optimizer.weight_decay) == (736, 0.8, "poly", 0.5, 1e-6)


def test_v6_values_follow_paddleocr():
    """PP-OCRv6's new keys: Global EMA (ppdet's ModelEMA keys), DBLoss DiceFocalLoss + aux weights, the DBHead aux
    heads, the Affine p PaddleOCR overwrites, ColorJitter mapped, RandomPerspective reported as not applied."""
    name = "PP-OCRv6/PP-OCRv6_tiny_det.yml"
    ours, report = translate_det_config(load(name), name, DetConfig)
    v6 = from_dict(DetConfig, ours)
    assert (v6.EMA.enable, v6.EMA.decay, v6.EMA.warmup) == (True, 0.9998, "threshold")
    lo = v6.Loss
    assert (lo.main_loss_type, lo.alpha, lo.beta, lo.focal_alpha, lo.focal_gamma, lo.aux_weight_p4, lo.aux_weight_p3,
            lo.aux_weight_p2, lo.dice_weight, lo.focal_weight) == ("DiceFocalLoss", 5, 10, 0.25, 2.5, 0.2, 0.3, 0.4,
                                                                    1.0, 1.0)
    assert v6.Architecture.Head == {"name": "DBHead", "k": 50, "fix_nan": True, "aux_in_channels": 64}
    assert v6.Architecture.Neck["name"] == "UniRepLKFPN" and v6.Architecture.Backbone["model_size"] == "tiny"
    assert (v6.Train.transform.max_rotate, v6.Train.transform.scale, v6.Optimizer.weight_decay) == (45.0, [0.1, 2.0],
                                                                                                   1e-6)
    assert "Train.dataset.transforms[4].IaaAugment.augmenter_args[1].args.p" in report.no_effect
    assert {k for k in report.approximated if "transforms" in k} == {
        "Train.dataset.transforms[2].CopyPaste", "Train.dataset.transforms[5].RandomPerspective"}
    assert v6.Train.transform.color_jitter == [0.4, 0.4, 0.7, 0.1]
    assert report.mapped["Train.dataset.transforms[3].ColorJitter.hue"] == "Train.transform.color_jitter"
    bad = load(name)
    bad["Global"]["ema_decay_type"] = "cosine"
    with pytest.raises(Exception, match=r"Global.ema_decay_type: 'cosine' is not one of"):
        translate_det_config(bad, name, DetConfig)


def fresh_logging() -> None:
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_paddle_recipes", False)]:
        root.removeHandler(h)
        h.close()


def cli_error(argv, capsys) -> str:
    fresh_logging()
    with pytest.raises(SystemExit) as exc:
        OcrDet.cli(argv)
    assert exc.value.code == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip() and "Warning" not in ln
           and "warnings.warn" not in ln]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


@pytest.mark.parametrize("name", sorted(EXITS))
def test_unsupported_file_exits_in_one_line(name, capsys):
    key, fragment = EXITS[name]
    line = cli_error(["-c", str(FIXTURES / name)], capsys)
    assert line.startswith(f"ocr_det: error: {key}: ") and fragment in line and name in line


def test_changed_meaning_is_an_error_naming_the_key(capsys):
    src = FIXTURES / "PP-OCRv5/PP-OCRv5_mobile_det.yml"
    cases = {"Train.dataset.ratio_list=[0.5]": "Train.dataset.ratio_list",
             "Global.cal_metric_during_train=true": "Global.cal_metric_during_train",
             "Train.dataset.transforms.6.MakeShrinkMap.shrink_ratio=0.5": "Train.dataset.transforms[6].MakeShrinkMap"
                                                                         ".shrink_ratio",
             "Eval.dataset.transforms.0.DecodeImage.img_mode=RGB": "Eval.dataset.transforms[0].DecodeImage.img_mode",
             "Architecture.Neck.use_asf=true": "Architecture.Neck.use_asf",
             "Loss.name=EASTLoss": "Loss.name"}
    for override, key in cases.items():
        line = cli_error(["-c", str(src), "-o", override], capsys)
        assert line.startswith(f"ocr_det: error: {key}"), (override, line)


def write_det_set(root: Path, n: int = 4) -> Path:
    """n small BGR pages with two 'AB12' lines each (cv2.putText) + PaddleOCR's det label file."""
    rng = random.Random(0)
    (root / "img").mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        img, boxes = np.full((96, 128, 3), 255, np.uint8), []
        for j in range(2):
            x, y = rng.randint(4, 40), 20 + 40 * j + rng.randint(0, 8)
            cv2.putText(img, "AB12", (x, y), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (0, 0, 0), 2)
            (w, h), base = cv2.getTextSize("AB12", cv2.FONT_HERSHEY_SIMPLEX, 0.8, 2)
            boxes.append({"transcription": "AB12", "points": [[x, y - h - 2], [x + w, y - h - 2], [x + w, y + base],
                                                              [x, y + base]]})
        cv2.imwrite(str(root / "img" / f"{i}.jpg"), img)
        lines.append(f"img/{i}.jpg\t{json.dumps(boxes)}")
    (root / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def data_opts(data: Path) -> list:
    return [f"Train.dataset.data_dir={data}", f"Train.dataset.label_file_list=[{data / 'train.txt'}]",
            f"Eval.dataset.data_dir={data}", f"Eval.dataset.label_file_list=[{data / 'train.txt'}]"]


def tiny_opts(name: str, out: Path) -> list:
    """-o in PaddleOCR's keys: one step of batch 2 on 64x64 crops, evaluated at <= 96 px, no downloads."""
    data = load(name)
    crop = next(i for i, op in enumerate(data["Train"]["dataset"]["transforms"]) if "EastRandomCropData" in op)
    resize = next(i for i, op in enumerate(data["Eval"]["dataset"]["transforms"]) if "DetResizeForTest" in op)
    return [f"Global.save_model_dir={out}", "Global.epoch_num=1", "Global.max_steps=1", "Global.pretrained_model=",
            "Train.loader.batch_size_per_card=2", "Train.loader.num_workers=0", "Eval.loader.num_workers=0",
            f"Train.dataset.transforms.{crop}.EastRandomCropData.size=[64,64]",
            f"Eval.dataset.transforms.{resize}.DetResizeForTest={{limit_side_len: 96, limit_type: max}}"]


@pytest.mark.parametrize("name", [n if n in CHEAP else pytest.param(n, marks=SLOW) for n in sorted(TRAINS)])
def test_file_trains_one_step(name, tmp_path, capsys):
    data = write_det_set(tmp_path / "data")
    out = tmp_path / "out"
    fresh_logging()
    summary = OcrDet.main(["-c", str(FIXTURES / name), "-o", *data_opts(data), *tiny_opts(name, out)])
    assert summary["global_step"] == 1 and all(np.isfinite(h["loss"]) for h in summary["history"])
    assert summary["main_metric"] == "hmean" and set(summary["final_eval"]) >= {"precision", "recall", "hmean"}
    log = (out / "train.log").read_text(encoding="utf-8")
    assert sum("no effect here: " in ln for ln in log.splitlines()) == 1


def test_as_written_pretrained_url_and_predict_result_file(tmp_path, capsys):
    """With only the data paths overridden, PP-OCRv5_mobile_det's pretrained_model URL is refused in one line
    (nothing is downloaded); predict writes Global.save_res_path from Global.infer_img."""
    name = "PP-OCRv5/PP-OCRv5_mobile_det.yml"
    data = write_det_set(tmp_path / "data")
    line = cli_error(["-c", str(FIXTURES / name), "-o", *data_opts(data), f"Global.save_model_dir={tmp_path / 'a'}"],
                     capsys)
    assert "https://paddleocr.bj.bcebos.com/pretrained/PPLCNetV3_x0_75_ocr_det.pdparams is a URL" in line
    out = tmp_path / "out"
    fresh_logging()
    OcrDet.main(["-c", str(FIXTURES / name), "-o", *data_opts(data), *tiny_opts(name, out)])
    res = tmp_path / "res" / "predicts_db.txt"
    fresh_logging()
    OcrDet.main(["--mode", "predict", "-c", str(FIXTURES / name), "-o", *data_opts(data), *tiny_opts(name, out),
                 f"Global.infer_img={data / 'img'}", f"Global.save_res_path={res}"])
    rows = res.read_text(encoding="utf-8").splitlines()
    assert sorted(Path(r.split("\t")[0]).name for r in rows) == [f"{i}.jpg" for i in range(4)]


def test_det_resize_for_test_image_shape_and_resize_long():
    """The two DetResizeForTest forms the ResNet / seal files use: fixed [H, W]; long side = resize_long, then
    each side rounded up to a multiple of 128 (PaddleOCR's resize_image_type2)."""
    from paddle_recipes.tasks.ocr_det.transforms import DBEvalTransform

    img = np.zeros((100, 300, 3), np.uint8)
    s = {"image": img, "polys": [], "ignore_tags": []}
    out = DBEvalTransform(resize_long=736)(s)  # 300 -> 736, 100 -> int(245.33) = 245 -> 256; 736 -> 768
    assert out["image"].shape == (3, 256, 768)
    np.testing.assert_allclose(out["shape"], [100, 300, 256 / 100, 768 / 300], rtol=1e-6)
    out = DBEvalTransform(image_shape=[736, 1280])(s)
    assert out["image"].shape == (3, 736, 1280)
    out = DBEvalTransform(image_shape=[64, 64], keep_ratio=True)(s)  # W = ceil(300 * 64 / 100 / 32) * 32 = 192
    assert out["image"].shape == (3, 64, 192)
