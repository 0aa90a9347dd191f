"""Config schema of the PP-YOLOE recipe (DetConfig) and its task-specific sections."""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Union

from ...train.amp import DEFAULT_FP16_BLACK_LIST, AmpConfig
from ...train.ema import EmaConfig
from ...train.optim import OptimizerConfig
from ...config import ConfigError, check_name
from ...export import TrtConfig
from ...train.config import EvalLoaderConfig, GlobalConfig, TrainingConfig, TrainLoaderConfig, TrainSection
from .model import SIZES, build_ppyoloe
from .normalize import NORMALIZE_PRESETS, NormalizeConfig
from .synth import ShapesSpec


# fp16-overflow-prone ops of a detection head/loss kept in fp32 (on top of the core list).
DET_FP16_BLACK_LIST = sorted(set(DEFAULT_FP16_BLACK_LIST) | {
    "reduce_mean", "sigmoid", "softmax", "log_softmax", "elementwise_pow", "bce_loss", "matmul_v2",
    "take_along_axis", "topk"})


def default_amp() -> AmpConfig:
    """O1 with the detection black list (a no-op on CPU, logged)."""
    return AmpConfig(enable=True, level="O1", custom_black_list=list(DET_FP16_BLACK_LIST))


@dataclass
class ArchitectureConfig:
    """size: tiny | s | m | l | x (width/depth multipliers). reg_max: highest DFL bin (grid cells).
    normalize: input normalisation of train/eval/predict/export, {mean, std, is_scale} or a preset name
    (imagenet = PP-YOLOE weights and the default; ppyoloe_plus = PP-YOLOE+ weights: x / 255 only)."""
    size: str = "s"
    reg_max: int = 16
    normalize: Union[NormalizeConfig, str] = field(default_factory=NormalizeConfig)

    def __post_init__(self):
        check_name("Architecture.size", self.size, SIZES)
        if isinstance(self.normalize, str):
            check_name("Architecture.normalize", self.normalize, NORMALIZE_PRESETS)
            self.normalize = copy.deepcopy(NORMALIZE_PRESETS[self.normalize])


@dataclass
class LossConfig:
    """Weights of VFL (cls) / GIoU (iou) / DFL and the TAL assigner's topk, alpha, beta."""
    cls_weight: float = 1.0
    iou_weight: float = 2.5
    dfl_weight: float = 0.5
    topk: int = 13
    alpha: float = 1.0
    beta: float = 6.0


def build_model(arch: ArchitectureConfig, loss: LossConfig, num_classes: int):
    return build_ppyoloe(arch.size, num_classes, reg_max=arch.reg_max, topk=loss.topk, alpha=loss.alpha, beta=loss.beta,
                         loss_weights={"cls": loss.cls_weight, "iou": loss.iou_weight, "dfl": loss.dfl_weight})


@dataclass
class ShapesSetConfig(ShapesSpec):
    """The built-in shapes set (ShapesSpec, pixels) and its folder; used when a split's ann_file is empty."""
    root: str = "datasets/cache/det_shapes"


@dataclass
class DatasetConfig:
    """COCO instances json + image folder ("" ann_file = synthetic split; "" image_dir = the json's folder)."""
    ann_file: str = ""
    image_dir: str = ""


@dataclass
class NmsConfig:
    """Multi-class NMS of postprocess.postprocess_batch, Paddle's multiclass_nms3 rules as ppdet's MultiClassNMS:
    score > score_threshold, nms_top_k candidates per class (-1 = all), IoU <= iou_threshold kept,
    keep_top_k per image (-1 = all); normalized: IoU areas w*h (true) or (w+1)*(h+1) (ppdet's key)."""
    score_threshold: float = 0.01
    iou_threshold: float = 0.7
    nms_top_k: int = 1000
    keep_top_k: int = 100
    normalized: bool = True

    def kwargs(self) -> dict:
        return asdict(self)


@dataclass
class DetTrain(TrainSection):
    """loader.batch_size_per_card (per process); sizes: batch random-resize sides (multiples of 32)."""
    loader: TrainLoaderConfig = field(default_factory=lambda: TrainLoaderConfig(batch_size_per_card=16))
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    sizes: list[int] = field(default_factory=lambda: [576, 608, 640])
    augment: bool = True


