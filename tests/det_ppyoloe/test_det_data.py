"""COCO reader: validation with counted skips, clear errors, augmentation, collate; synthetic set; COCO eval."""
import json
import logging

import cv2
import numpy as np
import pytest

from paddle_recipes.tasks.det_ppyoloe.coco import (CocoDetDataset, DetCollate, DetDataError, build_train_augment,
                                                   load_coco)
from paddle_recipes.tasks.det_ppyoloe.metrics import coco_evaluate
from paddle_recipes.tasks.det_ppyoloe.synth import ShapesSpec, make_shapes_dataset


def _write_images(d, names, size=(64, 80)):
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        cv2.imwrite(str(d / n), np.full((size[0], size[1], 3), 127, np.uint8))


def _coco(tmp_path, images, annotations, cats=({"id": 3, "name": "a"}, {"id": 7, "name": "b"})):
    p = tmp_path / "ann.json"
    p.write_text(json.dumps({"images": images, "annotations": annotations, "categories": list(cats)}))
    return p


def test_bad_input_is_counted_and_skipped(tmp_path, caplog):
    img_dir = tmp_path / "img"
    _write_images(img_dir, ["a.png", "b.png"])  # c.png is missing
    images = [{"id": 1, "file_name": "a.png", "width": 80, "height": 64},
              {"id": 2, "file_name": "b.png", "width": 80, "height": 64},
              {"id": 3, "file_name": "c.png", "width": 80, "height": 64}]
    anns = [
        {"id": 1, "image_id": 1, "category_id": 3, "bbox": [10, 10, 20, 20]},    # good
        {"id": 2, "image_id": 1, "category_id": 7, "bbox": [70, 50, 30, 30]},    # partly outside -> clipped
        {"id": 3, "image_id": 1, "category_id": 3, "bbox": [100, 100, 10, 10]},  # entirely outside
        {"id": 4, "image_id": 2, "category_id": 3, "bbox": [5, 5, 0, 10]},       # zero width
        {"id": 5, "image_id": 2, "category_id": 3, "bbox": [5, 5, 10, -1]},      # negative height
        {"id": 6, "image_id": 2, "category_id": 99, "bbox": [5, 5, 10, 10]},     # unknown category
        {"id": 7, "image_id": 3, "category_id": 3, "bbox": [5, 5, 10, 10]},      # image file missing
        {"id": 8, "image_id": 42, "category_id": 3, "bbox": [5, 5, 10, 10]},     # unknown image id
        {"id": 9, "image_id": 2, "category_id": 7, "bbox": [1, 2, 3]},           # malformed bbox
        {"id": 10, "image_id": 2, "category_id": 7, "bbox": [1, 2, 30, 40]},     # good
    ]
    ann = _coco(tmp_path, images, anns)
    with caplog.at_level(logging.WARNING, logger="paddle_recipes.det"):
        idx = load_coco(ann, img_dir)
    assert idx.skipped() == {"missing_image": 1, "unknown_image_id": 1, "unknown_category": 1,
                             "malformed_bbox": 1, "zero_area": 2, "outside_image": 1,
                             "duplicate_image_id": 0, "unreadable_image": 0, "too_large": 0}
    assert idx.counts["clipped"] == 1
    assert [r["im_id"] for r in idx.records] == [1, 2]
    rec1, rec2 = idx.records
    np.testing.assert_allclose(rec1["boxes"], [[10, 10, 30, 30], [70, 50, 80, 64]])
    np.testing.assert_array_equal(rec1["classes"], [0, 1])  # category ids 3, 7 -> labels 0, 1
    np.testing.assert_array_equal(rec2["classes"], [1])
    text = caplog.text
    for kind in ("missing image", "unknown category", "zero area", "outside image", "unknown image id"):
        assert kind in text, kind
    assert "c.png" in text and str(ann) in text


def test_malformed_json_names_file_and_line(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"images": [],\n "annotations": [,]}')
    with pytest.raises(DetDataError, match=r"broken\.json: malformed JSON at line 2"):
        load_coco(p, tmp_path)
    q = tmp_path / "nokeys.json"
    q.write_text('{"images": []}')
    with pytest.raises(DetDataError, match=r"nokeys\.json.*'annotations'"):
        load_coco(q, tmp_path)
    with pytest.raises(DetDataError, match="not found"):
        load_coco(tmp_path / "absent.json", tmp_path)


def test_corrupt_image_error_names_file(tmp_path):
    img_dir = tmp_path / "img"
    img_dir.mkdir()
    (img_dir / "x.png").write_bytes(b"not a png")
    ann = _coco(tmp_path, [{"id": 1, "file_name": "x.png", "width": 10, "height": 10}], [])
    ds = CocoDetDataset.from_files(ann, img_dir)
    with pytest.raises(DetDataError, match=r"x\.png"):
        ds[0]


