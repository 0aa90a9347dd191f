"""COCO-json detection dataset with validation, bbox augmentation and batch random resize.

Loading (``load_coco``) validates every record; problems are counted, logged once per kind with
the first offending id, and skipped:

- ``missing_image``: image file not found under ``image_dir`` (the image and its boxes are skipped)
- ``unknown_image_id``: annotation points at an image id absent from ``images``
- ``unknown_category``: ``category_id`` not in ``categories``
- ``malformed_bbox``: ``bbox`` is not 4 finite numbers
- ``zero_area``: width or height <= 0 (before clipping)
- ``outside_image``: box lies entirely outside the image (nothing left after clipping)
- ``duplicate_image_id``: a second ``images`` entry with an id already seen (the first is kept)
- ``unreadable_image``: no size in the json and the file header is not an image
- ``too_large``: width x height above ``max_image_pixels`` (default paddle_recipes.data.MAX_IMAGE_PIXELS)
- ``clipped`` (kept, counted): box partly outside the image, clipped to it
- ``crowd`` (kept out of training targets, counted): ``iscrowd`` = 1

A file that is missing, is not valid JSON, or lacks ``images``/``annotations``/``categories``
raises ``DetDataError`` naming the file (and line/column for JSON errors).

Samples are dicts: ``image`` HWC uint8 RGB, ``gt_bbox`` [n, 4] xyxy float32 pixels,
``gt_class`` [n] int64 contiguous labels 0..C-1, ``im_id`` int, ``orig_size`` (h, w).
``DetCollate`` resizes a batch to one square size (random per batch in training, from
``sizes``), normalises, and pads ground truths to the batch maximum with ``pad_gt_mask``.
"""
from __future__ import annotations

import json
import logging
import math
import os
from collections import Counter
from dataclasses import dataclass, field

import cv2
import numpy as np

from paddle_recipes import import_albumentations
from paddle_recipes.data import ImageError, read_image
from paddle_recipes.data.images import image_file_size

from .augment import AlbumentationsAdapter, bbox_compose
from paddle_recipes.data import MAX_IMAGE_PIXELS
from paddle_recipes.data import current_sample_key
from paddle_recipes.data.reproducible import sample_seed

logger = logging.getLogger("paddle_recipes.det")

SKIP_KINDS = ("missing_image", "unknown_image_id", "unknown_category", "malformed_bbox", "zero_area",
              "outside_image", "duplicate_image_id", "unreadable_image", "too_large")

class DetDataError(ValueError):
    """Unusable detection data file (message names the file)."""


@dataclass
class CocoIndex:
    """Validated content of one COCO json: per-image records and the class mapping."""
    ann_file: str
    image_dir: str
    records: list = field(default_factory=list)  # dicts: im_id, file, width, height, boxes [n,4], classes [n]
    cat_ids: list = field(default_factory=list)  # COCO category id of label i
    cat_names: list = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    max_image_pixels: int = 0  # checked again from the header before each decode (0 = no limit)

    @property
    def num_classes(self) -> int:
        return len(self.cat_ids)

    def skipped(self) -> dict:
        return {k: self.counts.get(k, 0) for k in SKIP_KINDS}

