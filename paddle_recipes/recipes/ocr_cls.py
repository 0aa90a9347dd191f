"""Text-line orientation recipe (0 / 180 degrees): PaddleOCR's ch_ppocr_mobile_v2.0_cls and PaddleX's
PP-LCNet_x0_25_textline_ori (and x1_0), weight for weight.

    python recipes/ocr_cls.py                                  # = -c recipes/configs/ocr_cls.yml
    python -m paddle.distributed.launch --nproc_per_node 2 recipes/ocr_cls.py -c recipes/configs/ocr_cls_smoke.yml
    paddle-recipes-ocr-cls -c CFG --mode train|eval|predict|export -o Predict.images=lines/

Your own data (PaddleOCR's cls label files, ``path<TAB>0|180``, or LMDB): ``-o Train.dataset.data_dir=D
Train.dataset.label_file_list=[D/train.txt] Eval.dataset.data_dir=D Eval.dataset.label_file_list=[D/val.txt]``.
Empty ``data_dir``: the rec generator's synthetic lines, ``Synthetic.rotate_ratio`` of them turned by 180 degrees
(val in the train fonts, heldout in the eval fonts). PaddleOCR cls YAMLs (configs/cls/cls_mv3.yml) and PaddleX's
PP-LCNet_x0_25_textline_ori.yaml work as ``-c`` with ``-o`` in their own keys (compat.paddleocr_cls,
compat.paddleclas_cls); see recipes/README_ocr_cls.md.
"""
from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.assets import resolve_path
from paddle_recipes.config import ConfigError
from paddle_recipes.compat.paddleclas_cls import paddleclas_cls_translator
from paddle_recipes.compat.paddleocr_cls import paddleocr_cls_translator
from paddle_recipes.data import DataError, LabelFileError, LmdbFormatError, list_images
from paddle_recipes.recipes.base import Recipe
from paddle_recipes.tasks.ocr_rec.dataset import DataPathError
from paddle_recipes.tasks.ocr_rec.synth import build_dataset as build_lines, dataset_fingerprint
from paddle_recipes.tasks.ocr_cls.config import ClsConfig, ClsInput, resolve_input
from paddle_recipes.tasks.ocr_cls.dataset import ClsDataset, collate
from paddle_recipes.tasks.ocr_cls.export_paddleocr import ClsPaddleOCRExport
from paddle_recipes.tasks.ocr_cls.models import build_cls_model
from paddle_recipes.tasks.ocr_cls.predict import classify_files
from paddle_recipes.tasks.ocr_cls.step import ClsTrainStep, evaluate_cls

SYNTH_SPLIT = {"train": "train", "eval": "val", "heldout": "heldout"}


