"""Backgrounds and colours of synthetic text lines: flat, gradient, paper-like texture, noise;
dark-on-light mostly, with coloured, low-contrast and inverted (light-on-dark) lines.

Everything is drawn from the caller's ``numpy.random.Generator`` (deterministic per sample) and
costs well under a millisecond for a 48x320 line.
"""
from __future__ import annotations

from typing import Tuple

import cv2
import numpy as np

# dark ink colours seen in documents, signs and screenshots (RGB)
INKS = ((20, 20, 20), (30, 40, 120), (150, 20, 20), (20, 90, 40), (90, 50, 20), (60, 60, 70), (0, 70, 140))


def _smooth_field(rng: np.random.Generator, h: int, w: int, cells: int) -> np.ndarray:
    """Low-frequency noise in [-1, 1], shape (h, w): a small random grid upscaled bicubically."""
    gh, gw = max(2, cells * h // max(h, w) + 2), max(2, cells + 2)
    grid = rng.uniform(-1.0, 1.0, size=(gh, gw)).astype(np.float32)
    return cv2.resize(grid, (w, h), interpolation=cv2.INTER_CUBIC)


def make_background(rng: np.random.Generator, h: int, w: int, base: Tuple[float, float, float]) -> np.ndarray:
    """Float32 (h, w, 3) image in [0, 255] around colour ``base``: flat, gradient, paper or noisy."""
    base_arr = np.asarray(base, np.float32)
    img = np.empty((h, w, 3), np.float32)
    img[:] = base_arr
    kind = rng.random()
    if kind < 0.3:  # flat
        return img
    if kind < 0.55:  # linear gradient along x or y
        amp = rng.uniform(15, 60) * rng.choice([-1.0, 1.0])
        ramp = np.linspace(-0.5, 0.5, w if rng.random() < 0.7 else h, dtype=np.float32) * amp
        tint = rng.uniform(0.6, 1.0, size=3).astype(np.float32)
        img += (ramp[None, :, None] if ramp.size == w else ramp[:, None, None]) * tint
    elif kind < 0.85:  # paper: blotchy low-frequency shading + fine grain (+ fibres)
        img += _smooth_field(rng, h, w, int(rng.integers(3, 12)))[..., None] * rng.uniform(5, 20)
        img += rng.normal(0, rng.uniform(2, 6), size=(h, w, 1)).astype(np.float32)
        if rng.random() < 0.4:
            for _ in range(int(rng.integers(1, 6))):
                x0, y0 = int(rng.integers(w)), int(rng.integers(h))
                ang = rng.uniform(0, np.pi)
                ln = rng.uniform(5, 25)
                x1, y1 = int(x0 + ln * np.cos(ang)), int(y0 + ln * np.sin(ang))
                shade = float(rng.uniform(-25, -8))
                cv2.line(img, (x0, y0), (x1, y1), tuple(float(v + shade) for v in base_arr), 1, cv2.LINE_AA)
    else:  # flat + coloured noise
        img += rng.normal(0, rng.uniform(4, 12), size=(h, w, 3)).astype(np.float32)
    return np.clip(img, 0, 255, out=img)


def pick_colors(rng: np.random.Generator) -> Tuple[Tuple[float, ...], Tuple[float, ...], str]:
    """(background RGB, text RGB, kind) with kind in normal | color | low_contrast | inverted."""
    r = rng.random()
    if r < 0.08:  # light text on a dark or saturated background (signs, headers, dark-mode screens)
        bg = tuple(float(v) for v in rng.uniform(0, 90, size=3))
        fg = tuple(float(v) for v in rng.uniform(190, 255, size=3))
        return bg, fg, "inverted"
    paper = rng.uniform(175, 250)
    bg = tuple(float(np.clip(paper + rng.uniform(-18, 12), 0, 255)) for _ in range(3))
    if r < 0.18:  # low contrast: faded print, light-grey ink
        delta = rng.uniform(45, 85)
        fg = tuple(float(max(0.0, c - delta + rng.uniform(-5, 5))) for c in bg)
        return bg, fg, "low_contrast"
    if r < 0.43:  # coloured ink
        ink = np.asarray(INKS[int(rng.integers(1, len(INKS)))], np.float32) + rng.uniform(-20, 20, size=3)
        return bg, tuple(float(v) for v in np.clip(ink, 0, 255)), "color"
    g = rng.uniform(0, 70)
    return bg, tuple(float(np.clip(g + rng.uniform(-8, 8), 0, 255)) for _ in range(3)), "normal"
