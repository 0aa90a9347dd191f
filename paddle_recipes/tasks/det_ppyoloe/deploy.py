"""Export a PP-YOLOE in PaddleDetection's deploy layout (what ppdet's ``tools/export_model.py`` writes).

    <out_dir>/model.json + model.pdiparams   (PIR; ``legacy_ir=True``: model.pdmodel)
    <out_dir>/infer_cfg.yml                  mode, draw_threshold, metric, use_dynamic_shape, arch: YOLO,
                                             min_subgraph_size, Preprocess, label_list (+ NMS, informational)

The graph follows ppdet's deploy convention, so ppdet's ``deploy/python/infer.py`` ``Detector`` (and
tools built on that layout) can run it:

- inputs ``image`` [N, 3, H, W] float32 (preprocessed as ``Preprocess`` says) and ``scale_factor``
  [N, 2] = (resized_h / orig_h, resized_w / orig_w);
- outputs ``bbox`` [K, 6] = (class, score, x1, y1, x2, y2) in original-image pixels, all images
  concatenated, and ``bbox_num`` [N] int32 (boxes per image). NMS (Paddle's ``multiclass_nms3``)
  runs inside the graph, on boxes divided by the scale factor, as ppdet's PP-YOLOE post-process does.

``layout="paddlex"`` writes the same graph and config as ``inference.json``/``inference.pdiparams``
and ``inference.yml`` with ``Global.model_name`` (e.g. "PP-YOLOE_plus-S"): the names PaddleX's
object-detection predictor loads (it reads the same ``Preprocess``/``label_list``/``draw_threshold``
keys and feeds ``image``, ``scale_factor`` in that order), and ppdet's Detector with
``use_fd_format=True``. Not run against PaddleX here (not installed).

The preprocessing written is the one this package trains and evaluates with: a square bilinear
resize (``interp: 1``) to ``Eval.size`` without keeping the ratio, ``NormalizeImage`` from the
model's ``NormalizeConfig``, ``Permute``.

    export_ppdet_deploy(model, out_dir, label_list, input_size=640, norm=NormalizeConfig(), nms={...})
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

import paddle
import paddle.nn as nn

from paddle_recipes.export import append_old_ir_op, in_old_ir_static

from .normalize import NormalizeConfig, deploy_normalize_op
from paddle_recipes.runtime.distributed import unwrap
from paddle_recipes.export import export_model, fuse_conv_bn
from paddle_recipes.export import create_predictor, predict
from .postprocess import postprocess_batch

ARCH = "YOLO"             # ppdet's infer_cfg arch for its YOLOv3-architecture models (PP-YOLOE included)
MIN_SUBGRAPH_SIZE = 3     # ppdet's TensorRT min_subgraph_size for YOLO
DEFAULT_NMS = {"score_threshold": 0.01, "nms_top_k": 1000, "keep_top_k": 300, "iou_threshold": 0.7, "normalized": True}


class PpdetDeployModel(nn.Layer):
    """``(image, scale_factor) -> (bbox [K, 6], bbox_num [N])`` around our ``PPYOLOE``; see module doc.

    nms: score_threshold, nms_top_k (candidates per class), keep_top_k (per image), iou_threshold.
    """

    def __init__(self, model: nn.Layer, nms: dict | None = None):
        super().__init__()
        self.model = model
        n = {**DEFAULT_NMS, **(nms or {})}
        self.score_threshold = float(n["score_threshold"])
        self.nms_top_k = int(n["nms_top_k"])
        self.keep_top_k = int(n["keep_top_k"])
        self.iou_threshold = float(n["iou_threshold"])
        self.normalized = bool(n["normalized"])

    def forward(self, image, scale_factor):
        boxes, scores = self.model(image)  # [N, L, 4] input pixels, [N, L, C]
        sy, sx = scale_factor[:, 0:1], scale_factor[:, 1:2]
        boxes = boxes / paddle.concat([sx, sy, sx, sy], axis=-1).unsqueeze(1)
        scores = scores.transpose([0, 2, 1])
        if not in_old_ir_static():
            bbox, _, bbox_num = paddle._C_ops.multiclass_nms3(
                boxes, scores, None, self.score_threshold, self.nms_top_k, self.keep_top_k,
                self.iou_threshold, self.normalized, 1.0, -1)  # nms_eta 1, no background label: as postprocess.py
            return bbox, bbox_num
        out = append_old_ir_op("multiclass_nms3", {"BBoxes": boxes, "Scores": scores},
                               {"Out": boxes.dtype, "Index": "int32", "NmsRoisNum": "int32"},
                               {"background_label": -1, "score_threshold": self.score_threshold,
                                "nms_top_k": self.nms_top_k, "nms_threshold": self.iou_threshold,
                                "keep_top_k": self.keep_top_k, "nms_eta": 1.0, "normalized": self.normalized})
        return out["Out"], out["NmsRoisNum"]

def infer_cfg(label_list, input_size: int, norm: NormalizeConfig, nms: dict | None = None,
              draw_threshold: float = 0.5, metric: str = "COCO") -> dict:
    """The ``infer_cfg.yml`` content (key order as ppdet writes it)."""
    n = {**DEFAULT_NMS, **(nms or {})}
    return {
        "mode": "paddle",
        "draw_threshold": float(draw_threshold),
        "metric": metric,
        "use_dynamic_shape": False,  # the Resize fixes the input side, as in ppdet's PP-YOLOE exports
        "arch": ARCH,
        "min_subgraph_size": MIN_SUBGRAPH_SIZE,
        "Preprocess": [
            {"type": "Resize", "interp": 1, "keep_ratio": False, "target_size": [int(input_size), int(input_size)]},
            deploy_normalize_op(norm),
            {"type": "Permute"},
        ],
        "label_list": [str(n_) for n_ in label_list],
        "NMS": {"name": "MultiClassNMS", "keep_top_k": int(n["keep_top_k"]), "nms_threshold": float(n["iou_threshold"]),
                "nms_top_k": int(n["nms_top_k"]), "score_threshold": float(n["score_threshold"]),
                "normalized": bool(n["normalized"])},
    }


def export_ppdet_deploy(model: nn.Layer, out_dir: str | os.PathLike, label_list, *, input_size: int = 640,
                        norm: NormalizeConfig | None = None, nms: dict | None = None, draw_threshold: float = 0.5,
                        upsample: str = "repeat", fold_bn: bool = True, legacy_ir: bool = False,
                        layout: str = "ppdet", model_name: str = "") -> dict:
    """Write ``out_dir/model.*`` + ``infer_cfg.yml`` for ``model`` (our PPYOLOE; not modified).

    layout "paddlex": ``inference.*`` + ``inference.yml`` with ``Global.model_name = model_name``
    (required, a PaddleX model name such as "PP-YOLOE_plus-S").

    A deep copy is re-parameterised (RepVGG fused), optionally BN-folded, and its upsample switched to
    ``upsample`` ("repeat" runs on CPU Paddle Inference, "interp" is TensorRT-native; identical results).
    Returns {"model_file", "params_file", "infer_cfg", "format"}.
    """
    import yaml

    from paddle.static import InputSpec

    if layout not in ("ppdet", "paddlex"):
        raise ValueError(f"layout must be 'ppdet' or 'paddlex', got {layout!r}")
    if layout == "paddlex" and not model_name:
        raise ValueError("layout 'paddlex' needs model_name (PaddleX's name, e.g. 'PP-YOLOE_plus-S')")
    prefix, cfg_name = ("model", "infer_cfg.yml") if layout == "ppdet" else ("inference", "inference.yml")
    norm = norm or NormalizeConfig()
    deploy = copy.deepcopy(unwrap(model))
    deploy.eval()
    deploy.reparameterize()
    deploy.neck.upsample.mode = upsample
    if fold_bn:
        deploy = fuse_conv_bn(deploy)
    wrapped = PpdetDeployModel(deploy, nms)
    out_dir = Path(out_dir)
    spec = [InputSpec([None, 3, None, None], "float32", "image"), InputSpec([None, 2], "float32", "scale_factor")]
    exp = export_model(wrapped, spec, out_dir / prefix, legacy_ir=legacy_ir)
    cfg = infer_cfg(label_list, input_size, norm, nms, draw_threshold)
    if layout == "paddlex":
        cfg = {"Global": {"model_name": model_name}, **cfg}
    (out_dir / cfg_name).write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return {"model_file": exp.model_file, "params_file": exp.params_file, "infer_cfg": str(out_dir / cfg_name),
            "format": exp.format}

def export_ppdet_checked(model: nn.Layer, out_dir: str | os.PathLike, label_list, images, scale_factors, *,
                         nms: dict, tol: float = 1e-2, margin: float = 1e-4, threads: int = 2,
                         **export_kwargs) -> dict:
    """``export_ppdet_deploy`` + the parity report of the det recipe's ``--mode export`` (ppdet/paddlex layout).

    images [N, 3, H, W] float32 (already preprocessed), scale_factors [N, 2]. Paddle Inference runs the
    exported graph on them; its ``bbox``/``bbox_num`` are compared with the dygraph model's outputs
    post-processed on the host (``postprocess_batch`` with the same ``nms``): per image the same boxes
    scored >= score_threshold + ``margin``, every (class, score, x1, y1, x2, y2) row within ``tol``
    (pixels / score); ``compared_boxes`` counts them (0 = nothing above the threshold to compare). Writes
    ``out_dir/export_report.json`` and returns the report (``same_detections``: the verdict).
    """
    import json

    import numpy as np



    model.eval()
    with paddle.no_grad():
        boxes, scores = model(paddle.to_tensor(images))
    ref = postprocess_batch(boxes.numpy(), scores.numpy(), scale_factors, **nms)
    files = export_ppdet_deploy(model, out_dir, label_list, nms=nms, **export_kwargs)
    device = "gpu" if paddle.is_compiled_with_cuda() else "cpu"
    pred = create_predictor(Path(files["model_file"]).with_suffix(""), device=device, threads=threads)
    bbox, bbox_num = predict(pred, {"image": np.asarray(images, np.float32),
                                    "scale_factor": np.asarray(scale_factors, np.float32)})
    # a score within `margin` of the threshold may fall on either side of it in the two float paths; such
    # boxes are left out of the comparison (they cannot suppress or displace higher-scored boxes)
    floor = float(nms["score_threshold"]) + margin
    got_all = np.split(bbox, np.cumsum(bbox_num)[:-1]) if len(bbox_num) else []
    got_all = [g[g[:, 1] >= floor] for g in got_all]
    ref = [r[r[:, 1] >= floor] for r in ref]
    same = [len(g) for g in got_all] == [len(r) for r in ref]
    diff = 0.0
    for got, r in zip(got_all, ref) if same else ():
        if len(r):  # same rows in another order after NMS ties: sort by (score desc, class)
            got, r = got[np.lexsort((got[:, 0], -got[:, 1]))], r[np.lexsort((r[:, 0], -r[:, 1]))]
            diff = max(diff, float(np.abs(got - r).max()))
    report = {**files, "layout": export_kwargs.get("layout", "ppdet"), "parity_images": len(images),
              "bbox_num": bbox_num.tolist(), "compared_boxes": [len(g) for g in got_all],
              "host_compared_boxes": [len(r) for r in ref], "max_abs_diff_bbox": diff,
              "same_detections": bool(same and diff < tol)}
    (Path(out_dir) / "export_report.json").write_text(json.dumps(report, indent=1))
    return report


def preprocess_like_deploy(image_rgb, cfg: dict):
    """Apply an ``infer_cfg.yml`` ``Preprocess`` list (Resize / NormalizeImage / Permute) to one RGB
    uint8 image, as ppdet's deploy ``preprocess`` does; returns (image [3, H, W] float32, scale_factor [2])."""
    import cv2
    import numpy as np

    im = image_rgb
    scale = np.ones(2, np.float32)
    for op in cfg["Preprocess"]:
        kind = op["type"]
        if kind == "Resize":
            if op.get("keep_ratio"):
                raise ValueError("keep_ratio Resize is not produced by this exporter")
            th, tw = op["target_size"]
            h, w = im.shape[:2]
            scale = np.array([th / h, tw / w], np.float32)
            im = cv2.resize(im, None, None, fx=tw / w, fy=th / h, interpolation=int(op.get("interp", 1)))
        elif kind == "NormalizeImage":
            im = im.astype(np.float32)
            if op.get("is_scale", True):
                im = im / 255.0
            if op.get("norm_type", "mean_std") == "mean_std":
                im = (im - np.array(op["mean"], np.float32)) / np.array(op["std"], np.float32)
        elif kind == "Permute":
            im = im.transpose(2, 0, 1)
        else:
            raise ValueError(f"unknown Preprocess op {kind!r}")
    return np.ascontiguousarray(im, dtype=np.float32), scale
