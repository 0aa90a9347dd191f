"""PP-YOLOE parts: TAL assigner, losses, model shapes, RepVGG re-parameterisation, NMS."""
import math

import numpy as np
import paddle
import pytest

from paddle_recipes.tasks.det_ppyoloe.assigner import TaskAlignedAssigner, box_iou_pairwise
from paddle_recipes.tasks.det_ppyoloe.backbone import RepVggBlock
from paddle_recipes.tasks.det_ppyoloe.losses import (bbox_to_distance, distribution_focal_loss, giou, giou_loss,
                                                     varifocal_loss)
from paddle_recipes.tasks.det_ppyoloe.model import SIZES, build_ppyoloe
from paddle_recipes.tasks.det_ppyoloe.postprocess import multiclass_nms, nms

T = paddle.to_tensor


def _assign(scores, boxes, anchors, gt_labels, gt_boxes, pad, topk=2, C=2):
    return TaskAlignedAssigner(topk=topk, alpha=1.0, beta=6.0)(
        T(scores, dtype="float32")[None], T(boxes, dtype="float32")[None], T(anchors, dtype="float32"),
        T(gt_labels, dtype="int64")[None], T(gt_boxes, dtype="float32")[None], T(pad, dtype="float32")[None],
        bg_index=C)


def test_assigner_topk_metric_and_soft_targets():
    gt = [[0, 0, 64, 64]]
    anchors = [[8, 8], [24, 24], [40, 40], [100, 100]]
    boxes = [[0, 0, 64, 64], [32, 32, 96, 96], [0, 0, 64, 64], [0, 0, 64, 64]]
    scores = [[0.1, 0.5], [0.1, 0.9], [0.1, 0.2], [0.1, 0.9]]  # class 1 column matters
    labels, assigned_boxes, soft = _assign(scores, boxes, anchors, [[1]], gt, [[1.0]])
    labels, soft = labels.numpy()[0], soft.numpy()[0]
    # metrics for class 1: a0 = 0.5*1, a1 = 0.9*(1/7)^6 ~ 0, a2 = 0.2*1, a3 outside the gt -> top-2 are a0, a2
    np.testing.assert_array_equal(labels, [1, 2, 1, 2])
    np.testing.assert_allclose(soft[:, 1], [1.0, 0.0, 0.4, 0.0], atol=1e-5)  # metric / max_metric * max_iou
    np.testing.assert_allclose(soft[:, 0], 0.0)
    np.testing.assert_allclose(assigned_boxes.numpy()[0][[0, 2]], [gt[0], gt[0]])


def test_assigner_conflict_goes_to_highest_iou_and_padding_ignored():
    gts = [[0, 0, 40, 40], [0, 0, 100, 100], [0, 0, 100, 100]]
    pad = [[1.0], [1.0], [0.0]]  # third gt is padding
    anchors = [[10, 10]]
    boxes = [[0, 0, 90, 90]]  # IoU 0.81 with gt1, 0.198 with gt0
    labels, assigned_boxes, soft = _assign([[0.5, 0.5]], boxes, anchors, [[0], [1], [0]], gts, pad, topk=1)
    assert int(labels.numpy()[0, 0]) == 1
    np.testing.assert_allclose(assigned_boxes.numpy()[0, 0], gts[1])
    assert soft.numpy()[0, 0, 1] == pytest.approx(0.81, abs=1e-4)
    # with the real gt1 padded out, the anchor falls to gt0
    labels, _, _ = _assign([[0.5, 0.5]], boxes, anchors, [[0], [1], [0]], gts, [[1.0], [0.0], [0.0]], topk=1)
    assert int(labels.numpy()[0, 0]) == 0


def test_assigner_no_gt_is_all_background():
    a = TaskAlignedAssigner()
    labels, boxes, soft = a(paddle.rand([2, 5, 3]), paddle.rand([2, 5, 4]), paddle.rand([5, 2]),
                            paddle.zeros([2, 0, 1], "int64"), paddle.zeros([2, 0, 4]), paddle.zeros([2, 0, 1]), 3)
    assert (labels.numpy() == 3).all() and float(soft.sum()) == 0.0


