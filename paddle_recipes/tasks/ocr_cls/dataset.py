"""Orientation samples from PaddleOCR cls label files (``path<TAB>label``, label one of Global.label_list), cls LMDBs
(image-%09d / label-%09d) or the synthetic text lines of the rec generator, a share of them turned by 180 degrees.

    ds = ClsDataset(DatasetConfig(data_dir="D", label_file_list=["D/train.txt"]), cls_input, key="Train.dataset")
    ds[0] -> {"image": float32 [C, H, W], "label": int64}

A label that is not in label_list but an index into it (PaddleClas / PaddleX label files: ``path class_id``) is that
class. Bad input is counted per reason in ``ds.stats`` (data.skips.SkipStats, one warning per place): a label outside
label_list (unknown_label), an image data.read_image refuses (missing, not a regular file, too many bytes or
pixels, corrupt). ``rotate_ratio`` > 0 (the synthetic split): the
line's text label is not read; the line is turned with that probability (a fresh draw per fetch when ``train``, a
fixed draw per index otherwise) and labelled with the turned class.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import List, Tuple

import numpy as np

from paddle_recipes.data import DataError, ImageError, LmdbDataset, LmdbLabelError, check_file, read_image, read_label_file
from paddle_recipes.data.skips import SkipStats
from paddle_recipes.tasks.ocr_rec.dataset import DataPathError, DatasetConfig, find_lmdb_dirs

from .config import ClsInput
from .transforms import preprocess, rotate180
from paddle_recipes.tasks.ocr_rec.augment import build_augment


class ClsDataset:
    """Samples of one split (see the module doc). seed: base of the fixed per-index rotation draws."""

    def __init__(self, cfg: DatasetConfig, spec: ClsInput, key: str = "dataset", rotate_ratio: float = 0.0,
                 train: bool = False, seed: int = 0):
        self.cfg, self.spec, self.key = cfg, spec, key
        self.rotate_ratio, self.train, self.seed = float(rotate_ratio), train, int(seed)
        if self.rotate_ratio and spec.turned is None:
            raise DataError(f"{key}: synthetic rotation needs exactly one label containing '180' in "
                            f"Global.label_list, got {list(spec.labels)}")
        self.stats = SkipStats(key)
        self.items: List[Tuple[object, int, str]] = []  # (image key, class, where)
        self._aug = None
        if train and cfg.aug:
            self._aug = build_augment(glyph=cfg.glyph_aug)
        self._lmdb = None
        if cfg.format == "lmdb":
            self._init_lmdb()
        else:
            self._init_label_files()
        if not self.items:
            raise DataError(f"{key}: no usable samples in {cfg.data_dir or cfg.label_file_list} "
                            f"({self.stats.summary()}); labels must be one of {list(spec.labels)}")

    def _label(self, label: str, where: str):
        if self.rotate_ratio:
            return 0
        if label in self.spec.labels:
            return self.spec.labels.index(label)
        if label.isdigit() and int(label) < len(self.spec.labels):  # PaddleClas / PaddleX files: a class id
            return int(label)
        self.stats.add(where, "unknown_label", f"{label!r} not in {list(self.spec.labels)}")
        return None

    def _init_label_files(self) -> None:
        root = Path(self.cfg.data_dir)
        if not self.cfg.data_dir or not root.is_dir():
            raise DataPathError(f"{self.key}.data_dir: {self.cfg.data_dir!r} is not a folder")
        if not self.cfg.label_file_list:
            raise DataPathError(f"{self.key}.label_file_list is empty (format label_file needs at least one file)")
        for i, lf in enumerate(self.cfg.label_file_list):
            if not Path(lf).is_file():
                raise DataPathError(f"{self.key}.label_file_list[{i}]: {lf!r} is not a file")
            recs = read_label_file(lf, delimiter=self.cfg.delimiter, strict=False)
            for s in recs.skipped:
                where, _, why = s.partition(": ")
                self.stats.add(where, "malformed_line", why)
            for rec in recs:
                path = root / rec.image_path
                try:
                    check_file(path, self.cfg.max_image_bytes)  # missing, not a regular file, too many bytes
                except ImageError as exc:
                    self.stats.add(rec.source, exc.reason, str(path))
                    continue
                cls = self._label(rec.label.strip(), rec.source)
                if cls is not None:
                    self.items.append((str(path), cls, rec.source))

    def _init_lmdb(self) -> None:
        dirs = find_lmdb_dirs(self.cfg.data_dir) if self.cfg.data_dir and Path(self.cfg.data_dir).is_dir() else []
        if not dirs:
            raise DataPathError(f"{self.key}.data_dir: no LMDB (data.mdb) under {self.cfg.data_dir!r}")
        self._lmdb = LmdbDataset(dirs)
        for i in range(len(self._lmdb)):
            part, k = self._lmdb.locate(i)
            where = f"{dirs[part]}:{k}"
            try:
                _, label = self._lmdb[i]
            except LmdbLabelError as exc:
                self.stats.add(where, "malformed_line", str(exc))
                continue
            cls = self._label(label.strip(), where)
            if cls is not None:
                self.items.append((i, cls, where))

    def __len__(self) -> int:
        return len(self.items)

    def _turned(self, idx: int) -> bool:
        draw = np.random.random() if self.train else np.random.default_rng([self.seed, idx]).random()
        return bool(draw < self.rotate_ratio)

    def load(self, idx: int):
        """Sample dict, or ("skip", where, reason) (data.read_image's reasons)."""
        key, cls, where = self.items[idx]
        src = key if self._lmdb is None else self._lmdb[key][0]
        try:
            img = read_image(src, self.cfg.max_image_pixels, self.cfg.max_image_bytes, name=where)
        except ImageError as exc:
            return ("skip", where, exc.reason)
        if self._aug is not None:
            self._aug.set_random_seed(int(np.random.randint(2**31 - 1)))
            img = self._aug(image=img)["image"]
        if self.rotate_ratio and self._turned(idx):
            img, cls = rotate180(img), self.spec.turned
        return {"image": preprocess(img, self.spec.image_shape, self.spec.mode), "label": np.int64(cls)}

    def __getitem__(self, idx: int):
        sample = self.load(int(idx))
        if not isinstance(sample, tuple) or not self.train:
            return sample
        rng = random.Random(int(idx))  # training: another sample keeps the batch shape; the skip is still counted
        for _ in range(10):
            other = self.load(rng.randrange(len(self.items)))
            if not isinstance(other, tuple):
                other["skipped"] = [sample[1:]]
                return other
        return sample

def collate(samples: list) -> dict:
    """Stack readable samples: image [B, C, H, W] float32, label [B] int64; skipped: ["where<TAB>reason", ...];
    num_samples [1] int64 (tasks.ocr.dataset.unpack_skipped reads skipped)."""
    good = [s for s in samples if isinstance(s, dict)]
    skipped = [f"{s[1]}\t{s[2]}" for s in samples if isinstance(s, tuple)]
    skipped += [f"{w}\t{r}" for s in good for w, r in s.get("skipped", ())]
    batch = {"skipped": skipped, "num_samples": np.asarray([len(good)], dtype=np.int64)}
    if good:
        batch["image"] = np.stack([s["image"] for s in good])
        batch["label"] = np.asarray([s["label"] for s in good], dtype=np.int64)
    return batch
