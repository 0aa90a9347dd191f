"""DB image transforms with PaddleOCR's semantics: ``EastRandomCropData`` (train) and
``DetResizeForTest`` (eval / predict).

* ``east_random_crop``: picks a crop whose borders do not cut any cared text box (rows/columns
  covered by a box are excluded; with several free gaps, two gaps are drawn and one position in
  each), at least ``min_crop_side_ratio`` of each side and touching at least one cared polygon,
  within ``max_tries`` (else the whole image); scales it to fit ``size`` = (W, H) keeping the ratio
  and pads bottom/right with 0 (``keep_ratio``), or stretches it. Polygons are shifted and scaled;
  polygons wholly outside the crop are dropped. Random draws go through ``rng``
  (``np.random.RandomState``) in PaddleOCR's order, so a seed gives PaddleOCR's crop.
* ``det_resize_for_test``: ``limit_type`` 'min' (scale up so the short side >= ``limit_side_len``),
  'max' (scale down so the long side <= it) or 'resize_long' (long side = it); each side is then
  rounded to a multiple of 32 (at least 32). Images with H + W < 64 are first zero-padded to 32 x 32.
  ``image_shape`` (H, W) resizes to a fixed shape instead (``keep_ratio``: W from the ratio, ceil to
  32). ``resize_long`` (PaddleOCR's resize type 2): the long side becomes it, then each side is rounded up to
  a multiple of 128. Returns (image, [src_h, src_w, ratio_h, ratio_w]).
"""
from __future__ import annotations

import math
from typing import List, Sequence, Tuple

import cv2
import numpy as np

from .label_maps import make_border_map, make_shrink_map
from paddle_recipes.data import current_sample_key
from paddle_recipes.data.reproducible import sample_seed


def _outside(poly, x, y, w, h) -> bool:
    poly = np.asarray(poly)
    return bool(poly[:, 0].max() < x or poly[:, 0].min() > x + w or poly[:, 1].max() < y or poly[:, 1].min() > y + h)


def _free_runs(free: np.ndarray) -> List[np.ndarray]:
    """Runs of consecutive indices (the last run is dropped, as PaddleOCR's split_regions)."""
    breaks = np.nonzero(np.diff(free) != 1)[0] + 1
    starts = np.concatenate([[0], breaks])
    return [free[a:b] for a, b in zip(starts[:-1], breaks)]


def crop_area(h: int, w: int, polys: Sequence[np.ndarray], min_crop_side_ratio: float, max_tries: int,
              rng: np.random.RandomState) -> Tuple[int, int, int, int]:
    """(x, y, crop_w, crop_h) of a crop that does not cut the given polygons (see module docstring)."""
    covered = [np.zeros(h, dtype=np.int32), np.zeros(w, dtype=np.int32)]
    for points in polys:
        points = np.round(points, decimals=0).astype(np.int32)
        covered[1][points[:, 0].min():points[:, 0].max()] = 1
        covered[0][points[:, 1].min():points[:, 1].max()] = 1
    h_free, w_free = (np.where(c == 0)[0] for c in covered)
    if len(h_free) == 0 or len(w_free) == 0:
        return 0, 0, w, h
    h_runs, w_runs = _free_runs(h_free), _free_runs(w_free)

    def pick(free, runs, size):
        if len(runs) > 1:
            values = [int(rng.choice(runs[i], size=1)[0]) for i in rng.choice(len(runs), 2)]
            return min(values), max(values)
        pair = rng.choice(free, size=2)
        return int(np.clip(pair.min(), 0, size - 1)), int(np.clip(pair.max(), 0, size - 1))

    for _ in range(max_tries):
        xmin, xmax = pick(w_free, w_runs, w)
        ymin, ymax = pick(h_free, h_runs, h)
        if xmax - xmin < min_crop_side_ratio * w or ymax - ymin < min_crop_side_ratio * h:
            continue
        if any(not _outside(p, xmin, ymin, xmax - xmin, ymax - ymin) for p in polys):
            return xmin, ymin, xmax - xmin, ymax - ymin
    return 0, 0, w, h


def _kept_in_crop(polys, ignore_tags, texts, x: float, y: float, scale: float, w: int, h: int):
    """Polygons moved into the crop at (x, y) scaled by ``scale``, and those that still touch its w x h (with
    their tags and texts): (polys, ignore_tags, texts)."""
    kept = [((np.asarray(p) - (x, y)) * scale, tag, t) for p, tag, t in zip(polys, ignore_tags, texts)]
    kept = [k for k in kept if not _outside(k[0], 0, 0, w, h)]
    return [k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept]


