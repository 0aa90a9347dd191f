"""Typed config of the DB text-detection recipe (PaddleOCR's det YAML section names and keys).

``Architecture`` keeps PaddleOCR's form: ``Backbone`` / ``Neck`` / ``Head`` dicts with a ``name`` and the
network's options (checked by ``models.build_ppocr_det_model``: an option the network does not take is an
error naming it). Default: PP-OCRv5_mobile_det. Sizes in px; ``Train.transform.size`` is (W, H).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from paddle_recipes.config import ConfigError
from paddle_recipes.data import MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS
from paddle_recipes.train.optim import OptimizerConfig
from paddle_recipes.train.config import PredictConfig
from paddle_recipes.train.config import EvalLoaderConfig, GlobalConfig, TrainingConfig, TrainSection

from .export_paddleocr import DetExportConfig
from .models import PPOCR_MOBILE_DET_ARCH
from .postprocess import DBPostProcess
from .synth_pages import PageSynthConfig


def _check_choice(key: str, value: str, choices) -> None:
    if value not in choices:
        raise ConfigError(f"{key}: {value!r} is not one of {list(choices)}")


@dataclass
class DetGlobal(GlobalConfig):
    """GlobalConfig plus character_dict_path: the characters of the synthetic pages' text."""
    output_dir: str = "output/ocr_det"
    character_dict_path: str = "datasets/ocr_rec/ch_hanzi_100.txt"


@dataclass
class DetArchitecture:
    """PaddleOCR's det ``Architecture`` (model_type det, algorithm DB)."""
    model_type: str = "det"
    algorithm: str = "DB"
    Transform: Optional[Dict[str, Any]] = None
    Backbone: Dict[str, Any] = field(default_factory=lambda: dict(PPOCR_MOBILE_DET_ARCH["Backbone"]))
    Neck: Dict[str, Any] = field(default_factory=lambda: dict(PPOCR_MOBILE_DET_ARCH["Neck"]))
    Head: Dict[str, Any] = field(default_factory=lambda: dict(PPOCR_MOBILE_DET_ARCH["Head"]))


@dataclass
class DBLossConfig:
    """DBLoss (losses.py): alpha x shrink loss + beta x threshold L1 + binary dice; OHEM ratio; main_loss_type
    DiceLoss | BCELoss | DiceFocalLoss (PP-OCRv6: focal_alpha, focal_gamma, dice_weight, focal_weight); the
    auxiliary heads' weights aux_weight_p4 / p3 / p2 (0 = off). cross_rank (ours; PaddleOCR has no such key): with
    more than one process, the loss of the global batch (global counts, dice, L1, OHEM top-k: cross_rank_loss.py);
    null (default) = as Global.use_sync_bn."""
    name: str = "DBLoss"
    balance_loss: bool = True
    main_loss_type: str = "DiceLoss"
    alpha: float = 5.0
    beta: float = 10.0
    ohem_ratio: float = 3.0
    eps: float = 1e-6
    focal_alpha: float = 0.25
    focal_gamma: float = 2.0
    dice_weight: float = 1.0
    focal_weight: float = 1.0
    aux_weight_p4: float = 0.0
    aux_weight_p3: float = 0.0
    aux_weight_p2: float = 0.0
    cross_rank: Optional[bool] = None

    def __post_init__(self):
        _check_choice("Loss.name", self.name, ("DBLoss",))

    def kwargs(self) -> dict:
        return {k: v for k, v in vars(self).items() if k not in ("name", "cross_rank")}


@dataclass
class DBPostProcessConfig(DBPostProcess):
    """PaddleOCR's ``PostProcess`` section: the DBPostProcess itself (postprocess.py) plus its name;
    defaults of PaddleOCR's det YAMLs (box_thresh 0.6, unclip_ratio 1.5)."""
    name: str = "DBPostProcess"
    box_thresh: float = 0.6
    unclip_ratio: float = 1.5

    def __post_init__(self):
        _check_choice("PostProcess.name", self.name, ("DBPostProcess",))
        super().__post_init__()


@dataclass
class DetMetricConfig:
    name: str = "DetMetric"
    main_indicator: str = "hmean"

    def __post_init__(self):
        _check_choice("Metric.name", self.name, ("DetMetric",))
        _check_choice("Metric.main_indicator", self.main_indicator, ("hmean", "precision", "recall"))


@dataclass
class DetDatasetConfig:
    """data_dir: root of the images of label_file_list ("" = the synthetic pages). strict: the first bad
    label line is an error (else it is skipped and counted). max_image_pixels (width x height from the header,
    default 8e7) / max_image_bytes (file size, default 256 MiB): larger images are skipped and counted (0 = no
    limit; data.images)."""
    data_dir: str = ""
    label_file_list: List[str] = field(default_factory=list)
    strict: bool = False
    max_image_pixels: int = MAX_IMAGE_PIXELS
    max_image_bytes: int = MAX_IMAGE_BYTES


