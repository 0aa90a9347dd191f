"""After benchmarks/v5_system.py: are this python's crops (its OpenCV) read as paddlex's crops are?

    python benchmarks/v5_crops_texts.py --out OUT   # OUT: v5_system.py's --out (photo_boxes.json, photo_crops_venv.npz, spec.json)

Cuts paddleocr 3.7's boxes here with our ``minarea`` crop (tests/scripts/crops_dump.py), compares them byte for byte
with the crops made in paddlex's venv (OpenCV 4.10), and reads both sets per page with the imported PP-OCRv5 rec in
the system's batches (``rec_fn``): a page whose crops are all byte-equal is not read again. Prints one JSON line.
Since ours in paddlex's venv read every text as paddleocr 3.7 (v5_system.py), equal texts here = equal to paddleocr.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.v5_system import crop_stats  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    import cv2
    import paddle

    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.models import build_rec_model
    from paddle_recipes.tasks.ocr_system.pipeline import rec_fn

    here_npz = args.out / "photo_crops_here_now.npz"
    subprocess.run([sys.executable, str(ROOT / "tests/scripts/crops_dump.py"), str(args.out / "photo_boxes.json"),
                    str(here_npz), str(args.out / "photo_crops_venv.npz")], check=True, stdout=subprocess.DEVNULL)
    here, venv = dict(np.load(here_npz)), dict(np.load(args.out / "photo_crops_venv.npz"))
    spec = json.loads((args.out / "spec.json").read_text(encoding="utf-8"))
    rec = build_rec_model(spec["rec_arch"], len(spec["chars"]) + 1)
    rec.set_state_dict(paddle.load(spec["rec_weights"]))
    read = rec_fn(rec, CharDict(spec["chars"]), spec["image_shape"], spec["rec_batch_num"])
    pages = sorted({int(k.split("_")[1]) for k in venv if k.startswith("ours_")})
    lines = same = not_reread = 0
    diffs = []
    for i in pages:
        keys = sorted((k for k in venv if k.startswith(f"ours_{i}_")), key=lambda k: int(k.split("_")[2]))
        lines += len(keys)
        if all(np.array_equal(here[k], venv[k]) for k in keys):
            same += len(keys)
            not_reread += len(keys)
            continue
        for k, (a, _), (b, _) in zip(keys, read([here[k] for k in keys]), read([venv[k] for k in keys])):
            same += a == b
            if a != b:
                diffs.append({"crop": k, "here": a, "paddlex_crop": b})
    print(json.dumps({"cv2_here": cv2.__version__, "crops": crop_stats(here, venv, "ours", "ours"), "lines": lines,
                      "same_texts": same, "pages_not_reread_lines": not_reread, "diffs": diffs}, ensure_ascii=False))


if __name__ == "__main__":
    main()
