"""Batches of DB samples and the skip records of dataset.py (the rec collate's protocol).

``collate(samples)`` -> {"image": [B, 3, H, W] float32 (zero-padded bottom/right to the largest),
"image_hw": [B, 2] int64 (each image's own size before padding), "num_samples": [1] int64,
"skipped": ["where<TAB>reason", ...] (skip records and the samples' own "skipped" lists), and per key of the samples: train maps stacked [B, H, W]
(train samples all have the crop size), eval "shape" [B, 4] float32 and "polys"/"ignore_tags" as ``HostOnly``
lists}. A batch of one image takes the sample's (contiguous) image as it is, with no padded copy.

``HostOnly``: a list-like holder that paddle's DataLoader passes through as one object: it converts every numpy
array it finds inside lists and dicts into a Tensor (~20 ground-truth polygons per page, each turned back into numpy
by the metric), not the arrays inside another object.
"""
from __future__ import annotations

import numpy as np

MAP_KEYS = ("threshold_map", "threshold_mask", "shrink_map", "shrink_mask")


class HostOnly:
    """A read-only list (len, iteration, indexing) that is not a ``collections.abc.Sequence``: paddle's loader
    keeps it as one object instead of converting the arrays inside (module docstring)."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = list(items)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"HostOnly({self.items!r})"


def collate(samples: list) -> dict:
    good, skipped = [], []
    for s in samples:
        if isinstance(s, dict):
            good.append(s)
            skipped.extend(f"{w}\t{r}" for w, r in s.get("skipped", ()))  # e.g. a polygon outside the image
        elif s[0] == "skip":
            skipped.append(f"{s[1]}\t{s[2]}")
        else:  # ("skip_many", [(where, reason), ...])
            skipped.extend(f"{w}\t{r}" for w, r in s[1])
    batch = {"skipped": skipped, "num_samples": np.asarray([len(good)], np.int64)}
    if not good:
        return batch
    hw = np.array([s["image"].shape[1:] for s in good], np.int64)
    if len(good) == 1 and good[0]["image"].dtype == np.float32:  # eval: one page, no copy
        images = np.ascontiguousarray(good[0]["image"])[None]
    elif (hw == hw[0]).all():  # train crops: one size, one copy
        images = np.stack([s["image"] for s in good]).astype(np.float32, copy=False)
    else:
        images = np.zeros((len(good), good[0]["image"].shape[0], *hw.max(0)), np.float32)
        for i, s in enumerate(good):
            images[i, :, :hw[i, 0], :hw[i, 1]] = s["image"]
    batch.update(image=images, image_hw=hw)
    for key in MAP_KEYS:
        if key in good[0]:
            batch[key] = np.stack([s[key] for s in good])
    if "shape" in good[0]:
        batch["shape"] = np.stack([s["shape"] for s in good]).astype(np.float32)
        batch["polys"] = HostOnly(s["polys"] for s in good)
        batch["ignore_tags"] = HostOnly(s["ignore_tags"] for s in good)
    return batch
