"""Deterministic warp cases for tests/ocr_system/test_cubic_warp.py, the same bytes in any python / numpy: images
from integer arithmetic, quads with corners on 1/8 px. Run with a python whose OpenCV is 4.x to write the
reference digests (OpenCV 4.10 = paddlex's pin wrote tests/fixtures/cubic_warp/opencv4.json):

    python tests/scripts/cubic_warp_cases.py OUT_JSON
"""
import hashlib
import json
import sys

import numpy as np

N_CASES = 120


def case_image(k: int) -> np.ndarray:
    """Image of case k: uint8, 3 channels (1 for every 4th case), smooth ramps plus hashed noise."""
    h, w = 50 + (k * 37) % 300, 80 + (k * 53) % 500
    y, x = np.mgrid[0:h, 0:w].astype(np.int64)
    planes = []
    for c in range(1 if k % 4 == 3 else 3):
        noise = ((x * 73856093) ^ (y * 19349663) ^ ((k * 3 + c) * 83492791)) % 97
        planes.append(((x * (3 + c) + y * (5 - c) + noise * 2) % 256).astype(np.uint8))
    return np.stack(planes, -1) if len(planes) == 3 else planes[0]


def case_quad(k: int, img: np.ndarray) -> tuple[np.ndarray, int, int]:
    """A quad (float32, corners on 1/8 px, some outside the image) and the crop size as warp_quad computes it."""
    h, w = img.shape[:2]
    x0 = ((k * 97) % (w + 40)) - 20 + (k % 8) / 8
    y0 = ((k * 61) % (h + 40)) - 20 + ((k * 3) % 8) / 8
    dx, dy = 20 + (k * 29) % 260, ((k * 11) % 41) - 20  # long side direction
    t = (6 + (k * 7) % 60) / 64  # thickness as a fraction of the long side
    jitter = [((k * p) % 17 - 8) / 8 for p in (3, 5, 7, 11)] if k % 3 == 0 else [0, 0, 0, 0]
    p0 = np.array([x0, y0])
    p1 = p0 + [dx, dy]
    p3 = p0 + [-dy * t, dx * t]
    p2 = p1 + p3 - p0 + jitter[:2]
    quad = np.float32([p0, p1, p2, p3 + jitter[2:]])
    ow = int(max(np.linalg.norm(quad[0] - quad[1]), np.linalg.norm(quad[2] - quad[3])))
    oh = int(max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2])))
    return quad, ow, oh


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes() + str(a.shape).encode()).hexdigest()[:24]


def main(out_json: str) -> None:
    import cv2

    rows = []
    for k in range(N_CASES):
        img = case_image(k)
        quad, ow, oh = case_quad(k, img)
        m = cv2.getPerspectiveTransform(quad, np.float32([[0, 0], [ow, 0], [ow, oh], [0, oh]]))
        crop = cv2.warpPerspective(img, m, (ow, oh), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)
        rows.append({"case": k, "size": [ow, oh], "image": digest(img), "m": [float(v).hex() for v in m.ravel()],
                     "crop": digest(crop)})
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump({"opencv": cv2.__version__, "cases": rows}, f, indent=0)


if __name__ == "__main__":
    main(sys.argv[1])