def east_random_crop(img: np.ndarray, polys: Sequence[np.ndarray], ignore_tags: Sequence[bool],
                     texts: Sequence[str], size: Sequence[int] = (640, 640), max_tries: int = 10,
                     min_crop_side_ratio: float = 0.1, keep_ratio: bool = True,
                     rng: np.random.RandomState | None = None):
    """-> (image, polys (list of [K, 2] float64 arrays), ignore_tags, texts); see module docstring."""
    rng = np.random.RandomState() if rng is None else rng
    cared = [p for p, tag in zip(polys, ignore_tags) if not tag]
    x, y, cw, ch = crop_area(img.shape[0], img.shape[1], cared, min_crop_side_ratio, max_tries, rng)
    scale = min(size[0] / cw, size[1] / ch)
    h, w = int(ch * scale), int(cw * scale)
    patch = img[y:y + ch, x:x + cw]
    if keep_ratio:
        out = np.zeros((size[1], size[0], img.shape[2]), img.dtype)
        out[:h, :w] = cv2.resize(patch, (w, h))
    else:
        out = cv2.resize(patch, tuple(size))
    return (out, *_kept_in_crop(polys, ignore_tags, texts, x, y, scale, w, h))


def det_resize_for_test(img: np.ndarray, limit_side_len: int = 736, limit_type: str = "min",
                        image_shape: Sequence[int] | None = None, keep_ratio: bool = False, resize_long: int = 0
                        ) -> Tuple[np.ndarray, np.ndarray]:
    src_h, src_w = img.shape[:2]
    if src_h + src_w < 64:
        pad = np.zeros((max(32, src_h), max(32, src_w), img.shape[2]), np.uint8)
        pad[:src_h, :src_w] = img
        img = pad
    h, w = img.shape[:2]
    if image_shape is not None:
        rh, rw = image_shape
        if keep_ratio:
            rw = math.ceil(w * rh / h / 32) * 32
    elif resize_long:
        ratio = resize_long / max(h, w)
        rh, rw = (math.ceil(int(side * ratio) / 128) * 128 for side in (h, w))
    else:
        if limit_type == "max":
            ratio = limit_side_len / max(h, w) if max(h, w) > limit_side_len else 1.0
        elif limit_type == "min":
            ratio = limit_side_len / min(h, w) if min(h, w) < limit_side_len else 1.0
        elif limit_type == "resize_long":
            ratio = limit_side_len / max(h, w)
        else:
            raise ValueError(f"DetResizeForTest.limit_type: {limit_type!r} is not one of min, max, resize_long")
        rh = max(int(round(int(h * ratio) / 32) * 32), 32)
        rw = max(int(round(int(w * ratio) / 32) * 32), 32)
    img = cv2.resize(img, (int(rw), int(rh)))
    return img, np.array([src_h, src_w, rh / float(h), rw / float(w)])


# ------------------------------------------------------------------ train / eval sample pipelines
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


