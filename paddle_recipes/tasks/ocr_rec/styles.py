"""Faces, strokes and backgrounds shared by the text-line generator (``synth.py``) and the det pages
(``ocr_det/synth_pages.py``), issue 54: stroke weight (thinner or heavier than the font draws it), outlined and
shadowed text, low-contrast ink, and page backgrounds cut from the real photographs that installed packages ship.

Every choice is drawn from the caller's ``numpy.random.Generator``: the same seed gives the same pixels (with the
same installed packages: the photographs are read from sklearn / matplotlib, never copied into the repository;
without them :func:`photo_background` falls back to a procedural texture).
"""
from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import List, Tuple

import cv2
import numpy as np

Color = Tuple[float, float, float]


@dataclass
class Style:
    """How one line (or block of lines) is painted. weight: -1 thinner strokes, 0 as drawn, 1 heavier.
    outline: px of a contrasting rim around the glyphs (0: none). shadow: (dx, dy) px of a soft shadow ((0, 0):
    none). contrast: share of the ink-to-background difference kept (1: as picked; 0.35-0.6: faded, low-contrast)."""

    weight: int = 0
    outline: int = 0
    shadow: Tuple[int, int] = (0, 0)
    contrast: float = 1.0


def pick_style(rng: np.random.Generator, size: float, p_thin: float = 0.12, p_heavy: float = 0.1,
               p_outline: float = 0.06, p_shadow: float = 0.08, p_faded: float = 0.06) -> Style:
    """A random style for text ``size`` px high (the draws are made in a fixed order whatever the outcome)."""
    r_weight, r_outline, r_shadow, r_faded = rng.random(4)
    rim = max(1, int(round(size * rng.uniform(0.04, 0.09))))
    off = max(1, int(round(size * rng.uniform(0.04, 0.1))))
    dirs = rng.choice([-1, 1], 2)
    keep = rng.uniform(0.35, 0.6)
    weight = -1 if r_weight < p_thin else (1 if r_weight < p_thin + p_heavy else 0)
    return Style(weight=weight, outline=rim if r_outline < p_outline else 0,
                 shadow=(int(off * dirs[0]), int(off * dirs[1])) if r_shadow < p_shadow else (0, 0),
                 contrast=float(keep) if r_faded < p_faded else 1.0)


def reweight(mask: np.ndarray, size: float, weight: int) -> np.ndarray:
    """``mask`` (float [h, w] in [0, 1], glyphs drawn ``size`` px high) with thinner (weight -1: erosion, a faint
    trace of the stroke kept) or heavier (1: dilation) strokes: a 3 % of the size radius from 24 px, a 2x2 kernel
    below; unchanged under 12 px (heavier: under 16 px, where the counters would fill)."""
    if weight == 0 or size < 12 or (weight > 0 and size < 16):  # small glyphs made heavier fill their counters
        return mask
    r = max(1, int(round(size * 0.035)))
    kernel = (cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1)) if size >= 24
              else np.ones((2, 2), np.uint8))
    if weight > 0:
        return cv2.dilate(mask, kernel)
    thin = cv2.erode(mask, kernel)
    # an eroded stroke must not vanish: keep at least a faint trace of the original (a hairline)
    return np.maximum(thin, mask * 0.5)


def rim_of(mask: np.ndarray, px: int) -> np.ndarray:
    """The outline ring ``px`` px wide around the glyphs of ``mask``."""
    k = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * px + 1, 2 * px + 1))
    return np.clip(cv2.dilate(mask, k) - mask, 0.0, 1.0)


def contrasting(rgb: Color, rng: np.random.Generator) -> Color:
    """A colour that stands out from ``rgb``: light for a dark one, dark for a light one."""
    lum = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    lo, hi = (200, 255) if lum < 128 else (0, 60)
    base = rng.uniform(lo, hi)
    return tuple(float(np.clip(base + d, 0, 255)) for d in rng.uniform(-15, 15, 3))