def test_box_iou_pairwise_known_values():
    iou = box_iou_pairwise(T([[0., 0, 2, 2]]), T([[1., 0, 3, 2], [0., 0, 2, 2], [5., 5, 6, 6]])).numpy()
    np.testing.assert_allclose(iou, [[1 / 3, 1.0, 0.0]], atol=1e-6)


def test_giou_closed_form():
    a = T([[0., 0, 1, 1], [0., 0, 2, 2], [0., 0, 2, 2]])
    b = T([[2., 0, 3, 1], [1., 0, 3, 2], [0., 0, 2, 2]])
    np.testing.assert_allclose(giou(a, b).numpy(), [-1 / 3, 1 / 3, 1.0], atol=1e-6)
    w = T([1.0, 2.0, 3.0])
    assert float(giou_loss(a, b, w)) == pytest.approx((4 / 3) * 1 + (2 / 3) * 2 + 0.0, abs=1e-5)


def test_dfl_closed_form():
    R = 16
    logits = paddle.to_tensor(np.random.RandomState(0).randn(2, 4, R + 1).astype("float32"))
    target = T([[3.0, 2.5, 0.0, 15.99], [7.25, 1.0, 4.5, 10.0]])
    w = T([1.0, 0.5])
    got = float(distribution_focal_loss(logits, target, w))
    lp = logits.numpy() - np.log(np.exp(logits.numpy()).sum(-1, keepdims=True))
    want = 0.0
    for n in range(2):
        sides = []
        for s in range(4):
            t = float(target.numpy()[n, s])
            l = int(math.floor(t))
            sides.append(-((l + 1 - t) * lp[n, s, l] + (t - l) * lp[n, s, l + 1]))
        want += np.mean(sides) * float(w.numpy()[n])
    assert got == pytest.approx(want, rel=1e-5)
    # uniform logits, integer target -> log(R + 1)
    u = float(distribution_focal_loss(paddle.zeros([1, 4, R + 1]), T([[3.0, 3.0, 3.0, 3.0]]), T([1.0])))
    assert u == pytest.approx(math.log(R + 1), rel=1e-5)


def test_bbox_to_distance_clips():
    d = bbox_to_distance(T([[5.0, 5.0]]), T([[0.0, 1.0, 40.0, 6.0]]), reg_max=16).numpy()
    np.testing.assert_allclose(d, [[5.0, 4.0, 15.99, 1.0]], atol=1e-5)


def test_varifocal_closed_form():
    logits = T([[0.3, -1.2], [2.0, 0.1]])
    q = T([[0.7, 0.0], [0.0, 0.0]])
    one_hot = T([[1.0, 0.0], [0.0, 0.0]])
    got = float(varifocal_loss(logits, q, one_hot, alpha=0.75, gamma=2.0))
    x, t, y = logits.numpy(), q.numpy(), one_hot.numpy()
    p = 1 / (1 + np.exp(-x))
    bce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    w = 0.75 * p ** 2 * (1 - y) + t * y
    assert got == pytest.approx(float((bce * w).sum()), rel=1e-5)


