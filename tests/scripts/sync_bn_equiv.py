"""One training step of a small conv net and of the DB det model, 1 process x batch 2b or N processes x batch b,
with and without cross-rank BN (used by tests/runtime/test_sync_bn.py). Every rank takes its slice of ONE global
batch drawn from a fixed seed; every model starts from the same init (paddle.seed).

    python -m paddle.distributed.launch --nproc_per_node 2 tests/scripts/sync_bn_equiv.py --global-batch 8 --out DIR

Writes <out>/<model>_<sync|plain>_rank<r>.npz: the global loss (mean over the ranks of each rank's mean loss), the
gradients after backward (DataParallel's average), the weights after one SGD step, every BN's running statistics,
and the eval-mode output of the updated model on 2 fixed images; and .json: all_reduce calls in training and eval.
One process also writes <model>_float64_rank0: the same step in float64 from the same (float32) init.
"""
import argparse
import json
import os

import numpy as np
import paddle
import paddle.distributed as dist

from paddle_recipes.nn.sync_bn import use_sync_bn
from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model

parser = argparse.ArgumentParser()
parser.add_argument("--models", default="conv,det")
parser.add_argument("--global-batch", type=int, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()

calls = {"n": 0}
_all_reduce = dist.all_reduce


def counting_all_reduce(*a, **k):
    calls["n"] += 1
    return _all_reduce(*a, **k)


dist.all_reduce = counting_all_reduce
info = dist_utils.setup(seed=0, device="cpu")


def build(name):
    paddle.seed(7)  # the same init on every rank and in the 1-process run
    if name == "conv":
        return paddle.nn.Sequential(
            paddle.nn.Conv2D(3, 8, 3, padding=1, bias_attr=False), paddle.nn.BatchNorm2D(8), paddle.nn.ReLU(),
            paddle.nn.Conv2D(8, 8, 3, stride=2, padding=1, bias_attr=False), paddle.nn.BatchNorm(8, act="relu"),
            paddle.nn.Conv2D(8, 4, 1)), 12
    # PP-OCRv5 mobile det's network at scale 0.25 (the smoke recipe's): 152 BNs, paddle.nn.BatchNorm in the DB head
    return build_ppocr_det_model({"model_type": "det", "algorithm": "DB",
                                  "Backbone": {"name": "PPLCNetV3", "scale": 0.25, "det": True},
                                  "Neck": {"name": "RSEFPN", "out_channels": 32, "shortcut": True},
                                  "Head": {"name": "DBHead", "k": 50, "fix_nan": True}}), 64


def maps(out):
    return out["maps"] if isinstance(out, dict) else out


def one_step(name, sync, dtype="float32"):
    model, size = build(name)
    model.to(dtype=dtype)  # the float32 init, in float64 for a reference
    n_bn = use_sync_bn(model) if sync else 0
    model.train()
    x_all = (np.random.RandomState(3).randn(args.global_batch, 3, size, size) * 1.5 + 0.5).astype("float32").astype(dtype)
    per = args.global_batch // info.world_size
    ddp = dist_utils.wrap_model(model, info)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())  # Adam's first step: lr x sign(g)
    start = calls["n"]
    out = maps(ddp(paddle.to_tensor(x_all[info.rank * per:(info.rank + 1) * per])))
    target = np.linspace(-1, 1, int(np.prod(out.shape[1:]))).reshape(out.shape[1:]).astype("float32").astype(dtype)
    loss = ((out - paddle.to_tensor(target)) ** 2).mean()  # this rank's mean: the 1-process loss is the ranks' mean
    loss.backward()
    train_calls = calls["n"] - start
    global_loss = float(dist_utils.all_reduce_sum(float(loss))) / info.world_size
    grads = {f"grad/{n}": p.grad.numpy() for n, p in model.named_parameters() if p.grad is not None}
    opt.step()
    opt.clear_grad()
    model.eval()
    start = calls["n"]
    with paddle.no_grad():
        y = maps(model(paddle.to_tensor(x_all[:2])))  # the same 2 images in every run
    eval_calls = calls["n"] - start
    tag = f"{name}_{'sync' if sync else 'plain' if dtype == 'float32' else dtype}_rank{info.rank}"
    state = {f"state/{k}": v.numpy() for k, v in model.state_dict().items()}
    np.savez(os.path.join(args.out, f"{tag}.npz"), loss=np.float64(global_loss), eval_out=y.numpy(), **grads, **state)
    with open(os.path.join(args.out, f"{tag}.json"), "w") as f:
        json.dump({"world_size": info.world_size, "sync_bns": n_bn, "train_all_reduce": train_calls,
                   "eval_all_reduce": eval_calls}, f)


os.makedirs(args.out, exist_ok=True)
for name in args.models.split(","):
    for sync in (True, False):
        one_step(name, sync)
    if info.world_size == 1:  # the exact math's stand-in: how far float32 rounding alone takes 1 process
        one_step(name, False, "float64")
dist_utils.exit_distributed_run()
