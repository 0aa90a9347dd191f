"""Chinese text-line recognition recipe: our CRNN presets and PaddleOCR's networks (PP-OCRv4/v5, R34 CRNN).

    python recipes/ocr_rec.py                                   # = -c recipes/configs/ocr_rec.yml
    python -m paddle.distributed.launch --nproc_per_node 2 recipes/ocr_rec.py -c recipes/configs/ocr_rec_smoke.yml
    paddle-recipes-ocr-rec -c recipes/configs/ocr_rec_smoke.yml --mode train|eval|predict|export  # installed

Your own data (PaddleOCR formats): ``-o Train.dataset.format=label_file Train.dataset.data_dir=D
Train.dataset.label_file_list=[D/train.txt]`` or ``format=lmdb``. Empty ``data_dir``: the ``Synthetic`` split. A
PaddleOCR rec YAML works as ``-c`` with ``-o`` in its own keys (compat.paddleocr; recipes/README_ocr_rec.md)."""
from __future__ import annotations

import logging
from functools import cached_property, partial

from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.compat.paddleocr import paddleocr_rec_translator
from paddle_recipes.data import LabelFileError, LmdbFormatError
from paddle_recipes.recipes.base import Recipe
from paddle_recipes.tasks.ocr_rec.charset import CharDict, CharDictError, run_dict
from paddle_recipes.tasks.ocr_rec.class_rows import weights_class_map
from paddle_recipes.tasks.ocr_rec.config import RecConfig, check_rec_config
from paddle_recipes.tasks.ocr_rec.dataset import DataPathError, RecDataset, collate, collate_gtc
from paddle_recipes.tasks.ocr_rec.distill_pretrained import DistillFromInit
from paddle_recipes.tasks.ocr_rec.finetune_merge import MergeWithInit
from paddle_recipes.tasks.ocr_rec.general_lines import KeepGeneralLines
from paddle_recipes.tasks.ocr_rec.evaluate import predict_images
from paddle_recipes.tasks.ocr_rec.models import build_rec_model
from paddle_recipes.tasks.ocr_rec.ppocr_io import PaddleOCRExport, cur_metric
from paddle_recipes.tasks.ocr_rec.recipe_data import build_train_loader, evaluate_sets, open_split
from paddle_recipes.tasks.ocr_rec.step import CtcTrainStep, MultiLossTrainStep
from paddle_recipes.weights.dict_remap import CLASS_NAMES, ClassNames


