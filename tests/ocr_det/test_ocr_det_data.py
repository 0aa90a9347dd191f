"""PaddleOCR det label files: parsing, ### ignore, and every bad input counted by file:line."""
import json

import cv2
import numpy as np
import pytest

from paddle_recipes.data import LabelFileError
from paddle_recipes.tasks.ocr_det.dataset import DetDataset
from paddle_recipes.tasks.ocr_det.labels import DetLabelError, parse_det_label


def _line(path, items):
    return f"{path}\t{json.dumps(items, ensure_ascii=False)}"


def _box(x, y, w, h, text="文字"):
    return {"transcription": text, "points": [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]}


@pytest.fixture()
def det_dir(tmp_path):
    img = np.full((60, 80, 3), 255, np.uint8)
    cv2.imwrite(str(tmp_path / "a.png"), img)
    cv2.imwrite(str(tmp_path / "big.png"), np.zeros((100, 100, 3), np.uint8))
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really a png")
    lines = [
        _line("a.png", [_box(5, 5, 40, 12), _box(5, 30, 30, 10, "###")]),            # 1 good, one ignored
        "a.png\t[{\"transcription\": \"x\", \"points\": [[1, 2], [3, 4]",           # 2 malformed JSON
        _line("a.png", [{"transcription": "t", "points": [[1, 1], [9, 1]]}, _box(5, 5, 20, 10)]),  # 3 < 3 pts
        _line("a.png", [{"transcription": "z", "points": [[1, 1], [5, 1], [9, 1]]}]),  # 4 zero area only
        _line("a.png", [{"transcription": "bow", "points": [[0, 0], [20, 10], [20, 0], [0, 10]]},
                        _box(40, 40, 20, 10)]),                                        # 5 self-intersecting
        _line("a.png", [_box(200, 200, 20, 10), _box(2, 2, 20, 10)]),                  # 6 one outside
        _line("a.png", []),                                                            # 7 no text
        _line("corrupt.png", [_box(1, 1, 10, 10)]),                                    # 8 corrupt image
        _line("big.png", [_box(1, 1, 10, 10)]),                                        # 9 too large (limit below)
        _line("missing.png", [_box(1, 1, 10, 10)]),                                    # 10 missing image
        "no tab on this line",                                                         # 11 malformed line
        _line("a.png", [_box(300, 300, 20, 10)]),                                      # 12 only outside
        _line("a.png", {"points": [[0, 0]]}),                                          # 13 not a list
    ]
    label = tmp_path / "det_label.txt"
    label.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path, label


def test_parse_det_label_reads_polygons_and_ignore_marks():
    boxes, problems = parse_det_label(json.dumps([_box(1, 2, 10, 5), _box(3, 3, 8, 8, "###"), _box(1, 1, 5, 5, "*")]),
                                      "f.txt:1")
    assert problems == [] and [b.ignore for b in boxes] == [False, True, True]
    assert boxes[0].text == "文字" and boxes[0].points.dtype == np.float32
    np.testing.assert_array_equal(boxes[0].points, [[1, 2], [11, 2], [11, 7], [1, 7]])


def test_every_bad_input_is_counted_with_file_line(det_dir):
    root, label = det_dir
    ds = DetDataset(label, root, max_image_pixels=100 * 100 - 1)
    src = str(label)
    places = {reason: sorted(p) for reason, p in ds.stats.places.items() if p}
    assert places == {
        "malformed_json": [f"{src}:13", f"{src}:2"],
        "malformed_line": [f"{src}:11"],
        "bad_polygon": [f"{src}:3 polygon 0"],
        "zero_area": [f"{src}:4 polygon 0"],
        "no_text": [f"{src}:4", f"{src}:7"],
        "self_intersecting": [f"{src}:5 polygon 0"],
        "missing_image": [f"{src}:10"],  # checked when the set is built, as the rec dataset does
    }
    loaded = [ds[i] for i in range(len(ds))]
    skips = sorted((s[1], s[2]) for s in loaded if isinstance(s, tuple))
    assert skips == [(f"{src}:12", "no_text"), (f"{src}:8", "corrupt_image"),
                     (f"{src}:9", "too_large")]
    good = {s["source"]: s for s in loaded if isinstance(s, dict)}
    assert sorted(good) == [f"{src}:1", f"{src}:3", f"{src}:5", f"{src}:6"]
    assert good[f"{src}:1"]["ignore_tags"] == [False, True] and good[f"{src}:1"]["image"].shape == (60, 80, 3)
    assert good[f"{src}:5"]["ignore_tags"] == [True, False]  # the bow-tie stays, as an ignored region
    assert good[f"{src}:6"]["polygon_problems"] == [(f"{src}:6 polygon 0", "outside_image")]
    assert len(good[f"{src}:6"]["polys"]) == 1


def test_strict_mode_raises_one_line_naming_file_line(det_dir):
    root, label = det_dir
    lines = label.read_text(encoding="utf-8").splitlines()
    label.write_text("\n".join([lines[0], lines[1]]) + "\n", encoding="utf-8")
    with pytest.raises(DetLabelError, match=rf"^{label}:2: malformed_json: .*column") as exc:
        DetDataset(label, root, strict=True)
    assert "\n" not in str(exc.value)
    label.write_text("\n".join([lines[0], "no tab"]) + "\n", encoding="utf-8")
    with pytest.raises(LabelFileError, match=rf"{label}:2: malformed label line"):
        DetDataset(label, root, strict=True)
