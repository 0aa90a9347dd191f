"""What the cross-rank DB loss (Loss.cross_rank, tasks/ocr_det/cross_rank_loss.py) costs on CPU (GLOO).

    python -m paddle.distributed.launch --nproc_per_node 2 benchmarks/db_loss_cost.py --batch 2 --crop 320

1. A det training step of the race's network (PPLCNetV3 0.75 + RSEFPN 96 + DBHead, training form, cross-rank BN
   on both sides), one rank's batch of ``--batch`` random crops with DB labels of rectangles: the per-rank DBLoss
   and the cross-rank one in alternating blocks of ``--block`` steps (load drift hits both); forward + loss +
   backward + Adam; wall and CPU seconds per step.
2. The loss alone at ``--loss-batch`` x ``--crop`` x ``--crop`` per rank (forward + backward on fixed maps), both
   losses alternating, and what the all-gather alternative of the OHEM top-k would cost: an all_gather of this
   rank's negative-loss map (float32) plus np.partition of the gathered values for the k-th one, against the
   radix select the loss does (top_k_weights: 3 all-reduces of 2048-bin histograms) on the same values.
Rank 0 prints one JSON line; nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def db_labels(rng, batch: int, size: int):
    """threshold_map, threshold_mask, shrink_map, shrink_mask [batch, size, size] of text-line rectangles."""
    import numpy as np
    t_map = (0.3 + 0.4 * rng.rand(batch, size, size)).astype("float32")
    t_mask, s_map = np.zeros((batch, size, size), "float32"), np.zeros((batch, size, size), "float32")
    s_mask = np.ones((batch, size, size), "float32")
    for i in range(batch):
        for _ in range(size // 24):
            y, x = rng.randint(8, size - 40, 2)
            h, w = rng.randint(8, 20), rng.randint(30, size // 2)
            s_map[i, y:y + h, x:x + w] = 1
            t_mask[i, y - 6:y + h + 6, max(0, x - 6):x + w + 6] = 1
    return [t_map, t_mask, s_map, s_mask]


def timed(fn, record):
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    record["wall"].append(time.perf_counter() - t0)
    record["cpu"].append(time.process_time() - c0)


def summary(record):
    return {"cpu_s_median": round(statistics.median(record["cpu"]), 4),
            "wall_s_median": round(statistics.median(record["wall"]), 4), "n": len(record["cpu"])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=2, help="per rank, the training step")
    p.add_argument("--loss-batch", type=int, default=8, help="per rank, the loss alone")
    p.add_argument("--crop", type=int, default=320)
    p.add_argument("--main-loss-type", default="DiceLoss")
    p.add_argument("--blocks", type=int, default=2)
    p.add_argument("--block", type=int, default=2)
    p.add_argument("--loss-reps", type=int, default=5)
    p.add_argument("--no-step", action="store_true", help="the loss part only")
    a = p.parse_args(argv)
    import numpy as np
    import paddle
    import paddle.distributed as dist

    from paddle_recipes.nn.sync_bn import use_sync_bn
    from paddle_recipes.runtime import distributed as D
    from paddle_recipes.tasks.ocr_det.cross_rank_loss import CrossRankDBLoss, GlobalSums, top_k_weights
    from paddle_recipes.tasks.ocr_det.losses import DBLoss
    from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model

    info = D.setup(seed=0, device="cpu")
    rng = np.random.RandomState(info.rank)
    losses = {"per_rank": DBLoss(main_loss_type=a.main_loss_type),
              "cross_rank": CrossRankDBLoss(main_loss_type=a.main_loss_type)}
    res = {"rank": info.rank, "world_size": info.world_size, "crop": a.crop, "main_loss_type": a.main_loss_type,
           "threads": os.environ.get("OMP_NUM_THREADS"), "paddle": paddle.__version__, "load_before": os.getloadavg()}

    # 2. the loss alone, and the all-gather alternative
    maps = paddle.to_tensor((0.01 + 0.98 * rng.rand(a.loss_batch, 3, a.crop, a.crop)).astype("float32"),
                            stop_gradient=False)
    labels = [None] + [paddle.to_tensor(x) for x in db_labels(rng, a.loss_batch, a.crop)]
    rec = {k: {"wall": [], "cpu": []} for k in (*losses, "radix_select", "all_gather_partition")}

    def loss_step(fn):
        fn({"maps": maps}, labels)["loss"].backward()
        maps.clear_gradient()

    negative = ((1 - labels[3]) * labels[4]).numpy().reshape(-1)
    pixel = paddle.nn.functional.binary_cross_entropy(maps[:, 0], labels[3], reduction="none").numpy().reshape(-1)
    local = paddle.to_tensor((negative * pixel).astype("float32"))
    k = int(min(negative.sum(), 3 * (labels[3] * labels[4]).sum().item())) * info.world_size

    sums = GlobalSums()
    selected = negative > 0

    def radix_select():  # what the cross-rank loss does: the distributed k-th value over the negative pixels
        top_k_weights(local.numpy()[selected], k, sums.values)

    def gather_partition():
        parts = []
        dist.all_gather(parts, local) if info.world_size > 1 else parts.append(local)
        values = np.concatenate([t.numpy() for t in parts])
        np.partition(values, values.size - k)[values.size - k]

    jobs = {"radix_select": radix_select, "all_gather_partition": gather_partition,
            **{n: (lambda f=f: loss_step(f)) for n, f in losses.items()}}
    for name in rec:  # warm-up
        jobs[name]()
    D.barrier()
    for _ in range(a.loss_reps):
        for name, r in rec.items():
            timed(jobs[name], r)
    res["loss_alone"] = {"batch_per_rank": a.loss_batch, **{n: summary(r) for n, r in rec.items()},
                         "all_gather_bytes_per_rank": int(local.numel()) * 4,
                         "cross_rank_all_reduces_per_call": losses["cross_rank"].all_reduce_calls // (a.loss_reps + 1)}

    # 1. the training step
    if not a.no_step:
        arch = {"model_type": "det", "algorithm": "DB", "Backbone": {"name": "PPLCNetV3", "scale": 0.75, "det": True},
                "Neck": {"name": "RSEFPN", "out_channels": 96, "shortcut": True},
                "Head": {"name": "DBHead", "k": 50, "fix_nan": True}}
        x = paddle.to_tensor(rng.rand(a.batch, 3, a.crop, a.crop).astype("float32"))
        step_labels = [None] + [paddle.to_tensor(t) for t in db_labels(rng, a.batch, a.crop)]
        variants = {}
        for name in losses:
            paddle.seed(7)
            m = build_ppocr_det_model(arch)
            if info.world_size > 1:
                use_sync_bn(m)
            m.train()
            variants[name] = (D.wrap_model(m, info), paddle.optimizer.Adam(1e-4, parameters=m.parameters()))
        rec = {k: {"wall": [], "cpu": []} for k in variants}

        def train_step(name):
            model, opt = variants[name]
            losses[name](model(x), step_labels)["loss"].backward()
            opt.step()
            opt.clear_grad()

        for name in variants:
            train_step(name)
        D.barrier()
        for _ in range(a.blocks):
            for name, r in rec.items():
                for _ in range(a.block):
                    timed(lambda: train_step(name), r)
                D.barrier()
        res["train_step"] = {"batch_per_rank": a.batch, "sync_bn": info.world_size > 1,
                             **{n: summary(r) for n, r in rec.items()}}
        base = res["train_step"]["per_rank"]["cpu_s_median"]
        res["train_step"]["cpu_x_cross_rank_vs_per_rank"] = round(
            res["train_step"]["cross_rank"]["cpu_s_median"] / base, 3)
    res["load_after"] = os.getloadavg()
    if info.is_main:
        print(json.dumps(res), flush=True)
    D.exit_distributed_run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
