"""One time-to-accuracy training run of the OCR recognizer, evaluated every N optimizer steps.

Builds the model and data like recipes/ocr_rec.py (same blocks: RecDataset, build_rec_model, CTCLoss,
build_optimizer, Trainer), but evaluates by steps and stops at a target, and switches the speedup
methods of paddle_recipes.speedups on by name. Writes one JSON with the eval curve:

    python benchmarks/harness/tta_worker.py --data datasets/cache/tta_ocr_100 --out run.json \
        --lr 1e-3 --warmup-epochs 5 --batch 128 --epochs 20 --eval-every 50 --stop-at 0.95 \
        --methods blank_bias=0.8,metric_every=50,curriculum=300:3,backbone=DenseConvRec

Figures per eval point: step, samples (all processes), train_s (training time since fit start,
eval excluded), eval_s (cumulative eval time), acc, norm_edit_dis, loss (mean since the previous
point). Also: forward FLOPs per sample (hooks), achieved training FLOP/s = 3 * FLOPs * samples / train_s.
Runs under paddle.distributed.launch too (eval is sharded and all-reduced).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

METHODS = ("blank_bias", "metric_every", "curriculum", "backbone", "scale", "context_groups")


def parse_methods(text: str) -> dict:
    """"a=1,b=x:y,c" -> {"a": "1", "b": "x:y", "c": ""}; unknown names are an error."""
    out = {}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        k, _, v = part.partition("=")
        if k not in METHODS:
            raise SystemExit(f"--methods: unknown method {k!r}; choose from {METHODS}")
        out[k] = v
    return out


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="synthetic set root with train/lmdb and val/lmdb")
    p.add_argument("--dict", default=str(REPO / "datasets/ocr_rec/ch_hanzi_100.txt"))
    p.add_argument("--image-shape", default="3,32,192")
    p.add_argument("--max-text-length", type=int, default=8)
    p.add_argument("--backbone", default="LCNetRec")
    p.add_argument("--scale", type=float, default=0.5)
    p.add_argument("--width-stride", type=int, default=8)
    p.add_argument("--neck", default="Conv")
    p.add_argument("--hidden", type=int, default=96)
    p.add_argument("--optimizer", default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--schedule", default="cosine")
    p.add_argument("--warmup-steps", type=int, default=None)
    p.add_argument("--warmup-epochs", type=float, default=0.0, help="PaddleOCR's warmup_epoch (used when "
                   "--warmup-steps is not given)")
    p.add_argument("--weight-decay", type=float, default=0.0, help="L2 (PaddleOCR regularizer L2 factor)")
    p.add_argument("--min-lr", type=float, default=0.0)
    p.add_argument("--batch", type=int, default=128, help="per process")
    p.add_argument("--epochs", type=int, default=20, help="schedule horizon and step budget")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0 = epochs)")
    p.add_argument("--eval-every", type=int, default=50, help="optimizer steps between evals")
    p.add_argument("--eval-n", type=int, default=0, help="eval lines (0 = the whole val split)")
    p.add_argument("--stop-at", type=float, default=0.0, help="stop when held-out acc reaches this (0 = never)")
    p.add_argument("--budget-min", type=float, default=0.0, help="stop after this much training time, minutes "
                   "(eval excluded; 0 = none); the schedule horizon stays --epochs")
    p.add_argument("--methods", default="", help=f"comma list of {METHODS} (name=value)")
    p.add_argument("--ema", type=float, default=0.0, help="EMA decay (0 = off); eval uses EMA weights")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="OMP/MKL + paddle math threads (0 = leave)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


class EvalEvery:
    """Callback: evaluate every N steps, excluding eval time from train_s; stop at the target, or once
    train_s passes budget_s (0 = no budget; checked at eval points, so a run overshoots by < N steps)."""

    def __init__(self, every, eval_fn, stop_at, n_log, info, budget_s: float = 0.0):
        self.every, self.eval_fn, self.stop_at, self.info = every, eval_fn, stop_at, info
        self.budget_s = budget_s
        self.points, self.eval_s, self.t0 = [], 0.0, None
        self.n_log = n_log

    # Trainer Callback protocol (duck-typed to avoid importing paddle before argument parsing)
    def on_fit_start(self, tr):
        self.t0 = time.perf_counter()
        self._point(tr)

    def on_step_end(self, tr):
        if tr.global_step % self.every == 0:
            self._point(tr)

    def on_fit_end(self, tr):
        if not self.points or self.points[-1]["step"] != tr.global_step:
            self._point(tr)

    def _point(self, tr):
        t = time.perf_counter()
        train_s = t - self.t0 - self.eval_s
        losses = [float(v.item()) if hasattr(v, "item") else float(v) for v in tr._log_buf.pop("loss", [])]
        tr._log_buf.pop("acc", None)
        m = tr.evaluate()
        self.eval_s += time.perf_counter() - t
        row = {"step": tr.global_step, "samples": tr.samples_seen, "train_s": round(train_s, 3),
               "eval_s": round(self.eval_s, 3), "acc": m.get("acc"), "norm_edit_dis": m.get("norm_edit_dis"),
               "loss": (sum(losses) / len(losses)) if losses else None}
        self.points.append(row)
        if self.info.is_main:
            logging.getLogger("tta").info("point %s", row)
        if self.stop_at and (m.get("acc") or 0) >= self.stop_at:
            tr.stop_training = True
        if self.budget_s and train_s >= self.budget_s:
            tr.stop_training = True

    def on_epoch_start(self, tr): ...
    def on_epoch_end(self, tr): ...
    def on_eval_end(self, tr, metrics): ...
    def state_dict(self): return {}
    def set_state_dict(self, s): ...


def main(argv=None) -> int:
    args = parse_args(argv)
    methods = parse_methods(args.methods)
    import numpy as np
    import paddle

    from paddle_recipes import distributed as D
    from paddle_recipes.data import LoaderConfig, build_loader
    from paddle_recipes.ema import EmaConfig, build_ema
    from paddle_recipes.optim import OptimizerConfig, build_optimizer
    from paddle_recipes.speedups.flops import count_flops, matmul_peak_gflops
    from paddle_recipes.speedups.train_metric import ctc_train_step
    from paddle_recipes.tasks.ocr.charset import CharDict
    from paddle_recipes.tasks.ocr.dataset import DatasetConfig, RecDataset, collate
    from paddle_recipes.tasks.ocr.evaluate import evaluate_rec
    from paddle_recipes.tasks.ocr.losses import CTCLoss
    from paddle_recipes.tasks.ocr.metrics import RecMetric
    from paddle_recipes.tasks.ocr.models import build_rec_model
    from paddle_recipes.trainer import Trainer

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.threads:
        from paddle_recipes.device_defaults import apply_threads

        apply_threads(args.threads, override=True)
    info = D.setup(seed=args.seed, device="cpu" if not paddle.is_compiled_with_cuda() else None)
    shape = [int(v) for v in args.image_shape.split(",")]
    charset = CharDict.from_file(args.dict)
    root = Path(args.data)
    train_ds = RecDataset(DatasetConfig(format="lmdb", data_dir=str(root / "train" / "lmdb")), charset, shape,
                          args.max_text_length, replace_bad=True, key="Train.dataset")
    eval_ds = RecDataset(DatasetConfig(format="lmdb", data_dir=str(root / "val" / "lmdb")), charset, shape,
                         args.max_text_length, key="Eval.dataset")
    n_eval = min(len(eval_ds), args.eval_n) if args.eval_n else len(eval_ds)
    shard = paddle.io.Subset(eval_ds, list(range(info.rank, n_eval, info.world_size)))
    eval_loader = build_loader(shard, paddle.io.BatchSampler(shard, batch_size=128, shuffle=False),
                               LoaderConfig(num_workers=0), collate_fn=collate)

    lc = LoaderConfig(num_workers=args.workers, persistent_workers=args.workers > 0)
    callbacks = []
    if "curriculum" in methods:
        from paddle_recipes.speedups.curriculum import CurriculumLogger, LengthCurriculumSampler

        warm, _, short = methods["curriculum"].partition(":")
        sampler = LengthCurriculumSampler([len(it[1]) for it in train_ds.items], args.batch, int(warm or 300),
                                          int(short or 3), num_replicas=info.world_size, rank=info.rank,
                                          seed=args.seed)
        callbacks.append(CurriculumLogger(sampler))
    else:
        sampler = D.build_batch_sampler(train_ds, args.batch, info, shuffle=True, drop_last=True)
    loader = build_loader(train_ds, sampler, lc, collate_fn=collate)

    paddle.seed(args.seed)  # same init on every rank and every row with the same architecture
    arch = {"Backbone": {"name": methods.get("backbone") or args.backbone,
                         "scale": float(methods.get("scale") or args.scale), "width_stride": args.width_stride},
            "Neck": {"name": args.neck, "hidden_size": args.hidden}, "Head": {"name": "CTCHead"}}
    if "context_groups" in methods:  # Conv neck: 1 = dense context conv instead of depthwise
        arch["Neck"]["context_groups"] = int(methods["context_groups"])
    model = build_rec_model(arch, charset.num_classes, in_channels=shape[0])
    flops = count_flops(model, [1] + shape)
    steps_per_epoch = len(loader)
    total = args.max_steps or args.epochs * steps_per_epoch
    warmup = args.warmup_steps if args.warmup_steps is not None else int(round(args.warmup_epochs * steps_per_epoch))
    ocfg = OptimizerConfig(name=args.optimizer, lr=args.lr, schedule=args.schedule, warmup_steps=warmup,
                           weight_decay=args.weight_decay, min_lr=args.min_lr)
    optimizer, sched = build_optimizer(ocfg, model.parameters(), total_steps=args.epochs * steps_per_epoch)
    ema = build_ema(EmaConfig(enable=True, decay=args.ema), model) if args.ema else None
    model = D.wrap_model(model, info)
    if "blank_bias" in methods:
        from paddle_recipes.speedups.ctc_init import CTCBlankBias

        callbacks.append(CTCBlankBias(blank_prob=float(methods["blank_bias"] or 0.8)))
    step_fn = ctc_train_step(CTCLoss(), charset, metric_every=int(methods.get("metric_every") or 1))

    def eval_fn(m):
        state = evaluate_rec(D.unwrap(m), eval_loader, charset)
        return RecMetric.from_state({k: D.all_reduce_sum(float(v)) for k, v in state.items()})

    ev = EvalEvery(args.eval_every, eval_fn, args.stop_at, args.eval_every, info, budget_s=60 * args.budget_min)
    callbacks.append(ev)  # last: the step-0 point shows the model after the init hooks
    trainer = Trainer(model, optimizer, step_fn, loader, lr_scheduler=sched, ema=ema, callbacks=callbacks,
                      epochs=args.epochs if not args.max_steps else 10 ** 6, max_steps=total,
                      log_every=10 ** 9, output_dir=None, eval_fn=eval_fn, eval_every_epochs=0,
                      save_every_epochs=0, dist_info=info, main_metric=None,
                      batch_size_fn=lambda b: len(b["text"]))
    t_wall = time.perf_counter()
    trainer.fit()
    wall = time.perf_counter() - t_wall
    last = ev.points[-1]
    peak = matmul_peak_gflops()  # this process, same threads, after training (warm)
    out = {"args": vars(args), "methods": methods, "world_size": info.world_size,
           "threads": os.environ.get("OMP_NUM_THREADS"), "steps_per_epoch": steps_per_epoch,
           "warmup_steps": warmup, "total_steps_budget": total, "flops_fwd_per_sample": flops["total"],
           "flops_by_type": flops["by_type"], "points": ev.points, "wall_s": round(wall, 2),
           "train_s": last["train_s"], "eval_s": last["eval_s"], "decodes": step_fn.decodes, "peak_gflops": round(peak, 2),
           "achieved_gflops": round(3 * flops["total"] * last["samples"] / max(last["train_s"], 1e-9) / 1e9, 3)}
    if info.is_main:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1))
        logging.getLogger("tta").info("wrote %s: %d points, last %s", args.out, len(ev.points), last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
