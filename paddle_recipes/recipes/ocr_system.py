"""The OCR system: our DB detector -> perspective crops in reading order -> our recognizer, on whole pages.

    python recipes/ocr_system.py --mode predict -o Predict.images=page.jpg \
        Det.config=recipes/configs/ocr_det.yml Det.weights=output/ocr_det/checkpoints/best \
        Rec.config=recipes/configs/ocr_rec.yml Rec.weights=output/ocr_rec/checkpoints/best
    python recipes/ocr_system.py --mode eval -c recipes/configs/ocr_system.yml  # e2e P / R / F, 1 - NED

Predict writes ``output_dir/predict/system_results.txt`` (``path<TAB>[{"transcription", "points", "score"}]``,
PaddleOCR's predict_system format) and a picture per image (boxes beside the texts). Eval reads PaddleOCR det
label files with transcriptions (default: the det config's synthetic held-out pages) and writes
``output_dir/e2e_metrics.json``. ``Det.oracle=true``: GT boxes instead of the detector. ``Det.crop``: minarea
(paddleocr 3.x's crop, default) or rotate (paddleocr 2.x's). ``Global.use_angle_cls=true`` (or
``use_textline_orientation``): the ``Cls`` orientation classifier turns '180' crops before recognition
(recipes/README_ocr_cls.md). See config.py.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from functools import cached_property, partial
from pathlib import Path

from paddle_recipes.assets import resolve_path
from paddle_recipes.config import ConfigError, load_config
from paddle_recipes.data import DataError, list_images
from paddle_recipes.recipes.base import Recipe, merge_skips
from paddle_recipes.recipes.ocr_cls import OcrCls
from paddle_recipes.recipes.ocr_det import OcrDet
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.tasks.ocr_rec.dataset import DataPathError
from paddle_recipes.tasks.ocr_rec.fonts import FontError, font_by_name
from paddle_recipes.tasks.ocr_det.dataset import DetDataset
from paddle_recipes.tasks.ocr_cls.predict import classify_images
from paddle_recipes.tasks.ocr_det.transforms import DBEvalTransform
from paddle_recipes.tasks.ocr_system.config import SystemConfig, SystemModel, check_system_config, system_runs
from paddle_recipes.tasks.ocr_system.pipeline import OcrPipeline, det_fn, evaluate_pages, rec_fn, run_files


class OcrSystem(Recipe):
    """OCR system: det -> crops -> rec on whole images"""
    name, Config, default_config = "ocr_system", SystemConfig, "recipes/configs/ocr_system.yml"
    modes = ("predict", "eval")
    user_errors = (*OcrDet.user_errors, *OcrRec.user_errors, *OcrCls.user_errors, FontError)
    sources: dict = {}   # the weights each stage was loaded from (set per instance by pipeline / detector)

    def check(self) -> None:
        check_system_config(self.cfg)

    def sub_recipe(self, cls, m: SystemModel, section: str):
        """The det / rec recipe of ``m`` (its config, ``-o`` overrides and weights)."""
        if not m.config:
            raise ConfigError(f"{section}.config is empty: give the {cls.name} config the weights were trained with")
        cfg = load_config(resolve_path(m.config), m.run_opts(), cls.Config, translators=cls.config_translators)
        recipe = cls(cfg, self.info)
        recipe.check()
        return recipe

    @cached_property
    def det(self) -> OcrDet:
        return self.sub_recipe(OcrDet, self.cfg.Det, "Det")

    @cached_property
    def rec(self) -> OcrRec:
        return self.sub_recipe(OcrRec, self.cfg.Rec, "Rec")

    @cached_property
    def cls(self) -> OcrCls:
        return self.sub_recipe(OcrCls, self.cfg.Cls, "Cls")

    def classify(self):
        """The orientation stage (Global.use_angle_cls / use_textline_orientation): loads the Cls run's weights."""
        model, self.sources["cls_weights"] = self.cls.load_for_inference()
        return partial(classify_images, model, spec=self.cls.spec, batch_size=self.cfg.Global.cls_batch_num)

    def pipeline(self) -> OcrPipeline:
        """Det (GT boxes with Det.oracle) -> crops -> [Cls] -> Rec. The stages loaded are those ``system_runs`` names,
        the list the pre-flight checks before paddle is imported, so the two cannot disagree."""
        g, rec = self.cfg.Global, self.rec
        stages = {sub for _, sub in system_runs(self.cfg, "eval")}  # eval: the oracle case too
        rec_model, rec_src = rec.load_for_inference()
        recognize = rec_fn(rec_model, rec.charset, rec.cfg.Global.image_shape, g.rec_batch_num, g.rec_resize)
        detect, self.sources = None, {"rec_weights": rec_src, "det_weights": "oracle (GT boxes)"}
        crop = "minarea" if "ocr_det" in stages and self.det.post.box_type == "poly" else self.cfg.Det.crop
        if "ocr_det" in stages:
            detect = self.detector()
        classify = self.classify() if "ocr_cls" in stages else None
        return OcrPipeline(detect, recognize, g.drop_score, crop, classify, g.cls_thresh)

    def detector(self):
        """The det stage alone: image (HWC BGR uint8) -> (boxes, scores); records its weights in `sources`."""
        det_model, det_src = self.det.load_for_inference()
        self.sources = {**self.sources, "det_weights": det_src}
        return det_fn(det_model, DBEvalTransform(**asdict(self.det.cfg.Eval.transform)), self.det.post)

    def font(self) -> tuple:
        try:
            spec = font_by_name(self.cfg.Global.font)
        except KeyError as exc:
            raise ConfigError(f"Global.font: {exc.args[0]}") from None
        return spec.path(), spec.index

    def eval_dataset(self) -> DetDataset:
        d = self.cfg.Eval.dataset
        if d.data_dir:
            for f in d.label_file_list or [""]:
                if not Path(f).is_file():
                    raise DataPathError(f"Eval.dataset.label_file_list: {f or '(empty)'} is not a file")
            return DetDataset(d.label_file_list, d.data_dir, strict=d.strict, name="e2e eval")
        split = "heldout" if self.det.cfg.Synthetic.num_heldout > 0 else "val"
        root = self.det.synthetic_root / split
        return DetDataset(root / "label.txt", root, strict=d.strict, name=f"e2e synthetic {split}")

    def predict(self) -> dict:
        if self.cfg.Det.oracle:
            raise ConfigError("Det.oracle: GT boxes exist only in eval mode (--mode eval)")
        if not self.cfg.Predict.images:
            raise DataPathError("Predict.images is empty: pass -o Predict.images=path/to/image_or_folder")
        p, font = self.cfg.Predict, self.font()
        out = run_files(self.pipeline(), list_images(p.images), Path(self.cfg.Global.output_dir) / "predict", font,
                        (p.max_image_pixels, p.max_image_bytes))
        if self.info.is_main:
            print(json.dumps({**out, **self.sources}, ensure_ascii=False))
        if not out["images"]:
            raise DataError(f"ocr_system predict: no image could be read in {p.images!r} (skipped files listed above)")
        return out

    def eval(self) -> dict:
        ds = self.eval_dataset()
        metrics = evaluate_pages(self.pipeline(), ds, oracle=self.cfg.Det.oracle,
                                 iou=self.cfg.Eval.iou)
        metrics.update(self.sources, skipped=merge_skips([ds.stats], self.info))
        if self.info.is_main:
            out = Path(self.cfg.Global.output_dir) / "e2e_metrics.json"
            out.write_text(json.dumps(metrics, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
            print(json.dumps(metrics, ensure_ascii=False, default=str))
        return metrics


main, cli = OcrSystem.main, OcrSystem.cli

if __name__ == "__main__":
    cli()
