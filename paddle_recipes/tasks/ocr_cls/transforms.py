"""The two inputs of the orientation classifiers (numpy / OpenCV; images are BGR uint8 HWC as decoded).

    x = preprocess(img, [3, 48, 192], "ppocr")     # ch_ppocr_mobile_v2.0_cls
    x = preprocess(img, [3, 80, 160], "paddlex")   # PP-LCNet_x*_textline_ori

"ppocr": PaddleOCR's ClsResizeImg (its rec resize): BGR, resize to height H keeping the aspect ratio with the width
capped at W, (x / 255 - 0.5) / 0.5, zero-padded on the right. "paddlex": PaddleX's textline-orientation
predictor: RGB, resized to exactly W x H (cv2 bilinear), (x / 255 - ImageNet mean) / std.
"""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from paddle_recipes.tasks.ocr_rec.transforms import resize_norm_pad

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def preprocess(img: np.ndarray, image_shape: Sequence[int], mode: str) -> np.ndarray:
    """BGR uint8 HWC (or HW gray) -> CHW float32 model input of `image_shape` [C, H, W] by `mode`."""
    if mode == "ppocr":
        return resize_norm_pad(img, image_shape)[0]
    if mode != "paddlex":
        raise ValueError(f"input mode {mode!r}: 'ppocr' or 'paddlex'")
    _, h, w = (int(v) for v in image_shape)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    rgb = cv2.resize(img, (w, h), interpolation=cv2.INTER_LINEAR)[:, :, ::-1].astype(np.float32)
    return ((rgb / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1).astype(np.float32)


def rotate180(img: np.ndarray) -> np.ndarray:
    """The image turned by 180 degrees (PaddleOCR's cv2.rotate(img, 1))."""
    return np.ascontiguousarray(img[::-1, ::-1])
