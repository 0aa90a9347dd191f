"""Dump, in whatever python runs this file, what its OpenCV makes of given pages and boxes: each page as decoded
(cv2.imread) and each box's crop by our ``crop_box(..., "minarea")``, and (when paddlex is importable) by paddlex's
CropByPolys (det_box_type 'quad'), both from the page as decoded here and from the page as decoded elsewhere
(REF_NPZ: pages given as arrays, so that the warp alone is compared). Used by benchmarks/v5_system.py to measure how
OpenCV 4.10 (paddlex's pin) and 5.x differ.

    python tests/scripts/crops_dump.py BOXES_JSON OUT_NPZ [REF_NPZ]
BOXES_JSON: {"image file": [[x, y] x 4, ...], ...}. OUT_NPZ keys: page_<i>, ours_<i>_<k>, ref_<i>_<k>,
paddlex_<i>_<k>; plus "cv2" (the version).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo's package, not an installed copy


def main(boxes_json, out_npz, ref_npz=None):
    import cv2
    import numpy as np

    from paddle_recipes.tasks.ocr_system.geometry import crop_box

    try:  # only in the paddleocr 3.x side venv
        from paddlex.inference.pipelines.components import CropByPolys
        paddlex_crop = CropByPolys(det_box_type="quad")
    except ImportError:
        paddlex_crop = None
    boxes = json.loads(Path(boxes_json).read_text(encoding="utf-8"))
    ref = np.load(ref_npz) if ref_npz else None
    out = {"cv2": np.array(cv2.__version__)}
    for i, (f, bs) in enumerate(sorted(boxes.items())):
        img = cv2.imread(f)
        out[f"page_{i}"] = img
        for k, b in enumerate(bs):
            b = np.asarray(b, np.float32)
            out[f"ours_{i}_{k}"] = crop_box(img, b, "minarea")
            if ref is not None:
                out[f"ref_{i}_{k}"] = crop_box(ref[f"page_{i}"], b, "minarea")
        if paddlex_crop is not None and bs:
            for k, c in enumerate(paddlex_crop(img, [np.asarray(b, np.float32) for b in bs])):
                out[f"paddlex_{i}_{k}"] = c
    np.savez_compressed(out_npz, **out)
    print(json.dumps({"cv2": cv2.__version__, "pages": len(boxes), "paddlex": paddlex_crop is not None}))


if __name__ == "__main__":
    main(*sys.argv[1:])
