"""Our DB training/eval pieces vs PaddleOCR's own implementations on the same inputs.

tests/fixtures/ppocr_det/pieces.json holds PaddleOCR's outputs (tests/scripts/make_ppocr_det_fixtures.py
--only pieces, float64 where it computes in float); the inputs are rebuilt here by the same
functions of that script (numpy/cv2 only). Float comparisons use 1e-9 relative (both sides are float64 or
the same float32 numpy/OpenCV ops); integer outputs (boxes, counts, crops) must be equal.
"""
import json
import sys
from pathlib import Path

import numpy as np
import paddle
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "scripts"))
import make_ppocr_det_fixtures as fx  # noqa: E402

from paddle_recipes.tasks.ocr_det.label_maps import make_border_map, make_shrink_map  # noqa: E402
from paddle_recipes.tasks.ocr_det.losses import DBLoss  # noqa: E402
from paddle_recipes.tasks.ocr_det.metrics import DetMetric, combine_results, evaluate_image  # noqa: E402
from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess  # noqa: E402
from paddle_recipes.tasks.ocr_det.transforms import det_resize_for_test, east_random_crop  # noqa: E402

REF = json.loads((Path(__file__).parent.parent / "fixtures" / "ppocr_det" / "pieces.json").read_text())


@pytest.mark.parametrize("name,kwargs,cbn", fx.LOSS_CASES, ids=[c[0] for c in fx.LOSS_CASES])
def test_db_loss_equals_paddleocr(name, kwargs, cbn):
    maps, labels = fx.loss_inputs()
    pred = fx.loss_predicts(maps, cbn, paddle.to_tensor)
    got = DBLoss(**kwargs)(pred, [None] + [paddle.to_tensor(x) for x in labels[1:]])
    assert set(got) == set(REF["loss"][name])
    for key, want in REF["loss"][name].items():
        np.testing.assert_allclose(float(got[key]), want, rtol=1e-9, atol=1e-12, err_msg=key)


def test_db_loss_is_differentiable_and_rejects_unknown_main_loss():
    maps, labels = fx.loss_inputs()
    x = paddle.to_tensor(maps.astype("float32"), stop_gradient=False)
    loss = DBLoss(main_loss_type="BCELoss")({"maps": x}, [None] + [paddle.to_tensor(v.astype("float32"))
                                                                  for v in labels[1:]])["loss"]
    loss.backward()
    assert x.grad is not None and float(paddle.abs(x.grad).sum()) > 0
    with pytest.raises(ValueError, match="main_loss_type: 'Euclidean' is not one of"):
        DBLoss(main_loss_type="Euclidean")
    with pytest.raises(ValueError, match="balance_loss: false with main_loss_type: BCELoss"):
        DBLoss(balance_loss=False, main_loss_type="BCELoss")


def _fingerprints_equal(got, want, what):
    for key in ("rowsum", "colsum", "rowsumsq"):
        np.testing.assert_allclose(fx.map_fingerprint(got)[key], want[key], rtol=1e-9, atol=1e-9, err_msg=what)


def test_shrink_map_equals_paddleocr():
    h, w, polys, ignore = fx.map_polygons()
    gt, mask, tags = make_shrink_map(h, w, polys, ignore, shrink_ratio=0.4, min_text_size=8)
    _fingerprints_equal(gt, REF["shrink_map"]["shrink_map"], "shrink_map")
    _fingerprints_equal(mask, REF["shrink_map"]["shrink_mask"], "shrink_mask")
    assert tags == REF["shrink_map"]["ignore_tags"]  # the tiny box and ### become ignored
    assert gt.dtype == mask.dtype == np.float32 and set(np.unique(gt)) <= {0.0, 1.0}


def test_border_map_equals_paddleocr():
    h, w, polys, ignore = fx.map_polygons()
    canvas, mask = make_border_map(h, w, polys, ignore, shrink_ratio=0.4, thresh_min=0.3, thresh_max=0.7)
    _fingerprints_equal(canvas, REF["border_map"]["threshold_map"], "threshold_map")
    _fingerprints_equal(mask, REF["border_map"]["threshold_mask"], "threshold_mask")
    assert canvas.min() >= 0.3 - 1e-6 and canvas.max() <= 0.7 + 1e-6


@pytest.mark.parametrize("case", range(len(fx.CROP_CASES)))
def test_east_random_crop_equals_paddleocr_for_the_same_seed(case):
    seed, kwargs = fx.CROP_CASES[case]
    img, polys, ignore, texts = fx.crop_inputs()
    out, cpolys, ctags, ctexts = east_random_crop(img.copy(), np.array(polys), ignore, texts,
                                                  rng=np.random.RandomState(seed), **kwargs)
    want = REF["crop"][case]
    assert list(out.shape) == want["image_shape"]
    assert out.astype("int64").sum((1, 2)).tolist() == want["image_rowsum"]
    np.testing.assert_allclose(cpolys, want["polys"], rtol=1e-12, atol=1e-9)
    assert (ctags, ctexts) == (want["ignore_tags"], want["texts"])


