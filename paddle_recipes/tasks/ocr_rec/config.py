"""The OCR recipe's config schema (RecConfig) and its cross-section checks.

Sections follow PaddleOCR's rec YAMLs (Global, Architecture, Loss, Metric, Optimizer, Train, Eval) plus
ours (AMP, EMA, Synthetic, Predict, Export). A PaddleOCR YAML given to ``-c`` is translated onto this
schema by ``paddle_recipes.compat.paddleocr``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Union

from paddle_recipes.config import ConfigError, check_name, check_number
from paddle_recipes.train.optim import OptimizerConfig
from paddle_recipes.train.config import EvalLoaderConfig, GlobalConfig, TrainingConfig, TrainSection
from paddle_recipes.weights.merge import check_alpha

from .dataset import DatasetConfig
from .export_paddleocr import model_name_for
from .losses import LossConfig
from .models import ArchitectureConfig
from .ppocr_io import RecExportConfig, RecPredictConfig
from .synth import SyntheticSetConfig


@dataclass
class RecGlobal(GlobalConfig):
    """GlobalConfig plus: character_dict_path (one char per line; blank is class 0), use_space_char,
    max_text_length (longer labels are skipped, counted), image_shape [C, H, W] of the model input.
    cal_metric_during_train (PaddleOCR's key, with a period): the train step greedy-decodes its batch for a
    training accuracy on every N-th step: true = every step (PaddleOCR's meaning), false or 0 = never, N >= 1 =
    every N steps (docs/cards/train_metric_every.md: the decode is a host copy and a sync per step).
    pretrained_dict: the dict the weights were trained with, for weights that carry none (a legacy inference folder,
    PaddleOCR's .pdparams): the class rows then follow characters (weights.dict_remap); "" = the dict the weights
    carry (a PaddleX folder's inference.yml, our checkpoints), else rows by position.
    distill_pretrained: learning without forgetting (docs/cards/distill_pretrained.md): a frozen copy of the model
    as the init weights (Global.pretrained_model / weights) make it reads every batch, and its CTC distribution is a
    soft target on the lines it reads as labelled; distill_weight (default 1.0) scales that term (nats per line, as
    the CTC loss), distill_temperature (default 1.0) softens both distributions.
    finetune_merge: WiSE-FT (docs/cards/finetune_merge.md): a in [0, 1], every checkpoint also holds merged.pdparams
    = (1 - a) * the init weights + a * the run's weights (EMA's when on), which eval / predict / export read; training
    and resume use the unmerged ones; null (default) = off.
    general_lines: N > 0 synthetic general lines (mixed hanzi / Latin / digits / punctuation with spaces) labelled by
    the init weights' own predict-mode readings are added to the train data (docs/cards/general_lines.md); 0 (default)
    = off. general_lines_ratio: their Train.dataset.ratio_list entry, in (0, 1] (default 1.0)."""
    output_dir: str = "output/ocr_rec"
    character_dict_path: str = "datasets/ocr_rec/ch_common_3000.txt"
    use_space_char: bool = False
    max_text_length: int = 25
    image_shape: list[int] = field(default_factory=lambda: [3, 48, 320])
    cal_metric_during_train: Union[bool, int] = True
    pretrained_dict: str = ""
    distill_pretrained: bool = False
    distill_weight: float = 1.0
    distill_temperature: float = 1.0
    finetune_merge: Optional[float] = None
    general_lines: int = 0
    general_lines_ratio: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        if self.finetune_merge is not None:
            check_alpha(self.finetune_merge, "Global.finetune_merge")
        check_number("Global.distill_weight", self.distill_weight, low=0.0)
        check_number("Global.general_lines", self.general_lines, low=0)
        if self.general_lines != int(self.general_lines):
            raise ConfigError(f"Global.general_lines must be a whole number of lines, got {self.general_lines!r}")
        check_number("Global.general_lines_ratio", self.general_lines_ratio, low=0.0, low_open=True, high=1.0)
        check_number("Global.distill_temperature", self.distill_temperature, low=0.0, low_open=True)
        check_number("Global.cal_metric_during_train", int(self.cal_metric_during_train), low=0)
        check_number("Global.max_text_length", self.max_text_length, low=1)

    @property
    def metric_every(self) -> int:
        """cal_metric_during_train as a period in train steps (0 = never)."""
        return int(self.cal_metric_during_train)


@dataclass
class SamplerConfig:
    """PaddleOCR's MultiScaleSampler (tasks.ocr.multiscale): each batch has one size [w, h] of ``scales``;
    batch size first_bs at scales[0], scaled by area unless fix_bs; w, h rounded down to multiples of
    divided_factor [w, h]; is_training false = scales[0] only, unshuffled. Replaces
    Train.loader.batch_size_per_card / shuffle; resumes exactly (seeded by Global.seed and the epoch)."""
    name: str = "MultiScaleSampler"
    scales: List[List[int]] = field(default_factory=lambda: [[320, 32], [320, 48], [320, 64]])
    first_bs: int = 128
    fix_bs: bool = False
    divided_factor: List[int] = field(default_factory=lambda: [8, 16])
    is_training: bool = True

    def __post_init__(self):
        check_name("Train.sampler.name", self.name, ("MultiScaleSampler",))
        if self.first_bs < 1 or len(self.divided_factor) != 2 or any(len(s) != 2 for s in self.scales):
            raise ConfigError("Train.sampler: first_bs >= 1, scales [[w, h], ...] and divided_factor [w, h] needed")


@dataclass
class CurriculumSamplerConfig:
    """The length curriculum (tasks.ocr.curriculum.LengthCurriculumSampler, docs/cards/length_curriculum.md): for
    the first warm_steps batches per process (counted over epochs; 0 = off) only lines of at most short_len
    characters, then uniform shuffling over every line. Batch size: Train.loader.batch_size_per_card (drop_last);
    the order depends on Global.seed and the epoch; resumes exactly (with 0 loader workers)."""
    name: str = "LengthCurriculumSampler"
    warm_steps: int = 300
    short_len: int = 3

    def __post_init__(self):
        check_name("Train.sampler.name", self.name, ("LengthCurriculumSampler",))
        check_number("Train.sampler.warm_steps", self.warm_steps, low=0)
        check_number("Train.sampler.short_len", self.short_len, low=1)


@dataclass
class MetricConfig:
    """PaddleOCR's Metric section. name: RecMetric (acc + norm_edit_dis). main_indicator: acc |
    norm_edit_dis, the metric that picks `best`. ignore_space: drop spaces of prediction and label before
    comparing (PaddleOCR's default true; ours false). is_filter: compare only [a-z0-9] after lowercasing."""
    name: str = "RecMetric"
    main_indicator: str = "acc"
    ignore_space: bool = False
    is_filter: bool = False

    def __post_init__(self):
        check_name("Metric.name", self.name, ("RecMetric",))
        check_name("Metric.main_indicator", self.main_indicator, ("acc", "norm_edit_dis"))


@dataclass
class RecTrain(TrainSection):
    """TrainSection plus dataset and sampler, chosen by its name: MultiScaleSampler (SamplerConfig) or
    LengthCurriculumSampler (CurriculumSamplerConfig); null = shuffled fixed-shape batches of Train.loader."""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    sampler: Optional[Union[SamplerConfig, CurriculumSamplerConfig]] = None


@dataclass
class RecEval:
    """Eval dataset ("" data_dir = synthetic val split) and loader."""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    loader: EvalLoaderConfig = field(default_factory=EvalLoaderConfig)


@dataclass
class RecConfig(TrainingConfig):
    Global: RecGlobal = field(default_factory=RecGlobal)
    Architecture: ArchitectureConfig = field(default_factory=ArchitectureConfig)
    Loss: LossConfig = field(default_factory=LossConfig)
    Metric: MetricConfig = field(default_factory=MetricConfig)
    Optimizer: OptimizerConfig = field(default_factory=lambda: OptimizerConfig(
        name="adam", lr=1e-3, schedule="cosine", warmup_steps=200, weight_decay=0.0))
    Synthetic: SyntheticSetConfig = field(default_factory=SyntheticSetConfig)
    Train: RecTrain = field(default_factory=RecTrain)
    Eval: RecEval = field(default_factory=RecEval)
    Predict: RecPredictConfig = field(default_factory=RecPredictConfig)
    Export: RecExportConfig = field(default_factory=RecExportConfig)


def check_rec_config(cfg: RecConfig) -> None:
    """One model / loss / labels story: MultiHead <-> MultiLoss <-> MultiLabelEncode (both splits)."""
    multi = cfg.Architecture.is_multihead
    if (cfg.Loss.name == "MultiLoss") != multi:
        raise ConfigError(f"Loss.name {cfg.Loss.name} does not go with Architecture.Head.name "
                          f"{cfg.Architecture.Head.name} (MultiHead trains with MultiLoss, CTCHead with CTCLoss)")
    for split in ("Train", "Eval"):
        enc = getattr(cfg, split).dataset.label_encoder
        if (enc == "MultiLabelEncode") != multi:
            raise ConfigError(f"{split}.dataset.label_encoder {enc} does not go with Architecture.Head.name "
                              f"{cfg.Architecture.Head.name}")
    multiscale = isinstance(cfg.Train.sampler, SamplerConfig)
    if cfg.Eval.dataset.ratio_list or (cfg.Train.dataset.ratio_list and not multiscale):
        raise ConfigError("dataset.ratio_list (a fraction of each label file per epoch) needs Train with a "
                          "MultiScaleSampler")
    try:  # Export.model_name names the exported network (checked before a run, not after training)
        model_name_for(cfg.Architecture.Backbone.name, cfg.Export.model_name)
    except ValueError as exc:
        raise ConfigError(f"Export.model_name: {exc}") from None
    if multi and cfg.Global.max_text_length < 3:
        raise ConfigError("Global.max_text_length must be >= 3 for NRTR labels ([<s>, text, </s>])")