@dataclass
class DetEval:
    """size: square eval input side (px). nms: post-processing of eval, predict and export."""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    loader: EvalLoaderConfig = field(default_factory=lambda: EvalLoaderConfig(batch_size_per_card=8))
    size: int = 640
    nms: NmsConfig = field(default_factory=NmsConfig)


def default_trt() -> TrtConfig:
    """seed 000 §4.1 defaults, input name 'image'."""
    return TrtConfig(min_shapes={"image": [1, 3, 608, 608]}, max_shapes={"image": [8, 3, 1536, 1536]},
                     opt_shapes={"image": [4, 3, 1024, 1024]})


@dataclass
class DetPredictConfig:
    """images: file or folder ("" = the first num_samples eval images). out_dir: "" = output_dir/predict."""
    images: str = ""
    num_samples: int = 4
    out_dir: str = ""
    score_threshold: float = 0.3


@dataclass
class DetExportConfig:
    """out_prefix: "" = output_dir/inference/model. parity_batch: images compared dygraph vs Paddle Inference.
    fold_bn: fold BatchNorm into convs after the RepVGG fusion. upsample: "repeat" (runs on CPU Paddle
    Inference/oneDNN) or "interp" (TensorRT-native nearest_interp). trt: TensorRT config written next to it.
    layout: native (out_prefix.* + infer_cfg.yml + trt_config.yml; outputs boxes, scores) | ppdet
    (PaddleDetection's deploy layout: model.json/.pdiparams + infer_cfg.yml, inputs image + scale_factor,
    NMS in the graph) | paddlex (inference.* + inference.yml, Global.model_name = model_name); ppdet and
    paddlex write into the folder of out_prefix (default output_dir/inference). legacy: ppdet/paddlex layouts
    write the old model.pdmodel program instead of model.json (what ppdet release/2.6's deploy/python/infer.py
    and paddle 2.x load; as the OCR recipe's Export.legacy). safetensors: also write the loaded (EMA) weights
    as <export folder>/model.safetensors (no pickle; Global.weights reads it)."""
    out_prefix: str = ""
    parity_batch: int = 2
    fold_bn: bool = True
    upsample: str = "repeat"
    trt: TrtConfig = field(default_factory=default_trt)
    layout: str = "native"
    model_name: str = ""
    safetensors: bool = False
    legacy: bool = False

    def __post_init__(self):
        check_name("Export.upsample", self.upsample, ("repeat", "interp"))
        check_name("Export.layout", self.layout, ("native", "ppdet", "paddlex"))
        if self.legacy and self.layout == "native":
            raise ConfigError("Export.legacy writes a .pdmodel for ppdet's deploy: set Export.layout ppdet (or paddlex)")
        if self.layout == "paddlex" and not self.model_name:
            raise ConfigError("Export.layout paddlex needs Export.model_name (PaddleX's name, e.g. PP-YOLOE_plus-S)")


@dataclass
class DetGlobal(GlobalConfig):
    epochs: int = 30
    output_dir: str = "output/det_ppyoloe"
    log_every: int = 10


@dataclass
class DetConfig(TrainingConfig):
    """The det recipe's config (recipes/det_ppyoloe.py); `-c` also takes PaddleDetection PP-YOLOE(+) YAMLs."""
    Global: DetGlobal = field(default_factory=DetGlobal)
    Architecture: ArchitectureConfig = field(default_factory=ArchitectureConfig)
    Loss: LossConfig = field(default_factory=LossConfig)
    Optimizer: OptimizerConfig = field(default_factory=lambda: OptimizerConfig(
        name="momentum", lr=0.01, weight_decay=5e-4, schedule="cosine", warmup_steps=300))
    AMP: AmpConfig = field(default_factory=default_amp)
    EMA: EmaConfig = field(default_factory=lambda: EmaConfig(enable=True, decay=0.9998, warmup="threshold"))
    Synthetic: ShapesSetConfig = field(default_factory=ShapesSetConfig)
    Train: DetTrain = field(default_factory=DetTrain)
    Eval: DetEval = field(default_factory=DetEval)
    Predict: DetPredictConfig = field(default_factory=DetPredictConfig)
    Export: DetExportConfig = field(default_factory=DetExportConfig)
