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
