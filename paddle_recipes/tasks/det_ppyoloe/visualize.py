"""Draw detections on an image and save a PNG."""
from __future__ import annotations

import colorsys

import numpy as np
from PIL import Image, ImageDraw


def _color(label: int):
    r, g, b = colorsys.hsv_to_rgb((label * 0.618034) % 1.0, 0.85, 1.0)
    return int(r * 255), int(g * 255), int(b * 255)


def draw_detections(image_rgb: np.ndarray, detections: np.ndarray, class_names, out_path: str,
                    score_threshold: float = 0.3) -> int:
    """Draw boxes of ``detections`` [K, 6] (label, score, x1, y1, x2, y2) scoring >= threshold.

    Boxes are clipped to the image for drawing; the label sits above the box (inside it when the
    box touches the top edge). Writes ``out_path`` (PNG) and returns the number of boxes drawn.
    """
    img = Image.fromarray(np.ascontiguousarray(image_rgb)).convert("RGB")
    draw = ImageDraw.Draw(img)
    w, h = img.size
    n = 0
    for label, score, x1, y1, x2, y2 in np.asarray(detections, dtype=np.float64).reshape(-1, 6):
        if score < score_threshold:
            continue
        x1, x2 = sorted((min(max(x1, 0.0), w - 1.0), min(max(x2, 0.0), w - 1.0)))
        y1, y2 = sorted((min(max(y1, 0.0), h - 1.0), min(max(y2, 0.0), h - 1.0)))
        color = _color(int(label))
        draw.rectangle([x1, y1, x2, y2], outline=color, width=2)
        text = f"{class_names[int(label)]} {score:.2f}"
        top = y1 - 11 if y1 >= 11 else y1
        draw.rectangle([x1, top, x1 + draw.textlength(text) + 2, top + 11], fill=color)
        draw.text((x1 + 1, top), text, fill=(0, 0, 0))
        n += 1
    img.save(out_path, format="PNG")
    return n
