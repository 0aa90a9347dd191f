"""One training loop for every recipe; blocks plug in as objects and callbacks, never as if/elif.

    trainer = Trainer(model, optimizer, train_step, loader, lr_scheduler=sched, amp=Amp(cfg.amp),
                      accumulator=GradAccumulator(3), ema=ModelEMA(model), eval_fn=evaluate,
                      output_dir="output/rec", dist_info=info, options=TrainerOptions(epochs=10))
    trainer.fit(resume_from="output/rec/checkpoints")   # or None

train_step(model, batch) -> {"loss": Tensor, **scalars}: forward + loss for one micro-batch; it runs
inside amp.autocast(). eval_fn(model) -> {metric: float}; it runs with EMA weights swapped in.

Order of one optimizer step: k micro-steps (backward of loss/k, DDP sync only on the last) ->
amp.step (unscale, skip on inf/nan, update scale) -> clear_grad -> lr_scheduler.step() (per optimizer
step, so accumulation does not stretch the schedule) -> ema.update -> callbacks.on_step_end.
A non-finite loss is not special-cased: its gradients are non-finite on every rank after the
all-reduce, so every rank skips the same step (no DDP hang) and it is counted.
A skipped step leaves the whole state as it was: BatchNorm running statistics (snapshotted at the
start of each accumulation window) are restored, EMA is not updated. `max_nonfinite_steps` skipped
steps in a row stop the run with NonFiniteError; `trainer.skipped_steps` counts them all. An epoch
in which every batch was unreadable (0 samples) raises DataError instead of "training" on nothing.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import paddle

from ..checkpoint import format as ckpt
from ..checkpoint.compare import check_compatible, optimizer_changes
from ..checkpoint.state import RNG, collect_state, restore_state
from .accumulate import GradAccumulator
from .amp import Amp
from .optim import PortableOptimizer
from ..data import DataError
from ..runtime.distributed import DistInfo, all_reduce_sum, average_over_ranks_, barrier, bn_stats, unwrap
from ..checkpoint.finite import FLOAT_DTYPES, first_nonfinite
from ..checkpoint.rundir import OutputLock
from ..config import to_dict
from .meters import StepTimer

logger = logging.getLogger(__name__)


class NonFiniteError(RuntimeError):
    """The loss/gradients stayed inf/nan for `max_nonfinite_steps` optimizer steps in a row."""


def float_buffers(model: paddle.nn.Layer) -> list:
    """Float state that the forward pass updates: buffers and non-trainable parameters (paddle keeps
    BatchNorm's running mean/variance as parameters with stop_gradient=True, not as buffers)."""
    layer = unwrap(model)
    found = list(layer.buffers()) + [p for p in layer.parameters() if p.stop_gradient]
    return [t for t in found if t is not None and t.dtype in FLOAT_DTYPES]


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


def scalar_metrics(metrics: dict) -> dict:
    """The flat part of an eval result (nested reports, e.g. per font, go to summary.json only)."""
    return {k: v for k, v in metrics.items() if not isinstance(v, dict)}


def _plain(v):
    """numpy / paddle scalars -> Python numbers (what a checkpoint and a log line hold)."""
    return v.item() if hasattr(v, "item") and not isinstance(v, (bool, int, float, str)) else v


def planned_steps(num_batches: int, accumulate_steps: int, epochs: int, max_steps: int = 0) -> int:
    """Optimizer steps of a run: epochs x ceil(batches / accumulate_steps) (a partial accumulation window
    at an epoch end is stepped), capped by max_steps (0 = no cap)."""
    per_epoch = max(1, math.ceil(num_batches / max(1, accumulate_steps)))
    return min(max_steps, epochs * per_epoch) if max_steps else epochs * per_epoch


class BestMetric:
    """The best evaluation so far, higher is better, with PaddleOCR's tie rule: an eval equal to the best
    so far replaces it, so `best` holds the latest of equal evals.

    main: the metric key (None or absent from an eval = not tracked). value: metrics[main] of the best eval
    (None before the first); metrics: its scalar metrics; epoch: its 1-based epoch.
    """

    def __init__(self, main: str | None):
        self.main = main
        self.value: float | None = None
        self.metrics: dict = {}
        self.epoch: int | None = None

    def update(self, metrics: dict, epoch: int) -> bool:
        """Record an eval of the weights of `epoch` (1-based); True when it is the new best."""
        if not self.main or self.main not in metrics:
            return False
        value = float(_plain(metrics[self.main]))
        if self.value is not None and value < self.value:
            return False
        self.value, self.epoch = value, int(epoch)
        self.metrics = {k: _plain(v) for k, v in scalar_metrics(metrics).items()}
        return True

    def state_dict(self) -> dict:
        return {"value": self.value, "metrics": dict(self.metrics), "epoch": self.epoch}

    def set_state_dict(self, state: dict) -> None:
        self.value, self.metrics, self.epoch = state["value"], dict(state["metrics"]), state["epoch"]

class EvalLog:
    """How an evaluation is written to the log, after the trainer's own `eval at epoch E, global_step S: ...`
    line. This default adds `best <main>: <value> (epoch E)`; formats.ppocr_logs.PPOCREvalLog writes PaddleOCR's
    `cur metric, ...` / `best metric, ..., best_epoch: E` lines instead."""

    def lines(self, metrics: dict, best: BestMetric) -> list[str]:
        return [] if best.value is None else [f"best {best.main}: {best.value} (epoch {best.epoch})"]

class _Callbacks:
    """The callbacks' states in a checkpoint (a list, by position)."""

    def __init__(self, callbacks: list):
        self.callbacks = callbacks

    def state_dict(self) -> list:
        return [cb.state_dict() for cb in self.callbacks]

    def set_state_dict(self, states: list) -> None:
        for cb, state in zip(self.callbacks, states):
            cb.set_state_dict(state)

@dataclass
class TrainerOptions:
    """When a Trainer trains, evaluates, saves and logs (counts are epochs or optimizer steps).

    epochs: epochs to train (1). max_steps: stop after this many optimizer steps (0 = no cap).
    log_every: optimizer steps between log lines (10).
    eval_every_epochs: evaluate at every this many epoch ends (1; 0 = never at epoch ends).
    eval_batch_step: PaddleOCR's [start, every]: also evaluate after optimizer step s when s > start and
        (s - start) % every == 0 (() = off).
    save_every_epochs: checkpoint at every this many epoch ends (1; 0 = never). save_every_steps: also every this
        many optimizer steps (0 = off). keep_last: step/epoch checkpoints kept (3). keep_every_epochs: every this
        many epochs the epoch-end checkpoint is tagged iter_epoch_N and never pruned (0 = off).
    main_metric: eval key that picks output_dir/checkpoints/best, higher is better (None = no best). PaddleOCR's
        tie rule: an eval equal to the best so far becomes the new best.
    max_nonfinite_steps: raise NonFiniteError after this many skipped (inf/nan) steps in a row (20; 0 = never).
    eval_log: the lines written after each evaluation (None = EvalLog(); PaddleOCR's `cur metric` /
        `best metric` lines: formats.ppocr_logs.PPOCREvalLog).
    """

    epochs: int = 1
    max_steps: int = 0
    log_every: int = 10
    eval_every_epochs: int = 1
    eval_batch_step: tuple = ()
    save_every_epochs: int = 1
    save_every_steps: int = 0
    keep_last: int = 3
    keep_every_epochs: int = 0
    main_metric: str | None = None
    max_nonfinite_steps: int = 20
    eval_log: EvalLog | None = None

    def __post_init__(self):
        self.log_every = max(1, int(self.log_every))
        self.eval_batch_step = tuple(self.eval_batch_step or ())
        self.eval_log = self.eval_log or EvalLog()

class Trainer:
    """Epoch/step loop with AMP, accumulation, EMA, LR schedule, logging, eval, checkpoints, resume.

    options: a TrainerOptions, when to evaluate, save and log (default TrainerOptions()). The LR scheduler steps
    once per optimizer step. `trainer.best` (BestMetric) tracks options.main_metric.
    skipped_steps (attribute): optimizer steps skipped for inf/nan gradients (checkpointed with AMP state).
    refused_saves (attribute): checkpoints not written because a tensor was inf/nan.
    total_steps (attribute): optimizer steps this run will take (planned_steps; max_steps caps it).
    eval_history (attribute): one row per evaluation, {"global_step", "epoch", **metrics}.
    """

    def __init__(self, model: paddle.nn.Layer, optimizer, train_step: Callable, train_loader, *,
                 lr_scheduler=None, amp: Amp | None = None, accumulator: GradAccumulator | None = None,
                 ema=None, callbacks: list | tuple = (), output_dir: str | None = None, eval_fn: Callable | None = None,
                 dist_info: DistInfo | None = None, batch_size_fn: Callable = default_batch_size, config: Any = None,
                 timer=None, scalar_writer=None, options: TrainerOptions | None = None,
                 state_objects: dict | None = None):
        self.model, self.optimizer, self.train_step, self.train_loader = model, optimizer, train_step, train_loader
        self.lr_scheduler, self.ema, self.callbacks = lr_scheduler, ema, list(callbacks)
        self.amp = amp or Amp()
        self.accumulator = accumulator or GradAccumulator(1)
        self.options = o = options or TrainerOptions()
        self.output_dir = Path(output_dir) if output_dir else None
        self.eval_fn, self.info = eval_fn, dist_info or DistInfo()
        self.batch_size_fn, self.config, self.scalar_writer, self.timer = batch_size_fn, config, scalar_writer, timer
        self.best = BestMetric(o.main_metric)
        self.state_objects = dict(state_objects or {})  # the caller's parts of every checkpoint (optional on resume)
        self.eval_history: list[dict] = []  # one row per evaluation: global_step, epoch, metrics
        # progress
        self.epoch = 0                 # current epoch (0-based)
        self.batch_in_epoch = 0        # micro-batches consumed in the current epoch
        self.global_step = 0           # optimizer steps taken
        self.samples_seen = 0
        self.last_metrics: dict = {}
        self.history: list[dict] = []  # one row per log line (for benchmarks)
        self.stop_training = False
        self._log_buf: dict[str, list] = {}
        self.nonfinite_in_a_row = 0
        self.refused_saves = 0
        self._buffers = float_buffers(model)
        self._bn_stats = bn_stats(model)  # averaged over the ranks after every optimizer step (DDP)
        self._buffer_snapshot: list | None = None
        self._saved_step: int | None = None  # global_step of the newest checkpoint written by this run

    @property
    def best_metric(self) -> float | None:
        """main_metric of the best evaluation so far (None before the first)."""
        return self.best.value

    @property
    def last_eval_step(self) -> int | None:
        """global_step of the last evaluation (None before the first)."""
        return self.eval_history[-1]["global_step"] if self.eval_history else None

    @property
    def total_steps(self) -> int | None:
        """Optimizer steps this run takes in all (max_steps caps it; None for a loader without len)."""
        try:
            n = len(self.train_loader)
        except TypeError:
            return self.options.max_steps or None
        return planned_steps(n, self.accumulator.steps, self.options.epochs, self.options.max_steps)

    @property
    def skipped_steps(self) -> int:
        """Optimizer steps skipped because a gradient was inf/nan (whole run, survives resume)."""
        return self.amp.scaler.skipped_steps

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

    # ------------------------------------------------------------------ state
    def checkpoint_objects(self) -> dict:
        """What a checkpoint holds, Fabric-style: name -> object that saves and loads its own state
        (state_dict / set_state_dict). Absent parts (no EMA, no LR scheduler) are left out."""
        objects = {"model": unwrap(self.model), "optimizer": PortableOptimizer(self.optimizer),
                   "amp": self.amp, "accumulator": self.accumulator, "lr": self.lr_scheduler, "ema": self.ema,
                   "best": self.best, "callbacks": _Callbacks(self.callbacks), "rng": RNG, **self.state_objects}
        return {k: v for k, v in objects.items() if v is not None}

    def state_dict(self) -> dict:
        progress = {"epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch, "global_step": self.global_step,
                    "samples_seen": self.samples_seen, "world_size": self.info.world_size}
        if self.config is not None:
            progress["config"] = to_dict(self.config)
        return {**collect_state(self.checkpoint_objects()), **progress}

    def load_state_dict(self, state: dict) -> None:
        current_cfg = None
        if self.config is not None:
            current_cfg = to_dict(self.config)
        check_compatible(state, unwrap(self.model).state_dict(), current_cfg)
        objects = self.checkpoint_objects()
        for name in self.state_objects:  # checkpoints written before the caller added a part lack it
            if state.get(name) is None:
                objects.pop(name, None)
        rng = objects.pop("rng")  # restored last: loading the others must not move the RNG streams
        changed = optimizer_changes(state, current_cfg)
        renamed = any(c.startswith("Optimizer.name:") for c in changed)
        if changed:
            logger.warning("resuming %s with another optimizer setting: %s%s", state.get("path"), "; ".join(changed),
                           " (its state, e.g. moments, is NOT restored: the new optimizer starts fresh)" if renamed
                           else " (the new values apply from here)")
        if renamed:
            objects.pop("optimizer")
        restore_state(objects, state)
        self.epoch, self.batch_in_epoch = state["epoch"], state["batch_in_epoch"]
        self.global_step, self.samples_seen = state["global_step"], state["samples_seen"]
        if state.get("world_size", 1) != self.info.world_size:
            logger.warning("resuming a %d-process checkpoint on %d processes: the data order changes",
                           state.get("world_size", 1), self.info.world_size)
        restore_state({"rng": rng}, state)

    def check_finite_state(self) -> None:
        """NonFiniteError on every rank when a weight or buffer (e.g. a BatchNorm variance) or the EMA shadow
        of any rank holds inf/nan: the run diverged, and no later checkpoint could be written (collective)."""
        bad = first_nonfinite(unwrap(self.model).state_dict())
        if bad is None and self.ema is not None:
            bad = first_nonfinite({"ema": self.ema.shadow})
        flag = 1.0 if bad else 0.0
        if self.info.world_size > 1:
            flag = all_reduce_sum(flag)
        if flag:
            kept = f"the last finite checkpoint ({ckpt.latest_tag(self.checkpoint_dir)}) stays latest" \
                if self.checkpoint_dir is not None and (self.checkpoint_dir / ckpt.LATEST).exists() else \
                "no checkpoint was written"
            raise NonFiniteError(f"training diverged: model tensor {bad or '(on another rank)'!r} holds inf/nan at "
                                 f"global_step {self.global_step}; {kept}; lower Optimizer.lr")

    def save(self, tag: str | None = None) -> Path | None:
        """Checkpoint on rank 0 (atomic). Returns the folder (None on other ranks / no output_dir).
        Called on every rank: a diverged state (inf/nan weights) stops the run first (check_finite_state)."""
        if self.checkpoint_dir is None:
            return None
        self.check_finite_state()
        if not self.info.is_main:
            self._saved_step = self.global_step  # as on rank 0: every rank takes the same (collective) save decisions
            return None
        tag = tag or f"step_{self.global_step:08d}"
        try:
            path = ckpt.save_checkpoint(self.checkpoint_dir, self.state_dict(), tag, keep_last=self.options.keep_last)
        except ckpt.NonFiniteStateError as exc:
            self.refused_saves += 1
            logger.error("%s", exc)
            return None
        self._saved_step = self.global_step
        logger.info("saved checkpoint %s", path)
        return path

    def resume(self, path) -> None:
        state = ckpt.load_checkpoint(path)
        self.load_state_dict(state)
        self._saved_step = self.global_step
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
        epoch = self.epoch + (1 if self.batch_in_epoch else 0)  # 1-based epoch of these weights (PaddleOCR's)
        self.eval_history.append({"global_step": self.global_step, "epoch": self.epoch, **metrics})
        line = ", ".join(f"{k}: {v:.6f}" if isinstance(v, float) else f"{k}: {v}"
                         for k, v in scalar_metrics(metrics).items())  # nested reports (per font) go to summary.json
        logger.info("eval at epoch %d, global_step %d: %s", epoch, self.global_step, line)
        if self.scalar_writer is not None and self.info.is_main:
            for k, v in metrics.items():
                if isinstance(v, (int, float)):
                    self.scalar_writer.add_scalar(f"eval/{k}", float(v), self.global_step)
        if self.best.update(metrics, epoch):
            self.save("best")
        for msg in self.options.eval_log.lines(metrics, self.best):
            logger.info(msg)
        self._call("on_eval_end", metrics)
        return metrics

    def eval_due_by_step(self) -> bool:
        """PaddleOCR's rule for eval_batch_step [start, every] after optimizer step global_step."""
        if len(self.options.eval_batch_step) != 2 or self.options.eval_batch_step[1] <= 0:
            return False
        start, every = self.options.eval_batch_step
        return self.global_step > start and (self.global_step - start) % every == 0

    def _log(self) -> None:
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
            msg = self.timer.format_line(self.epoch + 1, self.options.epochs, self.global_step, metrics)
        else:
            msg = ", ".join(f"{k}: {v}" for k, v in row.items())
        self.history.append(row)
        logger.info(msg)
        if self.scalar_writer is not None and self.info.is_main:
            for k, v in row.items():
                if isinstance(v, (int, float)) and k not in ("epoch", "global_step", "time"):
                    self.scalar_writer.add_scalar(f"train/{k}", float(v), self.global_step)

    def _snapshot_buffers(self) -> None:
        """Copy BN statistics at the start of an accumulation window (restored if the step is skipped)."""
        if self._buffers:
            self._buffer_snapshot = [b.clone() for b in self._buffers]

    def _restore_buffers(self) -> None:
        if self._buffer_snapshot is not None:
            for buf, saved in zip(self._buffers, self._buffer_snapshot):
                paddle.assign(saved, output=buf)

    def _optimizer_step(self) -> None:
        stepped = self.amp.step(self.optimizer)
        self.optimizer.clear_grad()
        if self.lr_scheduler is not None:
            self.lr_scheduler.step()
        if stepped:
            self.nonfinite_in_a_row = 0
            # DDP: every rank's BN statistics become their mean, at the same steps in every run (exact resume); the
            # EMA of identical statistics stays identical, evals and saves see one model
            average_over_ranks_(self._bn_stats)
            if self.ema is not None:
                self.ema.update(self.model, self.global_step)  # the warmup reads the trainer step
        else:  # the forward passes of this window updated BN statistics with inf/nan: undo them
            self._restore_buffers()
            self.nonfinite_in_a_row += 1
            if self.options.max_nonfinite_steps and self.nonfinite_in_a_row >= self.options.max_nonfinite_steps:
                raise NonFiniteError(
                    f"loss/gradients were inf or nan for {self.nonfinite_in_a_row} optimizer steps in a row "
                    f"(global_step {self.global_step}, {self.skipped_steps} skipped in total): training diverged; "
                    f"lower Optimizer.lr or check the data (limit: Global.max_nonfinite_steps)")
        self._buffer_snapshot = None
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
                               "(use paddle_recipes.data.reproducible.build_batch_sampler)")
        try:
            n_batches = len(loader)
        except TypeError:
            n_batches = None
        self.model.train()
        self._call("on_epoch_start")
        if self.timer is not None:
            self.timer.reader_start()
        epoch_batches = epoch_samples = 0
        for batch in loader:
            if self.timer is not None:
                self.timer.reader_done()
            if acc.micro_index % acc.steps == 0:
                self._snapshot_buffers()
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
            epoch_batches, epoch_samples = epoch_batches + 1, epoch_samples + bs
            stepped = False
            if acc.is_boundary or (last_in_epoch and acc.flush(self.optimizer)):
                self._optimizer_step()
                stepped = True
            if self.timer is not None:
                self.timer.batch_done(bs)
            if stepped:
                if self.global_step % self.options.log_every == 0:
                    self._log()
                    self.check_finite_state()  # a diverged run stops here, not only at its next save
                if self.options.save_every_steps and self.global_step % self.options.save_every_steps == 0:
                    self.save()
                if self.eval_fn is not None and self.eval_due_by_step():
                    self.evaluate()
                if self.options.max_steps and self.global_step >= self.options.max_steps:
                    self.stop_training = True
            if self.stop_training:
                break
            if self.timer is not None:
                self.timer.reader_start()
        self._check_epoch_had_data(epoch_batches, epoch_samples)

    def _check_epoch_had_data(self, batches: int, samples: int) -> None:
        """DataError when every batch of this epoch was unreadable (summed over ranks)."""
        if not batches:
            return
        total = int(all_reduce_sum(float(samples))) if self.info.world_size > 1 else samples
        if total == 0:
            raise DataError(f"epoch {self.epoch + 1}: every one of {batches} batches was unreadable "
                            f"(0 samples trained); see the skipped-sample warnings above")

    def fit(self, resume_from=None) -> dict:
        """Train (optionally resuming from a checkpoint folder or root); returns the last eval metrics."""
        lock = None
        if self.checkpoint_dir is not None and self.info.is_main:
            lock = OutputLock(self.output_dir).acquire()  # two runs never write one dir
            ckpt.clean_stale(self.checkpoint_dir)
        try:
            return self._fit(resume_from)
        finally:
            if lock is not None:
                lock.release()

    def _fit(self, resume_from) -> dict:
        if resume_from:
            self.resume(resume_from)
        o = self.options
        if self.timer is None:
            try:
                total = len(self.train_loader) * o.epochs
                if o.max_steps:
                    total = min(total, o.max_steps * self.accumulator.steps)
            except TypeError:
                total = None
            self.timer = StepTimer(total_steps=total, window=max(o.log_every * self.accumulator.steps, 1))
            self.timer.steps = self.epoch * (total // o.epochs if total else 0) + self.batch_in_epoch
        self._call("on_fit_start")
        while self.epoch < o.epochs and not self.stop_training:
            self.train_one_epoch()
            if self.stop_training and self.batch_in_epoch < (len(self.train_loader) if hasattr(self.train_loader, "__len__") else 0):
                break  # max_steps reached mid-epoch: keep the position for an exact resume
            finished_epoch = self.epoch
            self.epoch += 1
            self.batch_in_epoch = 0
            self._call("on_epoch_end")
            if (self.eval_fn is not None and o.eval_every_epochs and (finished_epoch + 1) % o.eval_every_epochs == 0
                    and self.last_eval_step != self.global_step):  # not again after a step eval of the same weights
                self.evaluate()
            if o.keep_every_epochs and (finished_epoch + 1) % o.keep_every_epochs == 0:
                self.save(f"{ckpt.KEEP_PREFIX}{finished_epoch + 1}")  # never pruned; also what `latest` names
            elif o.save_every_epochs and (finished_epoch + 1) % o.save_every_epochs == 0:
                self.save()
            barrier()
        checkpointing = o.save_every_epochs or o.save_every_steps or self._saved_step is not None
        if checkpointing and self._saved_step != self.global_step and self.global_step > 0:
            self.save()  # `latest` names the newest training state (not an older `best`, not the last epoch end)
        if self.skipped_steps:
            logger.warning("%d optimizer steps were skipped for inf/nan gradients", self.skipped_steps)
        self._call("on_fit_end")
        return self.last_metrics
