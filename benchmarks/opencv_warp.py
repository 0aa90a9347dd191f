"""Which OpenCV step cuts a different text-line crop from one version to another: the same decoded page through
warpPerspective / warpAffine (cubic, linear, nearest; replicated border, as the OCR crop does) and resize.

    python benchmarks/opencv_warp.py dump IMAGE OUT.npz          # in each environment (any OpenCV)
    python benchmarks/opencv_warp.py compare A.npz B.npz          # per operation: equal, % of pixels, max difference

IMAGE: e.g. a page of datasets/make_photo_pages.py. Needs only numpy and cv2 (run it in a bare venv with one
opencv wheel). Figures: docs/gpu.md.
"""
import sys

import cv2
import numpy as np


def dump(image: str, out: str) -> None:
    img = cv2.imread(image)
    src = np.float32([[100.3, 200.7], [400.2, 190.1], [401.5, 240.9], [101.8, 251.2]])  # a slightly tilted line
    dst = np.float32([[0, 0], [300, 0], [300, 50], [0, 50]])
    m, a = cv2.getPerspectiveTransform(src, dst), cv2.getAffineTransform(src[:3], dst[:3])
    res = {"cv2": np.array(cv2.__version__), "image": img}
    for name, flag in (("cubic", cv2.INTER_CUBIC), ("linear", cv2.INTER_LINEAR), ("nearest", cv2.INTER_NEAREST)):
        res[f"perspective_{name}"] = cv2.warpPerspective(img, m, (300, 50), flags=flag, borderMode=cv2.BORDER_REPLICATE)
        res[f"affine_{name}"] = cv2.warpAffine(img, a, (300, 50), flags=flag, borderMode=cv2.BORDER_REPLICATE)
    crop = res["perspective_nearest"]
    res["resize_linear"] = cv2.resize(crop, (288, 48))
    res["resize_cubic"] = cv2.resize(crop, (288, 48), interpolation=cv2.INTER_CUBIC)
    np.savez_compressed(out, **res)


def compare(a_path: str, b_path: str) -> None:
    a, b = np.load(a_path), np.load(b_path)
    print(f"OpenCV {a['cv2']} vs {b['cv2']}")
    for k in a.files:
        if k == "cv2":
            continue
        d = np.abs(a[k].astype(np.int16) - b[k].astype(np.int16))
        print(f"  {k:20s} equal={bool(np.array_equal(a[k], b[k]))!s:5s} differing pixels {100 * (d > 0).mean():5.2f} % "
              f"max {int(d.max())}")


if __name__ == "__main__":
    {"dump": dump, "compare": compare}[sys.argv[1]](*sys.argv[2:])
