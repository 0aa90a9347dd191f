"""Generate the synthetic shapes detection set (COCO format) used by recipes/det_ppyoloe.py.

    python datasets/make_det_shapes.py --out datasets/cache/det_shapes --num-train 800 --num-val 100

Classes: rectangle, ellipse, triangle on noisy gradient backgrounds; deterministic by --seed.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from paddle_recipes.tasks.det_ppyoloe.synth import ShapesSpec, make_shapes_dataset  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="datasets/cache/det_shapes")
    p.add_argument("--num-train", type=int, default=ShapesSpec.num_train)
    p.add_argument("--num-val", type=int, default=ShapesSpec.num_val)
    p.add_argument("--image-size", type=int, default=ShapesSpec.image_size)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true")
    a = p.parse_args(argv)
    spec = ShapesSpec(num_train=a.num_train, num_val=a.num_val, image_size=a.image_size, seed=a.seed)
    paths = make_shapes_dataset(a.out, spec, overwrite=a.overwrite)
    for split, d in paths.items():
        print(f"{split}: {d['ann_file']} ({d['image_dir']})")


if __name__ == "__main__":
    main()
