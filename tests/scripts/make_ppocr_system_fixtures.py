"""Record tests/fixtures/ppocr_system/geometry.json by running PaddleOCR's OWN TextSystem geometry.

    python tests/scripts/make_ppocr_system_fixtures.py --ppocr-src /tmp/PaddleOCR

The stored geometry.json was written under OpenCV 4.10 (the paddleocr 3.7 side venv, ``.venv-paddleocr/bin/python``:
paddlex's pin; our ``minarea`` crops are OpenCV 4.x's bytes whatever is installed, tasks/ocr_det/cubic_warp);
geometry_opencv5.json is the same run under OpenCV 5.1 (5 Dec; 2.x's crops on an OpenCV 5 install). OUT_NAME
as a second argument writes another file name beside it.

Not run by the tests (they only read the JSON). For the fixed image and boxes of ``cases()`` it stores
PaddleOCR's ``get_rotate_crop_image`` (quads), ``get_minarea_rect_crop`` (polygons) crops as uint8 lists and
``sorted_boxes``' order as indices into the input boxes.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "ppocr_system" / "geometry.json"


def image() -> np.ndarray:
    return np.random.default_rng(7).integers(0, 256, (64, 96, 3), dtype=np.uint8)


def cases() -> dict:
    """quads: (tl, tr, br, bl) float32 boxes, rotated / tall / near-square; polys: point lists for the min-area
    path; order: boxes whose reading order is recorded (first points chosen to exercise the 10-px rows)."""
    quads = [[[10, 5], [40, 5], [40, 17], [10, 17]],
             [[12.4, 20.2], [50.7, 27.9], [48.1, 39.6], [9.8, 31.3]],   # rotated, non-integer
             [[60, 4], [72, 4], [72, 40], [60, 40]],                  # tall: rotated 90 degrees
             [[70, 44], [90, 44], [90, 57], [70, 57]],                # h / w = 0.65
             [[30, 60], [5, 60], [5, 45], [30, 45]]]                  # listed from the bottom-right
    polys = [[[5, 40], [20, 36], [35, 38], [50, 44], [50, 55], [35, 49], [20, 47], [5, 51]],
             [[80.6, 10.2], [92.3, 14.9], [88.1, 30.7], [76.4, 26.1]]]
    order = [[[100, 48], [120, 48], [120, 56], [100, 56]], [[5, 50], [25, 50], [25, 58], [5, 58]],
             [[60, 12], [80, 12], [80, 20], [60, 20]], [[10, 14], [30, 14], [30, 22], [10, 22]],
             [[150, 55], [170, 55], [170, 63], [150, 63]], [[0, 80], [20, 80], [20, 88], [0, 88]],
             [[50, 0], [70, 0], [70, 8], [50, 8]], [[0, 9.9], [20, 9.9], [20, 18], [0, 18]]]
    return {"quads": quads, "polys": polys, "order": order}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ppocr-src", required=True)
    ap.add_argument("out_name", nargs="?", default=OUT.name)
    args = ap.parse_args()
    sys.path.insert(0, args.ppocr_src)
    try:  # predict_system's imports reach PaddleOCR's e2e utils, which need scikit-image; the geometry does not
        import skimage.morphology._skeletonize  # noqa: F401
    except ImportError:
        import types
        for name in ("skimage", "skimage.morphology", "skimage.morphology._skeletonize"):
            sys.modules[name] = types.ModuleType(name)
        sys.modules["skimage.morphology._skeletonize"].thin = None
    try:  # and picodet's post-process, which needs scipy (paddleocr 3.x's venv has none); the geometry does not
        import scipy.special  # noqa: F401
    except ImportError:
        import types
        for name in ("scipy", "scipy.special"):
            sys.modules[name] = types.ModuleType(name)
        sys.modules["scipy.special"].softmax = None
    import tools.infer.utility  # noqa: F401  (light: cv2, paddle, PIL, yaml)
    try:
        import tools.infer.predict_det  # noqa: F401
    except ImportError:  # its post-process chain needs albumentations etc.; sorted_boxes needs none of the three
        import types
        for name in ("predict_rec", "predict_det", "predict_cls"):
            sys.modules[f"tools.infer.{name}"] = types.ModuleType(name)
    from tools.infer.predict_system import sorted_boxes
    from tools.infer.utility import get_minarea_rect_crop, get_rotate_crop_image

    img, c = image(), cases()
    boxes = np.float32(c["order"])
    ordered = sorted_boxes(boxes)
    out = {"cases": c,
           "quad_crops": [get_rotate_crop_image(img, np.float32(q)).tolist() for q in c["quads"]],
           "poly_crops": [get_minarea_rect_crop(img, np.float32(p)).tolist() for p in c["polys"]],
           "order": [next(i for i, b in enumerate(boxes) if np.array_equal(b, o)) for o in ordered]}
    path = OUT.with_name(args.out_name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {path}: order {out['order']}, crops {[np.shape(x)[:2] for x in out['quad_crops'] + out['poly_crops']]}")


if __name__ == "__main__":
    main()
