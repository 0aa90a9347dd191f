"""Glyph-shape augmentation of text lines (Train.dataset.glyph_aug): each piece exact, seeded, wired to the config."""
import numpy as np
import pytest

from paddle_recipes.tasks.ocr_rec.augment import build_augment, slant, stretch_pieces, stroke_weight
from paddle_recipes.tasks.ocr_rec.dataset import DatasetConfig


def _line(dark_ink=True):
    img = np.full((20, 60, 3), 230 if dark_ink else 25, np.uint8)
    img[6:14, 10:12] = img[6:8, 20:50] = 20 if dark_ink else 235  # a vertical and a horizontal stroke
    return img


def test_stretch_pieces_is_exact_at_factor_one_and_resizes_each_piece():
    img = np.random.default_rng(0).integers(0, 255, (12, 40, 3), dtype=np.uint8)
    np.testing.assert_array_equal(stretch_pieces(img, [1.0, 1.0, 1.0, 1.0]), img)
    out = stretch_pieces(img, [2.0, 1.0])  # left half twice as wide, right half as it was
    assert out.shape == (12, 60, 3)
    np.testing.assert_array_equal(out[:, 41:], img[:, 21:])
    assert stretch_pieces(img, [0.5, 0.5]).shape == (12, 20, 3)


def test_slant_keeps_the_line_and_widens_by_its_height():
    img = _line()
    np.testing.assert_array_equal(slant(img, 0.0), img)
    out = slant(img, 10.0)
    assert out.shape == (20, 60 + int(np.ceil(np.tan(np.radians(10)) * 20)), 3)
    dark = lambda a: int((a.mean(2) < 128).sum())  # noqa: E731
    assert abs(dark(out) - dark(img)) <= 0.2 * dark(img)  # the same ink, moved
    top, bottom = np.nonzero(out[6].mean(1) < 128)[0], np.nonzero(out[13].mean(1) < 128)[0]
    assert top.min() > bottom.min()  # italics: the top of the vertical stroke leans right


@pytest.mark.parametrize("dark_ink", [True, False])
def test_stroke_weight_thickens_and_thins_the_ink_whatever_its_polarity(dark_ink):
    img = _line(dark_ink)
    ink = lambda a: int(((a.mean(2) < 128) if dark_ink else (a.mean(2) > 128)).sum())  # noqa: E731
    assert ink(stroke_weight(img, +1)) > ink(img) > ink(stroke_weight(img, -1))
    np.testing.assert_array_equal(stroke_weight(img, 0), img)


def test_glyph_augment_is_seeded_and_changes_lines():
    img = _line()
    aug = build_augment(glyph=True)
    outs = []
    for seed in (1, 1, 2, 3, 4, 5):
        aug.set_random_seed(seed)
        outs.append(aug(image=img)["image"])
    np.testing.assert_array_equal(outs[0], outs[1])
    assert len({o.shape[1] for o in outs}) > 1  # the stretch changes widths
    assert type(build_augment(glyph=True).transforms[0]).__name__ == "GlyphVariation"
    assert all(type(t).__name__ != "GlyphVariation" for t in build_augment().transforms)


def test_glyph_aug_needs_aug():
    assert DatasetConfig(aug=True, glyph_aug=True).glyph_aug
    with pytest.raises(ValueError, match="glyph_aug: true needs dataset.aug: true"):
        DatasetConfig(glyph_aug=True)
