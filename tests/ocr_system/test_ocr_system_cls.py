"""The OCR system's orientation stage (PaddleOCR's use_angle_cls / use_textline_orientation): confident '180' crops
are turned before recognition; synthetic pages draw lines upside down on request; with PaddleOCR's released
classifier in our network, the pipeline turns the upside-down lines of such pages upright."""
from __future__ import annotations

import numpy as np
import pytest

from paddle_recipes.tasks.ocr_rec.synth import LineRenderer, font_side
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, order_quad, page_seed, render_page, system_crop
from paddle_recipes.tasks.ocr_system.pipeline import OcrPipeline, orient_crops

from test_ocr_cls_models import ROOT, official_cls  # noqa: F401  (the released weights fixture)

CHARS = (ROOT / "datasets/ocr_rec/ch_hanzi_500.txt").read_text(encoding="utf-8").split()


def test_orient_crops_turns_confident_180_only():
    crops = [np.arange(24, dtype=np.uint8).reshape(2, 4, 3) + i for i in range(4)]
    said = [("180", 0.95), ("180", 0.85), ("0", 0.99), ("180_degree", 0.91)]
    out = orient_crops(crops, lambda cs: said[:len(cs)], thresh=0.9)
    assert np.array_equal(out[0], crops[0][::-1, ::-1]) and np.array_equal(out[3], crops[3][::-1, ::-1])
    assert out[1] is crops[1] and out[2] is crops[2]
    assert orient_crops([], lambda cs: 1 / 0) == []


def pages(n, prob, **kw):
    cfg = PageSynthConfig(upside_down_prob=prob, vertical_prob=0.0, curve_prob=0.0, fonts=("noto_sans_sc",), **kw)
    renderer = LineRenderer(cfg.line_config(), CHARS, font_side("val"))
    return cfg, [render_page(renderer, cfg, np.random.default_rng(page_seed(cfg.seed, "val", i))) for i in range(n)]


def test_upside_down_lines_are_cut_turned_and_stored_upright():
    cfg, out = pages(2, 1.0, crop_margin=(0.0, 0.0), crop_jitter=0.0)
    lines = [ln for _, page_lines in out for ln in page_lines]
    assert lines and all(ln.upside_down for ln in lines)
    for page, page_lines in out:
        for ln in page_lines:  # the system's cut of the line is upside down; the stored (rec) crop is upright
            cut = system_crop(page, ln.ink, 0.0, cfg.crop_height, np.zeros((4, 2)))
            assert np.array_equal(cut[::-1, ::-1], ln.crop)
            assert np.array_equal(ln.points, order_quad(ln.points))  # labels in image order, as DB's boxes
    _, none = pages(2, 0.0)
    assert not any(ln.upside_down for _, page_lines in none for ln in page_lines)
    with pytest.raises(ValueError, match="upside_down_prob must be in"):
        PageSynthConfig(upside_down_prob=1.5)


def test_released_classifier_in_the_pipeline_turns_upside_down_lines_upright(official_cls):  # noqa: F811
    import paddle

    from paddle_recipes.tasks.ocr_cls.config import ClsInput
    from paddle_recipes.tasks.ocr_cls.models import ClsArchitecture, build_cls_model
    from paddle_recipes.tasks.ocr_cls.predict import classify_images

    _, weights, _ = official_cls
    net = build_cls_model(ClsArchitecture(name="ch_ppocr_mobile_v2.0_cls"), 2)
    net.set_state_dict({k: paddle.to_tensor(v) for k, v in weights.items()})
    classify = lambda crops: classify_images(net, crops, ClsInput((3, 48, 192), "ppocr", ("0", "180"), 1))  # noqa
    _, out = pages(4, 0.5)
    seen = []

    def recognize(crops):
        seen.extend(crops)
        return [("x", 1.0)] * len(crops)

    before, after = [], []
    for page, lines in out:
        bgr = np.ascontiguousarray(page[:, :, ::-1])
        boxes = [ln.points for ln in lines]
        seen.clear()
        OcrPipeline(None, recognize)(bgr, boxes=boxes)
        before += classify(list(seen))
        seen.clear()
        OcrPipeline(None, recognize, classify=classify, cls_thresh=0.9)(bgr, boxes=boxes)
        after += classify(list(seen))
    n_up = sum(ln.upside_down for _, lines in out for ln in lines)
    assert 0 < n_up < len(before)
    says_180 = sum(lab == "180" for lab, _ in before)
    assert abs(says_180 - n_up) <= max(1, len(before) // 10)  # the released model sees the turned lines as 180
    assert sum(lab == "180" and s > 0.9 for lab, s in after) <= max(1, len(after) // 10)  # all upright after the stage


def test_system_eval_runs_the_cls_stage_from_its_config_and_weights(tmp_path, capsys):
    import json

    import paddle

    from paddle_recipes.config import load_config
    from paddle_recipes.recipes.ocr_cls import OcrCls
    from paddle_recipes.recipes.ocr_rec import OcrRec
    from paddle_recipes.recipes.ocr_system import OcrSystem
    from paddle_recipes.tasks.ocr_det.synth_pages import write_pages

    rec_cfg, cls_cfg = "recipes/configs/ocr_rec_smoke.yml", "recipes/configs/ocr_cls_smoke.yml"
    root = write_pages(tmp_path / "pages", "val", 2, PageSynthConfig(width=160, height=128, lines=(2, 3),
                                                                     font_size=(14, 20), upside_down_prob=0.5),
                       list("天地玄黄宇宙洪荒日月盈昃辰宿列张"))
    paddle.seed(0)
    paddle.save(OcrRec(load_config(rec_cfg, [], OcrRec.Config), None).build_model().state_dict(),
                str(tmp_path / "rec.pdparams"))
    paddle.save(OcrCls(load_config(cls_cfg, [], OcrCls.Config), None).build_model().state_dict(),
                str(tmp_path / "cls.pdparams"))
    opts = [f"Global.output_dir={tmp_path / 'out'}", "Det.oracle=true", f"Rec.config={rec_cfg}",
            f"Rec.weights={tmp_path / 'rec.pdparams'}", f"Cls.config={cls_cfg}", f"Cls.weights={tmp_path / 'cls.pdparams'}",
            f"Eval.dataset.data_dir={root}", f"Eval.dataset.label_file_list=[{root / 'label.txt'}]"]
    OcrSystem.main(["--mode", "eval", "-o", *opts, "Global.use_textline_orientation=true"])
    r = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert r["cls_weights"] == str(tmp_path / "cls.pdparams") and r["gt"] >= 2 and r["images"] == 2
    OcrSystem.main(["--mode", "eval", "-o", *opts])  # stage off: no classifier loaded
    assert "cls_weights" not in json.loads(capsys.readouterr().out.strip().splitlines()[-1])
