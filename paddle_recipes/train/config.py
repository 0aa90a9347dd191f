"""The typed sections every recipe's config shares (YAML -> dataclasses, see paddle_recipes.config): Global,
the Train / Eval loaders, Predict and TrainingConfig, the sections build_training reads. Recipes subclass
them (tasks/<name>/config.py); the builder is train/build.py."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import List, Literal, Optional, Union

from ..config import ConfigError, check_image_shape, check_name, check_number
from ..data import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, LoaderConfig

OPTIMIZERS = ("adamw", "adam", "sgd", "momentum")
SCHEDULES = ("constant", "cosine", "linear", "step", "piecewise")
EMA_WARMUPS = ("threshold", "exponential", "none")
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
    use_sync_bn (PaddleOCR's key): with more than one process, every BatchNorm in training normalises by the
    statistics of the global batch (all processes' samples), so N processes x batch b compute what 1 process x
    batch N*b computes (CPU/GLOO: our cross-rank BN, nn/sync_bn.py; GPU: paddle's sync_batch_norm). No effect on
    one process, in evaluation or on frozen BNs. Default false, as PaddleOCR (docs/cards/sync_bn.md).
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
    use_sync_bn: bool = False

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
class OptimizerConfig:
    """name: adamw | adam | sgd | momentum. lr: peak learning rate. weight_decay: decoupled for adamw,
    L2 for the others. beta1/beta2: Adam betas. momentum: for momentum/sgd-nesterov.
    grad_clip_norm: global-norm clip (0 = off). schedule: constant | cosine | linear | step.
    warmup_steps: linear warmup from 0 over this many optimizer steps. warmup_epochs: the same length in
    epochs (float, 0 = off; set one of the two): warmup_steps = round(warmup_epochs * steps_per_epoch),
    resolved by training.build_training (see resolve_warmup). min_lr: floor of cosine/linear.
    step_size/gamma: for "step" (decay every step_size optimizer steps).
    piecewise: lr * lr_factors[i] from milestone i on (ppdet's PiecewiseDecay); milestones in optimizer steps
    counted from the start of training (warmup included), or milestone_epochs in epochs (set one of the two;
    resolved like warmup_epochs); len(lr_factors) == number of milestones.
    """

    name: str = "adamw"
    lr: float = 1e-3
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    momentum: float = 0.9
    grad_clip_norm: float = 0.0
    schedule: str = "cosine"
    warmup_steps: int = 0
    warmup_epochs: float = 0.0
    min_lr: float = 0.0
    step_size: int = 1000
    gamma: float = 0.1
    milestones: list[int] = dataclasses.field(default_factory=list)
    milestone_epochs: list[float] = dataclasses.field(default_factory=list)
    lr_factors: list[float] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        check_name("Optimizer.name", self.name, OPTIMIZERS)
        check_name("Optimizer.schedule", self.schedule, SCHEDULES)
        check_number("Optimizer.lr", self.lr, low=0, low_open=True)
        if self.lr > 10:
            raise ConfigError(f"Optimizer.lr={self.lr!r} is absurdly large (> 10); training would diverge")
        for key in ("weight_decay", "momentum", "grad_clip_norm", "min_lr"):
            check_number(f"Optimizer.{key}", getattr(self, key), low=0)
        for key in ("beta1", "beta2"):
            check_number(f"Optimizer.{key}", getattr(self, key), low=0, high=1, high_open=True)
        check_number("Optimizer.warmup_steps", self.warmup_steps, low=0)
        check_number("Optimizer.warmup_epochs", self.warmup_epochs, low=0)
        check_number("Optimizer.step_size", self.step_size, low=1)
        check_number("Optimizer.gamma", self.gamma, low=0, low_open=True)
        if self.milestones and self.milestone_epochs:
            raise ConfigError("Optimizer.milestones (steps) and Optimizer.milestone_epochs are the same setting: set one")
        n = len(self.milestones or self.milestone_epochs)
        if self.schedule == "piecewise" and (not n or n != len(self.lr_factors)):
            raise ConfigError(f"Optimizer.schedule piecewise needs milestones (or milestone_epochs) and as many "
                              f"lr_factors: got {n} milestones, {len(self.lr_factors)} lr_factors")
        if self.warmup_steps and self.warmup_epochs:
            raise ConfigError(f"Optimizer.warmup_steps ({self.warmup_steps}) and Optimizer.warmup_epochs "
                              f"({self.warmup_epochs}) are the same setting: set one")


@dataclass
class AmpConfig:
    """Mixed-precision settings (paddle.amp semantics).

    enable: request AMP. level: "O1" (per-op casting) or "O2" (fp16/bf16 params, fp32 master weights).
    dtype: "float16" or "bfloat16" (bf16 needs no loss scaling).
    init_loss_scaling: initial loss scale (seed 000 suggests 512-4096). incr_ratio/decr_ratio: scale multipliers.
    incr_every_n_steps: grow the scale after this many consecutive finite steps (default 2000).
    decr_every_n_nan_or_inf: shrink it after this many consecutive overflowing steps (default 1).
    custom_white_list / custom_black_list: op names forced to low precision / fp32.
    skip_nonfinite_steps: skip the optimizer step when any gradient is inf/nan (also with AMP off).
    force_loss_scaling: scale the loss even where autocast is not in effect (debugging, tests).
    """

    enable: bool = False
    level: str = "O1"
    dtype: str = "float16"
    init_loss_scaling: float = 1024.0
    incr_ratio: float = 2.0
    decr_ratio: float = 0.5
    incr_every_n_steps: int = 2000
    decr_every_n_nan_or_inf: int = 1
    use_dynamic_loss_scaling: bool = True
    min_loss_scaling: float = 1.0
    custom_white_list: list[str] = field(default_factory=list)
    custom_black_list: list[str] = field(default_factory=list)
    master_weight: bool = True
    skip_nonfinite_steps: bool = True
    force_loss_scaling: bool = False

    def __post_init__(self):
        check_name("AMP.level", self.level, ("O1", "O2"))
        check_name("AMP.dtype", self.dtype, ("float16", "bfloat16"))

        check_number("AMP.init_loss_scaling", self.init_loss_scaling, low=0, low_open=True)
        check_number("AMP.min_loss_scaling", self.min_loss_scaling, low=0, low_open=True)
        check_number("AMP.incr_ratio", self.incr_ratio, low=1)
        check_number("AMP.decr_ratio", self.decr_ratio, low=0, high=1, low_open=True)
        check_number("AMP.incr_every_n_steps", self.incr_every_n_steps, low=1)
        check_number("AMP.decr_every_n_nan_or_inf", self.decr_every_n_nan_or_inf, low=1)


@dataclass
class EmaConfig:
    """enable: keep an EMA. decay: target decay (0.9998 as in ppdet). warmup: threshold | exponential | none.
    warmup_steps: exponential warmup time constant, in optimizer steps. device: e.g. "cpu" to keep the
    shadow off the accelerator (default: next to the weights)."""

    enable: bool = False
    decay: float = 0.9998
    warmup: str = "threshold"
    warmup_steps: int = 2000
    device: Optional[str] = None

    def __post_init__(self):
        check_name("EMA.warmup", self.warmup, EMA_WARMUPS)
        check_number("EMA.decay", self.decay, low=0, high=1, low_open=True, high_open=True)
        check_number("EMA.warmup_steps", self.warmup_steps, low=0)


@dataclass
class TrainingConfig:
    """The sections build_training reads. Recipes subclass it (and may narrow a section's type)."""
    Global: GlobalConfig = field(default_factory=GlobalConfig)
    Optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    AMP: AmpConfig = field(default_factory=AmpConfig)
    EMA: EmaConfig = field(default_factory=EmaConfig)
    Train: TrainSection = field(default_factory=TrainSection)
