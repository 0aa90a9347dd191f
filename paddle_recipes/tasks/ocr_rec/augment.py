"""Training-time augmentation of text-line images (``Train.dataset.aug``; our stand-in for PaddleOCR's RecAug).

    aug = build_augment(); reseed(aug, seed); img = aug(image=img)["image"]

Each transform fires with its own probability: perspective 0.5, Gaussian or motion blur 0.4, Gaussian noise
0.4, brightness/contrast 0.6. ``build_augment(glyph=True)`` (``Train.dataset.glyph_aug``) first varies the
shape of the glyphs, as another font would draw them (:class:`GlyphVariation`, p 0.6): the line stretched
piecewise along its width (as RecAug's TIA stretch), slanted, strokes thickened or thinned. Works on HxWxC
uint8 images (BGR or RGB alike).
"""
from __future__ import annotations

import math
import random
from typing import Any, Dict, Tuple

import cv2
import numpy as np

from ... import import_albumentations


def stretch_pieces(img: np.ndarray, factors) -> np.ndarray:
    """``img`` cut into ``len(factors)`` equal-width pieces along x, piece i resized in width by factors[i]
    (linear interpolation across the joins); height unchanged, width = round(sum of the new piece widths)."""
    h, w = img.shape[:2]
    src = np.linspace(0.0, w, len(factors) + 1)
    dst = np.concatenate([[0.0], np.cumsum(np.diff(src) * np.asarray(factors, np.float64))])
    out_w = max(1, int(round(dst[-1])))
    map_x = np.interp(np.arange(out_w) + 0.5, dst, src).astype(np.float32) - 0.5
    map_x = np.repeat(map_x[None], h, 0)
    map_y = np.repeat(np.arange(h, dtype=np.float32)[:, None], out_w, 1)
    return cv2.remap(img, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def slant(img: np.ndarray, degrees: float) -> np.ndarray:
    """Shear along x by ``degrees`` (positive: tops lean right, as italics) about the middle row; the width
    grows by h * |tan| so nothing is cut off; replicated border."""
    h, w = img.shape[:2]
    t = math.tan(math.radians(degrees))
    extra = int(math.ceil(abs(t) * h))
    m = np.float32([[1, -t, extra / 2.0 + t * h / 2.0], [0, 1, 0]])
    return cv2.warpAffine(img, m, (w + extra, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def stroke_weight(img: np.ndarray, change: int) -> np.ndarray:
    """Strokes thicker (+1) or thinner (-1) by one pixel: of dark-on-light text by a 2x2 min / max filter
    (light-on-dark text the other way round: the ink is the rarer side of the mid-level between the line's
    0.5 % and 99.5 % brightness percentiles)."""
    if change == 0:
        return img
    gray = img if img.ndim == 2 else img.mean(2)
    lo, hi = np.percentile(gray, (0.5, 99.5))
    dark_ink = (gray < (lo + hi) / 2).mean() < 0.5
    kernel = np.ones((2, 2), np.uint8)
    thicken = cv2.erode if dark_ink else cv2.dilate
    thin = cv2.dilate if dark_ink else cv2.erode
    return (thicken if change > 0 else thin)(img, kernel)


def _glyph_transform_class():
    A = import_albumentations("Train.dataset.glyph_aug")

    class GlyphVariation(A.ImageOnlyTransform):
        """Glyph-shape variation of a text line: ``pieces`` (2-6) pieces stretched by ``stretch`` (0.75-1.3)
        each, a slant in +-``max_slant`` degrees (12) half the time, strokes +-1 px a third of the time."""

        def __init__(self, stretch: Tuple[float, float] = (0.75, 1.3), pieces: Tuple[int, int] = (2, 6),
                     max_slant: float = 12.0, p: float = 0.6):
            super().__init__(p=p)
            self.stretch, self.pieces, self.max_slant = tuple(stretch), tuple(pieces), float(max_slant)

        def get_params(self) -> Dict[str, Any]:
            rnd = self.py_random
            n = rnd.randint(*self.pieces)
            return {"factors": [rnd.uniform(*self.stretch) for _ in range(n)],
                    "shear_deg": rnd.uniform(-self.max_slant, self.max_slant) if rnd.random() < 0.5 else 0.0,
                    "stroke": rnd.choice((-1, 1)) if rnd.random() < 1 / 3 else 0}

        def apply(self, img, factors=(1.0,), shear_deg=0.0, stroke=0, **_):
            out = stretch_pieces(img, factors)
            return stroke_weight(slant(out, shear_deg) if shear_deg else out, stroke)

        def get_transform_init_args_names(self):
            return ("stretch", "pieces", "max_slant")

    return GlyphVariation


def build_augment(glyph: bool = False):
    """albumentations pipeline: slight perspective, blur, noise, brightness/contrast; ``glyph``: glyph-shape
    variation first (see module docstring)."""
    A = import_albumentations("Train.dataset.aug")

    head = [_glyph_transform_class()()] if glyph else []
    return A.Compose(head + [
        A.Perspective(scale=(0.01, 0.04), keep_size=True, fit_output=True, border_mode=cv2.BORDER_REPLICATE, p=0.5),
        A.OneOf([A.GaussianBlur(blur_limit=(3, 5), sigma_limit=(0.3, 1.0)),
                 A.MotionBlur(blur_limit=(3, 5))], p=0.4),
        A.GaussNoise(std_range=(0.01, 0.06), p=0.4),
        A.RandomBrightnessContrast(brightness_limit=0.2, contrast_limit=(-0.4, 0.2), p=0.6),
    ])


def _seed_nodes(compose) -> list | None:
    """Every object compose.set_random_seed seeds (the compose, its transforms, nested composes), when each is
    seeded by albumentations' own BaseCompose / BasicTransform.set_random_seed and owns its generators; else None."""
    A = import_albumentations("Train.dataset.aug")
    base, basic = A.core.composition.BaseCompose, A.core.transforms_interface.BasicTransform
    nodes, stack = [], [compose]
    while stack:
        node = stack.pop()
        if isinstance(node, base):
            if type(node).set_random_seed is not base.set_random_seed:
                return None
            stack += [t for t in node.transforms if isinstance(t, (basic, base))]
        elif type(node).set_random_seed is not basic.set_random_seed:
            return None
        nodes.append(node)
    owned = [id(g) for n in nodes for g in (n.random_generator, n.py_random)]
    return nodes if len(set(owned)) == len(owned) else None


def reseed(compose, seed: int) -> None:
    """``compose.set_random_seed(seed)`` bit for bit, for less CPU per sample. albumentations gives every node
    (the compose and each transform) a fresh ``np.random.default_rng(seed)`` and ``random.Random(seed)``: all
    start from the same two states. Here the first call does that; later calls make the two states once and set
    them into the generators each node already owns (the same draws follow). Nodes whose seeding is not
    albumentations' own: set_random_seed every time."""
    nodes = compose.__dict__.get("_reseed_nodes", False)
    if nodes is False or nodes is None:
        compose.set_random_seed(seed)
        if nodes is False:
            compose.__dict__["_reseed_nodes"] = _seed_nodes(compose)
        return
    state, py_state = np.random.default_rng(seed).bit_generator.state, random.Random(seed).getstate()
    for node in nodes:
        node.seed = seed
        node.random_generator.bit_generator.state = state
        node.py_random.setstate(py_state)
