"""Chinese text-line recognition (CRNN + CTC) recipe.

    python recipes/ocr_rec.py                                   # = -c recipes/configs/ocr_rec.yml
    python -m paddle.distributed.launch --nproc_per_node 2 recipes/ocr_rec.py -c recipes/configs/ocr_rec_smoke.yml
    paddle-recipes-ocr-rec -c recipes/configs/ocr_rec_smoke.yml --mode train|eval|predict|export  # installed

Your own data (PaddleOCR formats): ``-o Train.dataset.format=label_file Train.dataset.data_dir=D
Train.dataset.label_file_list=[D/train.txt]`` or ``format=lmdb``. Empty ``data_dir``: the ``Synthetic`` split.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property

from paddle_recipes import distributed as dist_utils
from paddle_recipes.assets import resolve_path
from paddle_recipes.data import LabelFileError, LmdbFormatError
from paddle_recipes.optim import OptimizerConfig
from paddle_recipes.recipe import Recipe
from paddle_recipes.tasks.ocr.charset import CharDict, CharDictError
from paddle_recipes.tasks.ocr.dataset import DataPathError, DatasetConfig, RecDataset, collate
from paddle_recipes.tasks.ocr.evaluate import predict_images
from paddle_recipes.tasks.ocr.losses import LossConfig
from paddle_recipes.tasks.ocr.models import ArchitectureConfig, build_rec_model
from paddle_recipes.tasks.ocr.ppocr_io import PaddleOCRExport, RecExportConfig, RecPredictConfig, cur_metric
from paddle_recipes.tasks.ocr.step import CtcTrainStep
from paddle_recipes.tasks.ocr.recipe_data import evaluate_sets, open_split
from paddle_recipes.tasks.ocr.synth import SyntheticSetConfig
from paddle_recipes.training import EvalLoaderConfig, GlobalConfig, TrainingConfig, TrainSection


@dataclass
class RecGlobal(GlobalConfig):
    """GlobalConfig plus: character_dict_path (one char per line; blank is class 0), use_space_char,
    max_text_length (longer labels are skipped, counted), image_shape [C, H, W] of the model input."""
    output_dir: str = "output/ocr_rec"
    character_dict_path: str = "datasets/ocr_rec/ch_common_3000.txt"
    use_space_char: bool = False
    max_text_length: int = 25
    image_shape: list[int] = field(default_factory=lambda: [3, 48, 320])


@dataclass
class RecTrain(TrainSection):
    dataset: DatasetConfig = field(default_factory=DatasetConfig)


@dataclass
class RecEval:
    """Eval dataset ("" data_dir = synthetic val split, plus the held-out-font split) and loader."""
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    loader: EvalLoaderConfig = field(default_factory=EvalLoaderConfig)


@dataclass
class RecConfig(TrainingConfig):
    Global: RecGlobal = field(default_factory=RecGlobal)
    Architecture: ArchitectureConfig = field(default_factory=ArchitectureConfig)
    Loss: LossConfig = field(default_factory=LossConfig)
    Optimizer: OptimizerConfig = field(default_factory=lambda: OptimizerConfig(
        name="adam", lr=1e-3, schedule="cosine", warmup_steps=200, weight_decay=0.0))
    Synthetic: SyntheticSetConfig = field(default_factory=SyntheticSetConfig)
    Train: RecTrain = field(default_factory=RecTrain)
    Eval: RecEval = field(default_factory=RecEval)
    Predict: RecPredictConfig = field(default_factory=RecPredictConfig)
    Export: RecExportConfig = field(default_factory=RecExportConfig)


class OcrRec(PaddleOCRExport, Recipe):
    """CRNN/CTC Chinese text-line recognition recipe"""
    name, Config, default_config, main_metric = "ocr_rec", RecConfig, "recipes/configs/ocr_rec.yml", "acc"
    user_errors = (DataPathError, CharDictError, LabelFileError, LmdbFormatError)
    cur_metric = staticmethod(cur_metric)  # eval lines: cur metric, acc: .., norm_edit_dis: .., fps: ..

    def check(self) -> None:
        if not self.info.is_main:  # rank 0 warns once per bad file:line
            logging.getLogger("paddle_recipes.tasks.ocr").setLevel(logging.ERROR)

    @cached_property
    def charset(self) -> CharDict:
        g = self.cfg.Global
        return CharDict.from_file(resolve_path(g.character_dict_path), use_space_char=g.use_space_char)

    def build_dataset(self, split: str) -> RecDataset:  # "train" | "eval" | "heldout" (eval fonts only)
        section, g = self.cfg.Train if split == "train" else self.cfg.Eval, self.cfg.Global
        rec = open_split(split, section.dataset, self.cfg.Synthetic, self.charset, g.image_shape,
                         g.max_text_length, self.prepare_data)
        setattr(self, f"{split}_set", rec)
        return rec

    @cached_property
    def heldout_loader(self):  # None: own Eval data, num_heldout 0 or no eval font file installed
        held = not self.cfg.Eval.dataset.data_dir and "heldout" in self.cfg.Synthetic.splits()
        return self.eval_loader(self.build_dataset("heldout")) if held else None

    def collate(self, split):
        return collate

    def skip_stats(self):
        return [getattr(self, f"{s}_set").stats for s in ("train", "eval", "heldout") if hasattr(self, f"{s}_set")]

    def build_model(self):
        return build_rec_model(self.cfg.Architecture, self.charset.num_classes, self.cfg.Global.image_shape[0])

    @cached_property
    def train_step(self):
        return CtcTrainStep(self.charset, self.train_set.stats, zero_infinity=self.cfg.Loss.zero_infinity,
                            cal_metric=self.cfg.Global.cal_metric_during_train)

    def batch_size(self, batch) -> int:
        return len(batch["text"])

    def evaluate_model(self, model, loader) -> dict:
        sets = {"": (loader, self.eval_set)}
        if self.heldout_loader is not None:
            sets["heldout"] = (self.heldout_loader, self.heldout_set)
        return evaluate_sets(model, sets, self.charset, dist_utils.all_reduce_sum, show=self.info.is_main)

    def describe(self, run) -> str:
        a = self.cfg.Architecture
        return (f"CRNN {a.Backbone.name}+{a.Neck.name}, {self.charset.num_classes} classes, {super().describe(run)}, "
                f"input {self.cfg.Global.image_shape}, accum {self.cfg.Train.accumulate_steps}")

    def predict_model(self, model) -> list:
        p = self.cfg.Predict
        return predict_images(model, p.images, self.charset, self.cfg.Global.image_shape, p.batch_size, self.info.is_main,
                              p.save_res_path if self.info.is_main else "")


main, cli = OcrRec.main, OcrRec.cli

if __name__ == "__main__":
    cli()
