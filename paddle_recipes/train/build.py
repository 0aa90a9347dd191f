"""One way to build a training run: shared config sections (Global, Train, Predict, Export, ...) +
`build_training(...) -> Run`.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Literal, Optional, Union

import numpy as np
import paddle

from ..runtime import distributed as dist_utils
from .accumulate import GradAccumulator
from .amp import Amp, AmpConfig
from ..checkpoint.resume import resume_from
from ..config import ConfigError, check_image_shape, check_number, to_dict
from ..kernels.affine import use_affine_kernel
from ..kernels.depthwise import use_depthwise_kernel
from ..kernels.build import KernelBuildError
from ..data import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, LoaderConfig, build_loader
from .ema import EmaConfig, build_ema
from ..weights.freeze_bn import freeze_bn_stats, fresh_bns
from .meters import ScalarWriter
from .optim import OptimizerConfig, build_optimizer, resolve_warmup
from .to_static import apply_to_static
from .trainer import EvalLog, Trainer, TrainerOptions, default_batch_size, planned_steps

logger = logging.getLogger(__name__)
DEVICE_KINDS = ("cpu", "gpu", "xpu", "npu", "mlu", "dcu")


@dataclass
class GlobalConfig:
    """The run settings every recipe's `Global:` section shares (recipes subclass it to add their own).

    seed: base seed (each rank adds its rank). device: None = this rank's GPU if any, else CPU.
    epochs; max_steps: stop after this many optimizer steps (0 = no cap). output_dir: logs, config,
    checkpoints, exports, summary.json. log_every: optimizer steps between log lines.
    eval_every_epochs / save_every_epochs: 0 disables (both 0: no final eval, no `best`). keep_last:
    checkpoints kept. resume: checkpoint folder/root to continue training from ("auto" = output_dir/checkpoints
    when it exists); train mode only. checkpoints (PaddleOCR's key): in train mode, the checkpoint to continue
    from, like resume (both set to different paths is an error); in eval/predict/export, weights.
    pretrained_model: init weights before training (PaddleOCR meaning): a .pdparams file, a path prefix
    without extension, or a checkpoint folder; loaded strictly. weights: in train mode, init weights like
    pretrained_model (setting both is an error there). The weights of eval/predict/export: the first set of
    weights, checkpoints, pretrained_model, else output_dir/checkpoints `best`, else `latest` (docs/weights.md).
    null = "" for all three. use_ema_weights: prefer the EMA weights of a checkpoint.
    calibrate_bn_batches: when the init weights are a PaddleOCR inference model (un-fused BNs), batches per
    process (of Train.loader.batch_size_per_card images) on which those BNs' statistics are calibrated before
    the first step (bn_calibration; data order unchanged); 0 = off. Default 8.
    use_visualdl: write scalars (JSONL, plus VisualDL when installed) to vdl_dir ("" = output_dir/vdl).
    save_every_steps: also checkpoint every this many optimizer steps (0 = only at epoch ends).
    max_nonfinite_steps: stop with NonFiniteError after this many optimizer steps in a row skipped for
    inf/nan gradients (0 = never stop). Every number is checked when the config is built.
    to_static (PaddleOCR's key): train the model's forward as a static graph (paddle.jit.to_static, one program
    per training batch shape; same math: docs/cards/to_static.md).
    cpu_depthwise_kernel: on CPU, the training forward's depthwise convolutions run our compiled kernel
    (depthwise_kernel; built once with the system C++ compiler; same math to float32 rounding; evaluation and
    export keep paddle's conv; no effect on other devices). Default false (docs/cards/depthwise_kernel.md).
    cpu_affine_kernel: on CPU, the training forward's LearnableAffineBlocks (scale * x + bias) and conv bias adds
    run our compiled ops (affine_kernel; the forward is paddle's bit for bit, parameter gradients summed in
    double; evaluation and export keep paddle's ops; no effect on other devices). Default false
    (docs/cards/affine_kernel.md).
    fuse_for_inference: eval / predict (and the OCR system) run re-parameterizable blocks fused into their deploy
    convs (the same outputs up to float32 rounding; false = the training form).
    finetune_released: auto | true | false (default auto = true exactly when the init weights are a PaddleOCR /
    PaddleX inference model, or a checkpoint of such a run): train the released form: rep blocks fused (one conv
    each, learning-rate multipliers kept; nothing for calibrate_bn_batches to do), training-only branches the
    files lack not run nor trained (PP-OCRv4/v5 rec: CTC loss only, the CTC neck's use_guide off). Checkpoints
    keep that form; eval / predict / export / pretrained_model build it from their keys
    (docs/cards/finetune_released.md).
    freeze_bn_stats: auto | true | false: BatchNorm layers run in eval mode in training: their running statistics
    are used and kept, their scale / shift still learn (docs/cards/freeze_bn_stats.md). Default auto = on exactly
    when a recipe trains the released form (finetune_released on); build_training alone reads auto as false.
    PaddleOCR's cadence keys: eval_batch_step [start, every]: also evaluate after optimizer step s when
    s > start and (s - start) % every == 0 ([] = off; an integer n means [0, n]; optimizer steps = PaddleOCR's
    iterations without accumulation). keep_every_epochs: every N epochs the checkpoint is the permanent
    iter_epoch_N, never pruned (PaddleOCR's save_epoch_step; 0 = off).
    (PaddleOCR's print_batch_step is log_every, save_epoch_step is keep_every_epochs: the -c translator maps them.)
    """

    seed: int = 42
    device: Optional[str] = None
    epochs: int = 10
    max_steps: int = 0
    output_dir: str = "output/run"
    log_every: int = 20
    eval_every_epochs: int = 1
    save_every_epochs: int = 1
    eval_batch_step: Union[List[int], int] = field(default_factory=list)
    keep_every_epochs: int = 0
    keep_last: int = 2
    resume: str = ""
    checkpoints: Optional[str] = ""
    pretrained_model: Optional[str] = ""
    weights: Optional[str] = ""
    use_ema_weights: bool = True
    calibrate_bn_batches: int = 8
    use_visualdl: bool = False
    vdl_dir: str = ""
    save_every_steps: int = 0
    max_nonfinite_steps: int = 20
    to_static: bool = False
    cpu_depthwise_kernel: bool = False
    cpu_affine_kernel: bool = False
    fuse_for_inference: bool = True
    finetune_released: Union[bool, Literal["auto"]] = "auto"
    freeze_bn_stats: Union[bool, Literal["auto"]] = "auto"

    def __post_init__(self):
        check_number("Global.epochs", self.epochs, low=1)
        for key in ("max_steps", "eval_every_epochs", "save_every_epochs", "save_every_steps", "keep_last",
                    "max_nonfinite_steps", "calibrate_bn_batches"):
            check_number(f"Global.{key}", getattr(self, key), low=0)
        check_number("Global.log_every", self.log_every, low=1)
        if not str(self.output_dir).strip():
            raise ConfigError("Global.output_dir is empty: logs and checkpoints need a folder")
        if hasattr(self, "image_shape"):  # recipes with an image input add Global.image_shape
            check_image_shape("Global.image_shape", self.image_shape)
        if self.device:
            kind, sep, index = str(self.device).partition(":")
            if kind not in DEVICE_KINDS or (index and not index.isdigit()) or (sep and not index):
                raise ConfigError(f"Global.device {self.device!r} is not a device: use one of "
                                  f"{', '.join(DEVICE_KINDS)} (optionally with ':N', e.g. gpu:1)")
        self.eval_batch_step = parse_eval_batch_step(self.eval_batch_step)
        check_number("Global.keep_every_epochs", self.keep_every_epochs, low=0)
        self.pretrained_model, self.weights = self.pretrained_model or "", self.weights or ""  # null = unset
        self.checkpoints = self.checkpoints or ""
        if self.freeze_bn_stats not in (True, False, "auto"):
            raise ConfigError(f"Global.freeze_bn_stats: {self.freeze_bn_stats!r} is not one of auto, true, false")


def parse_eval_batch_step(value) -> list[int]:
    """Global.eval_batch_step -> [] (off) or [start, every]: an integer n means [0, n]; every >= 1, start >= 0."""
    if isinstance(value, bool):
        raise ConfigError(f"Global.eval_batch_step: expected [start, every] or an integer, got {value!r}")
    if isinstance(value, int):
        value = [0, value]
    value = list(value or [])
    if value and (len(value) != 2 or value[0] < 0 or value[1] < 1):
        raise ConfigError(f"Global.eval_batch_step: expected [] or [start >= 0, every >= 1] (optimizer steps), "
                          f"got {value!r}")
    return value


def trainer_options(g: GlobalConfig, main_metric: str | None = None, eval_log: EvalLog | None = None) -> TrainerOptions:
    """The Trainer's cadence (eval, saving, logging, stop) from a recipe's Global section."""
    return TrainerOptions(epochs=g.epochs, max_steps=g.max_steps, log_every=g.log_every,
                          eval_every_epochs=g.eval_every_epochs, eval_batch_step=tuple(g.eval_batch_step),
                          save_every_epochs=g.save_every_epochs, save_every_steps=g.save_every_steps,
                          keep_last=g.keep_last, keep_every_epochs=g.keep_every_epochs, main_metric=main_metric,
                          max_nonfinite_steps=g.max_nonfinite_steps, eval_log=eval_log)


@dataclass
class BatchLoaderConfig(LoaderConfig):
    """LoaderConfig + batch_size_per_card: samples per batch per process."""
    batch_size_per_card: int = 64


@dataclass
class TrainLoaderConfig(BatchLoaderConfig):
    """BatchLoaderConfig + shuffle (per epoch, seeded) and drop_last (incomplete last batch)."""
    shuffle: bool = True
    drop_last: bool = True


@dataclass
class EvalLoaderConfig(BatchLoaderConfig):
    """BatchLoaderConfig for evaluation: every sample is scored once, in order, on one rank
    (shard rank::world_size). shuffle/drop_last exist for PaddleOCR configs and must stay false."""
    shuffle: bool = False
    drop_last: bool = False

    def __post_init__(self):
        super().__post_init__()  # batch size >= 1, workers >= 0, ...
        if self.shuffle or self.drop_last:
            raise ConfigError("Eval.loader.shuffle/drop_last must be false: evaluation scores every sample once")


@dataclass
class TrainSection:
    """loader: the train DataLoader; accumulate_steps: micro-batches per optimizer step."""
    loader: TrainLoaderConfig = field(default_factory=TrainLoaderConfig)
    accumulate_steps: int = 1

    def __post_init__(self):
        if self.accumulate_steps < 1:
            raise ConfigError(f"Train.accumulate_steps must be >= 1, got {self.accumulate_steps}")


@dataclass
class PredictConfig:
    """images: an image file or folder. batch_size: images per forward pass. max_image_pixels (width x height, from
    the header; default 8e7) / max_image_bytes (default 256 MiB): larger images are skipped unread (0 = no limit;
    data.images)."""
    images: str = ""
    batch_size: int = 16
    max_image_pixels: int = MAX_IMAGE_PIXELS
    max_image_bytes: int = MAX_IMAGE_BYTES


@dataclass
class ExportConfig:
    """out_prefix: "" = output_dir/inference/model. parity_batch: samples compared dygraph vs Paddle Inference.
    safetensors: also write <export folder>/model.safetensors, the loaded (EMA) weights before any deploy
    fusion, in the safetensors format (no pickle; Global.weights / pretrained_model read it)."""
    out_prefix: str = ""
    parity_batch: int = 4
    safetensors: bool = False


@dataclass
class TrainingConfig:
    """The sections build_training reads. Recipes subclass it (and may narrow a section's type)."""
    Global: GlobalConfig = field(default_factory=GlobalConfig)
    Optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    AMP: AmpConfig = field(default_factory=AmpConfig)
    EMA: EmaConfig = field(default_factory=EmaConfig)
    Train: TrainSection = field(default_factory=TrainSection)


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


def build_training(cfg, model, train_set=None, *, step: Callable, info, eval_fn: Callable | None = None,
                   collate: Callable | None = None, loader=None, callbacks=(), main_metric: str | None = None,
                   batch_size_fn: Callable = default_batch_size, output_dir: str | None = None,
                   skipped: Callable[[], dict] | None = None, eval_autocast: bool = False,
                   eval_log: EvalLog | None = None) -> Run:
    """Build the loader, optimizer + LR, AMP, EMA, DDP wrapper, scalar writer, resume source and Trainer.

    cfg: a TrainingConfig-shaped object (Global, Optimizer, AMP, Train.accumulate_steps; EMA optional;
    Train.loader when train_set is given). model: the unwrapped model (init weights already loaded).
    train_set: a paddle Dataset, batched by a DistributedBatchSampler (Train.loader); or pass `loader`
    (anything with __len__ and __iter__, e.g. a task-sampling loader) instead. step(model, batch) ->
    {"loss": Tensor, **scalars}. eval_fn(model) -> {metric: float} (runs with EMA weights; under
    amp.autocast() when eval_autocast, for O2 fp16 weights). output_dir: "" = Global.output_dir.
    skipped() -> {split: {reason: count}} for summary.json (collective: called on every rank).
    eval_log: the lines written after each evaluation (trainer.EvalLog; PaddleOCR's: formats.ppocr_logs.PPOCREvalLog).
    """
    g = cfg.Global
    acc_steps = cfg.Train.accumulate_steps
    if loader is None:
        lc = cfg.Train.loader
        sampler = dist_utils.build_batch_sampler(train_set, lc.batch_size_per_card, info, shuffle=lc.shuffle,
                                                 drop_last=lc.drop_last)
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
    ema_cfg = getattr(cfg, "EMA", None)
    ema = build_ema(ema_cfg, model) if ema_cfg is not None else None
    if getattr(g, "freeze_bn_stats", False) is True:  # "auto" is resolved by the recipe (Recipe.init_weights)
        frozen = freeze_bn_stats(model)
        fresh = fresh_bns(model)
        if info.is_main:
            logger.info("Global.freeze_bn_stats: %d BatchNorm layers run in eval mode in training (running statistics "
                        "used and kept; scale / shift still learn)%s", frozen,
                        f"; {len(fresh)} not in the init weights estimate theirs ({', '.join(fresh[:3])}"
                        f"{' ...' if len(fresh) > 3 else ''})" if fresh else "")
    if getattr(g, "cpu_depthwise_kernel", False):  # first: a depthwise conv with a bias then takes both
        apply_cpu_kernel(model, info, "cpu_depthwise_kernel", use_depthwise_kernel, "depthwise conv layers",
                         "paddle's depthwise conv")
    if getattr(g, "cpu_affine_kernel", False):
        apply_cpu_kernel(model, info, "cpu_affine_kernel", use_affine_kernel,
                         "LearnableAffineBlock and conv bias layers", "paddle's multiply and add")
    if getattr(g, "to_static", False):  # inside DDP, as PaddleOCR applies it (EMA keeps weights only)
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
                      options=trainer_options(g, main_metric, eval_log))
    return Run(cfg=cfg, info=info, trainer=trainer, amp=amp, ema=ema, writer=writer, resume=resume_from(g, str(out)),
               steps_per_epoch=steps_per_epoch, output_dir=out, skipped=skipped)


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
