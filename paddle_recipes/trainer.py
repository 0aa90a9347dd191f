"""One training loop for every recipe; blocks plug in as objects and callbacks, never as if/elif.

    trainer = Trainer(model, optimizer, train_step, loader, lr_scheduler=sched, amp=Amp(cfg.amp),
                      accumulator=GradAccumulator(3), ema=ModelEMA(model), eval_fn=evaluate,
                      epochs=10, output_dir="output/rec", dist_info=info)
    trainer.fit(resume_from="output/rec/checkpoints")   # or None

train_step(model, batch) -> {"loss": Tensor, **scalars}: forward + loss for one micro-batch; it runs
inside amp.autocast(). eval_fn(model) -> {metric: float}; it runs with EMA weights swapped in.

Order of one optimizer step: k micro-steps (backward of loss/k, DDP sync only on the last) ->
amp.step (unscale, skip on inf/nan, update scale) -> clear_grad -> lr_scheduler.step() (per optimizer
step, so accumulation does not stretch the schedule) -> ema.update -> callbacks.on_step_end.
A non-finite loss is not special-cased: its gradients are non-finite on every rank after the
all-reduce, so every rank skips the same step (no DDP hang) and it is counted.
"""
from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any, Callable

import paddle

from . import checkpoint as ckpt
from .accumulate import GradAccumulator
from .amp import Amp
from .distributed import DistInfo, barrier, unwrap
from .ppocr_logs import format_cur_metric, format_metric_line

logger = logging.getLogger(__name__)


class Callback:
    """Hooks called by Trainer. Override what you need; state_dict goes into checkpoints."""

    def on_fit_start(self, trainer: "Trainer") -> None: ...
    def on_epoch_start(self, trainer: "Trainer") -> None: ...
    def on_step_end(self, trainer: "Trainer") -> None: ...
    def on_epoch_end(self, trainer: "Trainer") -> None: ...
    def on_eval_end(self, trainer: "Trainer", metrics: dict) -> None: ...
    def on_fit_end(self, trainer: "Trainer") -> None: ...

    def state_dict(self) -> dict:
        return {}

    def set_state_dict(self, state: dict) -> None: ...


def default_batch_size(batch: Any) -> int:
    """Number of samples in a batch: leading dim of its first tensor/array."""
    first = batch
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if isinstance(first, dict):
        first = next(iter(first.values()))
    if isinstance(batch, dict):
        first = next(iter(batch.values()))
    shape = getattr(first, "shape", None)
    return int(shape[0]) if shape else 1


