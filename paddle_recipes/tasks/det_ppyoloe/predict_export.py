"""Detection glue for the recipe's predict and export modes (native layout): draw predictions, compare detections,
write the deployment files (trt_config.yml, infer_cfg.yml) next to an export."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import paddle

from ...data import MAX_IMAGE_PIXELS, read_image
from .coco import DetCollate
from .normalize import NormalizeConfig, collate_kwargs
from .postprocess import postprocess_batch
from .visualize import draw_detections
from ...export import trt_config_to_yaml

logger = logging.getLogger(__name__)


def load_rgb(path: str, max_image_pixels: int = MAX_IMAGE_PIXELS) -> np.ndarray:
    """RGB uint8 [H, W, 3] by data.read_image: an image whose header says more than max_image_pixels (0 = no limit),
    an unreadable one or a FIFO / device is an ImageError (a DataError: one line) and never decoded."""
    return np.ascontiguousarray(read_image(path, max_image_pixels)[:, :, ::-1])


def detect_images(model, files: list[str], size: int, nms: dict, norm: NormalizeConfig | None = None):
    """Yield (file, RGB image, detections [K, 6] = class, score, x1, y1, x2, y2 in original pixels) of each
    image, detected at `size` px (square resize, normalised by `norm`, default ImageNet), as --mode predict does."""
    collate = DetCollate([size], **collate_kwargs(norm or NormalizeConfig()))
    for i, f in enumerate(files):
        img = load_rgb(f)
        batch = collate([{"image": img, "gt_bbox": np.zeros((0, 4), np.float32), "gt_class": np.zeros(0, np.int64),
                          "im_id": i, "orig_size": img.shape[:2]}])
        with paddle.no_grad():
            boxes, scores = model(paddle.to_tensor(batch["image"]))
        yield f, img, postprocess_batch(boxes.numpy(), scores.numpy(), batch["scale_factor"], **nms)[0]

def draw_predictions(model, files: list[str], size: int, nms: dict, class_names, out_dir: Path,
                     score_threshold: float, norm: NormalizeConfig | None = None) -> list[dict]:
    """Detect each image (detect_images) and draw boxes >= score_threshold into out_dir/<stem>_det.png."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for f, img, det in detect_images(model, files, size, nms, norm):
        out = out_dir / (Path(f).stem + "_det.png")
        n = draw_detections(img, det, class_names, str(out), score_threshold=score_threshold)
        written.append({"image": f, "output": str(out), "boxes_drawn": n})
        logger.info("%s -> %s (%d boxes)", f, out, n)
    return written


def same_detections(ref: list, out: list, scale_factors: np.ndarray, nms: dict, tol: float = 1e-2) -> bool:
    """Post-processed detections of (boxes, scores) outputs `ref` and `out` agree within `tol` pixels/score."""
    a = postprocess_batch(ref[0], ref[1], scale_factors, **nms)
    b = postprocess_batch(out[0], out[1], scale_factors, **nms)
    return all(x.shape == y.shape and (x.size == 0 or np.abs(x - y).max() < tol) for x, y in zip(a, b))


def write_deploy_files(out_dir: Path, trt, arch: str, index, input_size: int, nms: dict,
                       norm: NormalizeConfig | None = None) -> str:
    """trt_config.yml + infer_cfg.yml (labels, preprocessing, NMS) next to the export; returns the TRT path."""
    import yaml


    norm = norm or NormalizeConfig()
    trt_config_to_yaml(trt, out_dir / "trt_config.yml")
    infer_cfg = {"arch": arch, "label_list": index.cat_names, "category_ids": index.cat_ids,
                 "input_size": input_size, "input_name": "image",
                 "outputs": ["boxes [B, L, 4] xyxy input pixels", "scores [B, L, C] sigmoid"],
                 "preprocess": {"resize": "square, no keep-ratio", "mean": [float(v) for v in norm.mean],
                                "std": [float(v) for v in norm.std], "is_scale": bool(norm.is_scale), "to_rgb": True},
                 "nms": nms, "trt_config": "trt_config.yml"}
    (out_dir / "infer_cfg.yml").write_text(yaml.safe_dump(infer_cfg, sort_keys=False))
    return str(out_dir / "trt_config.yml")
