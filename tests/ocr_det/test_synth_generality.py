"""Issue 54: the generator's vertical text (det labels and the rec lines in the OCR system's feed orientation),
faces and strokes (styles.py), layouts (paragraphs, columns, tables, perspective) and backgrounds, per seed."""
from pathlib import Path

import cv2
import numpy as np
import pytest
from shapely.geometry import Polygon

from paddle_recipes.tasks.ocr_det.geometry import TALL_RATIO, rotate_crop, turn_if_tall
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, _table, page_seed, render_page
from paddle_recipes.tasks.ocr_rec.styles import Style, paint, photo_background, pick_style, reweight, texture
from paddle_recipes.tasks.ocr_rec.synth import LineRenderer, SynthConfig, make_sample

CHARS = [c.strip() for c in Path("datasets/ocr_rec/ch_hanzi_100.txt").read_text(encoding="utf-8").splitlines()
         if c.strip()]
SMALL = dict(width=192, height=192, lines=(3, 5), font_size=(14, 24))


def _pages(n, **kw):
    cfg = PageSynthConfig(**{**SMALL, **kw})
    renderer = LineRenderer(cfg.line_config(), CHARS, "train")
    return cfg, [render_page(renderer, cfg, np.random.default_rng(page_seed(cfg.seed, "train", i))) for i in range(n)]


def test_vertical_labels_are_tall_quads_around_the_column_ink_read_top_to_bottom():
    """vertical_prob 1: every line is a column; its label (PaddleOCR's form: 4 points around the column, the
    transcription top to bottom) is taller than wide, contains the ink, and the column has ink in it."""
    cfg, out = _pages(4, vertical_prob=1.0, column_prob=0.5, perspective_prob=0.0, max_angle=0.0, styles=False,
                      photo_prob=0.0, texture_prob=0.0, short_prob=0.0)
    lines = [(page, ln) for page, lns in out for ln in lns]
    assert len(lines) >= 8 and all(ln.vertical for _, ln in lines)
    for page, ln in lines:
        assert len(ln.points) == 4 and " " not in ln.text
        w, h = np.ptp(ln.points, 0)
        if len(ln.text) >= 2:
            assert h > 1.3 * w
        assert Polygon(ln.points).buffer(1e-3).contains(Polygon(ln.ink))
        x0, y0 = np.floor(ln.ink.min(0)).astype(int)
        x1, y1 = np.ceil(ln.ink.max(0)).astype(int)
        region = page[y0:y1, x0:x1].astype(np.float32)
        assert region.std() > 8  # glyphs drawn there, not an empty box


def test_vertical_crops_are_what_the_system_cuts_turned_wide():
    """The rec crops of vertical pages are the system's cut (turned counter-clockwise when tall)."""
    cfg, out = _pages(3, vertical_prob=1.0, column_prob=0.0, perspective_prob=0.0, styles=False, short_prob=0.0,
                      crop_margin=(0.0, 0.0), crop_jitter=0.0)
    tall = [ln for _, lns in out for ln in lns if len(ln.text) >= 3]
    assert tall and all(ln.crop.shape[1] > ln.crop.shape[0] for ln in tall)


def test_rec_vertical_lines_are_in_the_systems_feed_orientation():
    """A vertical rec line is the column turned 90 degrees counter-clockwise (the system's turn of a tall crop):
    wide, the first character at the left. 一二三 stacked top to bottom -> strokes become vertical bars, 1, 2, 3
    of them from left to right."""
    cfg = SynthConfig(aug=False, height=32, font_size=(40, 40), fonts=("noto_sans_sc",))
    r = LineRenderer(cfg, list("一二三"), "train")
    img = r.render("一二三", np.random.default_rng(0), 0, vertical=True)
    assert img.shape[1] > 2 * img.shape[0]
    profile = (255.0 - img.mean(2)).sum(0)
    on = profile > 0.5 * profile.max()
    starts, ends = np.nonzero(on[1:] & ~on[:-1])[0] + 1, np.nonzero(on[:-1] & ~on[1:])[0] + 1
    centres = (starts + ends[-len(starts):]) / 2.0 if len(ends) >= len(starts) else starts
    gaps = np.diff(centres)
    assert len(centres) == 6  # 1 + 2 + 3 strokes, each now a vertical bar
    assert gaps[0] > 1.5 * max(gaps[-1], gaps[-2])  # 一 alone at the left, the three close bars of 三 at the right
    # the same turn as the system's: a column cut as a crop is turned by turn_if_tall, the rule of rotate_crop
    col = r.vertical_mask("一二三", 0, 40, np.random.default_rng(1))
    assert col.shape[0] >= TALL_RATIO * col.shape[1]
    np.testing.assert_array_equal(turn_if_tall(col), np.rot90(col))
    h, w = col.shape
    np.testing.assert_array_equal(rotate_crop(col, np.float32([[0, 0], [w, 0], [w, h], [0, h]])).shape, (w, h))


