"""Inputs and expected outputs of tests/ocr_det/test_det_eval_regression.py: DB post-process boxes and det-metric
counts of our code as it was before the eval path was made faster (issue 55), on seeded synthetic inputs.

    PYTHONPATH=. python tests/scripts/make_det_eval_regression.py    # rewrites tests/fixtures/ppocr_det/eval_regression.json

``prob_maps()``: DB-like probability maps (rotated text bars of several sizes, some touching, ellipses, a thin and a
weak box, blurred edges, noise); ``metric_images()``: ground truths and detections (rotated quads, jittered copies,
``###`` ignores, invalid bow-ties, empty images). Only numpy / OpenCV: the test rebuilds them bit for bit.
"""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ppocr_det" / "eval_regression.json"
POST_CASES = {
    "quad_fast": dict(thresh=0.3, box_thresh=0.6, unclip_ratio=1.5),
    "quad_slow": dict(thresh=0.3, box_thresh=0.6, unclip_ratio=1.5, score_mode="slow"),
    "poly": dict(thresh=0.3, box_thresh=0.6, unclip_ratio=1.5, box_type="poly"),
    "quad_dilation": dict(thresh=0.3, box_thresh=0.5, unclip_ratio=2.0, use_dilation=True),
    "quad_max5": dict(thresh=0.3, box_thresh=0.3, max_candidates=5, unclip_ratio=1.5),
}


def _quad(rng, w, h, small=False):
    cx, cy = rng.uniform(0, w), rng.uniform(0, h)
    bw = rng.uniform(2, 12) if small else rng.uniform(8, w / 2)
    bh = rng.uniform(1, 5) if small else rng.uniform(4, 24)
    return cv2.boxPoints(((cx, cy), (bw, bh), rng.uniform(-30, 30)))


def prob_maps(n: int = 24, seed: int = 0) -> list:
    """n float32 maps [h, w] with their shape rows [src_h, src_w, ratio_h, ratio_w]."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        h, w = int(rng.integers(64, 200)), int(rng.integers(64, 260))
        m = np.zeros((h, w), np.float32)
        for _ in range(int(rng.integers(0, 14))):
            cv2.fillPoly(m, [np.round(_quad(rng, w, h)).astype(np.int32)], float(rng.uniform(0.45, 1.0)))
        for _ in range(int(rng.integers(0, 10))):
            cv2.fillPoly(m, [np.round(_quad(rng, w, h, small=True)).astype(np.int32)], float(rng.uniform(0.3, 1.0)))
        for _ in range(int(rng.integers(0, 3))):
            cv2.ellipse(m, (int(rng.integers(0, w)), int(rng.integers(0, h))),
                        (int(rng.integers(3, 30)), int(rng.integers(2, 12))), float(rng.uniform(0, 180)), 0, 360,
                        float(rng.uniform(0.4, 1.0)), -1)
        if i % 3:
            m = cv2.GaussianBlur(m, (0, 0), float(rng.uniform(0.6, 2.0)))
        m = np.clip(m + rng.uniform(0, 0.25, m.shape).astype(np.float32) * (rng.random(m.shape) < 0.3), 0, 1)
        ratio = float(rng.choice([0.5, 1.0, 1.37]))
        out.append((m.astype(np.float32), [h / ratio, w / ratio, ratio, ratio]))
    return out


def metric_images(n: int = 40, seed: int = 1) -> list:
    """n images of (gt polys, gt ignore flags, det polys) as point lists."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        gts = [_quad(rng, 300, 200) for _ in range(int(rng.integers(0, 12)))]
        ign = [bool(rng.random() < 0.15) for _ in gts]
        dets = []
        for g in gts:
            r = rng.random()
            if r < 0.6:
                dets.append(g + rng.normal(0, float(rng.choice([0.5, 2.0, 6.0])), g.shape))
            elif r < 0.7:
                dets.append(g[[0, 2, 1, 3]])  # bow-tie: invalid
        dets += [_quad(rng, 300, 200) for _ in range(int(rng.integers(0, 4)))]
        order = rng.permutation(len(dets))
        out.append(([np.round(g, 1).tolist() for g in gts], ign, [np.round(dets[k]).astype(int).tolist() for k in order]))
    return out


def expected() -> dict:
    from paddle_recipes.tasks.ocr_det.metrics import evaluate_image
    from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess

    post = {}
    for name, kw in POST_CASES.items():
        p = DBPostProcess(**kw)
        post[name] = [{"points": np.asarray(r["points"]).tolist() if kw.get("box_type") != "poly" else r["points"],
                       "scores": [float(s) for s in r["scores"]]}
                      for m, shape in prob_maps() for r in p(m[None, None], [shape])]
    metric = [evaluate_image(g, i, d) for g, i, d in metric_images()]
    return {"post": post, "metric": metric}


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(expected(), separators=(",", ":")) + "\n")
    print(FIXTURE, FIXTURE.stat().st_size, "bytes")