class OcrRec(KeepGeneralLines, DistillFromInit, MergeWithInit, PaddleOCRExport, Recipe):  # Global.general_lines, ...
    """Text-line recognition recipe (CTC; PaddleOCR's MultiHead models train with MultiLoss)"""
    name, Config, default_config = "ocr_rec", RecConfig, "recipes/configs/ocr_rec.yml"
    user_errors = (DataPathError, CharDictError, LabelFileError, LmdbFormatError)
    cur_metric = staticmethod(cur_metric)  # eval lines: cur metric, acc: .., norm_edit_dis: .., fps: ..
    config_translators = (paddleocr_rec_translator(RecConfig),)  # -c accepts PaddleOCR rec YAMLs (and -o their keys)

    @property
    def main_metric(self) -> str:  # Metric.main_indicator picks `best`
        return self.cfg.Metric.main_indicator

    def check(self) -> None:
        check_rec_config(self.cfg)
        if not self.info.is_main:  # rank 0 warns once per bad file:line
            logging.getLogger("paddle_recipes.tasks.ocr_rec").setLevel(logging.ERROR)

    @cached_property
    def charset(self) -> CharDict:
        """Global.character_dict_path; when that file does not exist, the dict the weights' inference model folder
        carries (its inference.yml or character_dict.txt: a paddleocr 3.x / PaddleX download), said in one line
        (charset.run_dict; recipes.preflight runs the same before paddle is imported)."""
        g = self.cfg.Global
        chars, carried = run_dict(g.character_dict_path, (value for _, value in self.named_weights()),
                                  use_space_char=g.use_space_char)
        if carried is not None:
            self.log.info("Global.character_dict_path=%s not found: using the dict of the weights' inference "
                          "model, %s", g.character_dict_path, carried)
        return chars

    def label_set(self) -> str:
        return f"dict {self.charset.source}"

    def class_map(self, path: str):  # rows follow characters: the weights' dict -> this run's
        return weights_class_map(path, self.charset.chars, self.cfg.Global.pretrained_dict)

    def checkpoint_parts(self) -> dict:
        return {**super().checkpoint_parts(), CLASS_NAMES: ClassNames(self.charset.chars, self.charset.source)}

    def build_dataset(self, split: str) -> RecDataset:  # "train" | "eval" | "heldout" (eval fonts only)
        section, g = self.cfg.Train if split == "train" else self.cfg.Eval, self.cfg.Global
        multi = self.cfg.Architecture.is_multihead  # NRTR labels: [<s>, text, </s>]
        rec = open_split(split, section.dataset, self.cfg.Synthetic, self.charset, g.image_shape, g.max_text_length,
                         self.prepare_data, aug=split == "train" and section.dataset.aug,
                         keep_max_length=g.max_text_length - 2 if multi else None)
        setattr(self, f"{split}_set", rec)
        return rec

    @cached_property
    def heldout_loader(self):  # None: own Eval data, num_heldout 0 or no eval font file installed
        held = not self.cfg.Eval.dataset.data_dir and "heldout" in self.cfg.Synthetic.splits()
        return self.eval_loader(self.build_dataset("heldout")) if held else None

    def collate(self, split):
        multi = split == "train" and self.cfg.Architecture.is_multihead
        return partial(collate_gtc, max_text_length=self.cfg.Global.max_text_length) if multi else collate

    @cached_property
    def train_sampling(self) -> tuple:  # Train.sampler -> (loader, its callbacks); null: build_training's batches
        s = self.cfg.Train.sampler
        return (None, []) if s is None else build_train_loader(self.train_set, s, self.cfg.Train.loader, self.info,
                                                               self.cfg.Global.seed, self.collate("train"))

    def train_loader(self, train_set):
        return self.train_sampling[0]

    def callbacks(self) -> list:
        return [*super().callbacks(), *self.train_sampling[1]]

    def skip_stats(self):
        return [getattr(self, f"{s}_set").stats for s in ("train", "eval", "heldout") if hasattr(self, f"{s}_set")]

    def build_model(self):
        return build_rec_model(self.cfg.Architecture, self.charset.num_classes, self.cfg.Global.image_shape[0])

    @cached_property
    def train_step(self):
        step, g = MultiLossTrainStep if self.cfg.Loss.name == "MultiLoss" else CtcTrainStep, self.cfg.Global
        return step(self.charset, self.train_set.stats, zero_infinity=self.cfg.Loss.zero_infinity,
                    metric_every=g.metric_every, image_shape=g.image_shape, distill=self.distill)

    def batch_size(self, batch) -> int:
        return len(batch["text"])

    def evaluate_model(self, model, loader) -> dict:
        sets = {"": (loader, self.eval_set)}
        if self.heldout_loader is not None:
            sets["heldout"] = (self.heldout_loader, self.heldout_set)
        m = self.cfg.Metric
        return evaluate_sets(model, sets, self.charset, dist_utils.all_reduce_sum, show=self.info.is_main,
                             ignore_space=m.ignore_space, is_filter=m.is_filter)

    def describe(self, run) -> str:
        a = self.cfg.Architecture
        return (f"{a.algorithm} {a.Backbone.name}+{a.Neck.name if a.Neck else '-'}+{a.Head.name}, "
                f"{self.charset.num_classes} classes, {super().describe(run)}, "
                f"input {self.cfg.Global.image_shape}, accum {self.cfg.Train.accumulate_steps}")

    def predict_model(self, model) -> list:
        p = self.cfg.Predict
        return predict_images(model, p.images, self.charset, self.cfg.Global.image_shape, p.batch_size, self.info.is_main,
                              p.save_res_path if self.info.is_main else "", p.max_image_pixels, p.max_image_bytes)


main, cli = OcrRec.main, OcrRec.cli

if __name__ == "__main__":
    cli()
