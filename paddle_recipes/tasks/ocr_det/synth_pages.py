"""Synthetic pages for text detection: several Chinese text lines per image, each with a polygon label,
plus every line's crop and transcription for the recognizer (no download).

Lines come from the rec generator's ``LineRenderer`` (``tasks/ocr_rec/synth.py``): its fonts, text sampler and
the project's train/eval font split (data split ``heldout`` renders only with the eval fonts, every other
split only with the train fonts). Per page: a background (``backgrounds.py``: flat, gradient, paper,
noise), distractors that are not text (lines, boxes, circles, scribbles, dots), then ``lines`` text lines
of random size, angle and letter spacing, some curved (the rec renderer's curvature) or vertical
(characters stacked top to bottom), placed without overlapping; then mild blur/noise and JPEG.

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
from PIL import Image, ImageDraw
from shapely.geometry import Polygon

from ...data.render_pool import fork_map
from ..ocr_rec.backgrounds import make_background, pick_colors
from ..ocr_rec.synth import SPLIT_IDS, LineRenderer, SynthConfig, font_side
from .geometry import order_quad, rotate_crop


@dataclass
class PageSynthConfig:
    """Page generator settings (sizes in px, angles in degrees).

    width / height: page size (default 320 x 320). lines: (min, max) text lines per page (3, 8).
    min_len / max_len: characters per line (2, 12). font_size: (min, max) px (14, 36).
    max_angle: lines are rotated uniformly in +-max_angle (10). vertical_prob: share of vertical lines (0.1).
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
    """

    width: int = 320
    height: int = 320
    lines: Tuple[int, int] = (3, 8)
    min_len: int = 2
    max_len: int = 12
    font_size: Tuple[int, int] = (14, 36)
    max_angle: float = 10.0
    vertical_prob: float = 0.1
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

    def __post_init__(self):
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
def _vertical_mask(renderer: LineRenderer, text: str, k: int, size: int, rng) -> np.ndarray:
    """Characters stacked top to bottom, centred in a column ('L' mask as float [h, w])."""
    gap = size * rng.uniform(0.0, 0.25)
    w = int(size * 1.5) + 4
    h = int(len(text) * (size + gap) + size * 0.5) + 4
    img = Image.new("L", (w, h), 0)
    draw = ImageDraw.Draw(img)
    y = 2 + size * 0.2
    for ch in text:
        font = renderer.font(renderer.font_for_char(k, ch), size)
        draw.text((w / 2, y), ch, font=font, fill=255, anchor="mt")
        y += size + gap
    return np.asarray(img, np.float32) / 255.0


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


def _place(mask: np.ndarray, poly: np.ndarray, angle: float, page_wh, placed: List[Polygon], rng,
           tries: int = 20):
    """Affine (rotation by ``angle`` + translation) putting the line inside the page without touching
    the placed polygons; -> (2x3 matrix, page polygon) or None."""
    h, w = mask.shape
    pw, ph = page_wh
    rot = cv2.getRotationMatrix2D((w / 2.0, h / 2.0), angle, 1.0)
    corners = np.concatenate([np.float32([[0, 0], [w, 0], [w, h], [0, h]]), poly]) @ rot[:, :2].T + rot[:, 2]
    lo, hi = corners.min(0), corners.max(0)  # the mask and the label (which may reach past the mask)
    if hi[0] - lo[0] > pw - 4 or hi[1] - lo[1] > ph - 4:
        return None
    for _ in range(tries):
        dx = rng.uniform(2 - lo[0], pw - 2 - hi[0])
        dy = rng.uniform(2 - lo[1], ph - 2 - hi[1])
        m = rot.copy()
        m[:, 2] += (dx, dy)
        page_poly = poly @ m[:, :2].T + m[:, 2]
        shape = Polygon(page_poly).buffer(3)
        if all(not shape.intersects(q) for q in placed):
            return m, page_poly.astype(np.float32)
    return None


def render_page(renderer: LineRenderer, cfg: PageSynthConfig, rng: np.random.Generator
                ) -> Tuple[np.ndarray, List[PageLine]]:
    """One page: (RGB uint8 [height, width, 3], its lines)."""
    bg, fg, _ = pick_colors(rng)
    page = make_background(rng, cfg.height, cfg.width, bg)
    _draw_distractors(page, rng, int(rng.integers(cfg.distractors[0], cfg.distractors[1] + 1)))
    placed: List[Polygon] = []
    lines: List[Tuple[np.ndarray, np.ndarray, str, bool, bool]] = []
    wanted = int(rng.integers(cfg.lines[0], cfg.lines[1] + 1))
    for attempt in range(wanted + 5):  # up to 5 extra tries when lines did not fit
        if len(lines) >= wanted or (attempt >= wanted and lines):
            break
        k = int(rng.integers(len(renderer.fonts)))
        size = int(rng.integers(cfg.font_size[0], cfg.font_size[1] + 1))
        vertical = rng.random() < cfg.vertical_prob
        room = int(0.85 * (cfg.height if vertical else cfg.width) / (1.25 * size))  # characters that fit
        n = min(int(rng.integers(cfg.min_len, cfg.max_len + 1)), max(room, 1))
        text = renderer.samplers[k].sample(rng, n)
        if vertical:
            text = text.replace(" ", "") or text
            mask = _vertical_mask(renderer, text, k, size, rng)
        else:
            mask = np.asarray(renderer.text_mask(text, k, size, rng)[0], np.float32) / 255.0
        ink = ink_box(mask)
        if ink is None:
            continue
        poly = grow_box(ink, rng.uniform(*cfg.label_margin) * float(min(np.ptp(ink, 0))))
        if not vertical and rng.random() < cfg.curve_prob:
            shape = (rng.uniform(0.15, 0.45) * size * rng.choice([-1, 1]), rng.uniform(0.3, 0.8),
                     rng.uniform(0, 2 * np.pi), cfg.curve_points)
            poly = bent_outline(poly, mask.shape[1], *shape)
            mask, ink = bend(mask, ink, *shape)
        angle = float(rng.uniform(-cfg.max_angle, cfg.max_angle))
        turned = cfg.upside_down_prob > 0 and not vertical and rng.random() < cfg.upside_down_prob  # no draw at 0
        spot = _place(mask, poly, angle + 180.0 * turned, (cfg.width, cfg.height), placed, rng)
        if spot is None:
            continue
        m, page_poly = spot
        if turned and len(page_poly) == 4:  # corners in image order, as a detector gives them: the cut is upside down
            page_poly = order_quad(page_poly)
        page_ink = (ink @ m[:, :2].T + m[:, 2]).astype(np.float32)
        alpha = cv2.warpAffine(mask, m, (cfg.width, cfg.height), flags=cv2.INTER_LINEAR)[..., None]
        ink = np.asarray(fg, np.float32) * rng.uniform(0.8, 1.1)
        page = page * (1 - alpha) + np.clip(ink, 0, 255) * alpha
        placed.append(Polygon(page_poly).buffer(0))
        lines.append((page_poly, page_ink, text, vertical, turned))
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
    meta = {"generator": 3, "splits": splits, "config": {k: list(v) if isinstance(v, tuple) else v
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