def paint(img: np.ndarray, alpha: np.ndarray, fg: Color, style: Style, rng: np.random.Generator) -> np.ndarray:
    """Composite glyphs (``alpha`` [h, w] in [0, 1]) onto ``img`` (float [h, w, 3]) in ``fg`` with ``style``:
    shadow first, then the outline rim (in ``fg``; the glyphs then get a contrasting fill), then the glyphs."""
    a = alpha[..., None]
    bg_mean = img.reshape(-1, 3).mean(0) if img.size else np.zeros(3, np.float32)
    ink = np.asarray(fg, np.float32)
    if style.contrast < 1.0:
        ink = bg_mean + (ink - bg_mean) * style.contrast
    dx, dy = style.shadow
    if dx or dy:
        h, w = alpha.shape
        m = np.float32([[1, 0, dx], [0, 1, dy]])
        sh = cv2.warpAffine(alpha, m, (w, h))
        sh = cv2.GaussianBlur(sh, (0, 0), max(0.5, 0.6 * math.hypot(dx, dy)))[..., None] * rng.uniform(0.4, 0.8)
        tone = min(float(bg_mean.mean()), float(ink.mean())) * 0.4  # a dark shadow
        img = img * (1 - sh) + tone * sh
    if style.outline:
        ring = rim_of(alpha, style.outline)[..., None]
        img = img * (1 - ring) + ink * ring
        ink = np.asarray(contrasting(tuple(ink), rng), np.float32)
    return img * (1 - a) + ink * a


# ------------------------------------------------------------------ photographs and textures
_PHOTOS: dict = {}


def _package_dir(name: str) -> Path | None:
    """An installed package's folder, found without importing it (importing sklearn takes seconds)."""
    spec = importlib.util.find_spec(name)
    return Path(list(spec.submodule_search_locations)[0]) if spec and spec.submodule_search_locations else None


def photo_paths() -> List[Path]:
    """The real photographs installed packages ship (sklearn's china.jpg / flower.jpg, matplotlib's
    grace_hopper.jpg; neither package is a dependency); the ones not installed are left out."""
    sk, mpl = _package_dir("sklearn"), _package_dir("matplotlib")
    paths = [sk / "datasets" / "images" / n for n in ("china.jpg", "flower.jpg")] if sk else []
    paths += [mpl / "mpl-data" / "sample_data" / "grace_hopper.jpg"] if mpl else []
    return [p for p in paths if p.is_file()]


def _photos() -> List[np.ndarray]:
    if "rgb" not in _PHOTOS:
        imgs = [cv2.imread(str(p)) for p in photo_paths()]
        _PHOTOS["rgb"] = [cv2.cvtColor(im, cv2.COLOR_BGR2RGB) for im in imgs if im is not None]
    return _PHOTOS["rgb"]


def texture(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A procedural texture (float [h, w, 3]): wood-like rings, fabric weave or speckled stone."""
    base = rng.uniform(90, 230, 3).astype(np.float32)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    kind = int(rng.integers(3))
    if kind == 0:
        f = rng.uniform(0.05, 0.2)
        warp = cv2.resize(rng.uniform(-1, 1, (4, 4)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
        field = np.sin(f * (xx * rng.uniform(-0.3, 0.3) + yy) + 6 * warp) * rng.uniform(10, 30)
    elif kind == 1:
        p = rng.uniform(3, 8)
        field = (np.sin(2 * np.pi * xx / p) * np.sin(2 * np.pi * yy / p)) * rng.uniform(6, 18)
    else:
        g = cv2.GaussianBlur(rng.normal(0, 1, (h, w)).astype(np.float32), (0, 0), rng.uniform(0.8, 3))
        field = g / (g.std() + 1e-6) * rng.uniform(8, 25)
    return np.clip(base[None, None, :] + field[..., None] * rng.uniform(0.6, 1.0, 3).astype(np.float32), 0, 255)


def photo_background(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A random crop of one of the shipped photographs scaled to ``h x w`` (float RGB), maybe mirrored, softened
    and washed out (so text on it stays readable); :func:`texture` when no photograph is installed."""
    photos = _photos()
    if not photos:
        return texture(rng, h, w)
    photo = photos[int(rng.integers(len(photos)))]
    ph, pw = photo.shape[:2]
    scale = rng.uniform(0.25, 1.0)
    ch = max(8, int(min(ph, pw * h / w) * scale))
    cw = max(8, int(ch * w / h))
    y, x = int(rng.integers(0, ph - ch + 1)), int(rng.integers(0, max(1, pw - cw + 1)))
    crop = photo[y:y + ch, x:x + cw]
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    out = cv2.resize(np.ascontiguousarray(crop), (w, h), interpolation=cv2.INTER_AREA).astype(np.float32)
    if rng.random() < 0.5:
        out = cv2.GaussianBlur(out, (0, 0), rng.uniform(0.5, 2.0))
    wash = rng.uniform(0.0, 0.5)
    toward = 255.0 if rng.random() < 0.7 else 0.0
    return out * (1 - wash) + toward * wash
