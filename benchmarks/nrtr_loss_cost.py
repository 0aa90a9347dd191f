"""Cost of PP-OCRv4/v5's NRTR loss (label-smoothed cross-entropy over ~6600 classes) on CPU: PaddleOCR's
one_hot x log_softmax form vs ours (paddle_recipes NRTRLoss: lse - (1-eps-d) z_t - d sum z), forward + backward,
alternating in one process; plus each one's distance to a float64 reference.

    OMP_NUM_THREADS=1 taskset -c 0 python benchmarks/nrtr_loss_cost.py --rows 208 --repeats 5

--rows = batch x NRTR positions (8 lines x 26 = 208: batch 8, max_text_length 25 + eos). Prints one JSON line.
No timing is asserted anywhere.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def log_softmax_form(logits, label_gtc, length, smoothing=True, eps=0.1):
    """PaddleOCR's formulation: one-hot, smoothed, times log_softmax, padding (id 0) masked out, mean."""
    import paddle.nn.functional as F

    tgt = label_gtc[:, 1: 2 + int(length.max())].reshape([-1])
    logits = logits.reshape([-1, logits.shape[-1]])
    if not smoothing:
        return F.cross_entropy(logits, tgt, ignore_index=0, reduction="mean")
    one_hot = F.one_hot(tgt, logits.shape[1])
    soft = one_hot * (1 - eps) + (1 - one_hot) * eps / (logits.shape[1] - 1)
    return (-(soft * F.log_softmax(logits, axis=1)).sum(axis=1)).masked_select(tgt != 0).mean()


def float64_reference(z, label_gtc, length, smoothing=True, eps=0.1):
    """(loss, d loss / d z [positions, V]) of the same loss in float64 numpy."""
    import numpy as np

    tgt = label_gtc[:, 1: 2 + int(length.max())].reshape(-1)
    z = z.reshape(-1, z.shape[-1]).astype(np.float64)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    d = eps / (z.shape[1] - 1) if smoothing else 0.0
    soft = np.full_like(p, d)
    soft[np.arange(len(tgt)), tgt] = 1 - eps if smoothing else 1.0
    keep = tgt != 0
    loss = -(soft * np.log(p)).sum(1)
    grad = (p - soft) * keep[:, None] / keep.sum()
    return loss[keep].mean(), grad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=208, help="batch x positions")
    p.add_argument("--classes", type=int, default=6625)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    import numpy as np
    import paddle

    from paddle_recipes.tasks.ocr_rec.ppocr_losses import NRTRLoss

    rng = np.random.default_rng(0)
    lines = max(1, a.rows // 2)  # each line: one character + eos = 2 positions
    label = np.concatenate([np.full([lines, 1], 2), rng.integers(4, a.classes, [lines, 1]), np.full([lines, 1], 3)], 1)
    logits0 = (rng.standard_normal([lines, 2, a.classes]) * 3).astype("float32")
    length = np.ones([lines], np.int64)
    n = 2 * lines
    forms = {"paddleocr_log_softmax": log_softmax_form, "ours": lambda z, y, k: NRTRLoss()(z, y, k)}
    times: dict = {k: [] for k in forms}
    grads = {}
    for _ in range(a.repeats):
        for name, fn in forms.items():
            z = paddle.to_tensor(logits0, stop_gradient=False)
            start = time.perf_counter()
            fn(z, paddle.to_tensor(label), paddle.to_tensor(length)).backward()
            times[name].append(time.perf_counter() - start)
            grads[name] = z.grad.numpy().reshape(n, -1)
    _, exact = float64_reference(logits0, label, length)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({"rows": n, "classes": a.classes, "omp_threads": os.environ.get("OMP_NUM_THREADS"),
                      "ms_fwd_bwd": {k: [round(t * 1e3, 2) for t in v] for k, v in times.items()},
                      "median_ms": {k: round(v * 1e3, 2) for k, v in med.items()},
                      "ratio": round(med["paddleocr_log_softmax"] / med["ours"], 1),
                      "max_grad_err_vs_float64": {k: float(np.abs(g - exact).max()) for k, g in grads.items()},
                      "load1": os.getloadavg()[0]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
