"""Toy data-parallel run built from the blocks in a plain loop (used by tests/runtime/test_distributed.py).

Writes <out>/rank<r>.json (no_sync calls, per-micro-step grad fingerprints) and, on rank 0,
<out>/params.npz with the final weights.
"""
import argparse
import json
import os

import numpy as np
import paddle

from paddle_recipes.data.reproducible import build_batch_sampler
from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.train.accumulate import GradAccumulator
from paddle_recipes.train.amp import Amp

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, required=True, help="per process")
parser.add_argument("--accum", type=int, default=1)
parser.add_argument("--steps", type=int, default=3, help="optimizer steps")
parser.add_argument("--out", required=True)
args = parser.parse_args()

no_sync_calls = 0
_orig_no_sync = paddle.DataParallel.no_sync


def _counting_no_sync(self):
    global no_sync_calls
    no_sync_calls += 1
    return _orig_no_sync(self)


paddle.DataParallel.no_sync = _counting_no_sync


class ArrayDataset(paddle.io.Dataset):
    def __init__(self, n=256):
        rng = np.random.default_rng(123)
        self.x = rng.normal(size=(n, 6)).astype("float32")
        self.y = rng.normal(size=(n, 3)).astype("float32")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


info = dist_utils.setup(seed=0)
paddle.seed(7)  # same init everywhere (DataParallel also broadcasts rank 0's weights)
model = paddle.nn.Sequential(paddle.nn.Linear(6, 32), paddle.nn.Tanh(), paddle.nn.Linear(32, 3))
model = dist_utils.wrap_model(model, info)
opt = paddle.optimizer.AdamW(learning_rate=0.01, parameters=model.parameters())
ds = ArrayDataset()
sampler = build_batch_sampler(ds, args.batch_size, info, shuffle=True, drop_last=True)
loader = paddle.io.DataLoader(ds, batch_sampler=sampler, num_workers=0)
acc, amp = GradAccumulator(args.accum), Amp()
fingerprints = []  # (boundary, sum|grad| of first weight) after each micro-step
steps = 0
sampler.set_epoch(0)
for x, y in loader:
    with acc.micro_step(model):
        loss = paddle.nn.functional.mse_loss(model(x), y)
        amp.backward(acc.scale(loss))
    g = dist_utils.unwrap(model)[0].weight.grad
    fingerprints.append([bool(acc.is_boundary), float(g.abs().sum().item())])
    if acc.is_boundary:
        amp.step(opt)
        opt.clear_grad()
        steps += 1
        if steps == args.steps:
            break

os.makedirs(args.out, exist_ok=True)
with open(os.path.join(args.out, f"rank{info.rank}.json"), "w") as f:
    json.dump({"world_size": info.world_size, "no_sync_calls": no_sync_calls, "sync_skipped": acc.sync_skipped,
               "fingerprints": fingerprints, "steps": steps}, f)
if info.is_main:
    np.savez(os.path.join(args.out, "params.npz"),
             *[p.numpy() for p in dist_utils.unwrap(model).parameters()])
