"""The faster det eval path (issue 55) gives what the code before it gave: the same DB boxes and scores on seeded
DB-like maps and the same metric counts on seeded gt/det sets (tests/fixtures/ppocr_det/eval_regression.json, written by
tests/scripts/make_det_eval_regression.py from the code before the change); PaddleOCR's own outputs on its cases are
checked in test_ocr_det_pieces.py."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "scripts"))
import make_det_eval_regression as fx  # noqa: E402

from paddle_recipes.tasks.ocr_det.metrics import evaluate_image  # noqa: E402
from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess  # noqa: E402

REF = json.loads(fx.FIXTURE.read_text())
MAPS = fx.prob_maps()


def _points(boxes) -> list:
    """quad boxes (an int32 array) and poly boxes (lists of point lists) as plain lists."""
    return boxes if isinstance(boxes, list) else np.asarray(boxes).tolist()


@pytest.mark.parametrize("name", sorted(fx.POST_CASES))
def test_db_boxes_and_scores_as_before(name):
    post = DBPostProcess(**fx.POST_CASES[name])
    for k, (m, shape) in enumerate(MAPS):
        got = post(m[None, None], [shape])[0]
        want = REF["post"][name][k]
        assert _points(got["points"]) == want["points"], (name, k)
        np.testing.assert_allclose(got["scores"], want["scores"], rtol=1e-6, err_msg=f"{name} map {k}")


def test_db_boxes_of_a_batch_equal_one_by_one():
    post = DBPostProcess(**fx.POST_CASES["quad_fast"])
    same = [m for m, _ in MAPS if m.shape == MAPS[0][0].shape] or [MAPS[0][0]]
    batch = post(np.stack(same)[:, None], [MAPS[0][1]] * len(same))
    assert [np.asarray(r["points"]).tolist() for r in batch] == [
        np.asarray(post(m[None, None], [MAPS[0][1]])[0]["points"]).tolist() for m in same]


def test_metric_counts_as_before():
    assert [evaluate_image(g, i, d) for g, i, d in fx.metric_images()] == REF["metric"]


def test_normalize_table_gives_the_formulas_float32_bits():
    from paddle_recipes.tasks.ocr_det.transforms import IMAGENET_MEAN, IMAGENET_STD, normalize_chw

    img = np.random.default_rng(0).integers(0, 256, (40, 50, 3), dtype=np.uint8)
    img.reshape(-1, 3)[:256] = np.arange(256, dtype=np.uint8)[:, None]  # every value in every channel
    for x in (img, img[:, ::-1]):  # contiguous and a strided view
        want = ((x.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1)
        got = normalize_chw(x)
        assert got.dtype == np.float32 and got.flags.c_contiguous
        assert np.array_equal(got.view(np.uint32), np.ascontiguousarray(want).view(np.uint32))


def test_eval_batch_keeps_ground_truth_out_of_paddles_tensor_conversion():
    from collections.abc import Sequence

    from paddle.io.dataloader.flat import _flatten_batch

    from paddle_recipes.tasks.ocr_det.batch import collate

    img = np.arange(2 * 3 * 32 * 64, dtype=np.float32).reshape(2, 3, 32, 64)
    polys = [np.float32([[0, 0], [9, 0], [9, 4], [0, 4]])] * 3
    one = collate([{"image": img[0], "shape": np.float32([32, 64, 1, 1]), "polys": polys, "ignore_tags": [0, 1, 0]}])
    assert np.shares_memory(one["image"], img[0]) and one["image"].shape == (1, 3, 32, 64)  # no padded copy
    assert not isinstance(one["polys"], Sequence) and [p.tolist() for p in one["polys"][0]] == [p.tolist() for p in polys]
    flat, _ = _flatten_batch(one)
    assert len(flat) == 4  # image, num_samples, image_hw, shape: not the 3 polygons
    two = collate([{"image": img[0][:, :16], "shape": np.float32([16, 64, 1, 1]), "polys": polys[:1],
                    "ignore_tags": [0]}, {"image": img[1], "shape": np.float32([32, 64, 1, 1]), "polys": polys,
                                          "ignore_tags": [0, 1, 0]}])
    assert two["image"].shape == (2, 3, 32, 64) and not two["image"][0, :, 16:].any()
    assert list(two["ignore_tags"]) == [[0], [0, 1, 0]]
