"""DB text-detection recipe: PaddleOCR's det models (PP-OCRv5/v4 mobile, PP-OCRv5 server, ResNet-vd DB) and our
CPU-sized default (DenseConvDet + DBFPN + DBHead).

    python -m paddle.distributed.launch --nproc_per_node 2 recipes/ocr_det.py   # = -c recipes/configs/ocr_det.yml
    python -m paddle.distributed.launch --nproc_per_node 2 recipes/ocr_det.py -c recipes/configs/ocr_det_smoke.yml
    paddle-recipes-ocr-det -c CFG --mode train|eval|predict|export -o Predict.images=page.jpg
    # export: output_dir/inference/ = PaddleOCR's det inference folder (paddleocr 3.x TextDetection; Export.legacy: 2.x)

Your own data (PaddleOCR det label files, ``path<TAB>[{"transcription": ..., "points": ...}]``):
``-o Train.dataset.data_dir=D Train.dataset.label_file_list=[D/train.txt] Eval.dataset.data_dir=D ...``.
Empty ``data_dir``: synthetic pages (``Synthetic``: train/val in the train fonts, heldout in the eval fonts).
PaddleOCR det YAMLs work as ``-c`` with ``-o`` in their own keys (compat.paddleocr_det).
"""
from __future__ import annotations

import json
from dataclasses import asdict
from functools import cached_property
from pathlib import Path

from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.assets import resolve_path
from paddle_recipes.compat.paddleocr_det import paddleocr_det_translator
from paddle_recipes.data import LabelFileError, list_images
from paddle_recipes.recipes.base import Recipe
from paddle_recipes.tasks.ocr_rec.dataset import DataPathError
from paddle_recipes.tasks.ocr_det.batch import collate
from paddle_recipes.tasks.ocr_det.config import DetConfig, DetSynthetic
from paddle_recipes.tasks.ocr_det.dataset import DetDataset
from paddle_recipes.tasks.ocr_det.labels import DetLabelError
from paddle_recipes.tasks.ocr_det.cross_rank_loss import build_db_loss
from paddle_recipes.tasks.ocr_det.export_paddleocr import DetPaddleOCRExport
from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model
from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess
from paddle_recipes.tasks.ocr_det.predict import predict_files
from paddle_recipes.tasks.ocr_det.step import DBTrainStep, evaluate_det
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, ensure_pages
from paddle_recipes.tasks.ocr_det.transforms import DBEvalTransform, DBTrainTransform


class OcrDet(DetPaddleOCRExport, Recipe):
    """DB text detection recipe"""
    name, Config, default_config = "ocr_det", DetConfig, "recipes/configs/ocr_det.yml"
    user_errors = (DataPathError, LabelFileError, DetLabelError)
    config_translators = (paddleocr_det_translator(DetConfig),)  # -c takes PaddleOCR det YAMLs, -o their keys

    @property
    def main_metric(self) -> str:
        return self.cfg.Metric.main_indicator

    @cached_property
    def synthetic_root(self) -> Path:
        s: DetSynthetic = self.cfg.Synthetic
        chars = [c.strip() for c in Path(resolve_path(self.cfg.Global.character_dict_path)).read_text(
            encoding="utf-8").splitlines() if c.strip()]
        page_cfg = PageSynthConfig(**{k: v for k, v in asdict(s).items() if k in PageSynthConfig.__dataclass_fields__})
        build = lambda: ensure_pages(s.root, s.splits(), page_cfg, chars, s.workers)  # noqa: E731
        pages = {k: v for k, v in asdict(s).items() if k != "workers"}  # the files do not depend on workers
        return self.prepare_data(s.root, {"pages": pages, "chars": "".join(chars)}, build)

    def build_dataset(self, split: str) -> DetDataset:  # "train" | "eval" | "heldout" (synthetic, eval fonts)
        section = self.cfg.Train if split == "train" else self.cfg.Eval
        d, t = section.dataset, section.transform
        transform = (DBTrainTransform(**asdict(t), seed=self.cfg.Global.seed) if split == "train"
                     else DBEvalTransform(**asdict(t)))
        if d.data_dir:
            for f in d.label_file_list or [""]:
                if not Path(f).is_file():
                    raise DataPathError(f"{'Train' if split == 'train' else 'Eval'}.dataset.label_file_list: "
                                        f"{f or '(empty)'} is not a file")
            files, root = d.label_file_list, d.data_dir
        else:
            part = {"train": "train", "eval": "val"}.get(split, split)
            root = self.synthetic_root / part
            files = [root / "label.txt"]
        ds = DetDataset(files, root, strict=d.strict, max_image_pixels=d.max_image_pixels, transform=transform,
                        name=split, max_image_bytes=d.max_image_bytes)
        setattr(self, f"{split}_set", ds)
        return ds

    @cached_property
    def heldout_loader(self):
        held = not self.cfg.Eval.dataset.data_dir and self.cfg.Synthetic.num_heldout > 0
        return self.eval_loader(self.build_dataset("heldout")) if held else None

    def collate(self, split):
        return collate

    def skip_stats(self):
        return [getattr(self, f"{s}_set").stats for s in ("train", "eval", "heldout") if hasattr(self, f"{s}_set")]

    def build_model(self):
        return build_ppocr_det_model(self.cfg.Architecture)

    @property
    def post(self) -> DBPostProcess:
        return self.cfg.PostProcess  # a DBPostProcess with PaddleOCR's section name

    @cached_property
    def train_step(self):
        loss = build_db_loss(self.cfg.Loss, self.cfg.Global.use_sync_bn, self.info.world_size, self.info.is_main)
        return DBTrainStep(loss, self.train_set.stats)

    def batch_size(self, batch) -> int:
        return int(batch["num_samples"][0])

    def evaluate_model(self, model, loader) -> dict:
        stats = self.eval_set.stats if hasattr(self, "eval_set") else None
        out = evaluate_det(model, loader, self.post, dist_utils.all_reduce_sum, stats)
        if self.heldout_loader is not None:
            held = evaluate_det(model, self.heldout_loader, self.post, dist_utils.all_reduce_sum)
            out.update({f"heldout_{k}": v for k, v in held.items() if k != "fps"})
        return out

    def describe(self, run) -> str:
        a = self.cfg.Architecture
        return (f"DB {a.Backbone['name']}+{a.Neck['name']}+{a.Head['name']}, {len(self.train_set)} train images, "
                f"crop {self.cfg.Train.transform.size}, {super().describe(run)}")

    def predict_model(self, model) -> list:
        if not self.cfg.Predict.images:
            raise DataPathError("Predict.images is empty: pass -o Predict.images=path/to/image_or_folder")
        out_dir, res = Path(self.cfg.Global.output_dir) / "predict", self.cfg.Predict.save_res_path
        p = self.cfg.Predict
        results, bad = predict_files(model, list_images(p.images), DBEvalTransform(**asdict(self.cfg.Eval.transform)),
                                     self.post, out_dir, res, (p.max_image_pixels, p.max_image_bytes))
        if self.info.is_main:
            for f, why in bad:
                self.log.warning("skipped %s: %s", f, why)
            print(json.dumps({"images": len(results), "skipped": len(bad), "boxes": sum(len(r[1]) for r in results),
                              "results": res or str(out_dir / "det_results.txt")}))
        return results

    def parity_inputs(self, model) -> dict:
        batch = next(iter(self.eval_loader(self.build_dataset("eval"))))
        return {"x": batch["image"][:max(1, self.cfg.Export.parity_batch)].numpy()}


main, cli = OcrDet.main, OcrDet.cli

if __name__ == "__main__":
    cli()