# (v / 255 - mean) / std for every uint8 value v, per channel: the very float32 ops of the formula, done once
_NORM_LUT = [np.ascontiguousarray(c).reshape(1, 256) for c in
             ((np.arange(256, dtype=np.float32)[:, None] / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).T]


def normalize_chw(img: np.ndarray) -> np.ndarray:
    """uint8 HWC (BGR, as decoded; PaddleOCR's det NormalizeImage applies the ImageNet mean/std to the
    channels in that order) -> contiguous float32 CHW: (x / 255 - mean) / std. A uint8 3-channel image goes
    through a 256-entry table per channel written straight into the CHW array (bit for bit the formula's float32
    values, ~7x faster on a 992 x 736 page, no strided copy later); other inputs through the formula."""
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        return np.ascontiguousarray(((img.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1))
    out = np.empty((3,) + img.shape[:2], np.float32)
    for c, plane in enumerate(cv2.split(img)):
        cv2.LUT(plane, _NORM_LUT[c], dst=out[c])
    return out


def _draw_affine(w: int, h: int, rng: np.random.RandomState, flip_prob: float, max_rotate: float,
                 scale: Tuple[float, float]):
    """The draws of PaddleOCR's default IaaAugment, in its order: (flip, the 2 x 3 rotation about the centre or None,
    (new W, new H) of the resize)."""
    flip = bool(rng.uniform() < flip_prob)
    m = (cv2.getRotationMatrix2D((w / 2.0, h / 2.0), float(rng.uniform(-max_rotate, max_rotate)), 1.0)
         if max_rotate else None)
    s = float(rng.uniform(*scale))
    return flip, m, (max(1, int(round(w * s))), max(1, int(round(h * s))))


def random_affine(img: np.ndarray, polys: Sequence[np.ndarray], rng: np.random.RandomState,
                  flip_prob: float = 0.5, max_rotate: float = 10.0, scale: Tuple[float, float] = (0.5, 3.0)):
    """PaddleOCR's default IaaAugment (Fliplr p, Affine rotate +-max_rotate deg, Resize scale range) done
    with OpenCV: horizontal flip, rotation about the centre (same canvas, black corners), resize; the
    polygons follow. -> (image, polys)."""
    h, w = img.shape[:2]
    polys = [np.asarray(p, np.float64).copy() for p in polys]
    flip, m, (nw, nh) = _draw_affine(w, h, rng, flip_prob, max_rotate, scale)
    if flip:
        img = cv2.flip(img, 1)  # = img[:, ::-1], one contiguous pass
        for p in polys:
            p[:, 0] = w - p[:, 0]
    if m is not None:
        img = cv2.warpAffine(img, m, (w, h), flags=cv2.INTER_LINEAR, borderValue=0)
        polys = [p @ m[:, :2].T + m[:, 2] for p in polys]
    img = cv2.resize(img, (nw, nh))
    polys = [p * (nw / w, nh / h) for p in polys]
    return img, polys


def _pixel_affine(a: np.ndarray) -> np.ndarray:
    """The 2 x 3 matrix for cv2.warpAffine of the point map ``a`` (3 x 3): points take pixel i to span [i, i + 1),
    OpenCV samples pixel centres at integers, so the image moves exactly as the polygons do."""
    half = np.array([[1.0, 0, 0.5], [0, 1.0, 0.5], [0, 0, 1.0]])
    return (np.linalg.inv(half) @ a @ half)[:2]


def augment_and_crop(img: np.ndarray, polys: Sequence[np.ndarray], ignore_tags: Sequence[bool], texts: Sequence[str],
                     rng: np.random.RandomState, size: Sequence[int] = (640, 640), max_tries: int = 10,
                     min_crop_side_ratio: float = 0.1, flip_prob: float = 0.5, max_rotate: float = 10.0,
                     scale: Tuple[float, float] = (0.5, 3.0)):
    """``random_affine`` then ``east_random_crop`` (keep_ratio) with one resampling: the same draws from ``rng`` in
    the same order, the same polygons (to float rounding), the same crop; the image is warped once from the source
    straight into the crop's ``size`` (one ``cv2.warpAffine`` of at most 640 x 640) instead of a flip, a rotation of
    the page, a resize of up to 3x per side and the crop's resize. Pixels differ from the step-by-step path by
    interpolation only (one bilinear sampling instead of three), and follow the polygons exactly.
    -> (image, polys, ignore_tags, texts) as east_random_crop."""
    h, w = img.shape[:2]
    flip, m, (nw, nh) = _draw_affine(w, h, rng, flip_prob, max_rotate, scale)
    a = np.array([[-1.0, 0, w], [0, 1.0, 0], [0, 0, 1.0]]) if flip else np.eye(3)
    if m is not None:
        a = np.vstack([m, [0, 0, 1.0]]) @ a
    a = np.diag([nw / w, nh / h, 1.0]) @ a
    moved = [np.asarray(p, np.float64) @ a[:2, :2].T + a[:2, 2] for p in polys]
    cared = [p for p, tag in zip(moved, ignore_tags) if not tag]
    x, y, cw, ch = crop_area(nh, nw, cared, min_crop_side_ratio, max_tries, rng)
    sc = min(size[0] / cw, size[1] / ch)
    oh, ow = int(ch * sc), int(cw * sc)
    a = np.array([[sc, 0, -x * sc], [0, sc, -y * sc], [0, 0, 1.0]]) @ a
    out = np.zeros((size[1], size[0]) + img.shape[2:], img.dtype)
    if oh > 0 and ow > 0:
        out[:oh, :ow] = cv2.warpAffine(img, _pixel_affine(a), (ow, oh), flags=cv2.INTER_LINEAR,
                                       borderMode=cv2.BORDER_CONSTANT, borderValue=0).reshape((oh, ow) + img.shape[2:])
    return (out, *_kept_in_crop(moved, ignore_tags, texts, x, y, sc, ow, oh))


def color_jitter(img: np.ndarray, rng: np.random.RandomState, jitter: Sequence[float]) -> np.ndarray:
    """PaddleOCR's ColorJitter op: paddle.vision.transforms.ColorJitter(brightness, contrast, saturation, hue =
    ``jitter``) on the decoded HWC uint8 image (BGR, as PaddleOCR passes it). Its draws come from python's
    ``random`` and numpy's global state: both seeded here from ``rng`` and restored after, so the sample's key
    fixes them."""
    import random

    from paddle.vision.transforms import ColorJitter

    states = random.getstate(), np.random.get_state()
    random.seed(int(rng.randint(2 ** 31 - 1)))
    np.random.seed(int(rng.randint(2 ** 31 - 1)))
    try:
        return np.asarray(ColorJitter(*[float(v) for v in jitter])(img))
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])

