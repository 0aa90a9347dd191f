"""The ERNIE multi-task recipe's config (ErnieConfig): the shared training sections and the task's own ones."""
from __future__ import annotations

from dataclasses import dataclass, field

import paddle

from ...config import check_name, check_number
from ...train.distill import DistillLoss, build_temperature
from ...train.optim import OptimizerConfig
from ...train.config import GlobalConfig, TrainingConfig
from .multitask import MultiTaskModel, TaskSampler, build_ernie


@dataclass
class EncoderCfg:
    """ERNIE encoder size. intermediate_size: 0 = 4 * hidden_size. dropout: encoder and heads."""
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 2
    intermediate_size: int = 0
    dropout: float = 0.1


@dataclass
class ArchitectureCfg:
    """teacher / student encoders; max_len: tokens incl. [CLS]/[SEP]."""
    teacher: EncoderCfg = field(default_factory=lambda: EncoderCfg(hidden_size=128, num_layers=4, num_heads=4))
    student: EncoderCfg = field(default_factory=lambda: EncoderCfg(hidden_size=64, num_layers=1, num_heads=2))
    max_len: int = 32


def build_model(enc: EncoderCfg, specs, vocab_size: int, max_len: int, seed: int) -> MultiTaskModel:
    """Shared encoder + one head per task; `seed` fixes the init (same seed -> same student init)."""
    paddle.seed(seed)
    encoder = build_ernie(vocab_size, enc.hidden_size, enc.num_layers, enc.num_heads,
                          enc.intermediate_size or None, max_len=max(64, max_len), dropout=enc.dropout)
    return MultiTaskModel(encoder, [(s.name, s.kind, s.num_labels) for s in specs], dropout=enc.dropout)


@dataclass
class DataCfg:
    """num_tasks: 1..16 synthetic tasks; train_size / eval_size: examples per task. vocab: "" = the packaged
    vocab. student_labeled: > 0 = the student phases see labels of only this many examples per task."""
    num_tasks: int = 16
    train_size: int = 2000
    eval_size: int = 400
    base_seed: int = 0
    vocab: str = ""
    student_labeled: int = 0

    def __post_init__(self):
        check_number("Data.num_tasks", self.num_tasks, low=1, high=16)
        check_number("Data.train_size", self.train_size, low=1)  # 0 = an empty training set
        check_number("Data.eval_size", self.eval_size, low=1)
        check_number("Data.student_labeled", self.student_labeled, low=0)


@dataclass
class SamplingCfg:
    """strategy: proportional | temperature | round_robin; temperature: p_i ~ n_i^(1/T)."""
    strategy: str = "temperature"
    temperature: float = 2.0

    def __post_init__(self):
        check_name("Train.sampling.strategy", self.strategy, TaskSampler.STRATEGIES)


@dataclass
class ErnieTrain:
    """batch_size per process; steps_per_epoch: micro-batches per epoch (each of one task);
    loss_weights: {task name: weight} (default 1.0); sampling: which task each micro-batch comes from."""
    batch_size: int = 32
    steps_per_epoch: int = 200
    accumulate_steps: int = 1
    loss_weights: dict[str, float] = field(default_factory=dict)
    sampling: SamplingCfg = field(default_factory=SamplingCfg)


@dataclass
class TemperatureCfg:
    """schedule: constant (t) | linear / cosine (t_start -> t_end over the run) | entropy (t_min..t_max)."""
    schedule: str = "cosine"
    t: float = 4.0
    t_start: float = 8.0
    t_end: float = 2.0
    t_min: float = 1.0
    t_max: float = 4.0

    def __post_init__(self):
        check_name("Distill.temperature.schedule", self.schedule, ("constant", "linear", "cosine", "entropy"))

    def build(self):
        kwargs = {"constant": {"t": self.t}, "linear": {"t_start": self.t_start, "t_end": self.t_end},
                  "cosine": {"t_start": self.t_start, "t_end": self.t_end},
                  "entropy": {"t_min": self.t_min, "t_max": self.t_max}}[self.schedule]
        return build_temperature(self.schedule, **kwargs)


@dataclass
class DistillCfg:
    """alpha: KD weight (1 - alpha on the hard loss). hidden_weight needs equal teacher/student hidden sizes.
    teacher_path: when phase "teacher" is skipped ("" = <output_dir>/teacher/model.pdparams)."""
    alpha: float = 0.7
    temperature: TemperatureCfg = field(default_factory=TemperatureCfg)
    hidden_weight: float = 0.0
    attn_weight: float = 0.0
    teacher_path: str = ""

    def loss(self) -> DistillLoss:
        return DistillLoss(self.temperature.build(), alpha=self.alpha, hidden_weight=self.hidden_weight,
                           attn_weight=self.attn_weight)


@dataclass
class QuantCfg:
    """calib_batches_per_task: PTQ calibration batches. min_elems: smaller tensors stay fp32 in the pack.
    eval_batch_size: batch of every evaluation."""
    calib_batches_per_task: int = 2
    min_elems: int = 1024
    eval_batch_size: int = 256


PHASES = ("teacher", "student", "distill", "quant")


@dataclass
class ErnieGlobal(GlobalConfig):
    """GlobalConfig (per phase; resume "auto" continues each phase from <output_dir>/<phase>/checkpoints)."""
    output_dir: str = "output/ernie_multitask"
    epochs: int = 3
    phases: list[str] = field(default_factory=lambda: list(PHASES))

    def __post_init__(self):
        super().__post_init__()
        for p in self.phases:
            check_name("Global.phases", p, PHASES)


@dataclass
class ErnieConfig(TrainingConfig):
    """The ERNIE multi-task recipe's config: the shared training sections plus its own."""
    Global: ErnieGlobal = field(default_factory=ErnieGlobal)
    Architecture: ArchitectureCfg = field(default_factory=ArchitectureCfg)
    Data: DataCfg = field(default_factory=DataCfg)
    Train: ErnieTrain = field(default_factory=ErnieTrain)
    Optimizer: OptimizerConfig = field(default_factory=lambda: OptimizerConfig(
        name="adamw", lr=2e-3, weight_decay=0.01, warmup_steps=50, schedule="cosine", grad_clip_norm=1.0))
    Distill: DistillCfg = field(default_factory=DistillCfg)
    Quant: QuantCfg = field(default_factory=QuantCfg)
