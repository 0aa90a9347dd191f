"""benchmarks/eval_vs_paddleocr.py's pieces without PaddleOCR: the replay model, the timing proxy, the figures."""
import numpy as np
import paddle
import pytest

from benchmarks.eval_vs_paddleocr import compare_boxes, per_image
from benchmarks.harness import ppocr_eval_timer as P


def test_replay_returns_the_saved_maps_in_order_and_refuses_other_images(tmp_path):
    maps = [np.full((1, 1, 32, 64), k, np.float32) for k in range(2)]
    for k, m in enumerate(maps):
        np.save(tmp_path / f"{k:05d}.npy", m)
    model = P.make_replay(str(tmp_path), "maps")
    x = paddle.zeros([1, 3, 32, 64])
    assert [float(model(x)["maps"].numpy().max()) for _ in range(2)] == [0.0, 1.0]
    with pytest.raises(ValueError, match="missing"):
        model(x)
    with pytest.raises(ValueError, match="not the same images"):
        P.make_replay(str(tmp_path), "maps")(paddle.zeros([1, 3, 64, 32]))


def test_timed_proxy_adds_seconds_keeps_points_and_passes_attributes():
    class Post:
        character = "ab"

        def __call__(self, preds, shapes):
            return [{"points": np.int32([[[0, 0], [3, 0], [3, 2], [0, 2]]])}]

    before, n = P.T["post_s"], len(P.BOXES)
    post = P.Timed(Post(), "post_s", record=True)
    assert hasattr(post, "character") and post(None, None)[0]["points"].shape == (1, 4, 2)
    assert P.T["post_s"] > before and len(P.BOXES) == n + 1
    assert P.boxes_as_lists()[-1] == [[[0, 0], [3, 0], [3, 2], [0, 2]]]


def test_figures_per_image_and_box_comparison():
    raw = {"images": 4, "total_cpu_s": 1.0, "forward_cpu_s": 0.6, "total_s": 2.0, "forward_s": 1.0, "post_s": 0.2,
           "metric_s": 0.1, "metric": {"hmean": 0.5}}
    f = per_image(raw)
    assert (f["outside_cpu_ms"], f["outside_wall_ms"], f["post_wall_ms"], f["hmean"]) == (100.0, 250.0, 50.0, 0.5)
    a = [[[[0, 0], [1, 0], [1, 1], [0, 1]]], []]
    assert compare_boxes(a, [a[0], [[[0, 0], [1, 0], [1, 1], [0, 1]]]]) == {
        "pages": 2, "pages_with_identical_boxes": 1, "boxes": [1, 2]}
