"""Cut line crops with PaddleOCR's OWN crop functions and with ours, in one process (the same OpenCV), for the
byte-for-byte crop tests (tests/ocr_system/test_ocr_system.py).

Runs inside a side venv, not the project's python (our crop code needs only numpy and OpenCV):
    .venv-paddleocr2/bin/python tests/scripts/paddleocr_crops.py 2 IN.npz OUT.npz   # paddleocr 2.x
    .venv-paddleocr/bin/python  tests/scripts/paddleocr_crops.py 3 IN.npz OUT.npz   # paddlex 3.x
IN.npz: ``img_<k>`` (uint8 images), ``box_<i>`` (float32 [K, 2] points), ``owner`` (the image index of box i).
OUT.npz, 2: ``rotate_<i>`` = tools/infer/utility.get_rotate_crop_image (4-point boxes only) and ``minarea_<i>`` =
get_minarea_rect_crop, the two crops of 2.x's TextSystem (det_box_type quad / poly), and ``kept_<i>`` = what
TextDetector.filter_tag_det_res makes of a 4-point box ([0 or 1, 4, 2]); 3: ``minarea_<i>`` = paddlex's
CropByPolys(det_box_type="quad"), the crop of the PaddleOCR(...) pipeline. Prints one JSON line: the OpenCV
version, and per crop mode (and "kept") the number of results and of those ours (crop_box in the same mode,
paddleocr2_boxes) equal byte for byte.
"""
import json
import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo: our geometry, not an installed copy


def main(version, src, dst):
    from paddle_recipes.tasks.ocr_system.geometry import crop_box, paddleocr2_boxes

    data = np.load(src)
    imgs = {k: data[k] for k in data.files if k.startswith("img_")}
    if version == "2":
        from paddleocr.tools.infer.utility import get_minarea_rect_crop, get_rotate_crop_image

        from paddleocr.tools.infer.predict_det import TextDetector

        detector = TextDetector.__new__(TextDetector)  # its box filter only: no model loaded
        crops = {"rotate": get_rotate_crop_image, "minarea": get_minarea_rect_crop,
                 "kept": lambda img, box: np.float32(detector.filter_tag_det_res([box], img.shape)).reshape(-1, 4, 2)}
    else:
        from paddlex.inference.pipelines.components.common.crop_image_regions import CropByPolys

        crop_by_polys = CropByPolys(det_box_type="quad")
        crops = {"minarea": lambda img, box: crop_by_polys(img, [box])[0]}
    out, counts = {}, {name: [0, 0] for name in crops}
    for i, owner in enumerate(data["owner"]):
        box, img = data[f"box_{i}"], imgs[f"img_{owner}"]
        for name, fn in crops.items():
            if name in ("rotate", "kept") and len(box) != 4:
                continue
            theirs = out[f"{name}_{i}"] = fn(img, box.copy())
            # 2.x's functions run on this venv's OpenCV: ours with the installed cv2 too (2.x pins none)
            ours = np.float32(paddleocr2_boxes([box], img.shape)).reshape(-1, 4, 2) if name == "kept" else crop_box(
                img, box, name, opencv4=version == "3")
            counts[name][0] += 1
            counts[name][1] += ours.dtype == theirs.dtype and ours.shape == theirs.shape and np.array_equal(ours, theirs)
    np.savez(dst, **out)
    print(json.dumps({"results": {"opencv": cv2.__version__, "crops_and_ours_equal": counts}}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
