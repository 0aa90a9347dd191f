"""Synthetic Chinese text-line generator: many fonts, backgrounds and degradations (no download).

Each line picks a font of its split's side (``fonts.py``: data split ``heldout`` renders only with
eval fonts, every other split only with train fonts), a text from ``textgen.TextSampler`` (hanzi by
real-usage frequency with digits / Latin / punctuation mixed in; only characters the side's fonts
can draw), and is rendered character by character with PIL: varied size, letter spacing, faux-bold
stroke, slight curvature. Characters the picked font lacks are drawn with another font of the same
side. Then (``aug``): background and ink colours (``backgrounds.py``), drop shadow, underline or
table lines, rotation + perspective, crops at the top/bottom edge, uneven lighting, Gaussian or
motion blur, noise and a random JPEG quality. Issue 54 (``styles.py``): thinner or heavier strokes, outlined,
shadowed and faded (low-contrast) text, small text (10-14 px, upscaled to the stored height as the OCR system
upscales a small crop), and vertical lines (``vertical_prob``): characters stacked top to bottom in a column, then
turned 90 degrees counter-clockwise when the column is at least 1.5x taller than wide, exactly as the OCR system
turns a tall crop before recognition (``ocr_det.geometry.turn_if_tall``, PaddleOCR's rule): the recognizer learns
vertical text in the form the system feeds it.

Sample ``i`` of a split is generated from its own seed derived from (seed, split, i), so the output
is identical whatever the number of worker processes.

Writes both PaddleOCR formats for each split, plus a per-sample font tag side file::

    <out_dir>/<split>/images/00000000.jpg
    <out_dir>/<split>/label.txt        # "images/00000000.jpg<TAB>label", paths relative to <split>/
    <out_dir>/<split>/lmdb/            # num-samples, image-%09d, label-%09d (1-based)
    <out_dir>/<split>/fonts.txt        # "images/00000000.jpg<TAB>font name", same order as label.txt / lmdb
"""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ...data.render_pool import fork_map
from .backgrounds import make_background, pick_colors
from .fonts import FONTS, FontError, FontSpec, coverage, font_available, fonts_for
from .textgen import DEFAULT_FREQ_FILE, TextSampler, load_char_freq
from .dataset import DatasetConfig
from .styles import paint, pick_style, reweight
from ..ocr_det.geometry import turn_if_tall
from paddle_recipes.data import write_lmdb

logger = logging.getLogger(__name__)

GENERATOR_VERSION = 3  # bump when the rendering changes, so cached sets are rebuilt
SPLIT_IDS = {"train": 0, "val": 1, "test": 2, "heldout": 3}
HELDOUT_SPLITS = ("heldout",)  # data splits rendered with the eval fonts
FONT_TAGS_FILE = "fonts.txt"