class OcrCls(ClsPaddleOCRExport, Recipe):
    """Text-line orientation classification recipe (0 / 180 degrees)"""
    name, Config, default_config, main_metric = "ocr_cls", ClsConfig, "recipes/configs/ocr_cls.yml", "acc"
    user_errors = (DataPathError, LabelFileError, LmdbFormatError, DataError)
    # -c takes PaddleX's / PaddleClas's orientation YAMLs (top-level Arch + DataLoader: tried first) and PaddleOCR cls
    # YAMLs, -o in their own keys
    config_translators = (paddleclas_cls_translator(ClsConfig), paddleocr_cls_translator(ClsConfig))

    @cached_property
    def spec(self) -> ClsInput:
        return resolve_input(self.cfg)

    def check(self) -> None:
        self.build_model()  # the class count, the network's options: one line before any data is read

    @cached_property
    def synthetic_root(self) -> Path:
        s = self.cfg.Synthetic
        chars = Path(resolve_path(s.character_dict_path)).read_text(encoding="utf-8").split()
        splits = s.splits()
        self.prepare_data(s.root, dataset_fingerprint(chars, splits, s),
                          lambda: build_lines(s.root, chars, splits, s, workers=s.workers))
        return Path(s.root)

    def build_dataset(self, split: str) -> ClsDataset:  # "train" | "eval" | "heldout" (synthetic, eval fonts)
        own = (self.cfg.Train if split == "train" else self.cfg.Eval).dataset
        key = {"train": "Train.dataset", "eval": "Eval.dataset"}.get(split, "Synthetic.heldout")
        if own.data_dir and split != "heldout":
            ds = ClsDataset(own, self.spec, key, train=split == "train")
        else:
            _ = self.synthetic_root
            ds = ClsDataset(self.cfg.Synthetic.split_dataset(SYNTH_SPLIT[split]), self.spec, key,
                            rotate_ratio=self.cfg.Synthetic.rotate_ratio, train=split == "train",
                            seed=self.cfg.Global.seed)
        setattr(self, f"{split}_set", ds)
        return ds

    @cached_property
    def heldout_loader(self):
        held = not self.cfg.Eval.dataset.data_dir and "heldout" in self.cfg.Synthetic.splits()
        return self.eval_loader(self.build_dataset("heldout")) if held else None

    def collate(self, split):
        return collate

    def skip_stats(self):
        return [getattr(self, f"{s}_set").stats for s in ("train", "eval", "heldout") if hasattr(self, f"{s}_set")]

    def build_model(self):
        try:
            return build_cls_model(self.cfg.Architecture, len(self.spec.labels))
        except (ValueError, TypeError) as exc:  # the network's options, the class count: one line
            raise ConfigError(str(exc)) from None

    @cached_property
    def train_step(self):
        return ClsTrainStep(self.train_set.stats, self.spec.image_shape, self.cfg.Global.cal_metric_during_train)

    def batch_size(self, batch) -> int:
        return int(batch["num_samples"][0])

    def evaluate_model(self, model, loader) -> dict:
        out = evaluate_cls(model, loader, dist_utils.all_reduce_sum, getattr(self, "eval_set", None) and self.eval_set.stats)
        if self.heldout_loader is not None:
            held = evaluate_cls(model, self.heldout_loader, dist_utils.all_reduce_sum, self.heldout_set.stats)
            out.update({f"heldout_{k}": v for k, v in held.items()})
        return out

    def cur_metric(self, metrics: dict) -> dict:
        fps = metrics["num_samples"] / max(metrics["infer_seconds"], 1e-9)
        return {"acc": metrics["acc"], **({"heldout_acc": metrics["heldout_acc"]} if "heldout_acc" in metrics else {}),
                "fps": fps}

    def describe(self, run) -> str:
        a, s = self.cfg.Architecture, self.spec
        return (f"{a.name or a.Backbone.get('name')}, labels {list(s.labels)}, input {list(s.image_shape)} "
                f"({s.mode}), {len(self.train_set)} train lines, {super().describe(run)}")

    def predict_model(self, model) -> list:
        p = self.cfg.Predict
        if not p.images:
            raise DataPathError("Predict.images is empty: pass -o Predict.images=path/to/image_or_folder")
        results, bad = classify_files(model, list_images(p.images), self.spec, p.batch_size)
        if self.info.is_main:
            for f, why in bad:
                self.log.warning("skipped %s: %s", f, why)
            for f, label, score in results:
                self.log.info("Predicts of %s: ['%s', %.4f]", f, label, score)
            if p.save_res_path:
                Path(p.save_res_path).parent.mkdir(parents=True, exist_ok=True)
                Path(p.save_res_path).write_text("".join(f"{f}\t{lab}\t{s:.6f}\n" for f, lab, s in results),
                                                 encoding="utf-8")
            print(json.dumps({"images": len(results), "skipped": len(bad),
                              "labels": {lab: sum(r[1] == lab for r in results) for lab in self.spec.labels}}))
        return results


main, cli = OcrCls.main, OcrCls.cli

if __name__ == "__main__":
    cli()
