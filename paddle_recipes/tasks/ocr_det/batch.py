"""Batches of DB samples and the skip records of dataset.py (the rec collate's protocol).

``collate(samples)`` -> {"image": [B, 3, H, W] float32 (zero-padded bottom/right to the largest),
"image_hw": [B, 2] int64 (each image's own size before padding), "num_samples": [1] int64,
"skipped": ["where<TAB>reason", ...] (skip records and the samples' own "skipped" lists), and per key of the samples: train maps stacked [B, H, W]
(train samples all have the crop size), eval "shape" [B, 4] float32 and "polys"/"ignore_tags" lists}.
"""
from __future__ import annotations

import numpy as np

MAP_KEYS = ("threshold_map", "threshold_mask", "shrink_map", "shrink_mask")


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
    if (hw == hw[0]).all():  # train crops: one size, one copy
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
        batch["polys"] = [s["polys"] for s in good]
        batch["ignore_tags"] = [s["ignore_tags"] for s in good]
    return batch