@dataclass
class SynthConfig:
    """Generator settings.

    height: stored line height in px (default 48, the model input height).
    min_len / max_len: characters per line (inclusive), drawn uniformly.
    font_size: (min, max) render size in px, drawn per line; lines are then resized to ``height``
        (small sizes give the softer strokes of low-resolution text).
    aug: backgrounds, colours and degradations; False = dark text on a flat light background.
    jpeg_quality: quality of the stored JPEGs (with aug, 30% of lines get a random 30-75).
    seed: base seed; sample i of split s uses seed (seed, s, i).
    fonts: restrict to these registered font names (empty = all of ``fonts.FONTS``).
    char_freq: "" = the shipped real-usage frequencies (datasets/ocr_rec/char_freq.txt), a path to
        another ``char<TAB>count`` file, or "uniform".
    freq_mix: share of the real-usage distribution in the hanzi draw (rest uniform over the dict).
    mixed_prob: probability that a line mixes digits / Latin / punctuation in (when the dict has them).
    space_prob: with a dict that has the space character (use_space_char), probability of a space at each boundary
        of a mixed line next to a Latin word or a number (textgen.TextSampler; default 0.3; no effect otherwise).
    vertical_prob: with aug, share of vertical lines (stacked in a column, turned as the OCR system turns a tall
        crop; default 0.1). small_prob: with aug, share of lines rendered 10-14 px high (default 0.12).
    """

    min_len: int = 2
    max_len: int = 10
    height: int = 48
    font_size: Tuple[int, int] = (22, 48)
    aug: bool = True
    jpeg_quality: int = 92
    seed: int = 0
    fonts: Tuple[str, ...] = ()
    char_freq: str = ""
    freq_mix: float = 0.5
    mixed_prob: float = 0.4
    space_prob: float = 0.3
    vertical_prob: float = 0.1
    small_prob: float = 0.12

    def __post_init__(self):
        for name in ("vertical_prob", "small_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not 1 <= self.min_len <= self.max_len:
            raise ValueError(f"need 1 <= min_len <= max_len, got {self.min_len}, {self.max_len}")
        self.font_size = tuple(int(v) for v in self.font_size)
        if len(self.font_size) != 2 or not 8 <= self.font_size[0] <= self.font_size[1]:
            raise ValueError(f"font_size must be (min, max) with 8 <= min <= max, got {self.font_size}")
        self.fonts = tuple(self.fonts)
        known = {f.name for f in FONTS}
        unknown = [f for f in self.fonts if f not in known]
        if unknown:
            raise ValueError(f"unknown font(s) {unknown}; registered: {sorted(known)}")
        if not 0.0 <= self.freq_mix <= 1.0:
            raise ValueError(f"freq_mix must be in [0, 1], got {self.freq_mix}")
        if not 0.0 <= self.space_prob <= 1.0:
            raise ValueError(f"space_prob must be in [0, 1], got {self.space_prob}")

_WARNED_MISSING: set = set()  # font warnings given once per process


@dataclass
class SyntheticSetConfig(SynthConfig):
    """A recipe's `Synthetic:` section: the generator settings (SynthConfig) plus where and how much.

    root: output folder (generated on first use, cached by a fingerprint of the generator settings).
    num_train / num_val: lines per split (train fonts). num_heldout: lines of split "heldout",
    rendered with the eval fonts only (0 = no held-out-font split). workers: generator processes
    (not part of the fingerprint). format: which written format the recipe reads, "lmdb" or
    "label_file" (both are always written).
    """

    root: str = "datasets/cache/ocr_rec"
    num_train: int = 20000
    num_val: int = 1000
    num_heldout: int = 1000
    workers: int = 2
    format: str = "lmdb"

    def __post_init__(self):
        super().__post_init__()
        if self.format not in ("lmdb", "label_file"):
            raise ValueError(f"Synthetic.format must be 'lmdb' or 'label_file', got {self.format!r}")
        if min(self.num_train, self.num_val, self.num_heldout) < 0:
            raise ValueError("Synthetic.num_train / num_val / num_heldout must be >= 0")

    def splits(self) -> Dict[str, int]:
        """{split: lines} to generate; "heldout" only when num_heldout > 0 and an eval font is installed
        (the eval fonts are files of the checkout's datasets/fonts/, absent from an installed wheel)."""
        out = {"train": self.num_train, "val": self.num_val}
        if self.num_heldout > 0:
            if any(font_available(f) for f in selected_fonts(self, "eval", check=False)):
                out["heldout"] = self.num_heldout
            elif ("heldout", self.num_heldout) not in _WARNED_MISSING:
                _WARNED_MISSING.add(("heldout", self.num_heldout))
                logger.warning("Synthetic.num_heldout=%d but no eval font file is installed (datasets/fonts/ "
                               "of a checkout): no held-out-font split", self.num_heldout)
        return out

    def split_dataset(self, split: str):
        """The DatasetConfig that reads split "train", "val" or "heldout" of the generated set (in `format`)."""
        root = Path(self.root) / split
        if self.format == "lmdb":
            return DatasetConfig(format="lmdb", data_dir=str(root / "lmdb"))
        return DatasetConfig(format="label_file", data_dir=str(root), label_file_list=[str(root / "label.txt")])

def font_side(split: str) -> str:
    """Font side ("train" / "eval") that renders data split ``split``."""
    return "eval" if split in HELDOUT_SPLITS else "train"


def selected_fonts(cfg: SynthConfig, side: str, check: bool = True) -> List[FontSpec]:
    """Registered fonts of ``side`` allowed by ``cfg.fonts``. With ``check``, only those whose file is
    installed (a missing one is warned once: e.g. a wheel install has only the Noto PyPI faces)."""
    fonts = [f for f in fonts_for(side) if not cfg.fonts or f.name in cfg.fonts]
    if not fonts:
        raise ValueError(f"no {side} font selected (SynthConfig.fonts={list(cfg.fonts)}); "
                         f"{side} fonts: {[f.name for f in fonts_for(side)]}")
    if not check:
        return fonts
    found = [f for f in fonts if font_available(f)]
    missing = tuple(f.name for f in fonts if f not in found)
    if not found:
        raise FontError(f"no {side} font file is installed: {[f.path() for f in fonts]} "
                        "(the datasets/fonts/ files come with a checkout of the repository)")
    if missing and (side, missing) not in _WARNED_MISSING:
        _WARNED_MISSING.add((side, missing))
        logger.warning("%d %s font file(s) not installed, rendering with the %d found (%s); missing: %s",
                       len(missing), side, len(found), ", ".join(f.name for f in found), ", ".join(missing))
    return found


class LineRenderer:
    """Renders text lines of one font side to RGB uint8 images of height ``cfg.height``.

    ``chars``: the dict; ``self.chars`` keeps the entries at least one font of the side can draw
    (``self.undrawable`` the others, never generated).
    """

    def __init__(self, cfg: SynthConfig, chars: Sequence[str], side: str = "train"):
        self.cfg = cfg
        self.fonts = selected_fonts(cfg, side)
        self.cov = [coverage(f) for f in self.fonts]
        drawable = lambda c: any(all(ord(u) in cov for u in c) for cov in self.cov)  # noqa: E731
        entries = [c for c in dict.fromkeys(chars) if not c.isspace() or c == " "]
        self.chars = [c for c in entries if drawable(c)]
        self.undrawable = [c for c in entries if not drawable(c)]
        if cfg.char_freq == "uniform":
            freq: Dict[str, float] = {}
        else:
            freq = load_char_freq(cfg.char_freq or DEFAULT_FREQ_FILE)
        # one text sampler per font, over the dict entries that font has glyphs for: a line's text is
        # drawn in its own font (fonts with partial coverage, e.g. the traditional-only cwTeX ones,
        # only get lines of the characters they have)
        self.samplers = []
        for cov in self.cov:
            own = [c for c in self.chars if c != " " and all(ord(u) in cov for u in c)]
            own += [" "] * (" " in self.chars and bool(own))
            self.samplers.append(TextSampler(own or self.chars, freq, cfg.freq_mix, cfg.mixed_prob, cfg.space_prob))
        self._pil: Dict[Tuple[int, int], ImageFont.FreeTypeFont] = {}

    def font(self, k: int, size: int) -> ImageFont.FreeTypeFont:
        key = (k, size)
        if key not in self._pil:
            spec = self.fonts[k]
            self._pil[key] = ImageFont.truetype(spec.path(), size, index=spec.index)
        return self._pil[key]

    def font_for_char(self, k: int, ch: str) -> int:
        """Font index that draws ``ch``: ``k`` if it has the glyph, else the first font of the side that does."""
        if all(ord(u) in self.cov[k] for u in ch):
            return k
        for j, cov in enumerate(self.cov):
            if all(ord(u) in cov for u in ch):
                return j
        raise ValueError(f"no {self.fonts[k].split} font can draw {ch!r}")

    # ------------------------------------------------------------------ text layer
    def text_mask(self, text: str, k: int, size: int, rng: np.random.Generator):
        """White-on-black 'L' mask of the text, with margins; returns (mask, baseline_y, text_box)."""
        spec = self.fonts[k]
        aug = self.cfg.aug
        r = rng.random()
        spacing = 0.0 if not aug or r < 0.5 else (rng.uniform(-0.04, 0.12) if r < 0.85 else rng.uniform(0.15, 0.5))
        stroke = 1 if aug and not spec.bold and size >= 30 and rng.random() < 0.12 else 0
        curve = rng.uniform(0.03, 0.09) * size if aug and rng.random() < 0.12 else 0.0
        phase, cycles = rng.uniform(0, 2 * np.pi), rng.uniform(0.3, 1.0)
        glyph_fonts = [self.font(self.font_for_char(k, c), size) for c in text]
        main = self.font(k, size)
        ascent, descent = main.getmetrics()
        advances = [f.getlength(c) for f, c in zip(glyph_fonts, text)]
        gaps = [spacing * size * (0.4 if c.isascii() else 1.0) for c in text]
        width = sum(advances) + sum(gaps[:-1]) + 2 * stroke
        mx = int(size * (rng.uniform(0.05, 0.5) if aug else 0.15)) + 2
        my_top = int(size * (rng.uniform(0.03, 0.22) if aug else 0.1)) + 1
        my_bot = int(size * (rng.uniform(0.03, 0.22) if aug else 0.1)) + 1
        h = int(ascent + descent + my_top + my_bot + 2 * curve)
        w = int(math.ceil(width)) + 2 * mx
        mask = Image.new("L", (w, h), 0)
        draw = ImageDraw.Draw(mask)
        baseline = my_top + curve + ascent
        x = float(mx + stroke)
        for f, c, adv, gap in zip(glyph_fonts, text, advances, gaps):
            dy = curve * math.sin(phase + 2 * np.pi * cycles * (x / max(w, 1))) if curve else 0.0
            draw.text((x, baseline + dy), c, font=f, fill=255, anchor="ls", stroke_width=stroke, stroke_fill=255)
            x += adv + gap
        box = (mx, int(baseline - ascent), mx + int(math.ceil(width)), int(baseline + descent))
        return mask, baseline, box, draw

    def vertical_mask(self, text: str, k: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """Characters stacked top to bottom, centred in a column: float mask [h, w] in [0, 1] (margins 2 px +
        a random share of the size around the column)."""
        gap = size * rng.uniform(0.0, 0.25)
        side = size * rng.uniform(0.1, 0.35)
        w = int(size + 2 * side) + 4
        h = int(len(text) * (size + gap) - gap + 2 * size * rng.uniform(0.05, 0.25)) + 4
        img = Image.new("L", (w, h), 0)
        draw = ImageDraw.Draw(img)
        y = (h - (len(text) * (size + gap) - gap)) / 2.0
        for ch in text:
            font = self.font(self.font_for_char(k, ch), size)
            draw.text((w / 2, y + size / 2), ch, font=font, fill=255, anchor="mm")
            y += size + gap
        return np.asarray(img, np.float32) / 255.0

    # ------------------------------------------------------------------ full render
    def render(self, text: str, rng: np.random.Generator, k: int | None = None, vertical: bool = False) -> np.ndarray:
        """One line image (RGB uint8, height cfg.height). ``vertical``: a column of ``text`` (spaces dropped)
        turned as the OCR system turns a tall crop (see the module docstring)."""
        cfg = self.cfg
        if k is None:
            k = int(rng.integers(len(self.fonts)))
        size = int(rng.integers(cfg.font_size[0], cfg.font_size[1] + 1))
        if cfg.aug and rng.random() < cfg.small_prob:  # small text, upscaled below
            size = int(rng.integers(10, 15))
        style = pick_style(rng, size) if cfg.aug else None
        if vertical:
            col = self.vertical_mask(text.replace(" ", "") or text, k, size, rng)
            a = turn_if_tall(col)
            ys, xs = np.nonzero(a > 0.35)
            box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1) if len(xs) else (0, 0) + a.shape[::-1]
            src_h = a.shape[0]
        else:
            mask, baseline, box, draw = self.text_mask(text, k, size, rng)
            if cfg.aug and rng.random() < 0.1:  # underline in the text colour
                y = int(min(mask.size[1] - 1, baseline + max(2, size * 0.12)))
                draw.line([(box[0], y), (box[2], y)], fill=255, width=int(rng.integers(1, 3)))
            a = np.asarray(mask, np.float32) / 255.0
            src_h = mask.size[1]
        if style is not None:
            a = reweight(a, size, style.weight)
        # compose at (about) the stored height: every later step costs O(pixels)
        a = self._resize(a)
        scale = a.shape[0] / float(src_h)
        box = tuple(int(round(v * scale)) for v in box)
        h, w = a.shape
        if not cfg.aug:
            return np.repeat((255.0 * (1.0 - a[..., None]) + 0.5).astype(np.uint8), 3, axis=2)

        bg_rgb, fg_rgb, _ = pick_colors(rng)
        img = make_background(rng, h, w, bg_rgb)
        if rng.random() < 0.12:  # table / box lines near the edges, in their own colour
            lines = np.zeros((h, w), np.uint8)
            t = int(rng.integers(1, 3))
            if rng.random() < 0.7:
                for y in (int(rng.integers(0, max(1, box[1] // 2 + 1))), h - 1 - int(rng.integers(0, max(1, (h - box[3]) // 2 + 1)))):
                    if rng.random() < 0.7:
                        cv2.line(lines, (0, y), (w - 1, y), 255, t)
            for x in (int(rng.integers(0, max(1, box[0] // 2 + 1))), w - 1 - int(rng.integers(0, max(1, (w - box[2]) // 2 + 1)))):
                if rng.random() < 0.5:
                    cv2.line(lines, (x, 0), (x, h - 1), 255, t)
            la = lines.astype(np.float32)[..., None] / 255.0
            tone = np.asarray(fg_rgb, np.float32) * rng.uniform(0.6, 1.2)
            img = img * (1 - la) + np.clip(tone, 0, 255) * la
        if rng.random() < 0.1:  # drop shadow
            dx, dy = int(rng.integers(1, 3)), int(rng.integers(1, 3))
            sh = np.zeros_like(a)
            sh[dy:, dx:] = a[:h - dy, :w - dx]
            sh = cv2.GaussianBlur(sh, (0, 0), rng.uniform(0.5, 1.2))[..., None] * rng.uniform(0.3, 0.7)
            img = img * (1 - sh)
        if style.outline:  # the rim in the stored image's pixels
            style.outline = max(1, int(round(style.outline * scale)))
        style.shadow = tuple(int(round(v * scale)) for v in style.shadow)
        img = paint(img, a, fg_rgb, style, rng)
        if rng.random() < 0.08:  # partial crop at the top or bottom edge (2-8% of the text height)
            cut = int(round((box[3] - box[1]) * rng.uniform(0.02, 0.08)))
            top, bottom = (box[1] + cut, h) if rng.random() < 0.5 else (0, box[3] - cut)
            if cut > 0 and bottom - top > 8:
                img = img[top:bottom]
        img = self._geometry(img, rng)
        if rng.random() < 0.1:  # uneven lighting: a soft dark band across the line
            hh, ww = img.shape[:2]
            xs = np.linspace(0, 1, ww, dtype=np.float32)
            c0, width_ = rng.uniform(0, 1), rng.uniform(0.15, 0.5)
            band = np.exp(-((xs - c0) / width_) ** 2) * rng.uniform(0.2, 0.5)
            img = img * (1 - band)[None, :, None]
        img = self._resize(np.clip(img, 0, 255).astype(np.uint8))
        r = rng.random()
        px = cfg.height / 48.0  # blur scales with the stored height
        if r < 0.15:
            img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.4, 1.0) * px)
        elif r < 0.23:
            n = 5 if px >= 0.8 and rng.random() < 0.25 else 3
            kern = np.zeros((n, n), np.float32)
            if rng.random() < 0.7:
                kern[n // 2, :] = 1.0
            else:
                np.fill_diagonal(kern, 1.0)
            img = cv2.filter2D(img, -1, kern / kern.sum())
        if rng.random() < 0.25:
            noise = rng.normal(0, rng.uniform(2, 10), size=img.shape).astype(np.float32)
            img = np.clip(img.astype(np.float32) + noise, 0, 255).astype(np.uint8)
        return img

    def _geometry(self, img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Slight rotation + perspective; the canvas grows to keep the whole text."""
        h, w = img.shape[:2]
        src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
        dst = src.copy()
        changed = False
        if rng.random() < 0.35:
            ang = math.radians(rng.uniform(-2.5, 2.5))
            c, s = math.cos(ang), math.sin(ang)
            ctr = np.float32([w / 2, h / 2])
            dst = (dst - ctr) @ np.float32([[c, s], [-s, c]]) + ctr
            changed = True
        if rng.random() < 0.2:
            dst = dst + rng.uniform(-0.05, 0.05, size=(4, 2)).astype(np.float32) * np.float32([h, h])
            changed = True
        if changed:
            x0, y0 = dst.min(axis=0)
            dst = dst - np.float32([x0, y0])
            ow, oh = int(math.ceil(dst[:, 0].max())), int(math.ceil(dst[:, 1].max()))
            m = cv2.getPerspectiveTransform(src, dst.astype(np.float32))
            img = cv2.warpPerspective(img, m, (max(ow, 1), max(oh, 1)), flags=cv2.INTER_LINEAR,
                                      borderMode=cv2.BORDER_REPLICATE)
        return img

    def _resize(self, img: np.ndarray) -> np.ndarray:
        h, w = img.shape[:2]
        new_w = max(1, int(round(w * self.cfg.height / float(h))))
        interp = cv2.INTER_AREA if h > self.cfg.height else cv2.INTER_LINEAR
        return cv2.resize(img, (new_w, self.cfg.height), interpolation=interp)

def _sample_seed(seed: int, split: str, i: int) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed & 0xFFFFFFFF, SPLIT_IDS.get(split, 9), i])


_WORKER: dict = {}


def _init_worker(cfg: SynthConfig, chars: List[str]) -> None:
    cv2.setNumThreads(1)
    _WORKER.clear()
    _WORKER["cfg"], _WORKER["chars"] = cfg, chars


def _renderer(side: str) -> LineRenderer:
    key = ("renderer", side)
    if key not in _WORKER:
        _WORKER[key] = LineRenderer(_WORKER["cfg"], _WORKER["chars"], side)
    return _WORKER[key]


def make_sample(cfg: SynthConfig, renderer: LineRenderer, split: str, i: int) -> Tuple[bytes, str, str]:
    """Sample ``i`` of ``split``: (jpeg bytes, label, font name); a pure function of (cfg, dict, split, i)."""
    rng = np.random.default_rng(_sample_seed(cfg.seed, split, i))
    k = int(rng.integers(len(renderer.fonts)))
    text = renderer.samplers[k].sample(rng, int(rng.integers(cfg.min_len, cfg.max_len + 1)))
    vertical = cfg.aug and rng.random() < cfg.vertical_prob
    if vertical:  # a column has no spaces (the label is what is drawn)
        text = text.replace(" ", "") or renderer.samplers[k].sample(rng, 1).replace(" ", "") or text
    img = renderer.render(text, rng, k, vertical=vertical)
    quality = int(rng.integers(30, 76)) if cfg.aug and rng.random() < 0.3 else cfg.jpeg_quality
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:  # pragma: no cover - cv2 always encodes uint8 RGB
        raise RuntimeError(f"JPEG encoding failed for sample {split}/{i}")
    return buf.tobytes(), text, renderer.fonts[k].name


def _make_sample(args) -> Tuple[bytes, str, str]:
    split, i = args
    return make_sample(_WORKER["cfg"], _renderer(font_side(split)), split, i)


def generate_samples(cfg: SynthConfig, chars: Sequence[str], split: str, num: int, workers: int = 1,
                     return_fonts: bool = False) -> list:
    """Render ``num`` samples of ``split`` in index order: [(jpeg_bytes, label)], or with
    ``return_fonts`` [(jpeg_bytes, label, font_name)]. Split ``heldout`` uses the eval fonts."""
    chars = list(chars)
    jobs = [(split, i) for i in range(num)]
    if workers <= 1 or num < 64:
        _init_worker(cfg, chars)
        out = [_make_sample(j) for j in jobs]
    else:
        out = fork_map(_make_sample, jobs, workers, initializer=_init_worker, initargs=(cfg, chars),
                       chunksize=max(16, num // (workers * 8)))
    return out if return_fonts else [(d, t) for d, t, _ in out]


def write_split(out_dir: str | os.PathLike, samples: Sequence[tuple], fmt: str = "both") -> Path:
    """Write samples as a label file + images and/or an LMDB under ``out_dir``. ``fmt``: label_file|lmdb|both.

    Samples are (jpeg, label) or (jpeg, label, font); with fonts, ``fonts.txt`` gets one
    ``images/%08d.jpg<TAB>font`` line per sample (same order as label.txt and the LMDB's 1-based keys).
    """
    if fmt not in ("label_file", "lmdb", "both"):
        raise ValueError(f"format must be label_file, lmdb or both, got {fmt!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if fmt in ("label_file", "both"):
        (out / "images").mkdir(exist_ok=True)
        lines = []
        for i, s in enumerate(samples):
            rel = f"images/{i:08d}.jpg"
            (out / rel).write_bytes(s[0])
            lines.append(f"{rel}\t{s[1]}")
        _write_text(out / "label.txt", lines)
    if fmt in ("lmdb", "both"):
        write_lmdb(out / "lmdb", [(s[0], s[1]) for s in samples], overwrite=True)
    if samples and len(samples[0]) > 2:
        _write_text(out / FONT_TAGS_FILE, [f"images/{i:08d}.jpg\t{s[2]}" for i, s in enumerate(samples)])
    return out


def _write_text(path: Path, lines: Sequence[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_font_tags(split_dir: str | os.PathLike) -> List[str]:
    """Font name of every sample of a generated split (index order), from its ``fonts.txt``."""
    path = Path(split_dir) / FONT_TAGS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no font tags for {split_dir}: {path} is missing (regenerate the synthetic set)")
    tags = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        rel, sep, font = line.partition("\t")
        if not sep or not font:
            raise ValueError(f"{path}:{lineno}: expected 'image<TAB>font', got {line!r}")
        tags.append(font)
    return tags


def fonts_fingerprint(cfg: SynthConfig) -> List[list]:
    """Name, side and file size of every font the config renders with (a changed font file rebuilds)."""
    out = []
    for f in FONTS:
        if cfg.fonts and f.name not in cfg.fonts:
            continue
        p = f.path()
        out.append([f.name, f.split, os.path.getsize(p) if os.path.isfile(p) else -1])
    return out


def dataset_fingerprint(chars: Sequence[str], splits: dict, cfg: SynthConfig, fmt: str = "both") -> dict:
    """What ``meta.json`` holds for a finished set: settings, fonts, split sizes, dict size and checksum."""
    conf = {f.name: getattr(cfg, f.name) for f in fields(SynthConfig)}  # not a SyntheticSetConfig's root etc.
    conf["font_size"], conf["fonts"] = list(cfg.font_size), list(cfg.fonts)
    return {"config": conf, "generator_version": GENERATOR_VERSION, "fonts": fonts_fingerprint(cfg),
            "splits": {k: int(v) for k, v in splits.items()}, "format": fmt, "num_chars": len(chars),
            "chars_hash": int(np.frombuffer("".join(chars).encode("utf-8"), np.uint8).astype(np.uint64).sum())}

def is_up_to_date(out_dir: str | os.PathLike, meta: dict) -> bool:
    path = Path(out_dir) / "meta.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")) == meta
    except (OSError, ValueError):
        return False

def build_dataset(out_dir: str | os.PathLike, chars: Sequence[str], splits: dict, cfg: SynthConfig,
                  fmt: str = "both", workers: int = 2, force: bool = False) -> Path:
    """Generate every split ({"train": n, "val": m, "heldout": k}) into ``out_dir``; cached by a
    meta.json fingerprint. Split "heldout" is rendered with the eval fonts only, the others with
    the train fonts. Returns ``out_dir``; when ``meta.json`` matches, nothing is redone.
    """
    out = Path(out_dir)
    meta = dataset_fingerprint(chars, splits, cfg, fmt)
    meta_path = out / "meta.json"
    if not force and is_up_to_date(out, meta):
        logger.info("synthetic set in %s is up to date", out)
        return out
    if meta_path.exists():
        meta_path.unlink()
    for side in sorted({font_side(s) for s in splits}):
        r = LineRenderer(cfg, chars, side)
        if r.undrawable:
            logger.warning("%d dict characters have no glyph in any %s font and never appear in its splits: %s",
                           len(r.undrawable), side, "".join(r.undrawable[:40]))
    for split, num in splits.items():
        logger.info("rendering %d %s lines (%s fonts) with %d workers ...", num, split, font_side(split), workers)
        samples = generate_samples(cfg, chars, split, int(num), workers=workers, return_fonts=True)
        write_split(out / split, samples, fmt)
    tmp = out / "meta.json.tmp"
    tmp.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, meta_path)
    return out
