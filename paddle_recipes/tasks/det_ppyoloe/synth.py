"""Synthetic COCO-format detection data: coloured shapes on noisy backgrounds.

Classes (COCO category ids 1..3): rectangle, ellipse, triangle. Each image has 1..``max_objects``
objects of side ``min_size``..``max_size`` px, placed with limited overlap, on a random gradient
background with Gaussian noise and thin clutter lines. Deterministic for a given seed.

Layout written by ``make_shapes_dataset(root)``::

    root/images/{train,val}/000000.png
    root/annotations/instances_{train,val}.json
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path

import cv2
import numpy as np

CATEGORIES = [{"id": 1, "name": "rectangle"}, {"id": 2, "name": "ellipse"}, {"id": 3, "name": "triangle"}]


@dataclass
class ShapesSpec:
    """Sizes in pixels. ``num_train``/``num_val`` images; ``seed`` fixes everything."""
    num_train: int = 800
    num_val: int = 100
    image_size: int = 256
    min_objects: int = 1
    max_objects: int = 4
    min_size: int = 20
    max_size: int = 96
    seed: int = 0


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    t = np.linspace(0, 1, size, dtype=np.float32)
    if rng.random() < 0.5:
        t = t[None, :, None]
    else:
        t = t[:, None, None]
    img = c0 * (1 - t) + c1 * t
    img = np.broadcast_to(img, (size, size, 3)).astype(np.float32)
    img = img + rng.normal(0, rng.uniform(4, 16), img.shape)
    img = np.clip(img, 0, 255).astype(np.uint8)
    for _ in range(rng.integers(0, 6)):  # clutter lines
        p1 = tuple(int(v) for v in rng.integers(0, size, 2))
        p2 = tuple(int(v) for v in rng.integers(0, size, 2))
        cv2.line(img, p1, p2, tuple(int(v) for v in rng.uniform(0, 255, 3)), 1, cv2.LINE_AA)
    return img


def _iou(a, b) -> float:
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    x2, y2 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x2 - x1) * max(0.0, y2 - y1)
    ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / ua if ua > 0 else 0.0


def _draw(img: np.ndarray, cat: int, box, color, rng: np.random.Generator):
    """Draw shape ``cat`` inside integer box (x1, y1, x2, y2); return its tight xyxy box."""
    x1, y1, x2, y2 = box
    if cat == 1:
        cv2.rectangle(img, (x1, y1), (x2 - 1, y2 - 1), color, -1)
        return [x1, y1, x2, y2]
    if cat == 2:
        center = ((x1 + x2) / 2.0, (y1 + y2) / 2.0)
        axes = ((x2 - x1) / 2.0, (y2 - y1) / 2.0)
        cv2.ellipse(img, (center, (axes[0] * 2, axes[1] * 2), 0.0), color, -1, cv2.LINE_AA)
        return [x1, y1, x2, y2]
    # triangle: apex on the top edge, base corners on the bottom edge -> tight box is the given box
    apex = int(rng.integers(x1, x2))
    pts = np.array([[apex, y1], [x1, y2 - 1], [x2 - 1, y2 - 1]], dtype=np.int32)
    cv2.fillPoly(img, [pts], color, cv2.LINE_AA)
    return [x1, y1, x2, y2]


def render_image(rng: np.random.Generator, spec: ShapesSpec):
    """One image and its annotations [(category_id, [x, y, w, h])]."""
    size = spec.image_size
    img = _background(rng, size)
    anns, placed = [], []
    for _ in range(int(rng.integers(spec.min_objects, spec.max_objects + 1))):
        for _try in range(20):
            w = int(rng.integers(spec.min_size, spec.max_size + 1))
            h = int(np.clip(w * rng.uniform(0.6, 1.6), spec.min_size, spec.max_size))
            x1 = int(rng.integers(0, size - w + 1))
            y1 = int(rng.integers(0, size - h + 1))
            box = (x1, y1, x1 + w, y1 + h)
            if all(_iou(box, p) < 0.15 for p in placed):
                break
        else:
            continue
        cat = int(rng.integers(1, len(CATEGORIES) + 1))
        bg = img[y1:y1 + h, x1:x1 + w].reshape(-1, 3).mean(0)
        color = rng.uniform(0, 255, 3)
        if np.abs(color - bg).sum() < 150:  # keep shapes visible against the background
            color = 255 - bg
        tight = _draw(img, cat, box, tuple(float(c) for c in color), rng)
        placed.append(box)
        anns.append((cat, [float(tight[0]), float(tight[1]), float(tight[2] - tight[0]), float(tight[3] - tight[1])]))
    return img, anns


def write_split(root: Path, split: str, num: int, spec: ShapesSpec, seed: int) -> Path:
    """Render ``num`` images into ``root/images/split`` and write ``annotations/instances_split.json``."""
    rng = np.random.default_rng(seed)
    img_dir = root / "images" / split
    img_dir.mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    ann_id = 1
    for i in range(num):
        img, anns = render_image(rng, spec)
        name = f"{i:06d}.png"
        cv2.imwrite(str(img_dir / name), img[:, :, ::-1])
        images.append({"id": i + 1, "file_name": name, "width": spec.image_size, "height": spec.image_size})
        for cat, bbox in anns:
            annotations.append({"id": ann_id, "image_id": i + 1, "category_id": cat, "bbox": bbox,
                                "area": bbox[2] * bbox[3], "iscrowd": 0})
            ann_id += 1
    ann_path = root / "annotations" / f"instances_{split}.json"
    ann_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = ann_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"images": images, "annotations": annotations, "categories": CATEGORIES}))
    os.replace(tmp, ann_path)
    return ann_path


def make_shapes_dataset(root: str | os.PathLike, spec: ShapesSpec | None = None, overwrite: bool = False) -> dict:
    """Generate train/val splits under ``root`` unless already complete; returns the paths.

    A ``DONE`` marker with the spec guards against half-written or differently-specified sets.
    """
    spec = spec or ShapesSpec()
    root = Path(root)
    marker = root / "DONE"
    want = json.dumps({f.name: getattr(spec, f.name) for f in fields(ShapesSpec)}, sort_keys=True)
    paths = {split: {"ann_file": str(root / "annotations" / f"instances_{split}.json"),
                     "image_dir": str(root / "images" / split)} for split in ("train", "val")}
    if not overwrite and marker.exists() and marker.read_text() == want:
        return paths
    write_split(root, "train", spec.num_train, spec, spec.seed)
    write_split(root, "val", spec.num_val, spec, spec.seed + 1_000_003)
    marker.write_text(want)
    return paths
