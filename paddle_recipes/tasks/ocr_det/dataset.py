"""Det dataset over PaddleOCR det label files, with counted bad-input skips.

Label lines are parsed once, in the main process, when the dataset is built (``labels.py``):
malformed lines/JSON and lines without a usable polygon are skipped and counted per ``file:line``
(``strict=True``: the first one raises ``DetLabelError``/``LabelFileError`` naming it instead);
polygon problems are counted per ``file:line polygon k``. Images are checked at load time, maybe in
a DataLoader worker: missing, corrupt (undecodable) or too large (``max_image_pixels``, read from
the header before decoding) images come back as ``("skip", where, reason)`` records, like the rec
dataset's, and polygons wholly outside the image are dropped (a skip when none is left).

``ds[i]`` -> ``transform(sample)`` where sample = {"image": BGR uint8 HWC, "polys": list of [K, 2]
float32, "ignore_tags": list of bool, "texts": list of str, "source": "file:line",
"polygon_problems": [(where, reason)]}; ``transform`` defaults to identity.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, List, Sequence, Tuple

from paddle_recipes.data import MAX_IMAGE_PIXELS, image_pixels, read_label_file

from ..ocr.dataset import SkipStats
from ..ocr.transforms import decode_image
from .labels import DetBox, DetLabelError, check_polygons_in_image, parse_det_label


class DetDataset:
    """``label_files``: PaddleOCR det label files; ``data_dir``: root of their image paths.
    ``stats``: a SkipStats that receives every label-time problem (``.stats``)."""

    def __init__(self, label_files: str | os.PathLike | Sequence[str | os.PathLike], data_dir: str | os.PathLike = ".",
                 strict: bool = False, max_image_pixels: int = MAX_IMAGE_PIXELS,
                 transform: Callable | None = None, name: str = "det data"):
        if isinstance(label_files, (str, os.PathLike)):
            label_files = [label_files]
        self.data_dir = Path(data_dir)
        self.max_image_pixels = max_image_pixels
        self.transform = transform
        self.stats = SkipStats(name)
        self.items: List[Tuple[str, List[DetBox], str]] = []  # (image path, boxes, "file:line")
        for f in label_files:
            recs = read_label_file(f, strict=strict)
            for skipped in recs.skipped:
                where, _, _detail = skipped.partition(": ")
                self.stats.add(where, "malformed_line")
            for rec in recs:
                try:
                    boxes, problems = parse_det_label(rec.label, rec.source)
                except DetLabelError as exc:
                    if strict:
                        raise
                    problems = exc.problems
                    self.stats.add(exc.where, exc.reason, exc.detail)
                    boxes = None
                for where, reason in problems:
                    self.stats.add(where, reason)
                if boxes is None:
                    continue
                self.items.append((rec.image_path, boxes, rec.source))

    def __len__(self) -> int:
        return len(self.items)

    def load(self, idx: int):
        """The raw sample dict (see module docstring) or ("skip", where, reason)."""
        path, boxes, where = self.items[idx]
        try:
            data = (self.data_dir / path).read_bytes()
        except OSError:
            return ("skip", where, "missing_image")
        if self.max_image_pixels and (image_pixels(data) or 0) > self.max_image_pixels:
            return ("skip", where, "too_large")
        img = decode_image(data)
        if img is None:
            return ("skip", where, "corrupt_image")
        boxes, problems = check_polygons_in_image(boxes, img.shape[0], img.shape[1], where)
        if not boxes:
            return ("skip", where, "no_text")
        return {"image": img, "polys": [b.points for b in boxes], "ignore_tags": [b.ignore for b in boxes],
                "texts": [b.text for b in boxes], "source": where, "polygon_problems": problems}

    def __getitem__(self, idx: int):
        sample = self.load(int(idx))
        if isinstance(sample, tuple) or self.transform is None:
            return sample
        return self.transform(sample)
