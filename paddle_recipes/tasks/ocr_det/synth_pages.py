"""Synthetic pages for text detection: several Chinese text lines per image, each with a polygon label,
plus every line's crop and transcription for the recognizer (no download).

Lines come from the rec generator's ``LineRenderer`` (``tasks/ocr_rec/synth.py``): its fonts, text sampler and
the project's train/eval font split (data split ``heldout`` renders only with the eval fonts, every other
split only with the train fonts). Per page: a background (``backgrounds.py``: flat, gradient, paper,
noise; or, issue 54, a crop of a real photograph shipped by an installed package, or a texture: ``styles.py``),
distractors that are not text (lines, boxes, circles, scribbles, dots), then blocks of text until the page has
``lines`` lines, placed without overlapping: single lines of random size, angle and letter spacing (some short,
1-4 characters; some small, 10-14 px; some curved, the rec renderer's curvature), dense paragraphs (2-5 lines, the
labels 4 px to 0.6 x the size apart), groups of vertical columns (characters stacked top to bottom), ruled
tables / forms of short cell texts; each block in its own style (thin or heavy strokes, outlined, shadowed or
faded ink: ``styles.py``), some against a page edge. Then maybe the whole page in perspective, mild blur/noise and
JPEG.

Labels are drawn as an annotator draws them: a box around the ink with a margin (``label_margin`` x the
line's thickness on each side, random per line; PaddleOCR's annotated data has such margins, and its DB
post-processing, unclip_ratio 1.5, gives back boxes of that size). Straight lines get that 4-point box (in
the line's own frame, rotated with it); curved lines (bent along a sine, ``bend``) get a
2 x (``curve_points`` + 1)-point polygon: that box's top and bottom edges bent the same way. Labels of two
lines never overlap.
Crops are what the OCR system hands its recognizer for a detected box (``system_crop``): the min-area
rectangle of the line's ink grown by a random margin (``crop_margin`` x its thickness on each side: a DB
box, looser or tighter than the label), each corner then moved at random by up to ``crop_jitter`` x the
thickness in x and y (a detector's box is a little off: its sides and angle), perspective-cropped upright,
turned 90 degrees counter-clockwise when tall (vertical lines, PaddleOCR's get_rotate_crop_image rule), then
resized to ``crop_height``.

Page ``i`` of a split is drawn from its own seed (seed, split, i): identical output for any worker count.

Writes::

    <out>/<split>/images/00000000.jpg
    <out>/<split>/label.txt        # PaddleOCR det: images/00000000.jpg<TAB>[{"transcription", "points"}, ...]
    <out>/<split>/crops/00000000_00.jpg
    <out>/<split>/crop_label.txt   # PaddleOCR rec: crops/00000000_00.jpg<TAB>text
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, Tuple

import cv2
import numpy as np
from shapely.geometry import MultiPoint, Polygon

from ...data.render_pool import fork_map
from ..ocr_rec.backgrounds import make_background, pick_colors
from ..ocr_rec.styles import Style, contrasting, paint, photo_background, pick_style, reweight, rim_of, texture
from ..ocr_rec.synth import SPLIT_IDS, LineRenderer, SynthConfig, font_side
from .geometry import order_quad, rotate_crop


@dataclass
class PageSynthConfig:
    """Page generator settings (sizes in px, angles in degrees).

    width / height: page size (default 320 x 320). lines: (min, max) text lines wanted per page (3, 8): blocks are
    added until the page has that many (the last block, a paragraph, columns or a table, may add more).
    min_len / max_len: characters per line (2, 12). font_size: (min, max) px (14, 36).
    max_angle: blocks are rotated uniformly in +-max_angle (10; tables 0.3 x that). vertical_prob: share of vertical
    blocks (0.2): a single column, or (column_prob, 0.5) a group of 2-5 columns side by side.
    curve_prob: share of horizontal lines bent along a sine of amplitude 0.15-0.45 x font size (0.15);
    curve_points: their polygon has 2 x (curve_points + 1) points (6). distractors: (min, max) non-text marks (1, 6).
    label_margin: (min, max) margin of the label polygons around the ink, a fraction of the line thickness on
    each side ((0.1, 0.25); (0, 0): ink-tight labels). crop_height: height of the rec crops (48).
    crop_margin: (min, max) margin of the crops' boxes around the ink, a fraction of the line thickness on each
    side ((0.0, 0.3)). crop_jitter: each crop corner moves by up to this fraction of the thickness in x and y
    (0.1; 0: exact boxes). jpeg_quality: 90. seed: base seed. fonts: restrict to these registered font names
    (empty = all). upside_down_prob: share of horizontal lines drawn turned by 180 degrees (0; for the OCR system's
    orientation stage: their 4-point labels list the corners in image order, as DB's boxes do, so a crop of the label
    is upside down, as the system cuts it; their rec crops are stored upright, see PageLine).
    Issue 54 (shares of blocks or pages): short_prob single lines of 1-4 characters (0.2); small_prob text of
    10-14 px (0.2); paragraph_prob dense paragraphs (0.12); table_prob ruled tables (0.06); photo_prob / texture_prob
    page backgrounds from a photograph / a texture (0.15 / 0.08); perspective_prob pages seen at an angle (0.2; the
    labels are then the annotator's boxes under the same perspective); edge_prob blocks against a page edge (0.1);
    styles: stroke weight, outline, shadow and faded ink per block (True).
    """

    width: int = 320
    height: int = 320
    lines: Tuple[int, int] = (3, 8)
    min_len: int = 2
    max_len: int = 12
    font_size: Tuple[int, int] = (14, 36)
    max_angle: float = 10.0
    vertical_prob: float = 0.2
    curve_prob: float = 0.15
    curve_points: int = 6
    distractors: Tuple[int, int] = (1, 6)
    label_margin: Tuple[float, float] = (0.1, 0.25)
    crop_height: int = 48
    crop_margin: Tuple[float, float] = (0.0, 0.3)
    crop_jitter: float = 0.1
    jpeg_quality: int = 90
    seed: int = 0
    fonts: Tuple[str, ...] = ()
    upside_down_prob: float = 0.0
    short_prob: float = 0.2
    small_prob: float = 0.2
    paragraph_prob: float = 0.12
    table_prob: float = 0.06
    column_prob: float = 0.5
    photo_prob: float = 0.15
    texture_prob: float = 0.08
    perspective_prob: float = 0.2
    edge_prob: float = 0.1
    styles: bool = True

    def __post_init__(self):
        for name in ("short_prob", "small_prob", "paragraph_prob", "table_prob", "column_prob", "photo_prob",
                     "texture_prob", "perspective_prob", "edge_prob", "vertical_prob", "curve_prob"):
            if not 0.0 <= float(getattr(self, name)) <= 1.0:
                raise ValueError(f"PageSynthConfig.{name} must be in [0, 1], got {getattr(self, name)}")
        if not 0.0 <= self.upside_down_prob <= 1.0:
            raise ValueError(f"PageSynthConfig.upside_down_prob must be in [0, 1], got {self.upside_down_prob}")
        self.lines, self.font_size, self.distractors = (tuple(int(v) for v in t) for t in
                                                         (self.lines, self.font_size, self.distractors))
        for name in ("label_margin", "crop_margin"):
            pair = tuple(float(v) for v in getattr(self, name))
            if len(pair) != 2 or not 0 <= pair[0] <= pair[1]:
                raise ValueError(f"PageSynthConfig.{name} must be (min, max) with 0 <= min <= max, got {pair}")
            setattr(self, name, pair)
        if not 0 <= self.crop_jitter < 0.5:
            raise ValueError(f"PageSynthConfig.crop_jitter must be in [0, 0.5), got {self.crop_jitter}")
        self.fonts = tuple(self.fonts)
        if not 1 <= self.lines[0] <= self.lines[1]:
            raise ValueError(f"PageSynthConfig.lines must be (min, max) with 1 <= min <= max, got {self.lines}")
        if min(self.width, self.height) < 64:
            raise ValueError(f"PageSynthConfig: pages need at least 64 x 64 px, got {self.width} x {self.height}")

    def line_config(self) -> SynthConfig:
        return SynthConfig(min_len=self.min_len, max_len=self.max_len, font_size=self.font_size, aug=True,
                           seed=self.seed, fonts=self.fonts)


@dataclass
class PageLine:
    points: np.ndarray  # [K, 2] float32 page pixels: the label (ink + label_margin)
    text: str
    vertical: bool
    crop: np.ndarray  # RGB uint8 [crop_height, W, 3]: the recognizer's view (system_crop), upright
    ink: np.ndarray  # [K, 2] float32 page pixels: the polygon of the ink itself (1 px out)
    upside_down: bool = False  # drawn turned by 180 degrees: the system's cut is `crop` turned by 180


# ------------------------------------------------------------------ geometry
def system_crop(img: np.ndarray, points: np.ndarray, margin: float = 0.0, height: int | None = None,
                jitter=None) -> np.ndarray:
    """The line image of polygon ``points`` as the OCR system cuts it for the recognizer: the min-area rectangle
    grown by ``margin`` x its shorter side on each side, its corners moved by ``jitter`` ([4, 2] offsets in
    units of that shorter side, in cv2.boxPoints' corner order; None = none), perspective-cropped upright
    (corners ordered as DB's boxes), turned when tall; optionally resized to ``height`` keeping the aspect ratio."""
    (cx, cy), (w, h), angle = cv2.minAreaRect(np.asarray(points, np.float32))
    grow = 2.0 * margin * min(w, h)
    quad = cv2.boxPoints(((cx, cy), (w + grow, h + grow), angle))
    if jitter is not None:
        quad = quad + np.asarray(jitter, np.float32).reshape(4, 2) * min(w, h)
    out = rotate_crop(img, order_quad(quad))
    h, w = out.shape[:2]
    if height:
        out = cv2.resize(out, (max(1, int(round(w * height / h))), height), interpolation=cv2.INTER_AREA)
    return out


def grow_box(box: np.ndarray, pad: float) -> np.ndarray:
    """An axis-aligned 4-point box (tl, tr, br, bl) grown by ``pad`` px on each side."""
    return (np.asarray(box, np.float32) + np.float32([[-pad, -pad], [pad, -pad], [pad, pad], [-pad, pad]]))


def ink_box(mask: np.ndarray, pad: float = 1.0) -> np.ndarray | None:
    """4-point box around the ink of a line mask (float [h, w] in [0, 1]), ``pad`` px outside it."""
    ink = mask > 0.35
    cols, rows = np.nonzero(ink.any(0))[0], np.nonzero(ink.any(1))[0]
    if len(cols) < 2 or len(rows) < 2:
        return None
    x0, x1, y0, y1 = cols[0] - pad, cols[-1] + 1 + pad, rows[0] - pad, rows[-1] + 1 + pad
    return np.float32([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])


def _sine_shift(width: int, amp: float, cycles: float, phase: float):
    return lambda x: amp * np.sin(phase + 2 * np.pi * cycles * x / max(width, 1))


def bent_outline(box: np.ndarray, width: int, amp: float, cycles: float, phase: float, points: int) -> np.ndarray:
    """The polygon of ``box`` on a line mask ``width`` px wide bent as :func:`bend` bends it: the box's top and
    bottom edges displaced at ``points`` + 1 x positions (top left to right, then bottom right to left)."""
    pad, shift = int(math.ceil(abs(amp))) + 1, _sine_shift(width, amp, cycles, phase)
    xs = np.linspace(box[0, 0], box[1, 0], points + 1)
    top = np.stack([xs, box[0, 1] + pad + shift(xs)], 1)
    bottom = np.stack([xs, box[2, 1] + pad + shift(xs)], 1)[::-1]
    return np.concatenate([top, bottom]).astype(np.float32)


def bend(mask: np.ndarray, box: np.ndarray, amp: float, cycles: float, phase: float, points: int):
    """Curve a straight line: column x moves down by amp * sin(phase + 2 pi cycles x / w). Returns the
    bent mask (taller by 2 amp) and the bent polygon of ``box`` (:func:`bent_outline`)."""
    h, w = mask.shape
    pad, shift = int(math.ceil(abs(amp))) + 1, _sine_shift(w, amp, cycles, phase)
    map_x = np.tile(np.arange(w, dtype=np.float32), (h + 2 * pad, 1))
    map_y = (np.arange(h + 2 * pad, dtype=np.float32)[:, None] - pad - shift(map_x[0])[None, :]).astype(np.float32)
    bent = cv2.remap(mask, map_x, map_y, cv2.INTER_LINEAR, borderValue=0)
    return bent, bent_outline(box, w, amp, cycles, phase, points)


# ------------------------------------------------------------------ drawing
def _draw_distractors(img: np.ndarray, rng, n: int) -> None:
    """Non-text marks in place: lines, rectangles, circles, scribbles, dot clouds."""
    h, w = img.shape[:2]
    for _ in range(n):
        color = tuple(float(v) for v in rng.uniform(0, 200, 3))
        kind, t = rng.integers(5), int(rng.integers(1, 4))
        p = lambda: (int(rng.integers(w)), int(rng.integers(h)))  # noqa: E731
        if kind == 0:
            cv2.line(img, p(), p(), color, t, cv2.LINE_AA)
        elif kind == 1:
            cv2.rectangle(img, p(), p(), color, t)
        elif kind == 2:
            cv2.circle(img, p(), int(rng.integers(4, max(5, min(h, w) // 6))), color, t if rng.random() < 0.7 else -1)
        elif kind == 3:
            pts = np.cumsum(rng.normal(0, 8, (int(rng.integers(4, 12)), 2)), 0) + p()
            cv2.polylines(img, [pts.astype(np.int32)], False, color, t, cv2.LINE_AA)
        else:
            for _ in range(int(rng.integers(10, 60))):
                cv2.circle(img, p(), int(rng.integers(1, 3)), color, -1)


Item = Tuple[np.ndarray, np.ndarray, str, bool]  # label polygon, ink box, text, vertical (block or page pixels)


@dataclass
class _Block:
    """Lines drawn together (one line, a paragraph, a group of vertical columns, a table), in block pixels:
    ``mask`` the glyphs (float [h, w] in [0, 1]), ``rules`` a table's ruling lines or None, ``items`` one per
    line, ``occupy`` the polygon no other block may come near."""

    mask: np.ndarray
    rules: np.ndarray | None
    items: List[Item]
    occupy: np.ndarray


def _line(renderer: LineRenderer, text: str, k: int, size: int, vertical: bool, style: Style, rng):
    """One line's glyph mask (strokes restyled) and its ink box (covering an outline rim), or None (no ink)."""
    if vertical:
        mask = renderer.vertical_mask(text, k, size, rng)
    else:
        mask = np.asarray(renderer._text_mask(text, k, size, rng)[0], np.float32) / 255.0
    drawn = mask  # the ink box is the font's glyphs (a thinned stroke stays inside them)
    mask = reweight(mask, size, style.weight)
    if style.outline:  # room for the rim, inside the label
        mask, drawn = np.pad(mask, style.outline + 1), np.pad(drawn, style.outline + 1)
        ink = ink_box(np.maximum(np.maximum(mask, drawn), rim_of(mask, style.outline)))
    else:
        ink = ink_box(np.maximum(mask, drawn))
    return None if ink is None else (mask, ink)


def _text(renderer: LineRenderer, k: int, n: int, vertical: bool, rng) -> str:
    text = renderer.samplers[k].sample(rng, max(1, n))
    return (text.replace(" ", "") or text) if vertical else text


def _label(ink: np.ndarray, cfg: PageSynthConfig, rng) -> np.ndarray:
    """The annotator's box: the ink box grown by label_margin x its thickness on each side."""
    return grow_box(ink, rng.uniform(*cfg.label_margin) * float(min(np.ptp(ink, 0))))


def _hull(polys) -> np.ndarray:
    hull = MultiPoint([tuple(map(float, p)) for poly in polys for p in poly]).convex_hull
    return np.asarray(hull.exterior.coords[:-1], np.float32)


def _paste(out: np.ndarray, mask: np.ndarray, x: int, y: int) -> None:
    region = out[y:y + mask.shape[0], x:x + mask.shape[1]]
    np.maximum(region, mask[:region.shape[0], :region.shape[1]], out=region)


def _stack(parts, axis: int, gaps) -> _Block:
    """Lines (mask, ink, label, text, vertical) one after another along ``axis`` (0: down, 1: right), each label
    ``gap`` px after the previous one (labels never overlap); masks may overlap in their empty margins."""
    offs, pos, c = [], 0.0, 1 - axis  # c: the points' coordinate along the axis (y when going down)
    for (_, _, label, _, _), gap in zip(parts, gaps):
        lo = float(label[:, c].min())
        offs.append(int(math.ceil(pos - lo)))
        pos = offs[-1] + float(label[:, c].max()) + gap
    shift = -min(offs)
    offs = [o + shift for o in offs]
    along = max(o + p[0].shape[axis] for o, p in zip(offs, parts))
    across = max(p[0].shape[1 - axis] for p in parts)
    out = np.zeros((along, across) if axis == 0 else (across, along), np.float32)
    items = []
    for o, (mask, ink, label, text, vertical) in zip(offs, parts):
        x, y = (0, o) if axis == 0 else (o, 0)
        _paste(out, mask, x, y)
        d = np.float32([x, y])
        items.append((label + d, ink + d, text, vertical))
    return _Block(out, None, items, _hull([it[0] for it in items]))


def _table(renderer: LineRenderer, cfg: PageSynthConfig, k: int, size: int, style: Style, rng) -> _Block | None:
    """A ruled table / form: rows x cols cells of short texts (1-5 characters), ruling lines around the cells."""
    rows, cols = int(rng.integers(2, 5)), int(rng.integers(2, 4))
    size = min(size, 12 + 24 // cols)
    pad = int(round(size * rng.uniform(0.25, 0.6))) + 3
    t = int(rng.integers(1, 3))
    cells = []
    for _ in range(rows * cols):
        text = _text(renderer, k, int(rng.integers(1, 6)), False, rng)
        got = _line(renderer, text, k, size, False, style, rng)
        if got is None:
            return None
        cells.append((got[0], got[1], _label(got[1], cfg, rng), text))
    col_w = [max(np.ptp(cells[r * cols + c][2][:, 0]) for r in range(rows)) + 2 * pad for c in range(cols)]
    row_h = [max(np.ptp(cells[r * cols + c][2][:, 1]) for c in range(cols)) + 2 * pad for r in range(rows)]
    # glyph masks reach past their labels (their margins): a border that wide around the table
    room = int(math.ceil(max(max(float(lb.min()), m.shape[1] - float(lb[:, 0].max()), m.shape[0] - float(lb[:, 1].max()))
                             for m, _, lb, _ in cells))) + 2
    xs = room + np.concatenate([[0.0], np.cumsum(col_w)])
    ys = room + np.concatenate([[0.0], np.cumsum(row_h)])
    out = np.zeros((int(ys[-1]) + room + 1, int(xs[-1]) + room + 1), np.float32)
    rules = np.zeros_like(out)
    items = []
    for r in range(rows):
        for c in range(cols):
            mask, ink, label, text = cells[r * cols + c]
            lw, lh = np.ptp(label, 0)
            left = xs[c] + pad if rng.random() < 0.6 else xs[c] + (col_w[c] - lw) / 2
            d = np.round([left - label[:, 0].min(), ys[r] + (row_h[r] - lh) / 2 - label[:, 1].min()]).astype(int)
            _paste(out, mask, int(d[0]), int(d[1]))
            items.append((label + d.astype(np.float32), ink + d.astype(np.float32), text, False))
    for x in xs:
        cv2.line(rules, (int(round(x)), int(ys[0])), (int(round(x)), int(ys[-1])), 1.0, t)
    for y in ys:
        cv2.line(rules, (int(xs[0]), int(round(y))), (int(xs[-1]), int(round(y))), 1.0, t)
    g = t + 1.0
    rect = np.float32([[xs[0] - g, ys[0] - g], [xs[-1] + g, ys[0] - g], [xs[-1] + g, ys[-1] + g], [xs[0] - g, ys[-1] + g]])
    return _Block(out, rules, items, rect)


def _block(renderer: LineRenderer, cfg: PageSynthConfig, rng) -> Tuple[_Block | None, Style, bool]:
    """A random block of lines (kind by the config's shares) and its style; -> (block or None, style, curved)."""
    k = int(rng.integers(len(renderer.fonts)))
    r_kind, r_small, r_short, r_vertical, r_group = rng.random(5)
    small = r_small < cfg.small_prob
    size = int(rng.integers(10, 15)) if small else int(rng.integers(cfg.font_size[0], cfg.font_size[1] + 1))
    style = pick_style(rng, size) if cfg.styles else Style()
    vertical = r_vertical < cfg.vertical_prob
    gap = lambda: rng.uniform(1.0, 0.6 * size) + 3  # noqa: E731 - between two labels of a block
    if r_kind < cfg.table_prob and not vertical:
        return _table(renderer, cfg, k, min(size, 20), style, rng), style, False
    if r_kind < cfg.table_prob + cfg.paragraph_prob or (vertical and r_group < cfg.column_prob):
        size = min(size, 24)
        n = int(rng.integers(2, 6))
        along = cfg.height if vertical else cfg.width
        room = max(1, int(0.8 * along / (1.2 * size)))
        parts = []
        for _ in range(n):
            text = _text(renderer, k, int(rng.integers(max(1, cfg.min_len), min(cfg.max_len, room) + 1)), vertical, rng)
            got = _line(renderer, text, k, size, vertical, style, rng)
            if got is not None:
                parts.append((got[0], got[1], _label(got[1], cfg, rng), text, vertical))
        if not parts:
            return None, style, False
        return _stack(parts, 1 if vertical else 0, [gap() for _ in parts]), style, False
    # a single line: short or of any length, maybe curved
    room = int(0.85 * (cfg.height if vertical else cfg.width) / (1.25 * size))  # characters that fit
    n = int(rng.integers(1, 5)) if r_short < cfg.short_prob else int(rng.integers(cfg.min_len, cfg.max_len + 1))
    text = _text(renderer, k, min(n, max(room, 1)), vertical, rng)
    got = _line(renderer, text, k, size, vertical, style, rng)
    if got is None:
        return None, style, False
    mask, ink = got
    label = _label(ink, cfg, rng)
    curved = False
    if not vertical and rng.random() < cfg.curve_prob:
        shape = (rng.uniform(0.15, 0.45) * size * rng.choice([-1, 1]), rng.uniform(0.3, 0.8),
                 rng.uniform(0, 2 * np.pi), cfg.curve_points)
        label = bent_outline(label, mask.shape[1], *shape)
        mask, ink = bend(mask, ink, *shape)
        curved = True
    return _Block(mask, None, [(label, ink, text, vertical)], label), style, curved


def _place(block: _Block, angle: float, page_wh, placed: List[Polygon], rng, edge_prob: float = 0.0,
           tries: int = 20):
    """Affine (rotation by ``angle`` + translation) putting the block inside the page without coming within 3 px
    of the placed polygons (with ``edge_prob``, against a page edge); -> (2x3 matrix, page occupy polygon) or None."""
    h, w = block.mask.shape
    pw, ph = page_wh
    rot = cv2.getRotationMatrix2D((w / 2.0, h / 2.0), angle, 1.0)
    pts = np.concatenate([np.float32([[0, 0], [w, 0], [w, h], [0, h]]), block.occupy] + [it[0] for it in block.items])
    corners = pts @ rot[:, :2].T + rot[:, 2]
    lab = np.concatenate([block.occupy] + [it[0] for it in block.items]) @ rot[:, :2].T + rot[:, 2]
    lo, hi = corners.min(0), corners.max(0)  # the mask and the labels (which may reach past the mask)
    llo, lhi = lab.min(0), lab.max(0)
    if hi[0] - lo[0] > pw - 4 or hi[1] - lo[1] > ph - 4:
        return None
    for _ in range(tries):
        dx = rng.uniform(2 - lo[0], pw - 2 - hi[0])
        dy = rng.uniform(2 - lo[1], ph - 2 - hi[1])
        if rng.random() < edge_prob:  # the labels 1-3 px from an edge (the glyph mask's margin is cut off there)
            side, gap = int(rng.integers(4)), rng.uniform(1, 3)
            dx = (gap - llo[0], pw - gap - lhi[0], dx, dx)[side]
            dy = (dy, dy, gap - llo[1], ph - gap - lhi[1])[side]
        m = rot.copy()
        m[:, 2] += (dx, dy)
        shape = Polygon(block.occupy @ m[:, :2].T + m[:, 2]).buffer(3)
        if shape.is_valid and all(not shape.intersects(q) for q in placed):
            return m, shape
    return None


def _page_background(cfg: PageSynthConfig, rng) -> Tuple[np.ndarray, Tuple[float, float, float] | None]:
    """(float RGB page, its ink colour or None when text colours are picked per block against the photo/texture)."""
    r = rng.random()
    if r < cfg.photo_prob:
        return photo_background(rng, cfg.height, cfg.width), None
    if r < cfg.photo_prob + cfg.texture_prob:
        return texture(rng, cfg.height, cfg.width), None
    bg, fg, _ = pick_colors(rng)
    return make_background(rng, cfg.height, cfg.width, bg), fg


def _perspective(page: np.ndarray, lines, rng, strength: float):
    """The whole page seen at an angle: each corner moved inward by up to ``strength`` x the page size (so every
    label stays inside); -> (page, lines with their labels and inks mapped)."""
    h, w = page.shape[:2]
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    dst = src + rng.uniform(0, strength, (4, 2)).astype(np.float32) * np.float32([w, h]) * np.float32(
        [[1, 1], [-1, 1], [-1, -1], [1, -1]])
    m = cv2.getPerspectiveTransform(src, dst)
    page = cv2.warpPerspective(page, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    f = lambda p: cv2.perspectiveTransform(p.reshape(-1, 1, 2).astype(np.float32), m).reshape(-1, 2)  # noqa: E731
    return page, [(f(p), f(ink), t, v, turned) for p, ink, t, v, turned in lines]


def render_page(renderer: LineRenderer, cfg: PageSynthConfig, rng: np.random.Generator
                ) -> Tuple[np.ndarray, List[PageLine]]:
    """One page: (RGB uint8 [height, width, 3], its lines)."""
    page, page_fg = _page_background(cfg, rng)
    _draw_distractors(page, rng, int(rng.integers(cfg.distractors[0], cfg.distractors[1] + 1)))
    placed: List[Polygon] = []
    lines: List[Tuple[np.ndarray, np.ndarray, str, bool, bool]] = []
    wanted = int(rng.integers(cfg.lines[0], cfg.lines[1] + 1))
    for _ in range(wanted + 6):  # up to 6 extra tries when blocks did not fit
        if len(lines) >= wanted:
            break
        block, style, curved = _block(renderer, cfg, rng)
        if block is None:
            continue
        horizontal = not any(it[3] for it in block.items)
        angle = float(rng.uniform(-cfg.max_angle, cfg.max_angle)) * (0.3 if block.rules is not None else 1.0)
        turned = cfg.upside_down_prob > 0 and horizontal and rng.random() < cfg.upside_down_prob  # no draw at 0
        spot = _place(block, angle + 180.0 * turned, (cfg.width, cfg.height), placed, rng, cfg.edge_prob)
        if spot is None:
            continue
        m, shape = spot
        alpha = cv2.warpAffine(block.mask, m, (cfg.width, cfg.height), flags=cv2.INTER_LINEAR)
        x0, y0, x1, y1 = (int(v) for v in np.clip(np.round(shape.bounds), 0, [cfg.width, cfg.height] * 2))
        x0, y0 = max(0, x0 - 8), max(0, y0 - 8)  # the region the block paints (a shadow may reach past it)
        x1, y1 = min(cfg.width, x1 + 8), min(cfg.height, y1 + 8)
        region = page[y0:y1, x0:x1]
        if page_fg is None:  # on a photo or a texture: a colour that stands out from what is under the block
            fg = contrasting(tuple(region.reshape(-1, 3).mean(0)), rng)
        else:
            fg = tuple(float(v) for v in np.clip(np.asarray(page_fg, np.float32) * rng.uniform(0.8, 1.1), 0, 255))
        if block.rules is not None:
            ra = cv2.warpAffine(block.rules, m, (cfg.width, cfg.height), flags=cv2.INTER_LINEAR)[y0:y1, x0:x1, None]
            tone = np.asarray(fg, np.float32) * rng.uniform(0.6, 1.2)
            region[:] = region * (1 - ra) + np.clip(tone, 0, 255) * ra
        region[:] = paint(region, alpha[y0:y1, x0:x1], fg, style, rng)
        placed.append(shape)
        for label, ink, text, vertical in block.items:
            page_poly = (label @ m[:, :2].T + m[:, 2]).astype(np.float32)
            if turned and len(page_poly) == 4:  # corners in image order, as a detector gives them: the cut is upside down
                page_poly = order_quad(page_poly)
            lines.append((page_poly, (ink @ m[:, :2].T + m[:, 2]).astype(np.float32), text, vertical, turned))
    if lines and rng.random() < cfg.perspective_prob:
        page, lines = _perspective(page, lines, rng, 0.08)
    if rng.random() < 0.3:
        page = cv2.GaussianBlur(page, (0, 0), rng.uniform(0.3, 0.9))
    if rng.random() < 0.3:
        page = page + rng.normal(0, rng.uniform(2, 8), page.shape).astype(np.float32)
    page = np.clip(page, 0, 255).astype(np.uint8)
    out = []
    for p, ink, t, v, turned in lines:
        margin, jitter = rng.uniform(*cfg.crop_margin), rng.uniform(-cfg.crop_jitter, cfg.crop_jitter, (4, 2))
        crop = system_crop(page, ink, margin, cfg.crop_height, jitter)
        out.append(PageLine(p, t, v, np.ascontiguousarray(crop[::-1, ::-1]) if turned else crop, ink, turned))
    return page, out


# ------------------------------------------------------------------ writing a split
def page_seed(seed: int, split: str, i: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed & 0xFFFFFFFF, SPLIT_IDS.get(split, 9), i, 0xDE7])


def _jpeg(img_rgb: np.ndarray, quality: int) -> bytes:
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img_rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:  # pragma: no cover - cv2 always encodes uint8 RGB
        raise RuntimeError("JPEG encoding failed")
    return buf.tobytes()


def _render_range(root: Path, split: str, start: int, stop: int, cfg: PageSynthConfig, chars: Sequence[str]):
    """Render pages start..stop-1 of ``split`` under ``root``; returns their det and rec label lines."""
    renderer = LineRenderer(cfg.line_config(), list(chars), font_side(split))
    det_lines, rec_lines = [], []
    for i in range(start, stop):
        page, lines = render_page(renderer, cfg, np.random.default_rng(page_seed(cfg.seed, split, i)))
        name = f"images/{i:08d}.jpg"
        (root / name).write_bytes(_jpeg(page, cfg.jpeg_quality))
        labels = [{"transcription": ln.text, "points": np.round(ln.points.astype(np.float64), 1).tolist()}
                  for ln in lines]
        det_lines.append(f"{name}\t{json.dumps(labels, ensure_ascii=False)}")
        for j, ln in enumerate(lines):
            crop = f"crops/{i:08d}_{j:02d}.jpg"
            (root / crop).write_bytes(_jpeg(ln.crop, 95))
            rec_lines.append(f"{crop}\t{ln.text}")
    return det_lines, rec_lines


def write_pages(out_dir: str | os.PathLike, split: str, num: int, cfg: PageSynthConfig, chars: Sequence[str],
                workers: int = 1) -> Path:
    """Render pages 0..num-1 of ``split`` into ``out_dir/split`` (layout in the module docstring).
    ``workers`` > 1 renders chunks in that many processes; every page depends only on its own seed, so the
    files are the same for any ``workers``."""
    root = Path(out_dir) / split
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "crops").mkdir(exist_ok=True)
    workers = max(1, min(int(workers), num))
    bounds = [(num * k // workers, num * (k + 1) // workers) for k in range(workers)]
    if workers == 1:
        parts = [_render_range(root, split, 0, num, cfg, chars)]
    else:
        parts = fork_map(_render_range, [(root, split, a, b, cfg, chars) for a, b in bounds], workers, star=True)
    det_lines = [ln for d, _ in parts for ln in d]
    rec_lines = [ln for _, r in parts for ln in r]
    (root / "label.txt").write_text("\n".join(det_lines) + "\n", encoding="utf-8")
    (root / "crop_label.txt").write_text("\n".join(rec_lines) + "\n", encoding="utf-8")
    return root


def ensure_pages(root: str | os.PathLike, splits: dict, cfg: PageSynthConfig, chars: Sequence[str],
                 workers: int = 1) -> Path:
    """Render ``splits`` ({split: pages}) under ``root`` unless ``root/meta.json`` already records the same
    settings (the cache), with ``workers`` processes; returns root."""
    root = Path(root)
    meta = {"generator": 4, "splits": splits, "config": {k: list(v) if isinstance(v, tuple) else v
                                                          for k, v in vars(cfg).items()}, "chars": "".join(chars)}
    meta_file = root / "meta.json"
    try:
        if json.loads(meta_file.read_text(encoding="utf-8")) == json.loads(json.dumps(meta)):
            return root
    except (OSError, ValueError):
        pass
    for split, n in splits.items():
        write_pages(root, split, n, cfg, chars, workers)
    meta_file.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
    return root