class Trainer:
    """Epoch/step loop with AMP, accumulation, EMA, LR schedule, logging, eval, checkpoints, resume.

    epochs: number of epochs; max_steps: stop after this many optimizer steps (0 = no limit).
    log_every: optimizer steps between log lines. save_every_steps: 0 = only at epoch ends.
    save_every_epochs / eval_every_epochs: 0 disables. keep_last: checkpoints kept.
    main_metric: eval key used to keep output_dir/checkpoints/best (higher is better; PaddleOCR's tie rule:
    an eval equal to the best so far becomes the new best, so `best` holds the latest of equal evals).
    lr_step_per: "step" (optimizer step) or "epoch".
    eval_batch_step: PaddleOCR's [start, every] in optimizer steps: also evaluate after optimizer step s
    when s > start and (s - start) % every == 0 (() = off). keep_every_epochs: every this many epochs the
    epoch-end checkpoint is tagged iter_epoch_N and never pruned (0 = off).
    cur_metric(metrics) -> dict: what the `cur metric, k: v, ...` eval line shows (default: every metric);
    the `best metric, ..., best_epoch: N` line repeats it for the best eval (PaddleOCR's log lines).
    """

    def __init__(self, model: paddle.nn.Layer, optimizer, train_step: Callable, train_loader, *,
                 lr_scheduler=None, amp: Amp | None = None, accumulator: GradAccumulator | None = None,
                 ema=None, callbacks: list | tuple = (), epochs: int = 1, max_steps: int = 0,
                 log_every: int = 10, output_dir: str | None = None, eval_fn: Callable | None = None,
                 eval_every_epochs: int = 1, save_every_epochs: int = 1, save_every_steps: int = 0,
                 keep_last: int = 3, dist_info: DistInfo | None = None, batch_size_fn: Callable = default_batch_size,
                 main_metric: str | None = None, lr_step_per: str = "step", config: Any = None,
                 timer=None, scalar_writer=None, eval_batch_step=(), keep_every_epochs: int = 0,
                 cur_metric: Callable[[dict], dict] | None = None):
        if lr_step_per not in ("step", "epoch"):
            raise ValueError("lr_step_per must be 'step' or 'epoch'")
        self.model, self.optimizer, self.train_step, self.train_loader = model, optimizer, train_step, train_loader
        self.lr_scheduler, self.ema, self.callbacks = lr_scheduler, ema, list(callbacks)
        self.amp = amp or Amp()
        self.accumulator = accumulator or GradAccumulator(1)
        self.epochs, self.max_steps, self.log_every = epochs, max_steps, max(1, log_every)
        self.output_dir = Path(output_dir) if output_dir else None
        self.eval_fn, self.eval_every_epochs = eval_fn, eval_every_epochs
        self.save_every_epochs, self.save_every_steps, self.keep_last = save_every_epochs, save_every_steps, keep_last
        self.info = dist_info or DistInfo()
        self.batch_size_fn, self.main_metric, self.lr_step_per = batch_size_fn, main_metric, lr_step_per
        self.config, self.scalar_writer = config, scalar_writer
        self.timer = timer
        self.eval_batch_step, self.keep_every_epochs = tuple(eval_batch_step or ()), keep_every_epochs
        self.cur_metric = cur_metric or dict
        self.best_record: dict = {}    # the `best metric` line: cur_metric of the best eval + best_epoch
        self._eval_step: int | None = None  # global_step of the last evaluation
        # progress
        self.epoch = 0                 # current epoch (0-based)
        self.batch_in_epoch = 0        # micro-batches consumed in the current epoch
        self.global_step = 0           # optimizer steps taken
        self.samples_seen = 0
        self.best_metric: float | None = None
        self.last_metrics: dict = {}
        self.history: list[dict] = []  # one row per log line (for benchmarks)
        self.stop_training = False
        self._log_buf: dict[str, list] = {}

    # ------------------------------------------------------------------ helpers
    @property
    def batch_sampler(self):
        return getattr(self.train_loader, "batch_sampler", None)

    @property
    def checkpoint_dir(self) -> Path | None:
        return self.output_dir / "checkpoints" if self.output_dir else None

    def _call(self, hook: str, *args) -> None:
        for cb in self.callbacks:
            getattr(cb, hook)(self, *args)

    def current_lr(self) -> float:
        return float(self.optimizer.get_lr())

    def _steps_per_epoch(self) -> int | None:
        try:
            n = len(self.train_loader)
        except TypeError:
            return None
        return math.ceil(n / self.accumulator.steps)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        state = {
            "model": unwrap(self.model).state_dict(),
            "optimizer": ckpt.portable_optimizer_state(self.optimizer),
            "amp": self.amp.state_dict(),
            "accumulator": self.accumulator.state_dict(),
            "lr": self.lr_scheduler.state_dict() if self.lr_scheduler is not None else None,
            "epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch, "global_step": self.global_step,
            "samples_seen": self.samples_seen, "best_metric": self.best_metric, "best_record": self.best_record,
            "rng": ckpt.rng_state(),
            "callbacks": [cb.state_dict() for cb in self.callbacks],
            "world_size": self.info.world_size,
        }
        if self.ema is not None:
            state["ema"] = self.ema.ema_state_dict()
            state["ema_num_updates"] = self.ema.num_updates
        if self.config is not None:
            from .config import to_dict

            state["config"] = to_dict(self.config)
        return state

    def load_state_dict(self, state: dict) -> None:
        unwrap(self.model).set_state_dict(state["model"])
        ckpt.load_portable_optimizer_state(self.optimizer, state["optimizer"])
        self.amp.set_state_dict(state["amp"])
        self.accumulator.set_state_dict(state["accumulator"])
        if self.lr_scheduler is not None and state.get("lr") is not None:
            self.lr_scheduler.set_state_dict(state["lr"])
        if self.ema is not None:
            if "ema" not in state:
                raise ckpt.CheckpointError(f"{state.get('path')}: no EMA state, but this run uses EMA")
            self.ema.set_state_dict({"shadow": state["ema"], "num_updates": state["ema_num_updates"]})
        self.epoch, self.batch_in_epoch = state["epoch"], state["batch_in_epoch"]
        self.global_step, self.samples_seen = state["global_step"], state["samples_seen"]
        self.best_metric = state.get("best_metric")
        self.best_record = dict(state.get("best_record") or {})
        for cb, cb_state in zip(self.callbacks, state.get("callbacks", [])):
            cb.set_state_dict(cb_state)
        if state.get("world_size", 1) != self.info.world_size:
            logger.warning("resuming a %d-process checkpoint on %d processes: the data order changes",
                           state.get("world_size", 1), self.info.world_size)
        ckpt.set_rng_state(state["rng"])

    def save(self, tag: str | None = None) -> Path | None:
        """Checkpoint on rank 0 (atomic). Returns the folder (None on other ranks / no output_dir)."""
        if self.checkpoint_dir is None or not self.info.is_main:
            return None
        tag = tag or f"step_{self.global_step:08d}"
        path = ckpt.save_checkpoint(self.checkpoint_dir, self.state_dict(), tag, keep_last=self.keep_last)
        logger.info("saved checkpoint %s", path)
        return path

    def resume(self, path) -> None:
        state = ckpt.load_checkpoint(path)
        self.load_state_dict(state)
        logger.info("resumed from %s at epoch %d, batch %d, global_step %d", state["path"], self.epoch,
                    self.batch_in_epoch, self.global_step)

    # ------------------------------------------------------------------ loop
    def evaluate(self) -> dict:
        """Run eval_fn (with EMA weights when EMA is on); tracks and saves the best checkpoint."""
        if self.eval_fn is None:
            return {}
        self.model.eval()
        with paddle.no_grad():
            if self.ema is not None:
                with self.ema.apply_to(self.model):
                    metrics = self.eval_fn(self.model)
            else:
                metrics = self.eval_fn(self.model)
        self.model.train()
        self.last_metrics = dict(metrics)
        self._eval_step = self.global_step
        epoch = self.epoch + (1 if self.batch_in_epoch else 0)  # 1-based epoch of these weights (PaddleOCR's)
        cur = self.cur_metric(metrics)
        logger.info(format_cur_metric(cur))
        line = ", ".join(f"{k}: {v:.6f}" if isinstance(v, float) else f"{k}: {v}" for k, v in metrics.items())
        logger.info("eval at epoch %d, global_step %d: %s", epoch, self.global_step, line)
        if self.scalar_writer is not None and self.info.is_main:
            for k, v in metrics.items():
                if isinstance(v, (int, float)):
                    self.scalar_writer.add_scalar(f"eval/{k}", float(v), self.global_step)
        key = self.main_metric
        if key and key in metrics and (self.best_metric is None or metrics[key] >= self.best_metric):
            self.best_metric = float(metrics[key])
            self.best_record = {**cur, "best_epoch": epoch}
            self.save("best")
        if self.best_record:
            logger.info(format_metric_line("best metric", self.best_record))
        self._call("on_eval_end", metrics)
        return metrics

    def eval_due_by_step(self) -> bool:
        """PaddleOCR's rule for eval_batch_step [start, every] after optimizer step global_step."""
        if len(self.eval_batch_step) != 2 or self.eval_batch_step[1] <= 0:
            return False
        start, every = self.eval_batch_step
        return self.global_step > start and (self.global_step - start) % every == 0

    def _log(self, epoch_steps: int | None) -> None:
        scalars = {k: float(paddle.stack(v).astype("float32").mean().item()) if isinstance(v[0], paddle.Tensor)
                   else sum(v) / len(v) for k, v in self._log_buf.items() if v}
        self._log_buf = {}
        row = {"epoch": self.epoch + 1, "global_step": self.global_step, "lr": self.current_lr(), **scalars,
               "time": time.time()}
        if self.amp.scaler.enabled:
            row["loss_scale"] = self.amp.scaler.scale_value
        if self.timer is not None:
            row.update(self.timer.summary())
            metrics = {"lr": self.current_lr(), **scalars}
            if self.amp.scaler.enabled:
                metrics["loss_scale"] = self.amp.scaler.scale_value
            msg = self.timer.format_line(self.epoch + 1, self.epochs, self.global_step, metrics)
        else:
            msg = ", ".join(f"{k}: {v}" for k, v in row.items())
        self.history.append(row)
        logger.info(msg)
        if self.scalar_writer is not None and self.info.is_main:
            for k, v in row.items():
                if isinstance(v, (int, float)) and k not in ("epoch", "global_step", "time"):
                    self.scalar_writer.add_scalar(f"train/{k}", float(v), self.global_step)

    def _optimizer_step(self) -> None:
        self.amp.step(self.optimizer)
        self.optimizer.clear_grad()
        if self.lr_scheduler is not None and self.lr_step_per == "step":
            self.lr_scheduler.step()
        if self.ema is not None:
            self.ema.update(self.model, self.global_step)  # the warmup reads the trainer step
        self.global_step += 1
        self._call("on_step_end")

    def train_one_epoch(self) -> None:
        loader, acc = self.train_loader, self.accumulator
        sampler = self.batch_sampler
        if sampler is not None and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(self.epoch)
        skip = self.batch_in_epoch
        if skip and sampler is not None and hasattr(sampler, "skip_next"):
            sampler.skip_next(skip)
        elif skip:
            raise RuntimeError("mid-epoch resume needs a batch sampler with skip_next() "
                               "(use paddle_recipes.distributed.build_batch_sampler)")
        try:
            n_batches = len(loader)
        except TypeError:
            n_batches = None
        epoch_steps = self._steps_per_epoch()
        self.model.train()
        self._call("on_epoch_start")
        if self.timer is not None:
            self.timer.reader_start()
        for batch in loader:
            if self.timer is not None:
                self.timer.reader_done()
            last_in_epoch = n_batches is not None and self.batch_in_epoch + 1 >= n_batches
            with acc.micro_step(self.model, sync=True if last_in_epoch else None):
                with self.amp.autocast():
                    out = self.train_step(self.model, batch)
                loss = out["loss"]
                self.amp.backward(acc.scale(loss))
            for k, v in out.items():
                if isinstance(v, paddle.Tensor) and v.size == 1:
                    self._log_buf.setdefault(k, []).append(v.detach().reshape([]))
                elif isinstance(v, (int, float)):
                    self._log_buf.setdefault(k, []).append(float(v))
            self.batch_in_epoch += 1
            bs = self.batch_size_fn(batch)
            self.samples_seen += bs * self.info.world_size
            stepped = False
            if acc.is_boundary or (last_in_epoch and acc.flush(self.optimizer)):
                self._optimizer_step()
                stepped = True
            if self.timer is not None:
                self.timer.batch_done(bs)
            if stepped:
                if self.global_step % self.log_every == 0:
                    self._log(epoch_steps)
                if self.save_every_steps and self.global_step % self.save_every_steps == 0:
                    self.save()
                if self.eval_fn is not None and self.eval_due_by_step():
                    self.evaluate()
                if self.max_steps and self.global_step >= self.max_steps:
                    self.stop_training = True
            if self.stop_training:
                break
            if self.timer is not None:
                self.timer.reader_start()

    def fit(self, resume_from=None) -> dict:
        """Train (optionally resuming from a checkpoint folder or root); returns the last eval metrics."""
        if resume_from:
            self.resume(resume_from)
        if self.timer is None:
            from .meters import StepTimer

            try:
                total = len(self.train_loader) * self.epochs
                if self.max_steps:
                    total = min(total, self.max_steps * self.accumulator.steps)
            except TypeError:
                total = None
            self.timer = StepTimer(total_steps=total, window=max(self.log_every * self.accumulator.steps, 1))
            self.timer.steps = self.epoch * (total // self.epochs if total else 0) + self.batch_in_epoch
        self._call("on_fit_start")
        while self.epoch < self.epochs and not self.stop_training:
            self.train_one_epoch()
            if self.stop_training and self.batch_in_epoch < (len(self.train_loader) if hasattr(self.train_loader, "__len__") else 0):
                break  # max_steps reached mid-epoch: keep the position for an exact resume
            finished_epoch = self.epoch
            self.epoch += 1
            self.batch_in_epoch = 0
            if self.lr_scheduler is not None and self.lr_step_per == "epoch":
                self.lr_scheduler.step()
            self._call("on_epoch_end")
            if (self.eval_fn is not None and self.eval_every_epochs and (finished_epoch + 1) % self.eval_every_epochs == 0
                    and self._eval_step != self.global_step):  # not again after a step eval of the same weights
                self.evaluate()
            if self.keep_every_epochs and (finished_epoch + 1) % self.keep_every_epochs == 0:
                self.save(f"{ckpt.KEEP_PREFIX}{finished_epoch + 1}")  # never pruned; also what `latest` names
            elif self.save_every_epochs and (finished_epoch + 1) % self.save_every_epochs == 0:
                self.save()
            barrier()
        self._call("on_fit_end")
        return self.last_metrics
