"""Chance-level mAP on a COCO split: what the detection figures in recipes/README_det.md compare to.

Random detector: for every val image, ``--per-image`` boxes whose width/height are drawn from the
*training* boxes (so the sizes are right), placed uniformly in the image, with a uniform random class
and score. Averaged over ``--trials`` seeds.

    python benchmarks/det_chance_baseline.py --root datasets/cache/det_shapes
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from paddle_recipes.tasks.det_ppyoloe.coco import load_coco  # noqa: E402
from paddle_recipes.tasks.det_ppyoloe.metrics import coco_evaluate  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default="datasets/cache/det_shapes")
    p.add_argument("--per-image", type=int, default=100)
    p.add_argument("--trials", type=int, default=3)
    a = p.parse_args(argv)
    train = load_coco(f"{a.root}/annotations/instances_train.json", f"{a.root}/images/train")
    val = load_coco(f"{a.root}/annotations/instances_val.json", f"{a.root}/images/val")
    wh = np.concatenate([r["boxes"][:, 2:] - r["boxes"][:, :2] for r in train.records])
    results = []
    for t in range(a.trials):
        rng = np.random.default_rng(t)
        dets = {}
        for r in val.records:
            k = a.per_image
            size = wh[rng.integers(0, len(wh), k)]
            x1 = rng.uniform(0, 1, k) * (r["width"] - size[:, 0])
            y1 = rng.uniform(0, 1, k) * (r["height"] - size[:, 1])
            dets[r["im_id"]] = np.stack([rng.integers(0, val.num_classes, k), rng.uniform(0, 1, k),
                                         x1, y1, x1 + size[:, 0], y1 + size[:, 1]], axis=1).astype(np.float32)
        m = coco_evaluate(val.ann_file, dets, val.cat_ids, [r["im_id"] for r in val.records])
        results.append({k: m[k] for k in ("mAP", "mAP50")})
    out = {k: float(np.mean([r[k] for r in results])) for k in ("mAP", "mAP50")}
    out.update(trials=a.trials, per_image=a.per_image, val_images=len(val.records))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
