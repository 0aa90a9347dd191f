"""Image transforms for text-line recognition (numpy / OpenCV, no paddle)."""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import cv2
import numpy as np


def decode_image(data: bytes) -> np.ndarray | None:
    """Encoded image bytes -> RGB uint8 HWC array, or None if the bytes are not a decodable image."""
    if not data:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if img is None or img.size == 0:
        return None
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


def resize_norm_pad(img: np.ndarray, image_shape: Sequence[int] = (3, 48, 320)) -> Tuple[np.ndarray, float]:
    """Resize to height H keeping the aspect ratio (width capped at W), normalize, right-pad with 0.

    Args:
        img: HWC uint8 (RGB) or HW gray image.
        image_shape: (C, H, W) of the output, default (3, 48, 320).
    Returns:
        (chw float32 array in [-1, 1] with zero padding on the right, valid_ratio = used width / W).
    """
    c, h, w = (int(v) for v in image_shape)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    ih, iw = img.shape[:2]
    ratio = iw / float(max(ih, 1))
    new_w = min(w, max(1, int(math.ceil(h * ratio))))
    resized = cv2.resize(img, (new_w, h), interpolation=cv2.INTER_LINEAR)
    x = resized.astype(np.float32).transpose(2, 0, 1)[:c] / 255.0
    x = (x - 0.5) / 0.5
    out = np.zeros((c, h, w), dtype=np.float32)
    out[:, :, :new_w] = x
    return out, new_w / float(w)