def test_rec_generator_is_deterministic_and_draws_vertical_and_small_lines():
    cfg = SynthConfig(min_len=2, max_len=6, height=32, vertical_prob=0.5, small_prob=0.5)
    r = LineRenderer(cfg, CHARS, "train")
    a = [make_sample(cfg, r, "train", i) for i in range(24)]
    b = [make_sample(cfg, LineRenderer(cfg, CHARS, "train"), "train", i) for i in range(24)]
    assert a == b
    assert all(cv2.imdecode(np.frombuffer(d, np.uint8), 1).shape[0] == 32 for d, _, _ in a)
    plain = SynthConfig(min_len=2, max_len=6, height=32, vertical_prob=0.0, small_prob=0.0)
    assert [make_sample(plain, LineRenderer(plain, CHARS, "train"), "train", i) for i in range(24)] != a
    with pytest.raises(ValueError, match="vertical_prob"):
        SynthConfig(vertical_prob=1.5)


def test_styles_change_the_strokes_and_paint_outline_shadow_and_faded_ink():
    mask = np.zeros((40, 80), np.float32)
    mask[10:30, 20:24] = 1.0
    mask[18:22, 10:70] = 1.0
    assert reweight(mask, 40, 1).sum() > mask.sum() > reweight(mask, 40, -1).sum() > 0
    np.testing.assert_array_equal(reweight(mask, 40, 0), mask)
    bg = np.full((40, 80, 3), 230.0, np.float32)
    rng = np.random.default_rng(0)
    plain = paint(bg.copy(), mask, (20, 20, 20), Style(), rng)
    outlined = paint(bg.copy(), mask, (20, 20, 20), Style(outline=2), rng)
    shadowed = paint(bg.copy(), mask, (20, 20, 20), Style(shadow=(2, 2)), rng)
    faded = paint(bg.copy(), mask, (20, 20, 20), Style(contrast=0.4), rng)
    assert plain[20, 40, 0] == pytest.approx(20) and outlined[20, 40, 0] > 150  # a light fill inside a dark rim
    assert outlined[16, 40, 0] == pytest.approx(20)  # the rim, just above the horizontal stroke
    assert shadowed[24, 60, 0] < 200 and plain[24, 60, 0] == pytest.approx(230)
    assert 100 < faded[20, 40, 0] < 200
    kinds = [pick_style(np.random.default_rng(s), 30) for s in range(300)]
    assert {s.weight for s in kinds} == {-1, 0, 1}
    assert any(s.outline for s in kinds) and any(s.shadow != (0, 0) for s in kinds) and any(s.contrast < 1 for s in kinds)


def test_backgrounds_are_deterministic_per_seed():
    for make in (photo_background, texture):
        a, b = make(np.random.default_rng(3), 64, 96), make(np.random.default_rng(3), 64, 96)
        assert a.shape == (64, 96, 3) and np.array_equal(a, b) and a.std() > 1


def test_tables_paragraphs_and_perspective_pages_keep_valid_labels():
    renderer = LineRenderer(SynthConfig(fonts=("noto_sans_sc",)), CHARS, "train")
    cfg = PageSynthConfig(**SMALL)
    block = _table(renderer, cfg, 0, 14, Style(), np.random.default_rng(0))
    rect = Polygon(block.occupy)
    assert len(block.items) >= 4 and block.rules.sum() > 0
    assert all(rect.contains(Polygon(label)) for label, *_ in block.items)
    polys = [Polygon(label) for label, *_ in block.items]
    assert all(not p.intersects(q) for i, p in enumerate(polys) for q in polys[i + 1:])
    for kw in (dict(table_prob=1.0, vertical_prob=0.0), dict(paragraph_prob=1.0, table_prob=0.0, vertical_prob=0.0),
               dict(perspective_prob=1.0, edge_prob=0.5)):
        cfg, out = _pages(3, **kw)
        for page, lines in out:
            polys = [Polygon(ln.points) for ln in lines]
            assert lines and all(p.is_valid for p in polys)
            assert all(not p.intersects(q) for i, p in enumerate(polys) for q in polys[i + 1:])
            for ln in lines:
                assert ln.points.min() >= 0 and ln.points[:, 0].max() <= cfg.width and ln.points[:, 1].max() <= cfg.height
                assert Polygon(ln.points).buffer(1e-3).contains(Polygon(ln.ink))
    _, again = _pages(3, perspective_prob=1.0, edge_prob=0.5)
    assert all(np.array_equal(p, q) for (p, _), (q, _) in zip(out, again))
