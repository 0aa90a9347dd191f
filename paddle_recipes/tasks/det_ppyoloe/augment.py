"""albumentations for detection: a bbox-aware ``A.Compose`` and a numpy-in/numpy-out adapter whose random draws
follow the sample (data.current_sample_key), so augmentation is the same whatever the workers or a resume."""
from __future__ import annotations

import os

import numpy as np

from ...data import current_sample_key
from ...data.reproducible import sample_seed

__all__ = ["bbox_compose", "AlbumentationsAdapter"]


def bbox_compose(transforms: list, format: str = "pascal_voc", seed: int | None = None,
                 min_visibility: float = 0.0, label_field: str = "labels"):
    """``A.Compose`` with bbox support (``format`` "pascal_voc" = x1,y1,x2,y2 px; "coco" = x,y,w,h px)."""
    import albumentations as A  # optional dependency (extra aug): callers check it first (import_albumentations)

    if format not in ("pascal_voc", "coco"):
        raise ValueError(f"bbox format must be 'pascal_voc' or 'coco', got {format!r}")
    return A.Compose(transforms, seed=seed,
                     bbox_params=A.BboxParams(format=format, label_fields=[label_field],
                                              min_visibility=min_visibility))

class AlbumentationsAdapter:
    """Wrap an albumentations ``Compose`` for numpy-in/numpy-out use in datasets.

    ``adapter(image)`` -> augmented image (HWC uint8 in, array out).
    ``adapter(image, bboxes, labels)`` -> (image, bboxes float32 (N, 4), labels array); the
    Compose must have ``bbox_params`` with one label field (see :func:`bbox_compose`).

    Determinism: with ``seed`` (or a Compose built with ``seed=``) the sequence of
    augmentations is reproducible. Inside a DataLoader worker, the seed is re-derived on the
    first call from (seed, paddle worker seed, worker id), so workers don't all draw the same
    augmentations (albumentations 2.x keeps its own RNG, ignoring np.random/random).
    """

    def __init__(self, transform, seed: int | None = None):
        self.transform = transform
        self.seed = seed if seed is not None else getattr(transform, "seed", None)
        if seed is not None:
            transform.set_random_seed(seed)
        self._seeded_pid = os.getpid()
        bp = getattr(transform, "processors", {}).get("bboxes")
        self.label_fields = list(bp.params.label_fields or []) if bp is not None else []
        self.has_bboxes = bp is not None

    def _maybe_reseed_worker(self) -> None:
        if self._seeded_pid == os.getpid() or self.seed is None:
            return
        self._seeded_pid = os.getpid()
        try:
            import paddle

            info = paddle.io.get_worker_info()
        except Exception:  # pragma: no cover - paddle always present in this repo
            info = None
        wid, wseed = (info.id, int(info.seed)) if info is not None else (os.getpid(), 0)
        s = int(np.random.SeedSequence([int(self.seed) & 0xFFFFFFFF, wseed & 0xFFFFFFFF, wid])
                .generate_state(1)[0])
        self.transform.set_random_seed(s)

    def __call__(self, image: np.ndarray, bboxes=None, labels=None):
        if not isinstance(image, np.ndarray) or image.ndim not in (2, 3) or image.dtype != np.uint8:
            desc = (f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray)
                    else type(image).__name__)
            raise TypeError(f"AlbumentationsAdapter expects an HWC uint8 numpy image, got {desc}")
        key = current_sample_key()
        if key is not None and self.seed is not None:  # per-sample stream: resumable, worker-independent

            self.transform.set_random_seed(sample_seed(int(self.seed), *key))
        else:
            self._maybe_reseed_worker()
        if bboxes is None:
            if self.has_bboxes:  # bbox-aware Compose still needs the fields
                kw = {"bboxes": np.zeros((0, 4), np.float32)}
                kw.update({f: [] for f in self.label_fields})
                return self.transform(image=image, **kw)["image"]
            return self.transform(image=image)["image"]
        if not self.has_bboxes:
            raise ValueError("bboxes given but the Compose has no bbox_params; build it with "
                             "paddle_recipes.tasks.det_ppyoloe.augment.bbox_compose(...) or A.Compose(..., bbox_params=...)")
        if len(self.label_fields) != 1:
            raise ValueError(f"bbox Compose must have exactly one label field, has {self.label_fields}")
        bboxes = np.asarray(bboxes, dtype=np.float32).reshape(-1, 4)
        labels = np.asarray(labels if labels is not None else np.zeros(len(bboxes), np.int64))
        if len(labels) != len(bboxes):
            raise ValueError(f"{len(bboxes)} bboxes but {len(labels)} labels")
        out = self.transform(image=image, bboxes=bboxes, **{self.label_fields[0]: labels})
        out_boxes = np.asarray(out["bboxes"], dtype=np.float32).reshape(-1, 4)
        out_labels = np.asarray(out[self.label_fields[0]], dtype=labels.dtype)
        return out["image"], out_boxes, out_labels
