"""Export an orientation classifier in PaddleOCR's / PaddleX's inference layout (formats.ppocr_inference).

    python recipes/ocr_cls.py -c CFG --mode export        # -> output_dir/inference/inference.{json,pdiparams,yml}
    # paddleocr 3.x / PaddleX (PP-LCNet_x*_textline_ori networks):
    #   TextLineOrientationClassification(model_name="PP-LCNet_x0_25_textline_ori", model_dir=DIR).predict("line.jpg")
    python recipes/ocr_cls.py -c CFG --mode export -o Export.legacy=true   # inference.pdmodel, paddleocr 2.x:
    #   tools/infer/predict_cls.py --cls_model_dir DIR --cls_image_shape 3,48,192 --label_list 0 180

The graph takes ``x: float32 [N, 3, H, W]`` (the network's input, transforms.preprocess) and returns softmax
probabilities ``[N, classes]``. ``inference.yml`` for "paddlex" input: PaddleX's textline-orientation config
(ResizeImage [W, H], NormalizeImage ImageNet, ToCHWImage; PostProcess Topk with the label list; facts from paddlex
3.7's pdparams2safetensors/inference_meta.py). For "ppocr" input (ch_ppocr_mobile_v2.0_cls): PaddleOCR's cls Eval
pipeline (DecodeImage BGR, ClsResizeImg) and ClsPostProcess; paddlex 3.x has no predictor for that network.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import paddle

from paddle_recipes.formats.ppocr_inference import PPOCRExportConfig, folder_files, write_inference_dir
from paddle_recipes.export import inference_files

from .transforms import IMAGENET_MEAN, IMAGENET_STD

# Global.model_name values: paddlex 3.7's textline-orientation names (modules/image_classification/model_list.py)
# and PaddleOCR 2.x's classifier (read by no paddlex predictor).
PADDLEX_CLS_MODEL_NAMES = ("PP-LCNet_x0_25_textline_ori", "PP-LCNet_x1_0_textline_ori")
MODEL_NAMES = PADDLEX_CLS_MODEL_NAMES + ("ch_ppocr_mobile_v2.0_cls",)


def resolve_cls_model_name(name: str | None) -> str:
    """"" stays "" (the export then uses Architecture.name); a known name -> itself; else ValueError."""
    if name and name not in MODEL_NAMES:
        raise ValueError(f"model_name {name!r}: one of {list(MODEL_NAMES)} (or '' = Architecture.name)")
    return name or ""


@dataclass
class ClsExportConfig(PPOCRExportConfig):
    """PPOCRExportConfig of the classifier: model_name "" = Architecture.name; legacy: inference.pdmodel for
    paddleocr 2.x predict_cls."""
    resolve_model_name = staticmethod(resolve_cls_model_name)


def inference_yml(spec, model_name: str) -> dict:
    """The inference.yml (a dict) of a classifier with input `spec` (config.ClsInput)."""
    c, h, w = spec.image_shape
    if spec.mode == "paddlex":
        pre = [{"ResizeImage": {"size": [w, h]}},
               {"NormalizeImage": {"channel_num": c, "mean": [round(float(v), 6) for v in IMAGENET_MEAN],
                                   "std": [round(float(v), 6) for v in IMAGENET_STD], "scale": 1.0 / 255,
                                   "order": ""}},
               {"ToCHWImage": None}]
        post = {"Topk": {"topk": 1, "label_list": list(spec.labels)}}
    else:
        pre = [{"DecodeImage": {"img_mode": "BGR", "channel_first": False}}, {"ClsLabelEncode": None},
               {"ClsResizeImg": {"image_shape": [c, h, w]}}, {"KeepKeys": {"keep_keys": ["image", "label"]}}]
        post = {"name": "ClsPostProcess", "label_list": list(spec.labels)}
    return {"Global": {"model_name": model_name}, "PreProcess": {"transform_ops": pre}, "PostProcess": post}


class ClsPaddleOCRExport:
    """Recipe hooks of the cls export (mix in before Recipe); needs ``self.cfg`` and ``self.spec``."""
    output_names = ("probs",)

    def input_spec(self):
        return [paddle.static.InputSpec([None, *self.spec.image_shape], "float32", "x")]

    def export_files(self, deploy, prefix: str):
        out_dir = Path(prefix).parent
        name = self.cfg.Export.model_name or self.cfg.Architecture.name
        write_inference_dir(deploy, self.input_spec(), out_dir, inference_yml(self.spec, name),
                            legacy=self.cfg.Export.legacy)
        c, h, w = self.spec.image_shape
        entries = {"layout": "paddleocr", "model_name": name, "files": folder_files(out_dir),
                   "paddlex": name in PADDLEX_CLS_MODEL_NAMES,
                   "paddleocr2_predict_cls_args": [f"--cls_image_shape={c},{h},{w}",
                                                   "--label_list", *self.spec.labels]}
        return inference_files(out_dir / "inference"), entries

    def parity_inputs(self, model) -> dict:
        batch = next(iter(self.eval_loader(self.build_dataset("eval"))))
        return {"x": batch["image"][:max(1, self.cfg.Export.parity_batch)].numpy()}

    def export_extras(self, ref, out, inputs, out_dir) -> dict:
        return {"same_class": bool((np.argmax(ref[0], -1) == np.argmax(out[0], -1)).all())}
