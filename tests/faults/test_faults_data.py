"""Fault injection, data: truncated LMDB, non-UTF-8 labels, oversized and truncated images, unchecked
COCO annotations (issue 14). Each is a counted skip or one clear line, never a crash deep in a library."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import paddle
import pytest

from conftest import REPO_ROOT, _clean_env


def test_truncated_lmdb_is_one_line_not_sigbus(tmp_path):
    code = ("import os, sys\n"
            "from paddle_recipes.data import write_lmdb, LmdbDataset, LmdbFormatError\n"
            "d = sys.argv[1]\n"
            "write_lmdb(d, [(os.urandom(5000), f'l{i}') for i in range(100)], map_size=1 << 22)\n"
            "f = os.path.join(d, 'data.mdb'); os.truncate(f, os.path.getsize(f) // 2)\n"
            "try:\n    ds = LmdbDataset(d); ds[len(ds) - 1]\n"
            "except LmdbFormatError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "lm")], capture_output=True, text=True,
                         env=_clean_env(), cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]  # rc 135 = SIGBUS
    assert f"ERR {tmp_path / 'lm' / 'data.mdb'} is truncated" in out.stdout


def _charset(tmp_path):
    from paddle_recipes.tasks.ocr_rec.charset import CharDict

    f = tmp_path / "dict.txt"
    f.write_text("a\nb\nc\n", encoding="utf-8")
    return CharDict.from_file(str(f))


def _png(w, h):
    import cv2

    return cv2.imencode(".png", np.zeros((h, w, 3), np.uint8))[1].tobytes()


def test_non_utf8_lmdb_label_is_a_counted_skip(tmp_path):
    import lmdb

    from paddle_recipes.data import write_lmdb
    from paddle_recipes.tasks.ocr_rec.dataset import DatasetConfig, RecDataset

    write_lmdb(tmp_path / "lm", [(_png(20, 10), "ab"), (_png(20, 10), "x"), (_png(20, 10), "ca")])
    env = lmdb.open(str(tmp_path / "lm"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        txn.put(b"label-000000002", b"\xff\xfe")
    env.close()
    ds = RecDataset(DatasetConfig(format="lmdb", data_dir=str(tmp_path / "lm")), _charset(tmp_path), (3, 32, 64), 6)
    assert len(ds) == 2 and ds.stats.counts()["malformed_line"] == 1
    assert any(w.endswith("lm:2") for w in ds.stats.places["malformed_line"])


def test_oversized_image_is_a_counted_skip_before_decode(tmp_path, monkeypatch):
    from paddle_recipes.tasks.ocr_rec.dataset import DatasetConfig, RecDataset, collate

    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "small.png").write_bytes(_png(40, 16))
    (tmp_path / "img" / "huge.png").write_bytes(_png(400, 300))  # 120000 px > the 50000 limit below
    (tmp_path / "train.txt").write_text("small.png\tab\nhuge.png\tba\n", encoding="utf-8")
    import cv2

    decoded = []
    real = cv2.imdecode
    monkeypatch.setattr(cv2, "imdecode", lambda buf, flags: decoded.append(len(buf)) or real(buf, flags))
    cfg = DatasetConfig(data_dir=str(tmp_path / "img"), label_file_list=[str(tmp_path / "train.txt")],
                        max_image_pixels=50_000)
    ds = RecDataset(cfg, _charset(tmp_path), (3, 32, 64), 6)
    batch = collate([ds[0], ds[1]])
    assert batch["text"] == ["ab"] and batch["skipped"] == [f"{tmp_path / 'train.txt'}:2\ttoo_large"]
    small = len((tmp_path / "img" / "small.png").read_bytes())
    assert decoded and set(decoded) == {small}  # the huge one was never decoded (the small one: at build and load)


def test_det_truncated_image_is_one_line_error(tmp_path):
    import json

    import cv2

    from paddle_recipes.data import DataError, LoaderConfig, build_loader
    from paddle_recipes.tasks.det_ppyoloe.coco import CocoDetDataset, DetCollate, load_coco

    img = tmp_path / "img"
    img.mkdir()
    cv2.imwrite(str(img / "a.jpg"), np.zeros((64, 64, 3), np.uint8))
    good = (img / "a.jpg").read_bytes()
    (img / "b.jpg").write_bytes(good[: len(good) // 3])  # truncated
    (img / "c.jpg").write_bytes(b"not an image at all")
    images = [{"id": i + 1, "file_name": n, "width": 64, "height": 64} for i, n in enumerate(["a.jpg", "b.jpg", "c.jpg"])]
    images.append({"id": 1, "file_name": "a.jpg", "width": 64, "height": 64})  # duplicate id
    anns = [{"image_id": i, "category_id": 1, "bbox": [4, 4, 20, 20]} for i in (1, 2, 3)]  # no id, no area
    (tmp_path / "ann.json").write_text(json.dumps({"images": images, "annotations": anns,
                                                   "categories": [{"id": 1, "name": "x"}]}))
    idx = load_coco(tmp_path / "ann.json", img)
    assert idx.skipped()["duplicate_image_id"] == 1
    ds = CocoDetDataset(idx)
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=1), LoaderConfig(), collate_fn=DetCollate([64]))
    it = iter(loader)
    next(it)
    with pytest.raises(DataError, match=r"image .*b\.jpg \(image id 2\): corrupt JPEG \(cannot decode\)") as err:
        next(it)
    assert "\n" not in str(err.value)


def test_det_eval_scores_validated_annotations(tmp_path):
    from paddle_recipes.tasks.det_ppyoloe.coco import CocoIndex
    from paddle_recipes.tasks.det_ppyoloe.metrics import coco_evaluate, index_to_coco

    idx = CocoIndex("x.json", ".", cat_ids=[7], cat_names=["x"])
    idx.records = [{"im_id": 1, "file": "a.jpg", "width": 50, "height": 50,
                    "boxes": np.asarray([[0, 0, 10, 10]], np.float32), "classes": np.asarray([0])}]
    gt = index_to_coco(idx)
    assert gt["annotations"][0]["area"] == 100 and gt["annotations"][0]["id"] == 1
    perfect = {1: np.asarray([[0, 0.9, 0, 0, 10, 10]])}
    assert coco_evaluate(gt, perfect, idx.cat_ids, [1])["mAP"] == pytest.approx(1.0)
