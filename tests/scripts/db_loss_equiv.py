"""One DB training step (the det network of sync_bn_equiv.py, DB labels of rectangles) with the DB loss, 1 process x
batch 2b or N processes x batch b (used by tests/ocr_det/test_cross_rank_loss.py). Every rank takes its slice of ONE
global batch drawn from a fixed seed; every model starts from the same init (paddle.seed); with N > 1 the BNs are
cross-rank (use_sync_bn) in both variants.

    python -m paddle.distributed.launch --nproc_per_node 2 tests/scripts/db_loss_equiv.py --global-batch 4 --out DIR

Writes <out>/<main_loss_type>_<variant>_rank<r>.npz (loss, gradients after backward = DataParallel's average,
weights after one SGD step) and .json (all-reduces of the loss): variant "xr" = CrossRankDBLoss, "plain" = DBLoss
per rank (the global loss reported = the ranks' mean), and on one process "float64" (DBLoss, the same step in
float64 from the same float32 init). Also ties_rank<r>.npz: top_k_weights of values with ties spread over the ranks.
"""
import argparse
import json
import os

import numpy as np
import paddle

from paddle_recipes.nn.sync_bn import use_sync_bn
from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.tasks.ocr_det.cross_rank_loss import CrossRankDBLoss, GlobalSums, top_k_weights
from paddle_recipes.tasks.ocr_det.losses import DBLoss
from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model

parser = argparse.ArgumentParser()
parser.add_argument("--losses", default="DiceLoss,BCELoss")
parser.add_argument("--global-batch", type=int, required=True)
parser.add_argument("--size", type=int, default=64)
parser.add_argument("--out", required=True)
args = parser.parse_args()
info = dist_utils.setup(seed=0, device="cpu")
G, S = args.global_batch, args.size


def db_labels(rng):
    """threshold_map, threshold_mask, shrink_map, shrink_mask [G, S, S]: 3 text rectangles per image (shrink map
    1 inside, threshold mask = the rectangle grown by 4 px), one ignored rectangle (shrink mask 0)."""
    t_map = (0.3 + 0.4 * rng.rand(G, S, S)).astype("float32")
    t_mask, s_map, s_mask = np.zeros((G, S, S), "float32"), np.zeros((G, S, S), "float32"), np.ones((G, S, S), "float32")
    for i in range(G):
        for j in range(4):
            y, x = rng.randint(4, S - 16, 2)
            h, w = rng.randint(4, 12), rng.randint(6, 14)
            if j == 3:
                s_mask[i, y:y + h, x:x + w] = 0
            else:
                s_map[i, y:y + h, x:x + w] = 1
                t_mask[i, y - 4:y + h + 4, x - 4:x + w + 4] = 1
    return [t_map, t_mask, s_map, s_mask]


rng = np.random.RandomState(3)
x_all = (rng.randn(G, 3, S, S) * 1.5 + 0.5).astype("float32")
labels_all = db_labels(rng)


def one_step(loss_type, variant, dtype="float32"):
    paddle.seed(7)  # the same init on every rank and in the 1-process run
    model = build_ppocr_det_model({"model_type": "det", "algorithm": "DB",
                                   "Backbone": {"name": "PPLCNetV3", "scale": 0.25, "det": True},
                                   "Neck": {"name": "RSEFPN", "out_channels": 32, "shortcut": True},
                                   "Head": {"name": "DBHead", "k": 50, "fix_nan": True}})
    model.to(dtype=dtype)
    if info.world_size > 1:
        use_sync_bn(model)
    model.train()
    ddp = dist_utils.wrap_model(model, info)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    per = G // info.world_size
    part = slice(info.rank * per, (info.rank + 1) * per)
    loss_fn = (CrossRankDBLoss if variant == "xr" else DBLoss)(main_loss_type=loss_type)
    losses = loss_fn(ddp(paddle.to_tensor(x_all[part].astype(dtype))),
                     [None] + [paddle.to_tensor(a[part].astype(dtype)) for a in labels_all])
    losses["loss"].backward()
    value = float(losses["loss"])
    global_loss = value if variant == "xr" else float(dist_utils.all_reduce_sum(value)) / info.world_size
    grads = {f"grad/{n}": p.grad.numpy() for n, p in model.named_parameters() if p.grad is not None}
    opt.step()
    opt.clear_grad()
    state = {f"state/{k}": v.numpy() for k, v in model.state_dict().items()}
    tag = f"{loss_type}_{variant if dtype == 'float32' else dtype}_rank{info.rank}"
    np.savez(os.path.join(args.out, f"{tag}.npz"), loss=np.float64(global_loss), **grads, **state)
    calls = loss_fn.all_reduce_calls if variant == "xr" else 0
    with open(os.path.join(args.out, f"{tag}.json"), "w") as f:
        json.dump({"world_size": info.world_size, "loss_all_reduce": calls}, f)


