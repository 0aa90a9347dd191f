"""What the cross-rank BatchNorm (Global.use_sync_bn, nn/sync_bn.py) costs per det training step on CPU (GLOO).

    python -m paddle.distributed.launch --nproc_per_node 2 benchmarks/sync_bn_cost.py --batch 2 --crop 320
    python benchmarks/sync_bn_cost.py --batch 4 --crop 320          # 1 process: the compute part alone

The det race's network (PP-OCRv4/v5 mobile det: PPLCNetV3 0.75, RSEFPN 96, DBHead; training form, every BN in
training mode), one rank's batch of `--batch` random crops of `--crop` px. Two copies of the same init, one with its
BNs switched (use_sync_bn), train in alternating blocks of `--block` steps (load drift hits both); each step is
forward + loss + backward + Adam. Per rank: wall and CPU seconds per step of each, the all-reduce calls per step,
and (1 process) the same with the cross-rank math forced on (group=False, no communication): its compute cost
against paddle's fused kernel. Rank 0 prints one JSON line; nothing is asserted.
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=2, help="per rank")
    p.add_argument("--crop", type=int, default=320)
    p.add_argument("--scale", type=float, default=0.75, help="PPLCNetV3 scale (0.75: PP-OCRv4/v5 mobile det)")
    p.add_argument("--blocks", type=int, default=4, help="alternating blocks per variant")
    p.add_argument("--block", type=int, default=3, help="steps per block")
    a = p.parse_args(argv)
    import numpy as np
    import paddle
    import paddle.distributed as dist

    import paddle_recipes.nn.sync_bn as S
    from paddle_recipes.runtime import distributed as D
    from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model

    calls = {"n": 0}
    real_all_reduce = dist.all_reduce

    def counting(*args, **kw):
        calls["n"] += 1
        return real_all_reduce(*args, **kw)

    dist.all_reduce = counting
    info = D.setup(seed=0, device="cpu")
    arch = {"model_type": "det", "algorithm": "DB", "Backbone": {"name": "PPLCNetV3", "scale": a.scale, "det": True},
            "Neck": {"name": "RSEFPN", "out_channels": 96, "shortcut": True},
            "Head": {"name": "DBHead", "k": 50, "fix_nan": True}}
    variants = {}
    for name in ("paddle_bn", "sync_bn") + (("cross_rank_math_1proc",) if info.world_size == 1 else ()):
        paddle.seed(7)
        m = build_ppocr_det_model(arch)
        n_bn = S.use_sync_bn(m) if name != "paddle_bn" else 0
        if name == "cross_rank_math_1proc":  # the cross-rank path with no communication: its compute cost
            for layer in m.sublayers():
                if S.is_sync_bn(layer):
                    layer.__class__ = _forced(S, type(layer))
        m.train()
        variants[name] = {"model": D.wrap_model(m, info), "bns": n_bn,
                          "opt": paddle.optimizer.Adam(1e-4, parameters=m.parameters()), "wall": [], "cpu": [],
                          "calls": 0}
    rng = np.random.RandomState(info.rank)
    x = paddle.to_tensor(rng.rand(a.batch, 3, a.crop, a.crop).astype("float32"))

    def step(v):
        out = v["model"](x)["maps"]
        loss = (out * out).mean()
        loss.backward()
        v["opt"].step()
        v["opt"].clear_grad()

    for v in variants.values():  # warm-up
        step(v)
    D.barrier()
    for _ in range(a.blocks):
        for v in variants.values():
            for _ in range(a.block):
                c0, t0, n0 = time.process_time(), time.perf_counter(), calls["n"]
                step(v)
                v["wall"].append(time.perf_counter() - t0)
                v["cpu"].append(time.process_time() - c0)
                v["calls"] = calls["n"] - n0
            D.barrier()
    res = {name: {"bns_switched": v["bns"], "all_reduce_per_step": v["calls"],
                  "wall_s_per_step_median": round(statistics.median(v["wall"]), 4),
                  "cpu_s_per_step_median": round(statistics.median(v["cpu"]), 4),
                  "wall_s_min": round(min(v["wall"]), 4), "cpu_s_min": round(min(v["cpu"]), 4)}
           for name, v in variants.items()}
    base = res["paddle_bn"]
    for name, r in res.items():
        r["wall_x_vs_paddle_bn"] = round(r["wall_s_per_step_median"] / base["wall_s_per_step_median"], 3)
        r["cpu_x_vs_paddle_bn"] = round(r["cpu_s_per_step_median"] / base["cpu_s_per_step_median"], 3)
    out = {"rank": info.rank, "world_size": info.world_size, "batch_per_rank": a.batch, "crop": a.crop,
           "scale": a.scale, "steps_per_variant": a.blocks * a.block, "threads": os.environ.get("OMP_NUM_THREADS"),
           "load_after": os.getloadavg(), "paddle": paddle.__version__, "variants": res}
    if info.is_main:
        print(json.dumps(out), flush=True)
    D.exit_distributed_run()
    return 0


def _forced(S, cls):
    """A subclass whose training forward always takes the cross-rank path (group=False: this rank alone)."""
    class Forced(cls):
        def forward(self, x):
            if not self.training:
                return super().forward(x)
            y = S.cross_rank_batch_norm(x, self._mean, self._variance, self.weight, self.bias, self._momentum,
                                        self._epsilon, S._channel_axis(self), False)
            act = getattr(self, "_act", None)
            return getattr(S.F, act)(y) if act else y
    return Forced


if __name__ == "__main__":
    sys.exit(main())
