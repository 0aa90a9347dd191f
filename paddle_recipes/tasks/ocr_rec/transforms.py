"""Image transforms for text-line recognition (numpy / OpenCV, no paddle).

PaddleOCR's conventions, so a model trained here sees the tensors PaddleOCR / PaddleX feed it:

* channel order BGR (PaddleOCR's ``DecodeImage img_mode: BGR``; ``cv2.imdecode`` order);
* training / eval (``RecResizeImg``): keep-ratio resize to height H, width ``ceil(H * w / h)`` capped
  at W, ``(x / 255 - 0.5) / 0.5``, zero-padded on the right to W (:func:`resize_norm_pad`);
* inference (PaddleX ``OCRReisizeNormImg``, paddleocr 3.x ``TextRecognition``): the canvas grows
  with the image: width ``max(W, int(H * w / h))`` (at most 3200, beyond which the line is squashed
  to 3200), then every image of a batch is zero-padded to the widest one (:func:`resize_norm_infer`,
  :func:`pad_batch`).
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import cv2
import numpy as np

from paddle_recipes.data.images import MAX_IMAGE_PIXELS, ImageError, read_image


def decode_image(data: bytes, max_pixels: int = MAX_IMAGE_PIXELS) -> np.ndarray | None:
    """Encoded image bytes -> BGR uint8 HWC array (PaddleOCR's ``DecodeImage img_mode: BGR``), or None if the
    bytes are not a decodable image or their header says more than ``max_pixels`` (data.images.read_image,
    which says why)."""
    try:
        return read_image(data, max_pixels, 0)
    except ImageError:
        return None


def resize_norm_pad(img: np.ndarray, image_shape: Sequence[int] = (3, 48, 320)) -> Tuple[np.ndarray, float]:
    """Resize to height H keeping the aspect ratio (width capped at W), normalize, right-pad with 0.

    Args:
        img: HWC uint8 (BGR, see :func:`decode_image`) or HW gray image.
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


INFER_MAX_WIDTH = 3200  # PaddleX OCRReisizeNormImg.max_imgW: wider lines are squashed to this width


def infer_widths(h: int, w: int, image_shape: Sequence[int] = (3, 48, 320),
                 max_width: int = INFER_MAX_WIDTH) -> Tuple[int, int]:
    """(resized_w, canvas_w) in pixels for an ``h x w`` image under PaddleX's inference resize.

    canvas_w = int(H * max(W / H, w / h)); when it exceeds ``max_width`` both are ``max_width``
    (the line is squashed); otherwise resized_w = min(ceil(H * w / h), canvas_w).
    """
    _, ih, iw = (int(v) for v in image_shape)
    ratio = w / float(max(h, 1))
    canvas = int(ih * max(iw / float(ih), ratio))
    if canvas > max_width:
        return max_width, max_width
    return min(canvas, max(1, int(math.ceil(ih * ratio)))), canvas


def resize_norm_infer(img: np.ndarray, image_shape: Sequence[int] = (3, 48, 320),
                      max_width: int = INFER_MAX_WIDTH) -> np.ndarray:
    """One image as paddleocr 3.x / PaddleX feed it: CHW float32 of width ``canvas_w`` (>= W) from
    :func:`infer_widths`, normalised like :func:`resize_norm_pad` and zero-padded on the right."""
    c, h, _ = (int(v) for v in image_shape)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    resized_w, canvas = infer_widths(img.shape[0], img.shape[1], image_shape, max_width)
    resized = cv2.resize(img, (resized_w, h), interpolation=cv2.INTER_LINEAR)
    x = resized.astype(np.float32).transpose(2, 0, 1)[:c] / 255.0
    x = (x - 0.5) / 0.5
    out = np.zeros((c, h, canvas), dtype=np.float32)
    out[:, :, :resized_w] = x
    return out


def resize_norm_batch_ppocr2(imgs: Sequence[np.ndarray], image_shape: Sequence[int] = (3, 48, 320)) -> np.ndarray:
    """A batch as paddleocr 2.x's TextRecognizer feeds it (predict_rec resize_norm_img): one canvas width
    int(H * max(W / H, widest w / h of the batch)) for all; each line resized to height H and width
    min(ceil(H * w / h), canvas), normalised like :func:`resize_norm_pad`, zero-padded on the right. Unlike
    :func:`resize_norm_infer` (PaddleX, per line), a line's width depends on its batch; no width cap."""
    c, h, w = (int(v) for v in image_shape)
    canvas = int(h * max([w / h] + [im.shape[1] / float(im.shape[0]) for im in imgs]))
    out = np.zeros((len(imgs), c, h, canvas), dtype=np.float32)
    for i, im in enumerate(imgs):
        if im.ndim == 2:
            im = np.repeat(im[:, :, None], 3, axis=2)
        rw = min(canvas, int(math.ceil(h * im.shape[1] / float(im.shape[0]))))
        x = cv2.resize(im, (rw, h)).astype(np.float32).transpose(2, 0, 1)[:c] / 255.0
        out[i, :, :, :rw] = (x - 0.5) / 0.5
    return out


def pad_batch(images: Sequence[np.ndarray]) -> np.ndarray:
    """Stack CHW arrays of one height into [B, C, H, max width], zero-padding on the right
    (PaddleX's ``ToBatch``)."""
    width = max(int(a.shape[2]) for a in images)
    out = np.zeros((len(images), images[0].shape[0], images[0].shape[1], width), dtype=np.float32)
    for i, a in enumerate(images):
        out[i, :, :, :a.shape[2]] = a
    return out