def ties():
    """Values with many ties (one tie group straddles the ranks), split unevenly; the last case leaves rank 1
    empty. Each rank saves its weights for k in 1..n."""
    r = np.random.RandomState(11)
    v = np.round(r.rand(300), 1).astype("float32")  # 11 distinct values: every k-th value is tied
    out = {"values": v}
    cut = {1: [0, 300], 2: [0, 170, 300]}[info.world_size]
    cut_empty = {1: [0, 300], 2: [0, 300, 300]}[info.world_size]
    reduce = GlobalSums().values
    for name, c in (("split", cut), ("empty", cut_empty)):
        mine = v[c[info.rank]:c[info.rank + 1]]
        for k in (1, 7, 30, 31, 150, 299, 300):
            out[f"{name}/{k}"] = top_k_weights(mine, k, reduce)
        out[f"{name}/f64/31"] = top_k_weights(mine.astype("float64"), 31, reduce)
    np.savez(os.path.join(args.out, f"ties_rank{info.rank}.npz"), **out)


LOSS_CASES = {"DiceLoss": {}, "BCELoss": {"main_loss_type": "BCELoss"},
              "DiceFocalLoss_aux": {"main_loss_type": "DiceFocalLoss", "aux_weight_p4": 0.5}}


def loss_maps(case):
    """The loss alone on fixed probability maps (+ cbn_maps for BCELoss, aux_maps_p4 for DiceFocalLoss)."""
    r = np.random.RandomState(5)
    keys = ["maps"] + {"BCELoss": ["cbn_maps"], "DiceFocalLoss_aux": ["aux_maps_p4"]}.get(case, [])
    return {k: (0.01 + 0.98 * r.rand(G, 3, S, S)).astype("float32") for k in keys}


def loss_alone():
    per = G // info.world_size
    part = slice(info.rank * per, (info.rank + 1) * per)
    out = {}
    for case, kw in LOSS_CASES.items():
        fn = CrossRankDBLoss(**kw)
        predicts = {k: paddle.to_tensor(v[part], stop_gradient=False) for k, v in loss_maps(case).items()}
        losses = fn(predicts, [None] + [paddle.to_tensor(a[part]) for a in labels_all])
        losses["loss"].backward()
        out.update({f"{case}/{k}": float(v) for k, v in losses.items()})
        out.update({f"{case}/grad/{k}": p.grad.numpy() for k, p in predicts.items()})
        if info.world_size == 1:  # the inputs, for the test's float64 DBLoss of the whole batch
            out.update({f"{case}/input/{k}": v for k, v in loss_maps(case).items()})
    if info.world_size == 1:
        out.update({f"labels/{i}": a for i, a in enumerate(labels_all)})
    np.savez(os.path.join(args.out, f"loss_alone_rank{info.rank}.npz"), **out)


os.makedirs(args.out, exist_ok=True)
ties()
loss_alone()
for loss_type in args.losses.split(","):
    for variant in ("xr", "plain"):
        one_step(loss_type, variant)
    if info.world_size == 1:  # the exact math's stand-in: how far float32 rounding alone takes 1 process
        one_step(loss_type, "plain", "float64")
dist_utils.exit_distributed_run()
