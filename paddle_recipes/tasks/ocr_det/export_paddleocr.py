"""Export a DB text detector in the layout PaddleOCR's inference reads (formats.ppocr_inference.write_inference_dir).

    python recipes/ocr_det.py -c CFG --mode export        # -> output_dir/inference/inference.{json,pdiparams,yml}
    # paddleocr 3.x / PaddleX (the name is in export_report.json, "model_name"):
    #   TextDetection(model_name="PP-OCRv5_mobile_det", model_dir="output/ocr_det/inference").predict("page.jpg")
    #   PaddleOCR(text_detection_model_dir=..., text_detection_model_name=..., **report["paddleocr_pipeline_kwargs"], ...)
    python recipes/ocr_det.py -c CFG --mode export -o Export.legacy=true   # inference.pdmodel for paddleocr 2.x:
    #   tools/infer/predict_det.py --det_model_dir DIR --det_limit_side_len L --det_limit_type T --det_db_box_thresh B ...

The graph takes ``x: float32 [N, 3, H, W]`` (BGR, ImageNet mean/std, H and W free multiples of 32) and returns the
text probability map ``[N, 1, H, W]`` (what PaddleOCR's DBPostProcess reads). ``inference.yml``: PaddleOCR's det
``Eval`` pipeline (DecodeImage BGR, DetLabelEncode, DetResizeForTest, NormalizeImage, ToCHWImage, KeepKeys) with
the recipe's ``Eval.transform`` and its ``PostProcess`` values.

Facts from paddlex 3.7.2 (inference/models/text_detection/predictor.py) the layout follows:
* DetResizeForTest's ``limit_side_len`` / ``limit_type`` keys of the yml are not read; the side length is the
  yml's ``resize_long`` (default 960 for the PP-OCRv3..v6 det names, 736 for the seal ones) and the type is ``max``
  (``min`` for the seal names).
  So the yml carries ``resize_long`` = Eval.transform.limit_side_len too; an ``Eval.transform.limit_type`` other
  than max must be passed to ``TextDetection(limit_type=...)`` (the report's ``paddlex_predict_kwargs``).
* PostProcess ``thresh`` / ``box_thresh`` / ``unclip_ratio`` / ``max_candidates`` / ``use_dilation`` /
  ``score_mode`` / ``box_type`` are read from the yml by TextDetection; the ``PaddleOCR`` pipeline overrides
  thresh, box_thresh, unclip_ratio and the resize with its own defaults (64 / min / 0.3 / 0.6 / 1.5) unless given
  ``text_det_*`` arguments (the report's ``paddleocr_pipeline_kwargs``).
* The ``PaddleOCR`` pipeline (text_type general) crops every box through its min-area rectangle (CropByPolys
  'quad'); paddleocr 2.x's predict_system warps a quad as given. The yml's header comment and the report's
  ``paddleocr_crops`` say so (our ocr_system's ``Det.crop``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import paddle

from ...export import inference_files
from ...nn import catalog
from ...formats.ppocr_inference import PPOCR_FILE_STEM, PPOCRExportConfig, folder_files, write_inference_dir
from ...nn.reparam import fused_copy
from .models import DetInferenceModel
from .postprocess import DBPostProcess
from .transforms import IMAGENET_MEAN, IMAGENET_STD

__all__ = ["PADDLEX_DET_MODEL_NAMES", "DEFAULT_MODEL_NAME", "resolve_det_model_name", "paddlex_limit_type",
           "paddlex_det_config", "paddleocr_crops", "crop_note", "DetExportConfig", "DetPaddleOCRExport"]

# Global.model_name values paddlex 3.7.2 accepts for a text-detection model_dir (its
# modules/text_detection/model_list.py). The name picks no weights here; it sets paddlex's resize type (below).
PADDLEX_DET_MODEL_NAMES = ("PP-OCRv6_medium_det", "PP-OCRv6_small_det", "PP-OCRv6_tiny_det", "PP-OCRv5_mobile_det",
                           "PP-OCRv5_server_det", "PP-OCRv4_mobile_det", "PP-OCRv4_server_det", "PP-OCRv3_mobile_det",
                           "PP-OCRv3_server_det", "PP-OCRv4_mobile_seal_det", "PP-OCRv4_server_seal_det")
# Export.model_name "" follows the exported architecture's backbone (nn.catalog's export_name: PaddleOCR's published
# det model of that network, PP-OCRv6 by its model_size), else:
DEFAULT_MODEL_NAME = "PP-OCRv5_server_det"  # architectures without a paddlex name (ResNet_vd DB)


def paddlex_limit_type(model_name: str) -> str:
    """The DetResizeForTest limit_type paddlex 3.7.2 uses for ``model_name`` (the yml's is not read): min for the
    seal models, max for the others."""
    return "min" if "_seal_" in model_name else "max"


def resolve_det_model_name(name: str | None, backbone: str | dict = "") -> str:
    """``Global.model_name`` for the yml: a name paddlex knows -> itself; "" / None -> the backbone's (a name or the
    Architecture.Backbone section: nn.catalog's export_name when paddlex knows it, else DEFAULT_MODEL_NAME);
    anything else -> ValueError listing the accepted names."""
    if not name:
        named = catalog.export_name(backbone, catalog.DET)
        return named if named in PADDLEX_DET_MODEL_NAMES else DEFAULT_MODEL_NAME
    if name not in PADDLEX_DET_MODEL_NAMES:
        raise ValueError(f"model_name {name!r} is not a text-detection model paddlex 3.x accepts; "
                         f"use one of {list(PADDLEX_DET_MODEL_NAMES)} (or '' to follow the architecture)")
    return name


def _floats(values) -> list:
    return [round(float(v), 6) for v in values]  # 0.485, not float32's 0.48500001430511475


def paddlex_det_config(limit_side_len: int, limit_type: str, post: DBPostProcess, model_name: str) -> dict:
    """The ``inference.yml`` content (a dict): PaddleOCR's det eval pipeline with DetResizeForTest(limit_side_len
    px, limit_type; resize_long = limit_side_len for paddlex 3.x) and DBPostProcess(``post``'s values)."""
    return {
        "Global": {"model_name": resolve_det_model_name(model_name)},
        "PreProcess": {"transform_ops": [
            {"DecodeImage": {"img_mode": "BGR", "channel_first": False}},
            {"DetLabelEncode": None},  # label-only op: skipped at inference
            {"DetResizeForTest": {"limit_side_len": int(limit_side_len), "limit_type": limit_type,
                                  "resize_long": int(limit_side_len)}},
            {"NormalizeImage": {"scale": "1./255.", "mean": _floats(IMAGENET_MEAN), "std": _floats(IMAGENET_STD),
                                "order": "hwc"}},
            {"ToCHWImage": None},
            {"KeepKeys": {"keep_keys": ["image", "shape", "polys", "ignore_tags"]}},
        ]},
        "PostProcess": {"name": "DBPostProcess", "thresh": post.thresh, "box_thresh": post.box_thresh,
                        "max_candidates": post.max_candidates, "unclip_ratio": post.unclip_ratio,
                        "use_dilation": post.use_dilation, "score_mode": post.score_mode, "box_type": post.box_type},
    }


def paddleocr_crops(box_type: str) -> dict:
    """How each PaddleOCR system cuts this detector's boxes out for its recognizer (our ocr_system's Det.crop
    modes): paddleocr 3.x's PaddleOCR(...) pipeline through the min-area rectangle (paddlex CropByPolys 'quad'),
    2.x's predict_system a 4-point box as given (get_rotate_crop_image; 'poly' boxes: min-area rectangle)."""
    return {"paddleocr 3.x PaddleOCR(...)": "minarea",
            "paddleocr 2.x predict_system": "rotate" if box_type == "quad" else "minarea"}


def crop_note(box_type: str) -> str:
    """The inference.yml's header: which crop each PaddleOCR system makes of these boxes (paddleocr_crops)."""
    crops = paddleocr_crops(box_type)
    return "\n".join(["Which crop each PaddleOCR system makes of these boxes for its recognizer (ours: "
                       "recipes/ocr_system.py Det.crop):"] +
                      [f"  {who}: {mode}" for who, mode in crops.items()] +
                      ["  minarea = each box's min-area rectangle (points truncated to int) warped upright; "
                       "rotate = the 4 points warped as given"])


@dataclass
class DetExportConfig(PPOCRExportConfig):
    """PPOCRExportConfig of the detector: model_name "" = the architecture's (nn.catalog's export_name of the
    backbone, e.g. PPLCNetV3 -> PP-OCRv5_mobile_det, else PP-OCRv5_server_det); legacy: inference.pdmodel for 2.x
    predict_det."""
    resolve_model_name = staticmethod(resolve_det_model_name)


def _same_boxes(a: list, b: list, tol: float = 2.0) -> bool:
    return len(a) == len(b) and all(np.abs(np.asarray(x, float) - np.asarray(y, float)).max() <= tol
                                    for x, y in zip(a, b))


class DetPaddleOCRExport:
    """Recipe hooks of the det export (mix in before Recipe): the deploy model returns the probability map with
    export-friendly upsampling, export_files writes PaddleOCR's layout, and the export report says whether
    DBPostProcess finds the same boxes (count equal, corners within 2 px) on Paddle Inference's maps.
    Needs ``self.cfg`` (Architecture, Eval.transform, PostProcess, Export) and ``self.post``."""
    output_names, parity_after_deploy = ("maps",), True  # the export returns the map tensor, the model a dict

    def input_spec(self):
        return [paddle.static.InputSpec([None, 3, None, None], "float32", "x")]

    def deploy_model(self, model):
        fused, blocks = fused_copy(model)  # rep blocks re-parameterized, as PaddleOCR exports them
        deploy = DetInferenceModel(fused)
        return deploy, {"repeat_upsample_layers": deploy.switched, "rep_blocks_fused": len(blocks)}

    def export_files(self, deploy, prefix: str):
        cfg, out_dir = self.cfg, Path(prefix).parent
        t = cfg.Eval.transform
        name = resolve_det_model_name(cfg.Export.model_name, cfg.Architecture.Backbone)
        infer_cfg = paddlex_det_config(t.limit_side_len, t.limit_type, self.post, name)
        write_inference_dir(deploy, self.input_spec(), out_dir, infer_cfg, legacy=cfg.Export.legacy,
                            note=crop_note(self.post.box_type))
        post = infer_cfg["PostProcess"]
        entries = {"layout": "paddleocr", "model_name": name, "files": folder_files(out_dir),
                   "paddleocr_crops": paddleocr_crops(self.post.box_type),
                   "paddlex_predict_kwargs": {} if t.limit_type == paddlex_limit_type(name) else {"limit_type": t.limit_type},
                   "paddleocr_pipeline_kwargs": {
                       "text_det_limit_side_len": t.limit_side_len, "text_det_limit_type": t.limit_type,
                       **{f"text_det_{k}": post[k] for k in ("thresh", "box_thresh", "unclip_ratio")}},
                   "paddleocr2_predict_det_args": [
                       f"--det_limit_side_len={t.limit_side_len}", f"--det_limit_type={t.limit_type}",
                       f"--det_db_thresh={post['thresh']}", f"--det_db_box_thresh={post['box_thresh']}",
                       f"--det_db_unclip_ratio={post['unclip_ratio']}", f"--use_dilation={post['use_dilation']}",
                       f"--det_db_score_mode={post['score_mode']}", f"--det_box_type={post['box_type']}"]}
        return inference_files(out_dir / PPOCR_FILE_STEM), entries

    def export_extras(self, ref, out, inputs, out_dir) -> dict:
        h, w = inputs["x"].shape[2:]
        shape = [[h, w, 1.0, 1.0]]
        boxes = [[np.asarray(b).tolist() for b in self.post(m[i:i + 1], shape)[0]["points"]]
                 for m in (ref[0], out[0]) for i in range(len(m))]
        n = len(boxes) // 2
        return {"boxes": sum(len(b) for b in boxes[:n]),
                "same_boxes": all(_same_boxes(a, b) for a, b in zip(boxes[:n], boxes[n:]))}

