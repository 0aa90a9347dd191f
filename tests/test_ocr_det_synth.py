"""Synthetic det pages: deterministic, labels readable by the det dataset, polygons on the ink, crops for rec;
and the DB train/eval sample pipelines on them."""
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from shapely.geometry import Polygon

from paddle_recipes.tasks.ocr.fonts import fonts_for
from paddle_recipes.tasks.ocr.synth import LineRenderer
from paddle_recipes.tasks.ocr_det.batch import collate
from paddle_recipes.tasks.ocr_det.dataset import DetDataset
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, bend, ink_box, render_page, write_pages
from paddle_recipes.tasks.ocr_det.transforms import DBEvalTransform, DBTrainTransform

CHARS = [c.strip() for c in Path("datasets/ocr_rec/ch_hanzi_100.txt").read_text(encoding="utf-8").splitlines()
         if c.strip()]
CFG = PageSynthConfig(width=160, height=128, lines=(2, 4), font_size=(14, 22), vertical_prob=0.3, curve_prob=0.5)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("pages")
    write_pages(out, "train", 6, CFG, CHARS)
    return out / "train"


def test_pages_are_deterministic_and_labels_load_without_skips(pages, tmp_path):
    again = write_pages(tmp_path, "train", 6, CFG, CHARS)
    assert (again / "label.txt").read_text(encoding="utf-8") == (pages / "label.txt").read_text(encoding="utf-8")
    assert (again / "images/00000003.jpg").read_bytes() == (pages / "images/00000003.jpg").read_bytes()
    ds = DetDataset(pages / "label.txt", pages, strict=True)
    assert len(ds) == 6 and ds.stats.total == 0
    for i in range(len(ds)):
        s = ds[i]
        assert isinstance(s, dict) and s["polygon_problems"] == [] and 1 <= len(s["polys"]) <= 4
        h, w = s["image"].shape[:2]
        for p, text in zip(s["polys"], s["texts"]):
            assert Polygon(p).is_valid and p[:, 0].min() >= 0 and p[:, 0].max() <= w and p[:, 1].max() <= h
            assert text and not s["ignore_tags"][0]


def test_crops_match_the_non_vertical_lines(pages):
    det = [json.loads(line.split("\t")[1]) for line in (pages / "label.txt").read_text(encoding="utf-8").splitlines()]
    rec = [line.split("\t") for line in (pages / "crop_label.txt").read_text(encoding="utf-8").splitlines()]
    by_name = dict(rec)
    for i, items in enumerate(det):
        for j, item in enumerate(items):
            name = f"crops/{i:08d}_{j:02d}.jpg"
            pts = np.array(item["points"])
            vertical = np.ptp(pts[:, 1]) > 2 * np.ptp(pts[:, 0])
            assert (name in by_name) != vertical
            if name in by_name:
                assert by_name[name] == item["transcription"]
                assert cv2.imread(str(pages / name)).shape[0] == CFG.crop_height


def test_heldout_pages_use_only_eval_fonts():
    renderer = LineRenderer(CFG.line_config(), CHARS, "eval")
    assert {f.name for f in renderer.fonts} <= {f.name for f in fonts_for("eval")}
    img, lines = render_page(renderer, CFG, np.random.default_rng(0))
    assert img.shape == (128, 160, 3) and lines


def test_polygon_covers_the_ink_of_a_bent_line():
    mask = np.zeros((20, 100), np.float32)
    mask[6:14, 5:95] = 1.0
    box = ink_box(mask)
    np.testing.assert_array_equal(box, [[4, 5], [96, 5], [96, 15], [4, 15]])
    bent, poly = bend(mask, box, amp=6.0, cycles=0.5, phase=0.0, points=8)
    ink = np.argwhere(bent > 0.5)[:, ::-1] + 0.5  # (x, y) pixel centres
    shape = Polygon(poly).buffer(0.75)
    assert len(poly) == 18 and all(shape.contains(Polygon.from_bounds(x - .1, y - .1, x + .1, y + .1)) for x, y in ink)
    assert Polygon(poly).area < 1.3 * (box[2, 1] - box[0, 1]) * (box[1, 0] - box[0, 0])


def test_train_and_eval_pipelines_make_db_batches(pages):
    np.random.seed(0)
    train = DetDataset(pages / "label.txt", pages, transform=DBTrainTransform(size=(96, 64)))
    batch = collate([train[i] for i in range(3)])
    assert batch["image"].shape == (3, 3, 64, 96) and batch["num_samples"].tolist() == [3]
    for key in ("threshold_map", "threshold_mask", "shrink_map", "shrink_mask"):
        assert batch[key].shape == (3, 64, 96) and batch[key].dtype == np.float32
    assert batch["shrink_map"].sum() > 0 and set(np.unique(batch["shrink_map"])) <= {0.0, 1.0}
    assert 0.3 - 1e-6 <= batch["threshold_map"].min() and batch["threshold_map"].max() <= 0.7 + 1e-6
    ev = DetDataset(pages / "label.txt", pages, transform=DBEvalTransform(limit_side_len=96, limit_type="max"))
    batch = collate([ev[0], ev[1], ("skip", "x:1", "corrupt_image")])
    assert batch["image"].shape == (2, 3, 64, 96) and batch["image_hw"].tolist() == [[64, 96], [64, 96]]
    np.testing.assert_allclose(batch["shape"][0], [128, 160, 0.5, 0.6])  # 160 -> 96, 128 * 0.6 = 76.8 -> 64
    assert batch["skipped"] == ["x:1\tcorrupt_image"] and len(batch["polys"][1]) == len(ev.load(1)["polys"])
