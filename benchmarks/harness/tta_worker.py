"""One time-to-accuracy training run: the real OCR recipe (OcrRec) with -o overrides, plus a timing callback.

The arguments below become `recipes/ocr_rec.py -c benchmarks/configs/ocr_rec_tta_worker.yml -o ...` keys (the
recipe's own assembly: build_training, CtcTrainStep, evaluation, EMA); the speedup methods are switched on by name
through the same YAML keys a user sets. TtaClock (a public Trainer callback) evaluates once at step 0, times
training with eval excluded, and stops at a target or a budget; the recipe evaluates every --eval-every optimizer
steps (Global.eval_batch_step) and writes summary.json, from which the curve is read. Writes one JSON:

    python benchmarks/harness/tta_worker.py --data datasets/cache/tta_ocr_100 --out run.json \
        --lr 1e-3 --warmup-epochs 5 --batch 128 --epochs 20 --eval-every 50 --stop-at 0.95 \
        --methods blank_bias=0.8,metric_every=50,curriculum=300:3,backbone=DenseConvRec

methods -> keys: blank_bias=p -> Architecture.Head.init_blank_prob; metric_every=N -> Global.cal_metric_during_train;
curriculum=W:S -> Train.sampler {name: LengthCurriculumSampler, warm_steps: W, short_len: S}; backbone, scale ->
Architecture.Backbone; context_groups -> Architecture.Neck.context_groups.
Figures per eval point: step, samples (all processes), train_s (training time since fit start, eval excluded),
eval_s (cumulative eval time), acc, norm_edit_dis, loss (mean since the previous point, from the recipe's log rows).
Also: forward FLOPs per sample (hooks), achieved training FLOP/s = 3 * FLOPs * samples / train_s.
Runs under paddle.distributed.launch too (the recipe shards and all-reduces the evaluation).
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
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0 = epochs; the schedule "
                   "horizon stays --epochs)")
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


BASE_CONFIG = REPO / "benchmarks" / "configs" / "ocr_rec_tta_worker.yml"


def recipe_overrides(args, methods: dict, output_dir: Path, eval_labels: str | None = None) -> list[str]:
    """The -o keys of one run (every setting of the row is explicit; BASE_CONFIG holds the rest)."""
    root, m = Path(args.data), methods
    o = [f"Global.output_dir={output_dir}", f"Global.seed={args.seed}", f"Global.epochs={args.epochs}",
         f"Global.character_dict_path={args.dict}", f"Global.image_shape=[{args.image_shape}]",
         f"Global.max_text_length={args.max_text_length}", f"Global.eval_batch_step=[0,{args.eval_every}]",
         f"Global.log_every={args.eval_every}", f"Global.cal_metric_during_train={int(m.get('metric_every') or 1)}",
         f"Architecture.Backbone.name={m.get('backbone') or args.backbone}",
         f"Architecture.Backbone.scale={float(m.get('scale') or args.scale)}",
         f"Architecture.Backbone.width_stride={args.width_stride}", f"Architecture.Neck.name={args.neck}",
         f"Architecture.Neck.hidden_size={args.hidden}",
         f"Architecture.Head.init_blank_prob={float(m['blank_bias'] or 0.8) if 'blank_bias' in m else 0.0}",
         f"Optimizer.name={args.optimizer}", f"Optimizer.lr={args.lr}", f"Optimizer.schedule={args.schedule}",
         f"Optimizer.weight_decay={args.weight_decay}", f"Optimizer.min_lr={args.min_lr}",
         f"EMA.enable={'true' if args.ema else 'false'}", f"EMA.decay={args.ema or 0.9998}",
         "Train.dataset.format=lmdb", f"Train.dataset.data_dir={root / 'train' / 'lmdb'}",
         f"Train.loader.batch_size_per_card={args.batch}", f"Train.loader.num_workers={args.workers}",
         f"Train.loader.persistent_workers={'true' if args.workers else 'false'}"]
    o += ([f"Optimizer.warmup_steps={args.warmup_steps}", "Optimizer.warmup_epochs=0"] if args.warmup_steps is not None
          else ["Optimizer.warmup_steps=0", f"Optimizer.warmup_epochs={args.warmup_epochs}"])
    if eval_labels:  # the first --eval-n val lines (label.txt lists the same images as the LMDB, in order)
        o += ["Eval.dataset.format=label_file", f"Eval.dataset.data_dir={root / 'val'}",
              f"Eval.dataset.label_file_list=[{eval_labels}]"]
    else:
        o += ["Eval.dataset.format=lmdb", f"Eval.dataset.data_dir={root / 'val' / 'lmdb'}"]
    if "curriculum" in m:
        warm, _, short = m["curriculum"].partition(":")
        o += ["Train.sampler.name=LengthCurriculumSampler", f"Train.sampler.warm_steps={int(warm or 300)}",
              f"Train.sampler.short_len={int(short or 3)}"]
    if "context_groups" in m:  # Conv neck: 1 = dense context conv instead of depthwise
        o.append(f"Architecture.Neck.context_groups={int(m['context_groups'])}")
    return o


def eval_subset(args, out_dir: Path) -> str | None:
    """A label file of the first --eval-n val lines, or None for the whole val split."""
    labels = (Path(args.data) / "val" / "label.txt").read_text(encoding="utf-8").splitlines()
    if not args.eval_n or args.eval_n >= len(labels):
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"val_first_{args.eval_n}.txt"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # every rank writes the same lines: atomic replace
    tmp.write_text("\n".join(labels[:args.eval_n]) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return str(path)


class TtaClock:
    """Trainer callback (public hooks and attributes only): an eval point at step 0, training seconds with eval
    excluded at every evaluation, and the stop rules: acc >= stop_at (0 = never), training time >= budget_s
    (0 = none; checked at eval points, so a run overshoots by < one eval period), global_step >= max_steps (0 = none).

    The time between the end of the last optimizer step and the end of an evaluation is eval time (it includes the
    `best` checkpoint written there). flops_shape: [C, H, W] to count forward FLOPs at fit start (None = skip)."""

    def __init__(self, stop_at: float = 0.0, budget_s: float = 0.0, max_steps: int = 0, flops_shape=None, log=None):
        self.stop_at, self.budget_s, self.max_steps, self.flops_shape, self.log = stop_at, budget_s, max_steps, flops_shape, log
        self.points: list[dict] = []
        self.eval_s, self.t0, self.t_step = 0.0, None, None
        self.flops, self.steps_per_epoch, self.decodes = None, None, None

    def on_fit_start(self, tr):
        if self.flops_shape:
            from benchmarks.harness.flops import count_flops
            from paddle_recipes.runtime.distributed import unwrap

            self.flops = count_flops(unwrap(tr.model), [1, *self.flops_shape])
        self.steps_per_epoch = len(tr.train_loader)
        self.t0 = self.t_step = time.perf_counter()
        tr.evaluate()  # the step-0 point: the model as initialised

    def on_step_end(self, tr):
        self.t_step = time.perf_counter()
        if self.max_steps and tr.global_step >= self.max_steps:
            tr.stop_training = True

    def on_eval_end(self, tr, metrics):
        now = time.perf_counter()
        train_s = self.t_step - self.t0 - self.eval_s
        self.eval_s += now - self.t_step
        row = {"step": tr.global_step, "samples": tr.samples_seen, "train_s": round(train_s, 3),
               "eval_s": round(self.eval_s, 3), "acc": metrics.get("acc")}
        self.points.append(row)
        if self.log is not None:
            self.log.info("point %s", row)
        if self.stop_at and (metrics.get("acc") or 0) >= self.stop_at:
            tr.stop_training = True
        if self.budget_s and train_s >= self.budget_s:
            tr.stop_training = True

    def on_fit_end(self, tr):
        self.decodes = getattr(tr.train_step, "decodes", None)

    def on_epoch_start(self, tr): ...
    def on_epoch_end(self, tr): ...
    def state_dict(self): return {}
    def set_state_dict(self, s): ...


def curve(clock: TtaClock, summary: dict) -> list[dict]:
    """Eval points: timing from the clock, metrics from summary.json's eval_history and the mean train loss of the
    log row at that step (log_every = the eval period, so it averages the steps since the previous point)."""
    evals = {e["global_step"]: e for e in summary["eval_history"]}
    losses = {h["global_step"]: h.get("loss") for h in summary["history"]}
    out = []
    for p in clock.points:
        e = evals[p["step"]]
        out.append({**p, "acc": e.get("acc"), "norm_edit_dis": e.get("norm_edit_dis"), "loss": losses.get(p["step"])})
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    methods = parse_methods(args.methods)
    if args.threads:
        from paddle_recipes.runtime.device_defaults import apply_threads

        apply_threads(args.threads, override=True)
    import paddle

    from benchmarks.harness.flops import matmul_peak_gflops
    from paddle_recipes.runtime import distributed as D
    from paddle_recipes.recipes.ocr_rec import OcrRec

    out = Path(args.out)
    run_dir = out.parent / f"{out.stem}_run"
    shape = [int(v) for v in args.image_shape.split(",")]
    clock = TtaClock(args.stop_at, 60 * args.budget_min, args.max_steps, shape, logging.getLogger("tta"))

    class TimedOcrRec(OcrRec):  # the recipe as it is, plus the clock through the public callbacks hook
        def callbacks(self) -> list:
            return [*super().callbacks(), clock]

    overrides = recipe_overrides(args, methods, run_dir, eval_subset(args, run_dir))
    t_wall = time.perf_counter()
    TimedOcrRec.main(["-c", str(BASE_CONFIG), "-o", *overrides])
    wall = time.perf_counter() - t_wall
    if paddle.distributed.get_rank() == 0:
        summary = json.loads((run_dir / "summary.json").read_text())
        points = curve(clock, summary)
        last = points[-1]
        spe = clock.steps_per_epoch
        warmup = args.warmup_steps if args.warmup_steps is not None else int(round(args.warmup_epochs * spe))
        peak = matmul_peak_gflops()  # this process, same threads, after training (warm)
        res = {"args": vars(args), "methods": methods, "world_size": summary["world_size"],
               "threads": os.environ.get("OMP_NUM_THREADS"), "steps_per_epoch": spe, "warmup_steps": warmup,
               "total_steps_budget": args.max_steps or args.epochs * spe, "overrides": overrides,
               "flops_fwd_per_sample": clock.flops["total"], "flops_by_type": clock.flops["by_type"],
               "points": points, "wall_s": round(wall, 2), "train_s": last["train_s"], "eval_s": last["eval_s"],
               "decodes": clock.decodes, "peak_gflops": round(peak, 2), "summary": str(run_dir / "summary.json"),
               "achieved_gflops": round(3 * clock.flops["total"] * last["samples"] / max(last["train_s"], 1e-9) / 1e9, 3)}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=1))
        logging.getLogger("tta").info("wrote %s: %d points, last %s", out, len(points), last)
    D.exit_distributed_run(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
