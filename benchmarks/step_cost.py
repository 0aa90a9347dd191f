"""CPU cost of one training step of the OCR recognizer, split into fwd+bwd+Adam and the host CTC decode.

    OMP_NUM_THREADS=1 python benchmarks/step_cost.py --backbone LCNetRec --scale 0.5 --batch 32
    OMP_NUM_THREADS=1 python benchmarks/step_cost.py --backbone DenseConvRec --scale 1.0 --batch 32

Uses process CPU time (time.process_time), so figures survive a loaded machine better than wall time
(it still counts cache/memory-bandwidth contention). Prints one JSON line: CPU s per step for each part,
the decode share, forward FLOPs per line (hooks) and the achieved training GFLOP/s (3 x fwd FLOPs).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backbone", default="LCNetRec")
    p.add_argument("--scale", type=float, default=0.5)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--image-shape", default="3,32,192")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args(argv)
    import numpy as np
    import paddle

    from benchmarks.harness.flops import count_flops
    from paddle_recipes.tasks.ocr_rec.step import batch_accuracy
    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.losses import CTCLoss
    from paddle_recipes.tasks.ocr_rec.models import build_rec_model

    cs = CharDict.from_file(str(REPO / "datasets/ocr_rec/ch_hanzi_100.txt"))
    shape = [int(v) for v in a.image_shape.split(",")]
    m = build_rec_model({"Backbone": {"name": a.backbone, "scale": a.scale, "width_stride": 8},
                         "Neck": {"name": "Conv", "hidden_size": 96}, "Head": {"name": "CTCHead"}}, cs.num_classes)
    flops = count_flops(m, [1] + shape)["total"]
    opt = paddle.optimizer.Adam(parameters=m.parameters(), learning_rate=1e-3)
    loss_fn = CTCLoss()
    rng = np.random.default_rng(0)
    x = paddle.randn([a.batch] + shape)
    lab = paddle.to_tensor(rng.integers(1, cs.num_classes, [a.batch, 8]).astype("int32"))
    ln = paddle.to_tensor(np.full([a.batch], 4, "int64"))
    texts = [cs.decode_ids([1, 2, 3, 4])] * a.batch
    t_step = t_dec = 0.0
    for i in range(a.warmup + a.steps):
        c0 = time.process_time()
        logits = m(x)
        loss_fn(logits, lab, ln).backward()
        opt.step()
        opt.clear_grad()
        c1 = time.process_time()
        batch_accuracy(logits, texts, cs)
        c2 = time.process_time()
        if i >= a.warmup:
            t_step += c1 - c0
            t_dec += c2 - c1
    s, d = t_step / a.steps, t_dec / a.steps
    print(json.dumps({"backbone": a.backbone, "scale": a.scale, "batch": a.batch, "cpu_s_step": round(s, 4),
                      "cpu_s_decode": round(d, 5), "decode_share": round(d / (s + d), 4),
                      "fwd_mflops_per_line": round(flops / 1e6, 2),
                      "train_gflops": round(3 * flops * a.batch / s / 1e9, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
