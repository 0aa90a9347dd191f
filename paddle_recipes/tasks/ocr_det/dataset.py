"""Det dataset over PaddleOCR det label files, with counted bad-input skips.

Label lines are parsed once, in the main process, when the dataset is built (``labels.py``):
malformed lines/JSON and lines without a usable polygon are skipped and counted per ``file:line``
(``strict=True``: the first one raises ``DetLabelError``/``LabelFileError`` naming it instead);
polygon problems are counted per ``file:line polygon k``. Listed images that are missing, not regular files
(FIFO, device) or above ``max_image_bytes`` are counted at build (data.check_file), as the rec dataset does, and
the first listed image is read: a set with no usable sample, or no readable image, is a DataError (one line)
before any training. At load time, maybe in a DataLoader worker, images go through data.read_image: corrupt or
too large (``max_image_pixels``, from the header, never decoded) ones come back as ``("skip", where, reason)``
records; polygons wholly outside the image are dropped and counted (``outside_image``; a skip ``no_text`` when
none is left), the others clamped into the image (labels.clip_polygons_to_image).

``ds.load(i)`` -> ("skip", where, reason) or sample = {"image": BGR uint8 HWC, "polys": list of [K, 2] float32,
"ignore_tags": list of bool, "texts": list of str, "source": "file:line", "polygon_problems": [(where, reason)]};
``ds[i]`` -> ``transform(sample)`` (default identity) with the sample's polygon problems in ``"skipped"``, which
``batch.collate`` carries to the main process to be counted.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, List, Sequence, Tuple

from paddle_recipes.data import (MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, DataError, ImageError, check_file, read_image,
                                 read_label_file)

from ...data.skips import SkipStats, first_loadable
from .labels import DetBox, DetLabelError, clip_polygons_to_image, parse_det_label


class DetDataset:
    """``label_files``: PaddleOCR det label files; ``data_dir``: root of their image paths.
    ``stats``: a SkipStats that receives every label-time problem (``.stats``)."""

    def __init__(self, label_files: str | os.PathLike | Sequence[str | os.PathLike], data_dir: str | os.PathLike = ".",
                 strict: bool = False, max_image_pixels: int = MAX_IMAGE_PIXELS,
                 transform: Callable | None = None, name: str = "det data", max_image_bytes: int = MAX_IMAGE_BYTES):
        if isinstance(label_files, (str, os.PathLike)):
            label_files = [label_files]
        self.data_dir = Path(data_dir)
        self.max_image_pixels, self.max_image_bytes = max_image_pixels, max_image_bytes
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
                try:
                    check_file(self.data_dir / rec.image_path, max_image_bytes)
                except ImageError as exc:
                    self.stats.add(rec.source, exc.reason, exc.detail)
                    continue
                self.items.append((rec.image_path, boxes, rec.source))
        if not first_loadable(self):
            files = ", ".join(str(f) for f in label_files) or "no label files"
            raise DataError(f"{name} ({files}, data_dir {self.data_dir}): no usable sample ({self.stats.summary()}); "
                            f"check data_dir and the label files")

    def __len__(self) -> int:
        return len(self.items)

    def sample_name(self, idx: int) -> str:
        """"label file:line" of sample ``idx`` (loader errors name it)."""
        return self.items[idx][2]

    def load(self, idx: int):
        """The raw sample dict (see module docstring) or ("skip", where, reason)."""
        path, boxes, where = self.items[idx]
        try:
            img = read_image(self.data_dir / path, self.max_image_pixels, self.max_image_bytes, name=where)
        except ImageError as exc:
            return ("skip", where, exc.reason)
        boxes, problems = clip_polygons_to_image(boxes, img.shape[0], img.shape[1], where)
        if not boxes:
            return ("skip", where, "no_text")
        return {"image": img, "polys": [b.points for b in boxes], "ignore_tags": [b.ignore for b in boxes],
                "texts": [b.text for b in boxes], "source": where, "polygon_problems": problems}

    def __getitem__(self, idx: int):
        sample = self.load(int(idx))
        if isinstance(sample, tuple) or self.transform is None:
            return sample
        out = self.transform(sample)
        if sample["polygon_problems"]:
            out["skipped"] = list(sample["polygon_problems"])
        return out
