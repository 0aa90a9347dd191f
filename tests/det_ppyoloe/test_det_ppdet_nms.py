"""Host NMS (tasks/det_ppyoloe/postprocess.py) = ppdet's PP-YOLOE post-processing (Paddle's multiclass_nms3) on the same
raw outputs: per-class nms_top_k, keep_top_k across classes, ties, normalized, class-major order."""
from __future__ import annotations

import numpy as np
import paddle
import pytest

from paddle_recipes.tasks.det_ppyoloe.postprocess import multiclass_nms, postprocess_batch


def _raw_outputs(seed: int, ties: bool, B: int = 2, L: int = 600, C: int = 20):
    """PP-YOLOE head outputs (scores [B, C, L], ltrb distances, anchor points, strides) crowded enough that
    every class has more than nms_top_k candidates and more than keep_top_k boxes survive NMS."""
    rng = np.random.default_rng(seed)
    anchors = rng.uniform(0, 320, (L, 2)).astype("float32")
    strides = rng.choice([8.0, 16.0, 32.0], (L, 1)).astype("float32")
    dist = rng.uniform(0.2, 6, (B, L, 4)).astype("float32")
    scores = rng.uniform(0, 0.2, (B, C, L)).astype("float32")
    if ties:  # many equal scores: the tie rules decide which boxes survive the top-k cuts
        scores = (np.round(scores * 64) / 64).astype("float32")
    return scores, dist, anchors, strides


@pytest.mark.parametrize("ties,normalized", [(False, True), (True, True), (True, False)])
def test_same_detections_as_ppdet_post_process(ties, normalized):
    pytest.importorskip("ppdet", reason="paddledet not installed (.ci/setup_test_env.sh installs it)")
    from ppdet.modeling.bbox_utils import batch_distance2bbox
    from ppdet.modeling.heads.ppyoloe_head import PPYOLOEHead
    from ppdet.modeling.layers import MultiClassNMS

    nms = {"score_threshold": 0.01, "nms_top_k": 100, "keep_top_k": 300, "iou_threshold": 0.7,
           "normalized": normalized}
    scores, dist, anchors, strides = _raw_outputs(1, ties)
    head = PPYOLOEHead(in_channels=[8, 8, 8], num_classes=scores.shape[1], nms=MultiClassNMS(
        score_threshold=0.01, nms_top_k=100, keep_top_k=300, nms_threshold=0.7, normalized=normalized))
    head.eval()
    scale = np.array([[0.8, 1.25], [1.0, 0.5]], "float32")  # (sy, sx): anisotropic on purpose
    t = [paddle.to_tensor(a) for a in (scores, dist, anchors, strides)]
    bbox, bbox_num, _ = head.post_process(tuple(t), paddle.to_tensor(scale))
    ref = np.split(bbox.numpy(), np.cumsum(bbox_num.numpy())[:-1])
    boxes = (batch_distance2bbox(t[2], t[1]) * t[3]).numpy()  # the raw boxes our model outputs (input pixels)

    ours = postprocess_batch(boxes, scores.transpose(0, 2, 1), scale, **nms)
    per_class_cands = (scores > 0.01).sum(-1)
    assert per_class_cands.min() > nms["nms_top_k"]  # the per-class cut binds in every class
    uncapped = postprocess_batch(boxes, scores.transpose(0, 2, 1), scale, **{**nms, "keep_top_k": -1})
    assert min(len(u) for u in uncapped) > nms["keep_top_k"]  # ... and so does the per-image cap
    for o, r in zip(ours, ref):
        assert o.shape == r.shape == (300, 6)
        np.testing.assert_array_equal(o[:, :2], r[:, :2])  # class and score, in ppdet's row order
        np.testing.assert_allclose(o[:, 2:], r[:, 2:], rtol=4 * np.finfo(np.float32).eps, atol=0)


def test_rules_on_hand_made_cases():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30], [0, 0, 10, 10]], np.float32)
    scores = np.array([[0.9, 0.5], [0.8, 0.5], [0.7, 0.6], [0.0, 0.5]], np.float32)
    # nms_top_k is per class: with 1, each class keeps its own best candidate
    det = multiclass_nms(boxes, scores, score_threshold=0.01, nms_top_k=1, iou_threshold=0.5, keep_top_k=-1)
    np.testing.assert_array_equal(det[:, :2], np.float32([[0, 0.9], [1, 0.6]]))
    # keep_top_k across classes; equal scores: the lower class wins; rows class-major, score order inside a class
    det = multiclass_nms(boxes, scores, score_threshold=0.01, nms_top_k=-1, iou_threshold=0.5, keep_top_k=3)
    np.testing.assert_array_equal(det[:, :2], np.float32([[0, 0.9], [0, 0.7], [1, 0.6]]))
    det = multiclass_nms(boxes, scores, score_threshold=0.01, nms_top_k=-1, iou_threshold=0.5, keep_top_k=4)
    np.testing.assert_array_equal(det[:, :2], np.float32([[0, 0.9], [0, 0.7], [1, 0.6], [1, 0.5]]))
    np.testing.assert_array_equal(det[3, 2:], boxes[0])  # of the three 0.5 boxes of class 1 the first index
    # normalized=False: areas (w + 1)(h + 1); boxes 0/1 IoU 0.81 -> 100/121 = 0.826 with the +1
    two = boxes[:2]
    s = np.array([[0.9], [0.8]], np.float32)
    assert len(multiclass_nms(two, s, iou_threshold=0.82, normalized=True)) == 2
    assert len(multiclass_nms(two, s, iou_threshold=0.82, normalized=False)) == 1
    # the score threshold is strict; background_label drops a class
    assert len(multiclass_nms(boxes, scores, score_threshold=0.9)) == 0
    assert set(multiclass_nms(boxes, scores, background_label=0)[:, 0]) == {1}
