"""Fault suite: images that lie about their size are checked from their own header before any decode, in
every mode (issue 21 item 4). A det json entry claiming 96x96 for a 20000x20000 file was decoded in full
(10.1 GB RSS, 127 s); OCR --mode predict had no size guard at all (2.7 GB).

The 20000x20000 file here is a PNG header without pixel data (a real one would need 1.2 GB to write): the
guard reads only the header, and the decoders are replaced by a function that fails the test if called.
"""
from __future__ import annotations

import json
import struct
import zlib

import cv2
import pytest

from paddle_recipes.data import DataError
from paddle_recipes.tasks.det_ppyoloe import coco, predict_export
from paddle_recipes.tasks.ocr_rec import evaluate as ocr_evaluate
from paddle_recipes.tasks.ocr_rec.charset import CharDict


def _huge_png(path, w=20000, h=20000):
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))
    return path


def _never(*args, **kwargs):
    raise AssertionError("the decoder was called on an oversized image")


def _det_json(tmp_path):
    (tmp_path / "img").mkdir()
    _huge_png(tmp_path / "img" / "big.png")
    ann = {"images": [{"id": 1, "file_name": "big.png", "width": 96, "height": 96}],
           "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [4, 4, 30, 20], "area": 600}],
           "categories": [{"id": 1, "name": "x"}]}
    (tmp_path / "ann.json").write_text(json.dumps(ann))
    return tmp_path / "ann.json", tmp_path / "img"


def test_det_json_that_lies_is_a_counted_too_large_skip(tmp_path, monkeypatch, caplog):
    ann, img = _det_json(tmp_path)
    (img / "ok.png").write_bytes((img / "big.png").read_bytes())  # keep one usable image so the index builds
    data = json.loads(ann.read_text())
    data["images"].append({"id": 2, "file_name": "ok.png", "width": 96, "height": 96})
    ann.write_text(json.dumps(data))
    _huge_png(img / "ok.png", 96, 96)
    monkeypatch.setattr(cv2, "imdecode", _never)
    with caplog.at_level("WARNING"):
        idx = coco.load_coco(ann, img)
    assert [r["im_id"] for r in idx.records] == [2]
    assert idx.counts["too_large"] == 1
    assert (f"image id 1 ({img / 'big.png'}: 20000x20000 > max_image_pixels 80000000; the json says 96x96)"
            in caplog.text)


def test_det_decode_checks_the_header_again(tmp_path, monkeypatch):
    """An index built without file checks (or a file replaced since): the dataset refuses before decoding."""
    ann, img = _det_json(tmp_path)
    idx = coco.load_coco(ann, img, check_files=False)  # trusts the json's 96x96
    assert len(idx.records) == 1
    monkeypatch.setattr(cv2, "imdecode", _never)
    with pytest.raises(coco.DetDataError, match=r"big.png \(image id 1\): PNG of 20000x20000 = 400000000 pixels > "
                                                r"max_image_pixels 80000000: not decoded"):
        coco.CocoDetDataset(idx)[0]


def test_det_predict_refuses_oversized_image(tmp_path, monkeypatch):
    big = _huge_png(tmp_path / "big.png")
    monkeypatch.setattr(cv2, "imdecode", _never)
    with pytest.raises(DataError, match="20000x20000 = 400000000 pixels > max_image_pixels 80000000: not decoded"):
        predict_export.load_rgb(str(big))


def test_ocr_predict_skips_oversized_image_without_decoding(tmp_path, monkeypatch):
    import paddle

    big = _huge_png(tmp_path / "big.png")
    monkeypatch.setattr(cv2, "imdecode", _never)
    model = paddle.nn.Linear(2, 2)  # never called: no readable image
    results, bad = ocr_evaluate.recognize_files(model, [str(big)], CharDict(list("ab")), (3, 32, 128))
    assert results == [] and bad == [(str(big), "PNG of 20000x20000 = 400000000 pixels > max_image_pixels 80000000: "
                                                "not decoded")]
