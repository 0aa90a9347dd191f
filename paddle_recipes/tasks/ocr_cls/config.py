"""Typed config of the orientation-classifier recipe (PaddleOCR's cls YAML sections: Global, Architecture, Loss,
Metric, Optimizer, Train, Eval; plus ours: AMP, EMA, Synthetic, Predict, Export).

Global.image_shape / input / label_list left empty take the values of the network named by Architecture.name
(models.PRESETS): ch_ppocr_mobile_v2.0_cls [3, 48, 192] "ppocr" ['0', '180']; PP-LCNet_x*_textline_ori [3, 80, 160]
"paddlex" ['0_degree', '180_degree'].
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from paddle_recipes.config import ConfigError, check_name
from paddle_recipes.train.optim import OptimizerConfig
from paddle_recipes.train.config import EvalLoaderConfig, GlobalConfig, TrainingConfig, TrainSection
from paddle_recipes.tasks.ocr_rec.dataset import DatasetConfig
from paddle_recipes.tasks.ocr_rec.synth import SyntheticSetConfig

from .export_paddleocr import ClsExportConfig
from .models import INPUTS, ClsArchitecture
from .predict import ClsPredictConfig


@dataclass
class ClsGlobal(GlobalConfig):
    """GlobalConfig plus: label_list (class names in output order; the one containing '180' is the turned class;
    [] = the network's), image_shape [C, H, W] ([] = the network's), input "ppocr" | "paddlex" (the preprocessing,
    transforms.preprocess; "" = the network's), cal_metric_during_train (batch accuracy in the train log)."""
    output_dir: str = "output/ocr_cls"
    label_list: List[str] = field(default_factory=list)
    image_shape: List[int] = field(default_factory=list)
    input: str = ""
    cal_metric_during_train: bool = True

    def __post_init__(self):
        shape = self.image_shape  # [] = the network's: GlobalConfig checks a given shape only
        self.image_shape = list(shape) or [3, 8, 8]
        super().__post_init__()
        self.image_shape = list(shape)
        if self.input and self.input not in INPUTS:
            raise ConfigError(f"Global.input: {self.input!r} is not one of {list(INPUTS)}")
        if self.image_shape and (len(self.image_shape) != 3 or self.image_shape[0] != 3 or min(self.image_shape[1:]) < 8):
            raise ConfigError(f"Global.image_shape {self.image_shape}: [3, H, W] with H, W >= 8")
        if self.label_list and len(set(map(str, self.label_list))) != len(self.label_list):
            raise ConfigError(f"Global.label_list {self.label_list}: labels must be distinct")


@dataclass
class ClsSynthetic(SyntheticSetConfig):
    """SyntheticSetConfig (the rec recipe's generated text lines) plus character_dict_path (the characters drawn)
    and rotate_ratio: the share of lines turned by 180 degrees (labelled with the turned class)."""
    root: str = "datasets/cache/ocr_cls"
    character_dict_path: str = "datasets/ocr_rec/ch_hanzi_500.txt"
    rotate_ratio: float = 0.5

    def __post_init__(self):
        super().__post_init__()
        if not 0.0 < self.rotate_ratio < 1.0:
            raise ConfigError(f"Synthetic.rotate_ratio must be in (0, 1), got {self.rotate_ratio}")


@dataclass
class ClsLoss:
    """PaddleOCR's ClsLoss: cross entropy of the logits, mean over the batch."""
    name: str = "ClsLoss"

    def __post_init__(self):
        check_name("Loss.name", self.name, ("ClsLoss",))


@dataclass
class ClsMetric:
    """PaddleOCR's ClsMetric: acc = correct / samples (main_indicator acc)."""
    name: str = "ClsMetric"
    main_indicator: str = "acc"

    def __post_init__(self):
        check_name("Metric.name", self.name, ("ClsMetric",))
        check_name("Metric.main_indicator", self.main_indicator, ("acc",))


@dataclass
class ClsTrain(TrainSection):
    dataset: DatasetConfig = field(default_factory=DatasetConfig)


@dataclass
class ClsEval:
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    loader: EvalLoaderConfig = field(default_factory=EvalLoaderConfig)


@dataclass
class ClsConfig(TrainingConfig):
    Global: ClsGlobal = field(default_factory=ClsGlobal)
    Architecture: ClsArchitecture = field(default_factory=ClsArchitecture)
    Loss: ClsLoss = field(default_factory=ClsLoss)
    Metric: ClsMetric = field(default_factory=ClsMetric)
    Optimizer: OptimizerConfig = field(default_factory=lambda: OptimizerConfig(
        name="adam", lr=1e-3, schedule="cosine", warmup_steps=0, weight_decay=0.0))
    Synthetic: ClsSynthetic = field(default_factory=ClsSynthetic)
    Train: ClsTrain = field(default_factory=ClsTrain)
    Eval: ClsEval = field(default_factory=ClsEval)
    Predict: ClsPredictConfig = field(default_factory=ClsPredictConfig)
    Export: ClsExportConfig = field(default_factory=ClsExportConfig)


@dataclass(frozen=True)
class ClsInput:
    """What the model reads and says: image_shape [C, H, W], preprocessing mode, labels, the turned class."""
    image_shape: tuple
    mode: str
    labels: tuple
    turned: Optional[int]


def resolve_input(cfg: ClsConfig) -> ClsInput:
    """Global.image_shape / input / label_list, each defaulting to the named network's (ConfigError when neither)."""
    g, net = cfg.Global, cfg.Architecture.network
    if net is None and not (g.image_shape and g.input and g.label_list):
        raise ConfigError("Global.image_shape, Global.input and Global.label_list are required when "
                          "Architecture.name is '' (no network to take them from)")
    labels = tuple(str(v) for v in (g.label_list or net.label_list))
    turned = [i for i, v in enumerate(labels) if "180" in v]
    return ClsInput(tuple(g.image_shape or net.image_shape), g.input or net.input, labels,
                    turned[0] if len(turned) == 1 else None)
