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
        poly = rng.uniform(0, 50, (int(rng.integers(3, 7)), 2))
        if rng.uniform() < 0.1:
            poly[0] = np.round(poly[0])  # pixels exactly on a vertex
        want = np.min([_reference_distance(xs, ys, a, b) for a, b in zip(poly, np.roll(poly, -1, axis=0))], axis=0)
        np.testing.assert_allclose(np.sqrt(LM._min_square_edge_distance(xs, ys, poly)), want, rtol=1e-9, atol=1e-6)


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


def test_augment_and_crop_draws_the_same_crop_and_polygons_as_the_two_steps():
    """One warp instead of random_affine + east_random_crop: the same draws, so the same polygons (to float
    rounding), tags, texts and crop size, on pages with several boxes (flip, rotation and scale all drawn)."""
    from paddle_recipes.tasks.ocr_det.transforms import augment_and_crop, east_random_crop, random_affine

    rng = np.random.default_rng(2)
    for seed in range(30):
        h, w = int(rng.integers(120, 400)), int(rng.integers(120, 400))
        img = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
        polys = [p for p in _random_quads(rng, 6, h, w) if LM.Polygon(p).area > 0]
        tags, texts = [bool(i % 4 == 3) for i in range(len(polys))], [f"t{i}" for i in range(len(polys))]
        r1, r2 = np.random.RandomState(seed), np.random.RandomState(seed)
        moved, mpolys = random_affine(img, polys, r1)
        o1, p1, t1, x1 = east_random_crop(moved, mpolys, tags, texts, (96, 64), 50, rng=r1)
        o2, p2, t2, x2 = augment_and_crop(img, polys, tags, texts, r2, (96, 64), 50)
        assert o1.shape == o2.shape == (64, 96, 3) and t1 == t2 and x1 == x2, seed
        for a, b in zip(p1, p2):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
        assert r1.randint(1 << 30) == r2.randint(1 << 30)  # as many draws taken


def test_augment_and_crop_moves_the_image_exactly_as_its_polygon():
    """A white box and its polygon: after one warp, the centre of the white pixels is the polygon's centre
    (within 0.05 px; the step-by-step path is off by up to ~1 px: its flip, rotation and resizes each place pixel
    centres differently from the polygons)."""
    from paddle_recipes.tasks.ocr_det.transforms import augment_and_crop

    img = np.zeros((300, 400, 3), np.uint8)
    img[100:140, 150:230] = 255  # pixels 150..229 x 100..139: the box [150, 230] x [100, 140]
    poly = np.array([[150, 100], [230, 100], [230, 140], [150, 140]], np.float64)
    worst = 0.0
    for seed in range(40):
        out, polys, _, _ = augment_and_crop(img, [poly], [False], ["x"], np.random.RandomState(seed), (640, 640), 50)
        m = out[..., 0].astype(np.float64)
        ys, xs = np.indices(m.shape)
        centre = ((m * (xs + 0.5)).sum() / m.sum(), (m * (ys + 0.5)).sum() / m.sum())
        worst = max(worst, float(np.hypot(*(np.array(centre) - polys[0].mean(0)))))
    assert worst < 0.05, worst
