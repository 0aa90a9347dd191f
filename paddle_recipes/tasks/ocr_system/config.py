"""Typed config of the OCR system (recipes/ocr_system.py): which det and rec runs to chain, and how.

``Det`` / ``Rec``: a recipe config (``config``: our YAML or a PaddleOCR one, ``opt``: its ``-o`` overrides)
and ``weights`` ("" = that config's Global.weights, else its output_dir/checkpoints ``best`` / latest).
``Det.oracle``: eval mode only, GT polygons replace the detector (checks crops + recognizer alone).
``Det.crop``: how a box is cut out for the recognizer (geometry.crop_box): ``minarea`` (default; what
paddleocr 3.x's ``PaddleOCR(...)`` pipeline does, so an export read there gives our texts) or ``rotate``
(paddleocr 2.x's predict_system: a 4-point box warped as given). A ``PostProcess.box_type: poly`` detector's
boxes always go through their min-area rectangle (2.x's det_box_type poly; 3.x's crop does it for every box).
``Global.drop_score``: lines recognised below this score are dropped (PaddleOCR's 0.5).
``Global.rec_batch_num``: crops per recognizer pass (PaddleOCR's 6). ``Global.rec_resize``: how a pass's crops are
resized: ``paddlex`` (default; paddleocr 3.x: each line to its own width) or ``paddleocr2`` (2.x's predict_system:
one width for the pass, set by its widest line; with Det.crop rotate, 2.x's texts). ``Global.font``: font-registry name
of the picture's text. ``Eval.dataset``: PaddleOCR det label files with transcriptions; empty ``data_dir``
= the det config's synthetic ``heldout`` pages (eval fonts only). ``Eval.iou``: match threshold (0.5).
``Global.use_angle_cls`` (PaddleOCR 2.x) / ``Global.use_textline_orientation`` (3.x; either turns it on): the
orientation stage, the ``Cls`` run (an ocr_cls config and weights) between cropping and recognition; crops it calls
'180' with a score above ``Global.cls_thresh`` (0.9) are turned by 180 degrees; ``Global.cls_batch_num`` crops per
pass (6).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Literal, Tuple

from paddle_recipes.config import ConfigError
from paddle_recipes.train.config import PredictConfig


@dataclass
class SystemGlobal:
    seed: int = 42
    device: str = ""
    output_dir: str = "output/ocr_system"
    drop_score: float = 0.5
    rec_batch_num: int = 6
    rec_resize: Literal["paddlex", "paddleocr2"] = "paddlex"
    font: str = "noto_sans_sc"
    use_angle_cls: bool = False
    use_textline_orientation: bool = False
    cls_thresh: float = 0.9
    cls_batch_num: int = 6

    @property
    def orientation(self) -> bool:
        return self.use_angle_cls or self.use_textline_orientation


@dataclass
class SystemModel:
    config: str = ""
    opt: List[str] = field(default_factory=list)
    weights: str = ""

    def run_opts(self) -> List[str]:
        """The -o of this run's config: ``opt``, then Global.weights=``weights`` when set."""
        return [*self.opt, *([f"Global.weights={self.weights}"] if self.weights else [])]


@dataclass
class SystemDet(SystemModel):
    oracle: bool = False
    crop: Literal["minarea", "rotate"] = "minarea"


@dataclass
class SystemEvalData:
    data_dir: str = ""
    label_file_list: List[str] = field(default_factory=list)
    strict: bool = False


@dataclass
class SystemEval:
    dataset: SystemEvalData = field(default_factory=SystemEvalData)
    iou: float = 0.5


@dataclass
class SystemConfig:
    Global: SystemGlobal = field(default_factory=SystemGlobal)
    Det: SystemDet = field(default_factory=lambda: SystemDet("recipes/configs/ocr_det.yml"))
    Rec: SystemModel = field(default_factory=lambda: SystemModel("recipes/configs/ocr_rec_pages.yml"))
    Cls: SystemModel = field(default_factory=lambda: SystemModel("recipes/configs/ocr_cls.yml"))
    Eval: SystemEval = field(default_factory=SystemEval)
    Predict: PredictConfig = field(default_factory=PredictConfig)


def system_runs(cfg: SystemConfig, mode: str) -> List[Tuple[SystemModel, str]]:
    """(run, its recipe) of each run a ``mode`` run of ``cfg`` loads weights for, in the recipe's order: Rec, Det
    (not with Det.oracle: GT boxes; predict refuses that), Cls (when the orientation stage is on). The recipe builds
    its pipeline from this list and the pre-flight checks it: one list for both."""
    if cfg.Det.oracle and mode != "eval":
        return []
    runs = [(cfg.Rec, "ocr_rec"), *([] if cfg.Det.oracle else [(cfg.Det, "ocr_det")])]
    return runs + ([(cfg.Cls, "ocr_cls")] if cfg.Global.orientation else [])


def check_system_config(cfg: SystemConfig) -> None:
    if not 0.0 <= cfg.Global.cls_thresh < 1.0 or cfg.Global.cls_batch_num < 1:
        raise ConfigError(f"Global.cls_thresh {cfg.Global.cls_thresh} must be in [0, 1) and Global.cls_batch_num "
                          f"{cfg.Global.cls_batch_num} >= 1")
    if not 0.0 < cfg.Eval.iou <= 1.0:
        raise ConfigError(f"Eval.iou: {cfg.Eval.iou} is not in (0, 1]")