def _read_json(path: str) -> dict:
    if not os.path.isfile(path):
        raise DetDataError(f"annotation file not found: {path}")
    try:
        with open(path, "r", encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise DetDataError(f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise DetDataError(f"{path}: not UTF-8 text ({e})") from None
    if not isinstance(data, dict):
        raise DetDataError(f"{path}: top level must be a JSON object, got {type(data).__name__}")
    missing = [k for k in ("images", "annotations", "categories") if not isinstance(data.get(k), list)]
    if missing:
        raise DetDataError(f"{path}: missing or non-list COCO key(s) {missing}")
    return data


def load_coco(ann_file: str | os.PathLike, image_dir: str | os.PathLike, check_files: bool = True,
              max_image_pixels: int | None = None) -> CocoIndex:
    """Parse and validate a COCO instances json; see the module docstring for the skip rules.
    max_image_pixels: None = paddle_recipes.data.MAX_IMAGE_PIXELS, 0 = no limit."""
    limit = MAX_IMAGE_PIXELS if max_image_pixels is None else int(max_image_pixels)
    ann_file, image_dir = str(ann_file), str(image_dir)
    data = _read_json(ann_file)
    idx = CocoIndex(ann_file, image_dir, max_image_pixels=limit)
    first = {}

    def skip(kind: str, what: str):
        idx.counts[kind] += 1
        first.setdefault(kind, what)

    try:
        cats = sorted(data["categories"], key=lambda c: int(c["id"]))
        idx.cat_ids = [int(c["id"]) for c in cats]
        idx.cat_names = [str(c.get("name", c["id"])) for c in cats]
    except (KeyError, TypeError, ValueError) as e:
        raise DetDataError(f"{ann_file}: bad 'categories' entry ({e!r})") from None
    if not idx.cat_ids:
        raise DetDataError(f"{ann_file}: 'categories' is empty")
    label_of = {cid: i for i, cid in enumerate(idx.cat_ids)}

    images = {}
    for im in data["images"]:
        try:
            im_id, name = int(im["id"]), str(im["file_name"])
        except (KeyError, TypeError, ValueError) as e:
            raise DetDataError(f"{ann_file}: bad 'images' entry {im!r} ({e!r})") from None
        path = os.path.join(image_dir, name)
        if im_id in images:
            skip("duplicate_image_id", f"image id {im_id} ({name}; first: {os.path.basename(images[im_id]['file'])})")
            continue
        if check_files and not os.path.isfile(path):
            skip("missing_image", f"image id {im_id} ({path})")
            continue
        w, h = im.get("width"), im.get("height")
        header = None
        if check_files or not w or not h:  # the file's own header: the size the decoder would allocate
            try:
                found = image_file_size(path)
            except ImageError as e:
                found, why = None, e.detail
            else:
                why = "no image header whose size can be read"
            if found is None and (not w or not h):
                skip("unreadable_image", f"image id {im_id} ({path}: {why})")
                continue  # with a json size, the decoder reports a corrupt file in one line
            header = found[1:] if found else None
            if header is not None and (not w or not h):
                w, h = header
        try:
            w, h = int(w), int(h)
        except (TypeError, ValueError):
            raise DetDataError(f"{ann_file}: image id {im_id} has a non-integer width/height {w!r}x{h!r}") from None
        if limit and header is not None and header[0] * header[1] > limit:
            size = f"{header[0]}x{header[1]}"
            said = "" if (w, h) == tuple(header) else f"; the json says {w}x{h}"
            skip("too_large", f"image id {im_id} ({path}: {size} > max_image_pixels {limit}{said})")
            continue
        if limit and w * h > limit:
            skip("too_large", f"image id {im_id} ({path}: {w}x{h} > max_image_pixels {limit})")
            continue
        images[im_id] = {"im_id": im_id, "file": path, "width": int(w), "height": int(h), "boxes": [], "classes": []}
    missing_img_ids = {int(im["id"]) for im in data["images"]} - set(images)  # duplicates' ids are kept

    for ann in data["annotations"]:
        aid = ann.get("id", "?")
        im_id = ann.get("image_id")
        if im_id in missing_img_ids:
            continue  # already counted with its image
        rec = images.get(im_id)
        if rec is None:
            skip("unknown_image_id", f"annotation {aid} -> image id {im_id}")
            continue
        if ann.get("category_id") not in label_of:
            skip("unknown_category", f"annotation {aid} category_id {ann.get('category_id')!r}")
            continue
        bbox = ann.get("bbox")
        try:
            x, y, w, h = (float(v) for v in bbox)
            if not all(math.isfinite(v) for v in (x, y, w, h)):
                raise ValueError
        except (TypeError, ValueError):
            skip("malformed_bbox", f"annotation {aid} bbox {bbox!r}")
            continue
        if w <= 0 or h <= 0:
            skip("zero_area", f"annotation {aid} bbox {bbox!r}")
            continue
        if ann.get("iscrowd", 0):
            idx.counts["crowd"] += 1
            continue
        x1, y1 = max(x, 0.0), max(y, 0.0)
        x2, y2 = min(x + w, rec["width"]), min(y + h, rec["height"])
        if x2 - x1 <= 0 or y2 - y1 <= 0:
            skip("outside_image", f"annotation {aid} bbox {bbox!r} in {rec['width']}x{rec['height']} image")
            continue
        if (x1, y1, x2, y2) != (x, y, x + w, y + h):
            idx.counts["clipped"] += 1
        rec["boxes"].append([x1, y1, x2, y2])
        rec["classes"].append(label_of[ann["category_id"]])

    for rec in images.values():
        rec["boxes"] = np.asarray(rec["boxes"], dtype=np.float32).reshape(-1, 4)
        rec["classes"] = np.asarray(rec["classes"], dtype=np.int64)
        idx.records.append(rec)
    idx.records.sort(key=lambda r: r["im_id"])
    for kind in SKIP_KINDS:
        if idx.counts.get(kind):
            logger.warning("%s: skipped %d %s record(s); first: %s", ann_file, idx.counts[kind],
                           kind.replace("_", " "), first[kind])
    if idx.counts.get("clipped"):
        logger.warning("%s: clipped %d box(es) extending past the image border", ann_file, idx.counts["clipped"])
    if not idx.records:
        raise DetDataError(f"{ann_file}: no usable images under {image_dir} (skipped: {dict(idx.counts)})")
    return idx


def build_train_augment(hflip: float = 0.5, color: float = 0.5, affine: float = 0.5, min_visibility: float = 0.3,
                        seed: int | None = None):
    """Bbox-aware albumentations pipeline wrapped in ``augment.AlbumentationsAdapter``.

    Horizontal flip, brightness/contrast + HSV jitter, random scale (0.75-1.25) / translate (10 %).
    Boxes are pascal_voc pixels; boxes less than ``min_visibility`` visible after the affine are
    dropped. Without albumentations (the ``aug`` extra): a MissingDependencyError naming Train.augment.
    """
    A = import_albumentations("Train.augment")
    compose = bbox_compose([
        A.HorizontalFlip(p=hflip),
        A.RandomBrightnessContrast(p=color),
        A.HueSaturationValue(p=color),
        A.Affine(scale=(0.75, 1.25), translate_percent=(-0.1, 0.1), p=affine),
    ], format="pascal_voc", seed=seed, min_visibility=min_visibility, label_field="labels")
    return AlbumentationsAdapter(compose, seed=seed)


class CocoDetDataset:
    """Map-style dataset over a validated ``CocoIndex``.

    ``augment``: callable ``(image, bboxes, labels) -> (image, bboxes, labels)`` such as
    ``build_train_augment()``, or None.
    """

    def __init__(self, index: CocoIndex, augment=None):
        self.index = index
        self.augment = augment

    @classmethod
    def from_files(cls, ann_file, image_dir, augment=None):
        return cls(load_coco(ann_file, image_dir), augment)

    def __len__(self):
        return len(self.index.records)

    def __getitem__(self, i):
        rec = self.index.records[i]
        try:  # the header again (the file may have changed since indexing): too large is never decoded
            img = read_image(rec["file"], self.index.max_image_pixels)
        except ImageError as exc:
            raise DetDataError(f"image {rec['file']} (image id {rec['im_id']}): {exc.detail}; fix, shrink or remove it "
                               f"from {self.index.ann_file}") from None
        img = img[:, :, ::-1]
        boxes, classes = rec["boxes"], rec["classes"]
        h, w = img.shape[:2]
        if self.augment is not None:
            # clip to the decoded size too (json size may disagree with the file)
            bx = np.clip(boxes, 0, [w, h, w, h]).astype(np.float32)
            ok = (bx[:, 2] > bx[:, 0]) & (bx[:, 3] > bx[:, 1])
            img, boxes, classes = self.augment(np.ascontiguousarray(img), bx[ok], classes[ok])
            boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
            classes = np.asarray(classes, dtype=np.int64).reshape(-1)
        return {"image": np.ascontiguousarray(img), "gt_bbox": boxes, "gt_class": classes,
                "im_id": rec["im_id"], "orig_size": (h, w)}

class DetCollate:
    """Resize a list of samples to one square side, normalise, pad ground truths.

    Args:
        sizes: candidate sides (multiples of 32); one is drawn per batch (batch random resize).
            Pass a single size for evaluation.
        mean, std, is_scale: per-channel RGB normalisation ``(x / 255 - mean) / std`` (``is_scale``
            False: ``(x - mean) / std`` on 0..255 values). Defaults: ImageNet mean/std on [0, 1]
            (PP-YOLOE); PP-YOLOE+ weights expect mean 0, std 1 (see ``normalize.NORMALIZE_PRESETS``).
        seed: seed of the size draw (pass a different seed per rank). Inside a DataLoader worker
            the generator is re-derived once per process from (seed, numpy's worker-seeded RNG),
            so workers and epochs do not all replay the same size sequence.
    Returns a dict of numpy arrays: image [B, 3, S, S] float32, gt_class [B, M, 1] int64,
    gt_bbox [B, M, 4] float32 (input pixels), pad_gt_mask [B, M, 1] float32, im_id [B] int64,
    scale_factor [B, 2] float32 = (S / orig_h, S / orig_w). M >= 1.
    """

    def __init__(self, sizes=(320,), mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), seed: int = 0,
                 is_scale: bool = True):
        self.sizes = [int(s) for s in sizes]
        bad = [s for s in self.sizes if s % 32]
        if bad:
            raise ValueError(f"input sizes must be multiples of 32, got {bad}")
        self.mean = np.asarray(mean, np.float32).reshape(3, 1, 1)
        self.std = np.asarray(std, np.float32).reshape(3, 1, 1)
        self.divisor = np.float32(255.0 if is_scale else 1.0)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._pid = os.getpid()

    def _rng_for_batch(self):
        """Seeded by the batch's last (epoch, index) when the loader publishes sample keys (exact
        resume, independent of workers); otherwise the running generator."""
        key = current_sample_key()
        return np.random.default_rng(sample_seed(self.seed, *key)) if key is not None else self.rng

    def __call__(self, samples):
        if os.getpid() != self._pid:  # first batch in a worker process
            self._pid = os.getpid()
            self.rng = np.random.default_rng([self.seed, int(np.random.randint(2 ** 31))])
        size = self.sizes[0] if len(self.sizes) == 1 else int(self._rng_for_batch().choice(self.sizes))
        n = len(samples)
        m = max(1, max(len(s["gt_class"]) for s in samples))
        images = np.zeros((n, 3, size, size), np.float32)
        gt_class = np.zeros((n, m, 1), np.int64)
        gt_bbox = np.zeros((n, m, 4), np.float32)
        pad = np.zeros((n, m, 1), np.float32)
        scale = np.zeros((n, 2), np.float32)
        im_id = np.zeros((n,), np.int64)
        for i, s in enumerate(samples):
            img = s["image"]
            h, w = img.shape[:2]
            sy, sx = size / h, size / w
            img = cv2.resize(img, (size, size), interpolation=cv2.INTER_LINEAR)
            images[i] = (img.transpose(2, 0, 1).astype(np.float32) / self.divisor - self.mean) / self.std
            k = len(s["gt_class"])
            if k:
                gt_bbox[i, :k] = s["gt_bbox"] * np.array([sx, sy, sx, sy], np.float32)
                gt_class[i, :k, 0] = s["gt_class"]
                pad[i, :k] = 1.0
            oh, ow = s["orig_size"]
            scale[i] = (size / oh, size / ow)
            im_id[i] = s["im_id"]
        return {"image": images, "gt_class": gt_class, "gt_bbox": gt_bbox, "pad_gt_mask": pad,
                "im_id": im_id, "scale_factor": scale}
