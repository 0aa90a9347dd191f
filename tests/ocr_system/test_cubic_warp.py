"""The crop warp computes OpenCV 4.x's bytes (paddleocr / paddlex's pin) whatever OpenCV is installed.

References: tests/fixtures/cubic_warp/opencv4.json, written by tests/scripts/cubic_warp_cases.py under OpenCV 4.10
(paddlex 3.7's opencv-contrib-python): per deterministic case the image digest, the matrix (float hex) and the
crop digest. OpenCV 5.1 makes other bytes on 118 of those 120 crops, so the test separates the two."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.harness.official_system import VENV3  # noqa: E402
from paddle_recipes.tasks.ocr_det.cubic_warp import invert3x3, warp_perspective_cubic  # noqa: E402
from paddle_recipes.tasks.ocr_det.geometry import rotate_crop, warp_quad  # noqa: E402
from tests.scripts.cubic_warp_cases import N_CASES, case_image, case_quad, digest  # noqa: E402

REF = json.loads((ROOT / "tests/fixtures/cubic_warp/opencv4.json").read_text(encoding="utf-8"))


def test_reference_was_written_by_opencv4_and_covers_the_cases():
    assert REF["opencv"].startswith("4.") and len(REF["cases"]) == N_CASES


def test_warp_equals_opencv4_bytes():
    wrong = []
    for k, row in enumerate(REF["cases"]):
        img = case_image(k)
        assert digest(img) == row["image"], k  # the inputs are the ones the reference saw
        quad, ow, oh = case_quad(k, img)
        assert [ow, oh] == row["size"], k
        m = np.array([float.fromhex(v) for v in row["m"]]).reshape(3, 3)
        # the matrix comes from this OpenCV's getPerspectiveTransform, the same in 4.10 and 5.1
        here = cv2.getPerspectiveTransform(quad, np.float32([[0, 0], [ow, 0], [ow, oh], [0, oh]]))
        assert np.array_equal(here, m), k
        if digest(warp_perspective_cubic(img, m, ow, oh)) != row["crop"] or digest(warp_quad(img, quad)) != row["crop"]:
            wrong.append(k)  # the second: the system's crop path uses it
    assert not wrong, f"{len(wrong)} of {N_CASES} crops differ from OpenCV 4.10's: cases {wrong[:10]}"


def test_invert3x3_is_an_inverse():
    m = np.array([[1.5, 0.2, -3.0], [0.1, 0.9, 7.0], [1e-4, -2e-4, 1.0]])
    assert np.allclose(invert3x3(m) @ m, np.eye(3), atol=1e-12)
    assert not invert3x3(np.zeros((3, 3))).any()  # singular: zeros, as OpenCV leaves it


def test_bad_input_is_one_clear_error():
    with pytest.raises(ValueError, match="uint8"):
        warp_perspective_cubic(np.zeros((4, 4), np.float32), np.eye(3), 2, 2)
    with pytest.raises(ValueError, match="positive"):
        warp_perspective_cubic(np.zeros((4, 4), np.uint8), np.eye(3), 0, 2)


def test_zero_side_is_left_to_opencv_as_paddleocr_does():
    img = np.arange(30 * 40, dtype=np.uint8).reshape(30, 40)
    flat = np.float32([[5, 5], [25, 5], [25, 5], [5, 5]])  # height 0: OpenCV makes a source-sized image
    assert rotate_crop(img, flat).shape[:2] in {(30, 40), (40, 30)}


def test_equals_paddlex_opencv_on_random_crops():
    """In paddleocr 3.7's side venv (OpenCV 4.10): our warp == cv2.warpPerspective on random rotated / perspective
    quads, partly outside the image, 1 and 3 channels."""
    if not VENV3.exists():
        pytest.skip(f"paddleocr 3.7 side venv not found: {VENV3}")
    code = f"""
import sys, numpy as np, cv2
sys.path.insert(0, {str(ROOT)!r})
from paddle_recipes.tasks.ocr_det.cubic_warp import warp_perspective_cubic
assert cv2.__version__.startswith("4."), cv2.__version__
rng = np.random.default_rng(0); bad = n = 0
for t in range(150):
    H, W = rng.integers(40, 200), rng.integers(40, 300)
    img = rng.integers(0, 256, (H, W, 3) if t % 4 else (H, W), dtype=np.uint8)
    q = (rng.uniform(-20, 20, (4, 2)) + [[0, 0], [120, 10], [125, 50], [4, 40]] + rng.uniform(-20, [W, H])).astype(np.float32)
    ow, oh = int(rng.integers(1, 200)), int(rng.integers(1, 60))
    m = cv2.getPerspectiveTransform(q, np.float32([[0, 0], [ow, 0], [ow, oh], [0, oh]]))
    a = cv2.warpPerspective(img, m, (ow, oh), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)
    bad += not np.array_equal(a, warp_perspective_cubic(img, m, ow, oh)); n += 1
print(n, bad)
"""
    out = subprocess.run([str(VENV3), "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    n, bad = map(int, out.stdout.split())
    assert n == 150 and bad == 0
