"""Training-time augmentation of text-line images (``Train.dataset.aug``; our stand-in for PaddleOCR's RecAug).

    aug = build_augment(); aug.set_random_seed(seed); img = aug(image=img)["image"]

Each transform fires with its own probability: perspective 0.5, Gaussian or motion blur 0.4, Gaussian noise
0.4, brightness/contrast 0.6. Works on HxWxC uint8 images (BGR or RGB alike).
"""
from __future__ import annotations

import cv2


def build_augment():
    """albumentations pipeline: slight perspective, blur, noise, brightness/contrast."""
    import albumentations as A

    return A.Compose([
        A.Perspective(scale=(0.01, 0.04), keep_size=True, fit_output=True, border_mode=cv2.BORDER_REPLICATE, p=0.5),
        A.OneOf([A.GaussianBlur(blur_limit=(3, 5), sigma_limit=(0.3, 1.0)),
                 A.MotionBlur(blur_limit=(3, 5))], p=0.4),
        A.GaussNoise(std_range=(0.01, 0.06), p=0.4),
        A.RandomBrightnessContrast(brightness_limit=0.2, contrast_limit=(-0.4, 0.2), p=0.6),
    ])
