"""The real-photo line crops of tests/fixtures/real_crops (datasets/make_real_crops.py; photos and hand check in its
NOTICE.md), for benchmarks that measure what a fine-tuned rec model still reads of the real world."""
from __future__ import annotations

from pathlib import Path
from typing import List, Sequence, Tuple

import cv2
import numpy as np

from paddle_recipes.tasks.ocr_rec.transforms import resize_norm_pad

REAL_CROPS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "real_crops"


def read_label_file(folder: Path = REAL_CROPS) -> List[Tuple[Path, str]]:
    """(image path, text) per line of ``folder``/label.txt (PaddleOCR rec format ``path<TAB>text``)."""
    rows = (folder / "label.txt").read_text(encoding="utf-8").splitlines()
    return [(folder / p, t) for p, t in (r.split("\t", 1) for r in rows if r.strip())]


def load_real_crops(shape: Sequence[int] = (3, 48, 320), folder: Path = REAL_CROPS) -> Tuple[np.ndarray, List[str]]:
    """([N, C, H, W] float32, texts): every crop as our rec eval feeds it (resize_norm_pad: height H, width capped
    at W, (x / 255 - 0.5) / 0.5, zero-padded), and its label (the released PP-OCRv4 system's reading). With W = 320
    lines wider than 6.7 : 1 are squashed as in training-time eval; W = 1200 keeps every crop's own width."""
    items = read_label_file(folder)
    xs = np.stack([resize_norm_pad(cv2.imread(str(p)), shape)[0] for p, _ in items])
    return xs, [t for _, t in items]
