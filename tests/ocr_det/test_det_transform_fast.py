"""The faster det train transforms (issue 55) give what the plain formulas give: the DB border distance (the
law-of-cosines form PaddleOCR's MakeBorderMap writes, kept here as the reference), the ImageNet normalisation
through per-channel tables, and the one-size collate."""
from __future__ import annotations

import numpy as np

from paddle_recipes.tasks.ocr_det import label_maps as LM
from paddle_recipes.tasks.ocr_det.batch import collate
from paddle_recipes.tasks.ocr_det.transforms import IMAGENET_MEAN, IMAGENET_STD, normalize_chw


def _reference_distance(xs, ys, p1, p2):
    """DB's formula as written in its paper code: sqrt(d1 d2 sin^2 / d12), the nearer end point where cosin < 0."""
    d1 = np.square(xs - p1[0]) + np.square(ys - p1[1])
    d2 = np.square(xs - p2[0]) + np.square(ys - p2[1])
    d12 = np.square(p1[0] - p2[0]) + np.square(p1[1] - p2[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        cosin = (d12 - d1 - d2) / (2 * np.sqrt(d1 * d2))
        out = np.sqrt(d1 * d2 * np.nan_to_num(1 - np.square(cosin)) / d12)
    acute = cosin < 0
    out[acute] = np.sqrt(np.fmin(d1, d2))[acute]
    return out


def _reference_border_map(h, w, polys, shrink_ratio=0.4, lo=0.3, hi=0.7):
    canvas = np.zeros((h, w), np.float32)
    for poly in polys:
        distance = LM.shrink_distance(poly, shrink_ratio)
        padded = np.array(LM.offset_polygon(poly, distance)[0])
        xmin, ymin = padded.min(0)
        xmax, ymax = padded.max(0)
        x0, x1, y0, y1 = max(0, xmin), min(xmax, w - 1), max(0, ymin), min(ymax, h - 1)
        if x0 > x1 or y0 > y1:
            continue
        xs = np.arange(x0 - xmin, x1 - xmin + 1, dtype=np.float64)[None, :]
        ys = np.arange(y0 - ymin, y1 - ymin + 1, dtype=np.float64)[:, None]
        local = np.array(poly, np.float64) - (xmin, ymin)
        dist = np.min([np.clip(_reference_distance(xs, ys, a, b) / distance, 0, 1).astype(np.float32)
                       for a, b in zip(local, np.roll(local, -1, axis=0))], axis=0)
        canvas[y0:y1 + 1, x0:x1 + 1] = np.fmax(1 - dist, canvas[y0:y1 + 1, x0:x1 + 1])
    return canvas * (hi - lo) + lo


def _random_quads(rng, n, h, w):
    out = []
    for _ in range(n):
        cx, cy = rng.uniform(-20, w + 20), rng.uniform(-20, h + 20)
        bw, bh, a = rng.uniform(8, 160), rng.uniform(6, 40), rng.uniform(-0.6, 0.6)
        c, s = np.cos(a), np.sin(a)
        box = np.array([[-bw, -bh], [bw, -bh], [bw, bh], [-bw, bh]]) / 2 @ np.array([[c, s], [-s, c]])
        out.append(box + (cx, cy) + rng.normal(0, 1.5, (4, 2)))
    return out


def test_border_distance_equals_the_law_of_cosines_form():
    rng = np.random.default_rng(0)
    xs, ys = np.arange(-5, 60, dtype=np.float64)[None, :], np.arange(-5, 40, dtype=np.float64)[:, None]
    for _ in range(200):
        p1, p2 = rng.uniform(0, 50, 2), rng.uniform(0, 50, 2)
        if rng.uniform() < 0.1:
            p1 = np.round(p1)  # pixels exactly on an end point
        np.testing.assert_allclose(LM._edge_distance(xs, ys, p1, p2), _reference_distance(xs, ys, p1, p2),
                                   rtol=1e-9, atol=1e-6)


def test_border_map_equals_the_reference_on_random_pages():
    rng = np.random.default_rng(1)
    total = differ = 0
    for _ in range(6):
        h, w = 160, 240
        polys = [p for p in _random_quads(rng, 12, h, w) if LM.Polygon(p).area > 0]
        got, mask = LM.make_border_map(h, w, polys, [False] * len(polys))
        want = _reference_border_map(h, w, [np.clip(p, -4 * w - 64, 4 * w + 64) for p in polys])
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-7)  # float32 rounding at most
        total, differ = total + got.size, differ + int((got != want).sum())
        assert mask.any() and got.max() > 0.6
    assert differ <= total * 1e-3, (differ, total)  # bit-equal but for a few rounding cases


def test_normalize_is_bit_equal_to_the_formula():
    img = np.random.default_rng(2).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    want = ((img.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1)
    got = normalize_chw(img)
    assert got.dtype == np.float32 and got.flags.c_contiguous and np.array_equal(got, want)
    odd = np.random.default_rng(3).uniform(0, 255, (5, 7, 3)).astype(np.float32)  # not uint8: the formula
    np.testing.assert_array_equal(normalize_chw(odd), ((odd / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1))


def test_collate_one_size_and_padded():
    rng = np.random.default_rng(4)
    same = [{"image": rng.normal(size=(3, 8, 8)).astype(np.float32), "shrink_map": np.ones((8, 8), np.float32)}
            for _ in range(3)]
    b = collate(same)
    assert b["image"].shape == (3, 3, 8, 8) and np.array_equal(b["image"][1], same[1]["image"])
    mixed = same[:1] + [{"image": np.ones((3, 5, 6), np.float32), "shrink_map": np.ones((8, 8), np.float32)}]
    b = collate(mixed)
    assert b["image"].shape == (2, 3, 8, 8) and b["image"][1, :, 5:].sum() == 0 and b["image"][1, :, :5, :6].all()
    assert b["image_hw"].tolist() == [[8, 8], [5, 6]]