class DBTrainTransform:
    """Raw sample (dataset.py) -> DB training arrays, PaddleOCR's default det train pipeline:
    [color_jitter when ``color_jitter`` (brightness, contrast, saturation, hue) is not all 0] -> random_affine ->
    east_random_crop (``size`` (W, H), ``max_tries`` 50, keep_ratio; the two as one warp: augment_and_crop)
    -> make_border_map
    -> make_shrink_map -> normalize_chw. Random draws: from (``seed``, epoch, index) of the sample being
    loaded (data.current_sample_key, set by the training loader), so a resumed run or any worker count
    sees the same crops; else from numpy's global state. ``augment``: False skips random_affine."""

    def __init__(self, size: Sequence[int] = (640, 640), max_tries: int = 50, keep_ratio: bool = True,
                 shrink_ratio: float = 0.4, min_text_size: int = 8, thresh_min: float = 0.3, thresh_max: float = 0.7,
                 augment: bool = True, max_rotate: float = 10.0, scale: Sequence[float] = (0.5, 3.0), seed: int = 0,
                 color_jitter: Sequence[float] = (0.0, 0.0, 0.0, 0.0)):
        self.size, self.max_tries, self.keep_ratio, self.augment = list(size), max_tries, keep_ratio, augment
        self.color_jitter = list(color_jitter)
        self.seed = seed
        self.shrink_ratio, self.min_text_size = shrink_ratio, min_text_size
        self.thresh_min, self.thresh_max = thresh_min, thresh_max
        self.max_rotate, self.scale = max_rotate, tuple(scale)

    def __call__(self, sample: dict) -> dict:
        key = current_sample_key()
        rng = np.random.RandomState(sample_seed(self.seed, *key) if key else np.random.randint(2 ** 31 - 1))
        img, polys = sample["image"], sample["polys"]
        if any(self.color_jitter):
            img = color_jitter(img, rng, self.color_jitter)
        if self.augment and self.keep_ratio:  # one resampling, the same draws and polygons as the two steps
            img, polys, tags, _ = augment_and_crop(img, polys, sample["ignore_tags"], sample["texts"], rng, self.size,
                                                   self.max_tries, max_rotate=self.max_rotate, scale=self.scale)
        else:
            if self.augment:
                img, polys = random_affine(img, polys, rng, max_rotate=self.max_rotate, scale=self.scale)
            img, polys, tags, _ = east_random_crop(img, polys, sample["ignore_tags"], sample["texts"], self.size,
                                                   self.max_tries, keep_ratio=self.keep_ratio, rng=rng)
        h, w = img.shape[:2]
        tmap, tmask = make_border_map(h, w, polys, tags, self.shrink_ratio, self.thresh_min, self.thresh_max)
        smap, smask, _ = make_shrink_map(h, w, polys, tags, self.shrink_ratio, self.min_text_size)
        return {"image": normalize_chw(img), "threshold_map": tmap, "threshold_mask": tmask,
                "shrink_map": smap, "shrink_mask": smask}

class DBEvalTransform:
    """Raw sample -> {"image" CHW float32, "shape" [src_h, src_w, ratio_h, ratio_w], "polys", "ignore_tags"}
    with det_resize_for_test(``limit_side_len``, ``limit_type``, ``image_shape``, ``keep_ratio``,
    ``resize_long``) (PaddleOCR's eval pipeline)."""

    def __init__(self, limit_side_len: int = 736, limit_type: str = "min", image_shape: Sequence[int] | None = None,
                 keep_ratio: bool = False, resize_long: int = 0):
        self.limit_side_len, self.limit_type = limit_side_len, limit_type
        self.image_shape, self.keep_ratio, self.resize_long = image_shape, keep_ratio, resize_long

    def __call__(self, sample: dict) -> dict:
        img, shape = det_resize_for_test(sample["image"], self.limit_side_len, self.limit_type, self.image_shape,
                                         self.keep_ratio, self.resize_long)
        return {"image": normalize_chw(img), "shape": shape.astype(np.float32),
                "polys": [np.asarray(p, np.float32) for p in sample["polys"]],
                "ignore_tags": list(sample["ignore_tags"])}
