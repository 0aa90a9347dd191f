"""PaddleDetection's side of benchmarks/det_vs_ppdet.py: ppdet's own ``ppdet.engine.Trainer`` on a generated YAML.

    python benchmarks/harness/ppdet_driver.py -c ppdet.yml --record run.json [--max-steps N] [--budget-s S] \
        [--weights-out w.pdparams]

Runs ``Trainer(cfg, mode="train").train()`` of paddledet (2.6.0) unchanged, except:

- its callbacks (LogPrinter, Checkpointer) are replaced by one that records the time of every step since
  training start (``time.perf_counter``, taken at ``on_step_end``, i.e. after the optimizer step; the EMA
  update of a step falls in the next interval) and the loss, and stops after ``--max-steps`` steps or
  ``--budget-s`` training seconds (by raising, so the EMA update of the very last step is not done);
- one batch transform ``CastGtClassInt64`` is registered in ``ppdet.data.transform`` (the generated YAML lists
  it after ``PadGT``): ppdet's COCODataSet yields int32 ``gt_class``, which its loss path on paddle 3.x rejects.

At the end two weight files are written, both under ppdet's parameter names:
``<weights-out>`` = ``trainer.ema.apply()`` (what ppdet itself evaluates and saves as its EMA model, including
its bias correction ``/(1 - d_n ** n)``, d_n its current threshold decay), and
``<weights-out stem>_raw.pdparams`` = the EMA accumulator without that correction (a diagnostic figure).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path


class StopTraining(Exception):
    pass


def register_int64_cast():
    import numpy as np
    from ppdet.data import transform
    from ppdet.data.transform.operators import BaseOperator

    class CastGtClassInt64(BaseOperator):
        """gt_class -> int64 (every sample of the batch)."""

        def apply(self, sample, context=None):
            if "gt_class" in sample:
                sample["gt_class"] = np.asarray(sample["gt_class"]).astype(np.int64)
            return sample

    transform.CastGtClassInt64 = CastGtClassInt64


def make_clock(max_steps: int, budget_s: float, log_every: int):
    from ppdet.engine.callbacks import Callback

    class Clock(Callback):
        def __init__(self, model):
            super().__init__(model)
            self.t0, self.times, self.losses, self.stopped_by_budget = None, [], [], False

        def on_train_begin(self, status):
            self.t0 = time.perf_counter()

        def on_step_end(self, status):
            self.times.append(time.perf_counter() - self.t0)
            stats = status["training_staus"]
            meters = stats.meters or {}
            self.losses.append(float(meters["loss"].value) if "loss" in meters else float("nan"))
            n = len(self.times)
            if n % log_every == 0:
                print(f"ppdet step {n}: loss {self.losses[-1]:.4f}, t {self.times[-1]:.1f} s", flush=True)
            if budget_s and self.times[-1] >= budget_s:
                self.stopped_by_budget = True
                raise StopTraining
            if max_steps and n >= max_steps:
                raise StopTraining

    return Clock


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-c", "--config", required=True)
    p.add_argument("--record", required=True)
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--budget-s", type=float, default=0.0)
    p.add_argument("--weights-out", default="")
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--seed", type=int, default=42, help="paddle / numpy / random seed (ppdet's tools/train.py "
                   "seeds nothing by default)")
    args = p.parse_args(argv)

    import paddle
    from ppdet.core.workspace import load_config
    from ppdet.engine import Trainer
    from ppdet.engine.callbacks import ComposeCallback

    import random

    import numpy as np

    paddle.set_device("cpu")
    paddle.seed(args.seed)
    np.random.seed(args.seed)
    random.seed(args.seed)
    register_int64_cast()
    cfg = load_config(args.config)
    t = time.time()
    trainer = Trainer(cfg, mode="train")
    clock = make_clock(args.max_steps, args.budget_s, args.log_every)(trainer)
    trainer._callbacks = [clock]
    trainer._compose_callback = ComposeCallback(trainer._callbacks)
    try:
        trainer.train()
    except StopTraining:
        pass
    weights = {}
    if args.weights_out:
        if trainer.use_ema:
            applied = trainer.ema.apply()
            raw = {k: v for k, v in trainer.ema.state_dict.items()}
        else:
            applied = raw = trainer.model.state_dict()
        paddle.save(applied, args.weights_out)
        raw_path = str(Path(args.weights_out).with_name(Path(args.weights_out).stem + "_raw.pdparams"))
        paddle.save(raw, raw_path)
        weights = {"weights": args.weights_out, "weights_raw": raw_path}
    steps_per_epoch = len(trainer.loader)
    n = len(clock.times)
    rec = {"side": "ppdet", "steps": n, "step_times_s": [round(x, 4) for x in clock.times], "losses": clock.losses,
           "samples": n * cfg.TrainReader["batch_size"], "epochs_done": n / max(1, steps_per_epoch),
           "stopped_by_budget": clock.stopped_by_budget, "train_s": round(clock.times[-1], 3) if n else 0.0,
           "process_wall_s": round(time.time() - t, 2), "ema_steps": trainer.ema.step if trainer.use_ema else 0,
           "losses_finite": all(math.isfinite(v) for v in clock.losses), **weights}
    Path(args.record).write_text(json.dumps(rec))
    print(json.dumps({k: v for k, v in rec.items() if k not in ("step_times_s", "losses")}))
    sys.stdout.flush()
    os._exit(0)  # skip paddle/ppdet teardown (the record is written)


if __name__ == "__main__":
    sys.exit(main())