@pytest.mark.parametrize("case", range(len(fx.RESIZE_CASES)))
def test_det_resize_for_test_equals_paddleocr(case):
    h, w, kwargs = fx.RESIZE_CASES[case]
    img, shape = det_resize_for_test(fx.resize_image(h, w), **kwargs)
    want = REF["resize"][case]
    assert list(img.shape) == want["image_shape"]
    np.testing.assert_allclose(shape, want["shape"], rtol=1e-12)
    assert int(img.astype("int64").sum()) == want["image_sum"]
    assert img.shape[0] % 32 == 0 and img.shape[1] % 32 == 0


def test_det_resize_rejects_unknown_limit_type():
    with pytest.raises(ValueError, match="limit_type: 'long' is not one of"):
        det_resize_for_test(fx.resize_image(40, 40), limit_type="long")


@pytest.mark.parametrize("name,kwargs", fx.POST_CASES, ids=[c[0] for c in fx.POST_CASES])
def test_db_postprocess_equals_paddleocr(name, kwargs):
    res = DBPostProcess(**kwargs)(fx.postprocess_map(), fx.POST_SHAPE)[0]
    want = REF["postprocess"][name]
    assert [np.asarray(b).tolist() for b in res["points"]] == want["points"]
    np.testing.assert_allclose(res["scores"], want["scores"], rtol=1e-9)


def test_db_postprocess_options_are_checked():
    with pytest.raises(ValueError, match="box_type: must be 'quad' or 'poly'"):
        DBPostProcess(box_type="rect")
    with pytest.raises(ValueError, match="score_mode: must be 'fast' or 'slow'"):
        DBPostProcess(score_mode="mean")


def test_det_metric_equals_paddleocr():
    cases = fx.metric_cases()
    per = [evaluate_image(gts, ign, dets) for gts, ign, dets in cases]
    assert per == REF["metric"]["per_image"]
    np.testing.assert_allclose([combine_results(per)[k] for k in ("precision", "recall", "hmean")],
                               [REF["metric"]["combined"][k] for k in ("precision", "recall", "hmean")], rtol=1e-12)
    metric = DetMetric()
    metric.update([c[2] for c in cases[:3]], [c[0] for c in cases[:3]], [c[1] for c in cases[:3]])
    metric.update([c[2] for c in cases[3:]], [c[0] for c in cases[3:]], [c[1] for c in cases[3:]])
    assert metric.get_metric() == combine_results(per) and metric.results == []


def test_color_jitter_is_paddleocrs_op_with_seeded_draws():
    """PaddleOCR's ColorJitter op is paddle.vision.transforms.ColorJitter(brightness, contrast, saturation, hue) on the
    decoded BGR image, drawing from python's random and numpy's global state: ours is that op with both seeded from
    the sample's rng (the caller's states restored), so equal rng -> equal image; all-0 factors are off."""
    import random

    from paddle.vision.transforms import ColorJitter

    from paddle_recipes.config import ConfigError
    from paddle_recipes.tasks.ocr_det.config import DetTrainTransformConfig
    from paddle_recipes.tasks.ocr_det.transforms import DBTrainTransform, color_jitter

    img = np.random.RandomState(0).randint(0, 256, (48, 64, 3)).astype("uint8")
    jitter = [0.4, 0.4, 0.7, 0.1]
    random.seed(123)
    np.random.seed(123)
    before = random.random(), np.random.random()
    random.seed(123)
    np.random.seed(123)
    got = color_jitter(img, np.random.RandomState(5), jitter)
    assert (random.random(), np.random.random()) == before  # the caller's random states untouched
    seeds = np.random.RandomState(5).randint(2 ** 31 - 1, size=2)
    random.seed(int(seeds[0]))
    np.random.seed(int(seeds[1]))
    want = np.asarray(ColorJitter(*jitter)(img))
    np.testing.assert_array_equal(got, want)
    assert got.shape == img.shape and got.dtype == np.uint8 and np.abs(got.astype(int) - img).max() > 0
    np.testing.assert_array_equal(color_jitter(img, np.random.RandomState(5), jitter), got)
    sample = {"image": img, "polys": [np.array([[4, 4], [40, 4], [40, 20], [4, 20]], "float32")],
              "ignore_tags": [False], "texts": ["ab"]}
    np.random.seed(1)
    plain = DBTrainTransform(size=[32, 32], augment=False)(dict(sample))["image"]
    np.random.seed(1)
    jittered = DBTrainTransform(size=[32, 32], augment=False, color_jitter=jitter)(dict(sample))["image"]
    assert plain.shape == jittered.shape and np.abs(plain - jittered).max() > 0
    with pytest.raises(ConfigError, match="Train.transform.color_jitter must be"):
        DetTrainTransformConfig(color_jitter=[0.4, 0.4, 0.7, 0.9])