def test_augment_and_collate(tmp_path):
    paths = make_shapes_dataset(tmp_path / "shapes", ShapesSpec(num_train=6, num_val=2, image_size=96,
                                                                 min_size=16, max_size=40))
    ds = CocoDetDataset.from_files(paths["train"]["ann_file"], paths["train"]["image_dir"],
                                   augment=build_train_augment(seed=0))
    for _ in range(3):
        for i in range(len(ds)):
            s = ds[i]
            h, w = s["image"].shape[:2]
            b = s["gt_bbox"]
            assert s["gt_class"].dtype == np.int64 and len(b) == len(s["gt_class"])
            assert (b[:, 0] >= 0).all() and (b[:, 2] <= w + 1e-3).all() and (b[:, 3] <= h + 1e-3).all()
            assert (b[:, 2] > b[:, 0]).all() and (b[:, 3] > b[:, 1]).all()
    collate = DetCollate(sizes=[64, 96, 128], seed=1)
    samples = [ds[i] for i in range(4)]
    samples[1] = dict(samples[1], gt_bbox=np.zeros((0, 4), np.float32), gt_class=np.zeros((0,), np.int64))
    seen = set()
    for _ in range(12):
        batch = collate(samples)
        size = batch["image"].shape[-1]
        seen.add(size)
        m = max(len(s["gt_class"]) for s in samples)
        assert batch["image"].shape == (4, 3, size, size) and batch["image"].dtype == np.float32
        assert batch["gt_class"].shape == (4, m, 1) and batch["gt_class"].dtype == np.int64
        assert batch["gt_bbox"].shape == (4, m, 4) and batch["pad_gt_mask"].shape == (4, m, 1)
        assert batch["pad_gt_mask"][1].sum() == 0
        k0 = len(samples[0]["gt_class"])
        np.testing.assert_allclose(batch["gt_bbox"][0, :k0], samples[0]["gt_bbox"] * size / 96, rtol=1e-5)
        np.testing.assert_allclose(batch["scale_factor"][0], [size / 96, size / 96])
    assert len(seen) > 1  # batch random resize draws different sizes
    with pytest.raises(ValueError, match="multiples of 32"):
        DetCollate(sizes=[100])


def test_synthetic_set_is_deterministic_and_valid(tmp_path):
    spec = ShapesSpec(num_train=5, num_val=2, image_size=64, min_size=12, max_size=30, seed=3)
    a = make_shapes_dataset(tmp_path / "a", spec)
    b = make_shapes_dataset(tmp_path / "b", spec)
    ja = json.loads(open(a["train"]["ann_file"]).read())
    jb = json.loads(open(b["train"]["ann_file"]).read())
    assert ja == jb and len(ja["images"]) == 5 and len(ja["annotations"]) >= 5
    ia = cv2.imread(a["train"]["image_dir"] + "/000000.png")
    ib = cv2.imread(b["train"]["image_dir"] + "/000000.png")
    np.testing.assert_array_equal(ia, ib)
    idx = load_coco(a["val"]["ann_file"], a["val"]["image_dir"])
    assert sum(idx.skipped().values()) == 0 and idx.num_classes == 3


def test_coco_evaluate_perfect_and_degraded(tmp_path):
    paths = make_shapes_dataset(tmp_path / "s", ShapesSpec(num_train=1, num_val=6, image_size=96,
                                                           min_size=20, max_size=40))
    idx = load_coco(paths["val"]["ann_file"], paths["val"]["image_dir"])
    perfect, shifted = {}, {}
    for r in idx.records:
        det = np.concatenate([r["classes"][:, None].astype(np.float32), np.ones((len(r["classes"]), 1), np.float32),
                              r["boxes"]], axis=1)
        perfect[r["im_id"]] = det
        s = det.copy()
        s[:, 2:] += 8.0  # shift by 8 px: many boxes fall below IoU .75 / .95
        shifted[r["im_id"]] = s
    ids = [r["im_id"] for r in idx.records]
    good = coco_evaluate(idx.ann_file, perfect, idx.cat_ids, ids)
    bad = coco_evaluate(idx.ann_file, shifted, idx.cat_ids, ids)
    assert good["mAP"] == pytest.approx(1.0) and good["mAP50"] == pytest.approx(1.0)
    assert bad["mAP"] < good["mAP"]
    assert coco_evaluate(idx.ann_file, {}, idx.cat_ids, ids)["mAP50"] == 0.0


def test_draw_detections_handles_boxes_past_the_border(tmp_path):
    from PIL import Image

    from paddle_recipes.tasks.det_ppyoloe.visualize import draw_detections

    img = np.zeros((40, 50, 3), np.uint8)
    det = np.array([[0, 0.9, -5, -8, 20, 30], [1, 0.8, 30, 5, 70, 60], [2, 0.1, 1, 1, 5, 5]], np.float32)
    out = tmp_path / "d.png"
    assert draw_detections(img, det, ["a", "b", "c"], str(out), score_threshold=0.3) == 2
    drawn = np.asarray(Image.open(out))
    assert drawn.shape == (40, 50, 3) and drawn.any()
