"""Where 2-process CPU DDP loses time: step cost with vs without the gradient all-reduce, and the all-reduce alone.

    python -m paddle.distributed.launch --nproc_per_node 2 benchmarks/ddp_step_cost.py --backbone LCNetRec --scale 0.5

Each rank prints one JSON line: CPU and wall seconds per step with DDP sync and under no_sync() (alternating
blocks, so load drift hits both), the all-reduce of a gradient-sized tensor alone, and the math threads the
rank runs with (set by paddle_recipes.runtime.distributed.setup to cores // ranks when OMP_NUM_THREADS is unset).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backbone", default="LCNetRec")
    p.add_argument("--scale", type=float, default=0.5)
    p.add_argument("--batch", type=int, default=16, help="per rank")
    p.add_argument("--steps", type=int, default=15)
    a = p.parse_args(argv)
    import numpy as np
    import paddle

    from paddle_recipes.runtime import distributed as D
    from paddle_recipes.tasks.ocr_rec.losses import CTCLoss
    from paddle_recipes.tasks.ocr_rec.models import build_rec_model

    info = D.setup(seed=0, device="cpu")
    m = build_rec_model({"Backbone": {"name": a.backbone, "scale": a.scale, "width_stride": 8},
                         "Neck": {"name": "Conv", "hidden_size": 96}, "Head": {"name": "CTCHead"}}, 101)
    n_params = int(sum(p.size for p in m.parameters()))
    m = D.wrap_model(m, info)
    opt = paddle.optimizer.Adam(parameters=m.parameters(), learning_rate=1e-3)
    loss_fn = CTCLoss()
    x = paddle.randn([a.batch, 3, 32, 192])
    lab = paddle.to_tensor(np.random.default_rng(0).integers(1, 100, [a.batch, 8]).astype("int32"))
    ln = paddle.to_tensor(np.full([a.batch], 4, "int64"))

    def step(sync: bool) -> None:
        loss = loss_fn(m(x), lab, ln)
        if sync or not info.is_distributed:
            loss.backward()
        else:
            with m.no_sync():
                loss.backward()
        opt.step()
        opt.clear_grad()

    res: dict = {"sync": [], "no_sync": []}
    for sync in (True, False, True, False):
        for _ in range(3):
            step(sync)
        D.barrier()
        c, w = time.process_time(), time.perf_counter()
        for _ in range(a.steps):
            step(sync)
        res["sync" if sync else "no_sync"].append({"cpu_s": round((time.process_time() - c) / a.steps, 4),
                                                   "wall_s": round((time.perf_counter() - w) / a.steps, 4)})
        D.barrier()
    g = paddle.randn([n_params])
    D.barrier()
    c, w = time.process_time(), time.perf_counter()
    for _ in range(30):
        if info.is_distributed:
            paddle.distributed.all_reduce(g)
    ar = {"cpu_s": round((time.process_time() - c) / 30, 5), "wall_s": round((time.perf_counter() - w) / 30, 5)}
    print(json.dumps({"rank": info.rank, "world": info.world_size, "threads": os.environ.get("OMP_NUM_THREADS"),
                      "backbone": a.backbone, "params": n_params, "step": res, "all_reduce_alone": ar}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
