"""One way to build a training run: `build_training(cfg, ...) -> Run`, for a config of the shared sections
(train/config.py: Global, Optimizer, AMP, EMA, Train; recipes subclass TrainingConfig).

    @dataclass
    class MyConfig(TrainingConfig):          # Global, Optimizer, AMP, EMA, Train come from here
        Model: MyModelConfig = field(default_factory=MyModelConfig)

    run = build_training(cfg, model, train_set, step=train_step, info=info, eval_fn=evaluate,
                         collate=collate_fn, main_metric="acc")
    summary = run.fit()                       # trains, applies the final-eval rule, writes summary.json

build_training owns, in this order: the distributed batch sampler and loader (or a loader you pass),
total optimizer steps, optimizer + LR schedule (optim.build_optimizer; Optimizer.warmup_epochs resolved
to steps here), Amp.prepare, EMA, Global.to_static (static_train), DDP wrapping,
the scalar writer, the resume source (Global.resume) and the Trainer.

Final-eval rule of Run.fit(): after training, evaluate once more only when evaluation or saving is on
(eval_every_epochs > 0, eval_batch_step set or save_every_epochs > 0) and the last evaluation is not of the final weights.
With both 0 there is no final eval and no `best` checkpoint.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import paddle

from ..data.reproducible import build_batch_sampler
from ..runtime import distributed as dist_utils
from .accumulate import GradAccumulator
from .amp import Amp
from ..checkpoint.resume import resume_from
from ..config import ConfigError, to_dict
from ..kernels.affine import use_affine_kernel
from ..kernels.depthwise import use_depthwise_kernel
from ..kernels.build import KernelBuildError
from ..data import build_loader
from .config import GlobalConfig, TrainingConfig
from .ema import build_ema
from ..weights.freeze_bn import freeze_bn_stats, fresh_bns
from ..nn.sync_bn import use_sync_bn
from .meters import ScalarWriter
from .optim import build_optimizer, resolve_warmup
from .to_static import apply_to_static
from .trainer import EvalLog, Trainer, TrainerOptions, default_batch_size, planned_steps

logger = logging.getLogger(__name__)
def trainer_options(g: GlobalConfig, main_metric: str | None = None, eval_log: EvalLog | None = None) -> TrainerOptions:
    """The Trainer's cadence (eval, saving, logging, stop) from a recipe's Global section."""
    return TrainerOptions(epochs=g.epochs, max_steps=g.max_steps, log_every=g.log_every,
                          eval_every_epochs=g.eval_every_epochs, eval_batch_step=tuple(g.eval_batch_step),
                          save_every_epochs=g.save_every_epochs, save_every_steps=g.save_every_steps,
                          keep_last=g.keep_last, keep_every_epochs=g.keep_every_epochs, main_metric=main_metric,
                          max_nonfinite_steps=g.max_nonfinite_steps, eval_log=eval_log)


def scalar_writer(g: GlobalConfig, info) -> ScalarWriter | None:
    """The scalar writer of a run (rank 0, when Global.use_visualdl); warns once when VisualDL is missing."""
    if not g.use_visualdl or not info.is_main:
        return None
    if importlib.util.find_spec("visualdl") is None:
        logger.warning("Global.use_visualdl: visualdl is not installed (pip install 'paddle-recipes[vdl]'); "
                       "writing JSONL scalars only")
    return ScalarWriter(g.vdl_dir or str(Path(g.output_dir) / "vdl"))


@dataclass
class Run:
    """Everything build_training made. fit() trains and writes output_dir/summary.json (rank 0)."""
    cfg: Any
    info: Any
    trainer: Trainer
    amp: Amp
    ema: Any
    writer: ScalarWriter | None
    resume: str | None
    steps_per_epoch: int
    output_dir: Path
    skipped: Callable[[], dict] | None = None

    @property
    def model(self):
        return self.trainer.model

    @property
    def total_steps(self) -> int:
        """Optimizer steps of the whole run (the LR schedule's length): Trainer.total_steps."""
        return self.trainer.total_steps

    def needs_final_eval(self) -> bool:
        g, t = self.cfg.Global, self.trainer
        enabled = bool(g.eval_every_epochs or g.save_every_epochs or g.eval_batch_step)
        return t.eval_fn is not None and enabled and t.last_eval_step != t.global_step

    def fit(self, extra: dict | None = None) -> dict:
        """Train, evaluate once more if the final-eval rule says so, write summary.json; returns the summary."""
        t = self.trainer
        t0 = time.time()
        metrics = t.fit(resume_from=self.resume)
        if self.needs_final_eval():
            metrics = t.evaluate()
        train_time = time.time() - t0
        if self.writer is not None:
            self.writer.close()
        summary = {"final_eval": dict(metrics or {}), "global_step": t.global_step, "epoch": t.epoch,
                   "train_time_s": round(train_time, 1), "world_size": self.info.world_size,
                   "resumed_from": self.resume, "amp": self.amp.describe(), "ema": self.ema is not None,
                   "main_metric": t.options.main_metric, "best_metric": t.best_metric,
                   "skipped_steps": t.skipped_steps, "refused_saves": t.refused_saves,
                   "skipped": self.skipped() if self.skipped is not None else {},
                   **(extra or {}), "eval_history": t.eval_history, "history": t.history, "config": to_dict(self.cfg)}
        if self.info.is_main:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            (self.output_dir / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
            logger.info("done in %.1f s: %s", train_time, summary["final_eval"])
        return summary


def build_training(cfg: TrainingConfig, model, train_set=None, *, step: Callable, info, eval_fn: Callable | None = None,
                   collate: Callable | None = None, loader=None, callbacks=(), main_metric: str | None = None,
                   batch_size_fn: Callable = default_batch_size, output_dir: str | None = None,
                   skipped: Callable[[], dict] | None = None, eval_autocast: bool = False,
                   eval_log: EvalLog | None = None, state_objects: dict | None = None,
                   freeze_bn: bool | None = None) -> Run:
    """Build the loader, optimizer + LR, AMP, EMA, DDP wrapper, scalar writer, resume source and Trainer.

    cfg: a TrainingConfig (train/config.py; EMA.enable=false for none; Train.loader when train_set is given). model: the unwrapped model (init weights already loaded).
    train_set: a paddle Dataset, batched by a DistributedBatchSampler (Train.loader); or pass `loader`
    (anything with __len__ and __iter__, e.g. a task-sampling loader) instead. step(model, batch) ->
    {"loss": Tensor, **scalars}. eval_fn(model) -> {metric: float} (runs with EMA weights; under
    amp.autocast() when eval_autocast, for O2 fp16 weights). output_dir: "" = Global.output_dir.
    skipped() -> {split: {reason: count}} for summary.json (collective: called on every rank).
    eval_log: the lines written after each evaluation (trainer.EvalLog; PaddleOCR's: formats.ppocr_logs.PPOCREvalLog).
    state_objects: name -> object (state_dict / set_state_dict) the recipe adds to every checkpoint.
    freeze_bn: BatchNorms run in eval mode in training (weights.freeze_bn); None = Global.freeze_bn_stats is True (auto
    is resolved by the starting-weights policy, weights.policy.StartPlan.freeze_bn_stats).
    """
    g = cfg.Global
    acc_steps = cfg.Train.accumulate_steps
    if loader is None:
        lc = cfg.Train.loader
        sampler = build_batch_sampler(train_set, lc.batch_size_per_card, info, shuffle=lc.shuffle, drop_last=lc.drop_last)
        loader = build_loader(train_set, sampler, lc, collate_fn=collate, name="Train.loader")
        if len(loader) == 0:
            raise ConfigError(f"Train: {len(train_set)} samples is less than one batch of "
                              f"{lc.batch_size_per_card} x {info.world_size} processes")
    steps_per_epoch = planned_steps(len(loader), acc_steps, 1)
    total = planned_steps(len(loader), acc_steps, g.epochs, g.max_steps)
    opt_cfg = resolve_warmup(cfg.Optimizer, steps_per_epoch)
    if opt_cfg is not cfg.Optimizer and info.is_main:
        logger.info("Optimizer.warmup_epochs %g = %d optimizer steps (%d per epoch)", cfg.Optimizer.warmup_epochs,
                    opt_cfg.warmup_steps, steps_per_epoch)
    optimizer, lr_scheduler = build_optimizer(opt_cfg, model.parameters(), total_steps=total)
    amp = Amp(cfg.AMP)
    model, optimizer = amp.prepare(model, optimizer)
    ema = build_ema(cfg.EMA, model)
    if (g.freeze_bn_stats is True) if freeze_bn is None else freeze_bn:
        frozen = freeze_bn_stats(model)
        fresh = fresh_bns(model)
        if info.is_main:
            logger.info("Global.freeze_bn_stats: %d BatchNorm layers run in eval mode in training (running statistics "
                        "used and kept; scale / shift still learn)%s", frozen,
                        f"; {len(fresh)} not in the init weights estimate theirs ({', '.join(fresh[:3])}"
                        f"{' ...' if len(fresh) > 3 else ''})" if fresh else "")
    if g.use_sync_bn:
        apply_sync_bn(model, info, g)
    if g.cpu_depthwise_kernel:  # first: a depthwise conv with a bias then takes both
        apply_cpu_kernel(model, info, "cpu_depthwise_kernel", use_depthwise_kernel, "depthwise conv layers",
                         "paddle's depthwise conv")
    if g.cpu_affine_kernel:
        apply_cpu_kernel(model, info, "cpu_affine_kernel", use_affine_kernel,
                         "LearnableAffineBlock and conv bias layers", "paddle's multiply and add")
    if g.to_static:  # inside DDP, as PaddleOCR applies it (EMA keeps weights only)
        model = apply_to_static(model)
    model = dist_utils.wrap_model(model, info)
    writer = scalar_writer(g, info)
    out = Path(output_dir or g.output_dir)
    run_eval = None
    if eval_fn is not None:
        def run_eval(m):
            if eval_autocast:
                with amp.autocast():
                    return eval_fn(m)
            return eval_fn(m)
    trainer = Trainer(model, optimizer, step, loader, lr_scheduler=lr_scheduler, amp=amp,
                      accumulator=GradAccumulator(acc_steps), ema=ema, callbacks=list(callbacks), output_dir=str(out),
                      eval_fn=run_eval, dist_info=info, config=cfg, batch_size_fn=batch_size_fn, scalar_writer=writer,
                      options=trainer_options(g, main_metric, eval_log), state_objects=state_objects)
    return Run(cfg=cfg, info=info, trainer=trainer, amp=amp, ema=ema, writer=writer, resume=resume_from(g, str(out)),
               steps_per_epoch=steps_per_epoch, output_dir=out, skipped=skipped)


def apply_sync_bn(model, info, g) -> int:
    """Global.use_sync_bn: every BatchNorm of `model` normalises by the global batch's statistics in training
    (nn.sync_bn.use_sync_bn; in place, names and weights kept). Logged; nothing on one process. Returns the BNs
    switched."""
    if info.world_size <= 1:
        if info.is_main:
            logger.info("Global.use_sync_bn: one process, nothing to synchronise (BatchNorm unchanged)")
        return 0
    if g.to_static and not str(paddle.get_device()).startswith("gpu"):
        raise ConfigError("Global.use_sync_bn with Global.to_static: the CPU cross-rank BatchNorm runs in dygraph "
                          "only; turn one of them off")
    n = use_sync_bn(model)
    if info.is_main:
        how = ("paddle's sync_batch_norm" if str(paddle.get_device()).startswith("gpu")
               else "cross-rank BN over GLOO: 2 all-reduces of 2-3 x channels numbers per layer and step")
        logger.info("Global.use_sync_bn: %d BatchNorm layers normalise by the statistics of the global batch "
                    "(%d processes; %s)", n, info.world_size, how)
    return n


def apply_cpu_kernel(model, info, key: str, use_fn, layers: str, kept: str) -> int:
    """Global.<key> (cpu_depthwise_kernel, cpu_affine_kernel): use_fn(model) switches the eligible layers to our
    compiled CPU ops (on CPU only; elsewhere `kept` stays); a failed build is one ConfigError line. Returns the
    number of layers switched."""
    device = paddle.get_device()
    if not device.startswith("cpu"):
        if info.is_main:
            logger.info("Global.%s: a CPU kernel; this run is on %s, %s is kept", key, device, kept)
        return 0
    try:
        n = use_fn(model)
    except KernelBuildError as e:
        raise ConfigError(f"Global.{key}: {e}; install a C++ compiler (g++) or set Global.{key}: false") from None
    if info.is_main:
        logger.info("Global.%s: %d %s train with our CPU kernel (evaluation and export keep paddle's)", key, n, layers)
    return n


def count_params(model) -> int:
    """Number of parameters of a (possibly DDP-wrapped) model."""
    return int(sum(int(np.prod(p.shape)) for p in dist_utils.unwrap(model).parameters()))
