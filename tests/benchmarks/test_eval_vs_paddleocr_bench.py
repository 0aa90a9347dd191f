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


def test_rec_pieces_texts_lines_and_figures(tmp_path):
    """Rec: the proxy keeps decoded texts (ours: [(text, score)]; PaddleOCR's: ([(text, score)], labels)), the
    line filter keeps what both sides score alike, the figures carry acc / norm_edit_dis."""
    from benchmarks.eval_vs_paddleocr import compare_texts, rec_lines

    n = len(P.TEXTS)
    P.Timed(lambda: [("ab", 0.9)], "post_s", record=True)()
    P.Timed(lambda: ([("c", 0.5)], [("c", 1.0)]), "post_s", record=True)()
    assert P.TEXTS[n:] == ["ab", "c"]
    keys, label = tmp_path / "keys.txt", tmp_path / "label.txt"
    keys.write_text("a\nb\n", encoding="utf-8")
    label.write_text("x.jpg\tab\ny.jpg\tabc\nz.jpg\ta b\nw.jpg\t" + "a" * 24 + "\n", encoding="utf-8")
    assert rec_lines(label, keys, 3) == ["x.jpg\tab", "z.jpg\ta b", "x.jpg\tab"]
    assert compare_texts(["a", "b"], ["a", "c", "d"]) == {"lines": 2, "identical_texts": 1, "texts": [2, 3]}
    raw = {"images": 2, "total_cpu_s": 1.0, "forward_cpu_s": 0.5, "total_s": 1.0, "forward_s": 0.5, "post_s": 0.1,
           "metric_s": 0.1, "metric": {"acc": 0.5, "norm_edit_dis": 0.75}}
    assert per_image(raw)["acc"] == 0.5 and per_image(raw)["norm_edit_dis"] == 0.75