def test_tiny_model_shapes_and_finite_loss():
    model = build_ppyoloe("tiny", num_classes=3)
    model.eval()
    image = paddle.randn([2, 3, 96, 128])
    boxes, scores = model(image)
    L = 12 * 16 + 6 * 8 + 3 * 4
    assert boxes.shape == [2, L, 4] and scores.shape == [2, L, 3]
    # eval outputs = the head's raw outputs decoded: sigmoid scores, anchor -/+ expected DFL distance x stride
    cls_logits, reg, anchors, strides = (t.numpy() for t in model.head(model.neck(model.backbone(image))))
    np.testing.assert_allclose(scores.numpy(), 1 / (1 + np.exp(-cls_logits.astype(np.float64))), rtol=1e-5, atol=1e-6)
    prob = np.exp(reg - reg.max(-1, keepdims=True))
    dist = (prob / prob.sum(-1, keepdims=True)) @ np.arange(reg.shape[-1], dtype=np.float64) * strides  # [B, L, 4] px
    expected = np.concatenate([anchors - dist[..., :2], anchors + dist[..., 2:]], axis=-1)
    np.testing.assert_allclose(boxes.numpy(), expected, rtol=1e-5, atol=1e-3)
    assert (strides[:192] == 8).all() and (strides[-12:] == 32).all()  # P3 (12 x 16 cells) ... P5 (3 x 4)
    model.train()
    gt_bbox = T([[[4., 4, 60, 50], [0, 0, 0, 0]], [[10., 20, 90, 90], [30, 30, 120, 90]]])
    gt_class = T([[[0], [0]], [[2], [1]]], dtype="int64")
    pad = T([[[1.0], [0.0]], [[1.0], [1.0]]])
    out = model(paddle.randn([2, 3, 96, 128]), gt_class, gt_bbox, pad)
    for k in ("loss", "loss_cls", "loss_iou", "loss_dfl"):
        assert math.isfinite(float(out[k])), k
    assert out["num_pos"] > 0
    out["loss"].backward()
    grads = [p.grad for p in model.parameters() if not p.stop_gradient]
    assert all(g is not None for g in grads)


def test_sizes_scale_parameter_count():
    n = {s: sum(int(np.prod(p.shape)) for p in build_ppyoloe(s, 80).parameters()) for s in ("tiny", "s")}
    assert n["tiny"] < n["s"]
    assert set(SIZES) >= {"tiny", "s", "m", "l"}
    with pytest.raises(ValueError, match="unknown PP-YOLOE size"):
        build_ppyoloe("xl", 80)


def _randomise_bn(model):
    rng = np.random.RandomState(1)
    for layer in model.sublayers():
        if isinstance(layer, paddle.nn.BatchNorm2D):
            c = layer._mean.shape[0]
            layer._mean.set_value(rng.randn(c).astype("float32") * 0.1)
            layer._variance.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            layer.weight.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            layer.bias.set_value(rng.randn(c).astype("float32") * 0.1)


def test_repvgg_block_reparameterize_equivalence():
    block = RepVggBlock(6, 8)
    _randomise_bn(block)
    block.eval()
    x = paddle.randn([2, 6, 10, 12])
    before = block(x).numpy()
    block.reparameterize()
    assert block.fused is not None and not hasattr(block, "conv3")
    np.testing.assert_allclose(block(x).numpy(), before, atol=1e-4)


def test_model_reparameterize_equivalence():
    model = build_ppyoloe("tiny", num_classes=3)
    _randomise_bn(model)
    model.eval()
    x = paddle.randn([1, 3, 64, 64])
    b0, s0 = [t.numpy() for t in model(x)]
    assert model.reparameterize() > 0
    b1, s1 = [t.numpy() for t in model(x)]
    np.testing.assert_allclose(s1, s0, atol=1e-4)
    np.testing.assert_allclose(b1, b0, atol=1e-3)  # pixels


def test_nms_and_multiclass_nms():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]], np.float32)
    keep = nms(boxes, np.array([0.9, 0.8, 0.7]), 0.5)
    np.testing.assert_array_equal(keep, [0, 2])
    # same two overlapping boxes but different classes -> both kept
    scores = np.array([[0.9, 0.0], [0.0, 0.8], [0.005, 0.0]], np.float32)
    det = multiclass_nms(boxes, scores, score_threshold=0.01, iou_threshold=0.5)
    assert det.shape == (2, 6)
    np.testing.assert_array_equal(det[:, 0], [0, 1])
    np.testing.assert_allclose(det[:, 2:], boxes[:2])