@dataclass
class DetTrainTransformConfig:
    """transforms.DBTrainTransform: EastRandomCropData size (W, H), max_tries, keep_ratio; MakeShrinkMap /
    MakeBorderMap shrink_ratio, min_text_size, thresh_min/max; augment: flip + rotate + scale first; color_jitter:
    PaddleOCR's ColorJitter (brightness, contrast, saturation, hue; all 0 = off) before it."""
    size: List[int] = field(default_factory=lambda: [640, 640])
    max_tries: int = 50
    keep_ratio: bool = True
    shrink_ratio: float = 0.4
    min_text_size: int = 8
    thresh_min: float = 0.3
    thresh_max: float = 0.7
    augment: bool = True
    max_rotate: float = 10.0
    scale: List[float] = field(default_factory=lambda: [0.5, 3.0])
    color_jitter: List[float] = field(default_factory=lambda: [0.0, 0.0, 0.0, 0.0])

    def __post_init__(self):
        if len(self.color_jitter) != 4 or min(self.color_jitter) < 0 or self.color_jitter[3] > 0.5:
            raise ConfigError(f"Train.transform.color_jitter must be [brightness, contrast, saturation, hue], "
                              f"each >= 0, hue <= 0.5, got {self.color_jitter}")
        if len(self.size) != 2 or min(self.size) < 32 or any(s % 32 for s in self.size):
            raise ConfigError(f"Train.transform.size must be [W, H], multiples of 32, got {self.size}")


@dataclass
class DetEvalTransformConfig:
    """transforms.DBEvalTransform (DetResizeForTest): limit_side_len px, limit_type min | max | resize_long;
    or image_shape [H, W] px (a fixed size; keep_ratio: W from the aspect ratio, ceil to 32); or resize_long px
    (long side = it, both sides ceil to 128, PaddleOCR's resize_long key). image_shape wins, then resize_long > 0."""
    limit_side_len: int = 736
    limit_type: str = "min"
    image_shape: Optional[List[int]] = None
    keep_ratio: bool = False
    resize_long: int = 0

    def __post_init__(self):
        _check_choice("Eval.transform.limit_type", self.limit_type, ("min", "max", "resize_long"))
        if self.image_shape is not None and (len(self.image_shape) != 2 or min(self.image_shape) < 1):
            raise ConfigError(f"Eval.transform.image_shape must be [H, W], got {self.image_shape}")


@dataclass
class DetTrain(TrainSection):
    dataset: DetDatasetConfig = field(default_factory=DetDatasetConfig)
    transform: DetTrainTransformConfig = field(default_factory=DetTrainTransformConfig)


@dataclass
class DetEval:
    dataset: DetDatasetConfig = field(default_factory=DetDatasetConfig)
    transform: DetEvalTransformConfig = field(default_factory=DetEvalTransformConfig)
    loader: EvalLoaderConfig = field(default_factory=lambda: EvalLoaderConfig(batch_size_per_card=1))


@dataclass
class DetSynthetic(PageSynthConfig):
    """The embedded default data: synthetic pages (synth_pages.py) under root, per split; ``workers``:
    rendering processes (2; the pages do not depend on it)."""
    root: str = "datasets/cache/ocr_det"
    num_train: int = 2000
    num_val: int = 200
    num_heldout: int = 200
    workers: int = 2

    def splits(self) -> Dict[str, int]:
        return {k: n for k, n in (("train", self.num_train), ("val", self.num_val), ("heldout", self.num_heldout)) if n}


@dataclass
class DetPredictConfig(PredictConfig):
    """PredictConfig + save_res_path: the infer_det.py result file ("" = output_dir/predict/det_results.txt)."""
    save_res_path: str = ""


@dataclass
class DetConfig(TrainingConfig):
    Global: DetGlobal = field(default_factory=DetGlobal)
    Architecture: DetArchitecture = field(default_factory=DetArchitecture)
    Loss: DBLossConfig = field(default_factory=DBLossConfig)
    PostProcess: DBPostProcessConfig = field(default_factory=DBPostProcessConfig)
    Metric: DetMetricConfig = field(default_factory=DetMetricConfig)
    Optimizer: OptimizerConfig = field(default_factory=lambda: OptimizerConfig(
        name="adam", lr=1e-3, schedule="cosine", warmup_steps=100, weight_decay=5e-5))
    Synthetic: DetSynthetic = field(default_factory=DetSynthetic)
    Train: DetTrain = field(default_factory=DetTrain)
    Eval: DetEval = field(default_factory=DetEval)
    Predict: DetPredictConfig = field(default_factory=DetPredictConfig)
    Export: DetExportConfig = field(default_factory=DetExportConfig)
