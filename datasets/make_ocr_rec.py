"""Build the cached synthetic Chinese text-line set for recipes/ocr_rec.py (no download).

    python datasets/make_ocr_rec.py                                  # settings of recipes/configs/ocr_rec.yml
    python datasets/make_ocr_rec.py -c recipes/configs/ocr_rec_baseline.yml
    python datasets/make_ocr_rec.py --out datasets/cache/my_rec --dict datasets/ocr_rec/ch_common_3000.txt \\
        --num-train 20000 --num-val 1000 --num-heldout 1000 --min-len 2 --max-len 10 --height 48 --seed 0

Writes <out>/{train,val,heldout}/label.txt + images/ + fonts.txt and <out>/<split>/lmdb (PaddleOCR
formats) and a meta.json fingerprint; an up-to-date set is not rebuilt. train and val are rendered with
the train fonts, heldout only with the eval fonts (datasets/fonts/FONTS.md). The recipe calls the same function
(paddle_recipes.tasks.ocr_rec.synth.build_dataset) when its synthetic data is missing.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import fields
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from paddle_recipes.assets import resolve_path  # noqa: E402
from paddle_recipes.config import load_config  # noqa: E402
from paddle_recipes.tasks.ocr_rec.charset import CharDict  # noqa: E402
from paddle_recipes.tasks.ocr_rec.synth import SynthConfig, build_dataset  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-c", "--config", default=str(REPO / "recipes" / "configs" / "ocr_rec.yml"),
                   help="recipe config whose Synthetic section / dict give the defaults")
    p.add_argument("--out", help="output folder (default: Synthetic.root)")
    p.add_argument("--dict", help="character dict, one char a line (default: Global.character_dict_path)")
    p.add_argument("--num-train", type=int)
    p.add_argument("--num-val", type=int)
    p.add_argument("--num-heldout", type=int, help="lines rendered only with the eval fonts (0 = none)")
    p.add_argument("--min-len", type=int)
    p.add_argument("--max-len", type=int)
    p.add_argument("--height", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--workers", type=int)
    p.add_argument("--format", choices=["label_file", "lmdb", "both"], default="both")
    p.add_argument("--no-aug", action="store_true", help="no backgrounds / degradations: dark text on a flat light background")
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s")

    from paddle_recipes.recipes.ocr_rec import RecConfig  # the recipe's schema: same defaults as training

    cfg = load_config(a.config, [], RecConfig)
    s = cfg.Synthetic
    pick = lambda v, d: d if v is None else v  # noqa: E731
    chars = CharDict.from_file(resolve_path(a.dict or cfg.Global.character_dict_path), cfg.Global.use_space_char).chars
    gen = {f.name: getattr(s, f.name) for f in fields(SynthConfig)}  # the generator part of the Synthetic section
    gen.update(min_len=pick(a.min_len, s.min_len), max_len=pick(a.max_len, s.max_len), height=pick(a.height, s.height),
               aug=s.aug and not a.no_aug, seed=pick(a.seed, s.seed))
    scfg = SynthConfig(**gen)
    out = a.out or s.root
    splits = {"train": pick(a.num_train, s.num_train), "val": pick(a.num_val, s.num_val)}
    heldout = pick(a.num_heldout, s.num_heldout)
    if heldout:
        splits["heldout"] = heldout
    t0 = time.time()
    build_dataset(out, chars, splits, scfg, fmt=a.format, workers=pick(a.workers, s.workers), force=a.force)
    print(f"synthetic set ready in {out} ({time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
