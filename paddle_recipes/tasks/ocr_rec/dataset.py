"""Recognition dataset over PaddleOCR label files or LMDBs, with counted bad-input skips.

Labels are validated once, in the main process, when the dataset is built:
unknown characters, empty labels and labels longer than ``max_text_length`` are
counted, warned per ``file:line`` (or ``lmdb:index``) and not loaded; listed
images that do not exist are treated the same way.

Images that fail to decode (corrupt files) are only found at load time, maybe in
a DataLoader worker. The sample then comes back as a skip record; ``collate``
drops it from the batch and carries ``batch["skipped"]`` (a list of
``(where, reason)``) to the main process, where :class:`SkipStats` counts it.
With ``replace_bad=True`` (training) a random other sample is loaded instead so
batch shapes stay fixed (no uneven DDP batches); the skip is still reported.
"""
from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Sequence, Tuple

import numpy as np

from paddle_recipes.config import check_image_shape
from paddle_recipes.data import (MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, DataError, ImageError, LmdbDataset, LmdbLabelError,
                                 check_file, read_image, read_label_file)
from paddle_recipes.data.skips import SkipStats, first_loadable

from .charset import WIDTH_MODES, CharDict, normalize_width
from .transforms import resize_norm_pad
from .ppocr_losses import nrtr_labels
from .augment import build_augment, reseed

logger = logging.getLogger(__name__)



class DataPathError(FileNotFoundError):
    """A configured data path does not exist (message names the config key and the path)."""


@dataclass
class DatasetConfig:
    """One dataset section (``Train.dataset`` / ``Eval.dataset``).

    format: "label_file" (images + ``path<TAB>label`` files) or "lmdb" (PaddleOCR LMDB).
    data_dir: root of the image paths in label files; for lmdb, an LMDB dir or a folder of LMDB dirs.
    label_file_list: label files (format label_file only).
    ratio_list: fraction (0, 1] of each label file an epoch uses, a fresh random draw every epoch
        (PaddleOCR's ratio_list; Train with Train.sampler only); [] (default) = every sample.
    delimiter: separator between image path and label.
    max_image_pixels: images with more pixels (width x height, read from the header before
        decoding) are skipped and counted as too_large; 0 = no limit. Default 8e7.
    max_image_bytes: image files of more bytes are skipped and counted as file_too_large; 0 = no limit.
        Default 256 MiB (268435456). FIFOs, devices and sockets are never read (not_a_file); see data.images.
    normalize_width: "none" (default: labels as written), "halfwidth" (full-width ASCII variants and
        U+3000 -> ASCII) or "fullwidth" (the reverse), applied to every label before the dict check.
    aug: augment training images (perspective, blur, noise, contrast; our stand-in for PaddleOCR's RecAug;
    Train only). glyph_aug: with aug, also vary the glyphs' shape as another font would (piecewise stretch,
    slant, stroke weight; augment.GlyphVariation), for reading fonts never trained on. label_encoder:
    CTCLabelEncode (CTC labels) | MultiLabelEncode (CTC + NRTR labels for a MultiHead model; labels longer
    than max_text_length - 2 are skipped, counted). gtc_encode: the second label of MultiLabelEncode:
    NRTRLabelEncode ("" = none).
    """

    format: str = "label_file"
    data_dir: str = ""
    label_file_list: List[str] = field(default_factory=list)
    ratio_list: List[float] = field(default_factory=list)
    delimiter: str = "\t"
    max_image_pixels: int = MAX_IMAGE_PIXELS
    max_image_bytes: int = MAX_IMAGE_BYTES
    normalize_width: str = "none"
    aug: bool = False
    glyph_aug: bool = False
    label_encoder: str = "CTCLabelEncode"
    gtc_encode: str = ""

    def __post_init__(self):
        if self.glyph_aug and not self.aug:
            raise ValueError("dataset.glyph_aug: true needs dataset.aug: true (it adds to that augmentation)")
        if self.format not in ("label_file", "lmdb"):
            raise ValueError(f"dataset.format must be 'label_file' or 'lmdb', got {self.format!r}")
        if self.ratio_list and (len(self.ratio_list) != len(self.label_file_list)
                                or not all(0 < r <= 1 for r in self.ratio_list)):
            raise ValueError(f"dataset.ratio_list {self.ratio_list} needs one value in (0, 1] per label file "
                             f"({len(self.label_file_list)})")
        for key in ("max_image_pixels", "max_image_bytes"):
            if getattr(self, key) < 0:
                raise ValueError(f"dataset.{key} must be >= 0 (0 = no limit), got {getattr(self, key)}")
        if self.normalize_width not in WIDTH_MODES:
            raise ValueError(f"dataset.normalize_width must be one of {WIDTH_MODES}, got {self.normalize_width!r}")
        if self.label_encoder not in ("CTCLabelEncode", "MultiLabelEncode"):
            raise ValueError(f"dataset.label_encoder must be CTCLabelEncode or MultiLabelEncode, "
                             f"got {self.label_encoder!r}")
        allowed = ("", "NRTRLabelEncode") if self.label_encoder == "MultiLabelEncode" else ("",)
        if self.gtc_encode not in allowed:
            raise ValueError(f"dataset.gtc_encode {self.gtc_encode!r}: {self.label_encoder} takes "
                             f"{' or '.join(repr(a) for a in allowed)} here")

def _check_path(path: str, key: str, kind: str = "path") -> Path:
    p = Path(path)
    if not str(path) or not p.exists():
        raise DataPathError(f"{key}: {kind} {str(path)!r} does not exist "
                            f"(fix it in the config or with -o {key}=...)")
    return p


def find_lmdb_dirs(root: str | os.PathLike) -> List[Path]:
    """``root`` itself if it holds data.mdb, else every sub-folder (recursively) that does, sorted."""
    root = Path(root)
    if (root / "data.mdb").is_file():
        return [root]
    return sorted(p.parent for p in root.rglob("data.mdb"))


class RecDataset:
    """Text-line recognition samples -> dicts of image [C,H,W] float32, label ids, length, text.

    Args:
        cfg: DatasetConfig.
        charset: CharDict used to encode labels.
        image_shape: (C, H, W) model input, default (3, 48, 320).
        max_text_length: longest label kept (longer ones are skipped and counted).
        replace_bad: on a corrupt image, load a random other sample instead (training).
        key: config key prefix used in error messages (e.g. "Train.dataset").
        keep_max_length: longest label kept (default max_text_length; NRTR labels need max_text_length - 2).
        aug: augment images (cfg.aug of a training set).
    """

    def __init__(self, cfg: DatasetConfig, charset: CharDict, image_shape: Sequence[int] = (3, 48, 320),
                 max_text_length: int = 25, replace_bad: bool = False, key: str = "dataset",
                 keep_max_length: int | None = None, aug: bool = False):
        self.cfg, self.charset = cfg, charset
        self.image_shape = check_image_shape("Global.image_shape", image_shape)
        self.max_text_length = int(max_text_length)
        self.keep_max_length = int(keep_max_length or max_text_length)
        self._aug = None
        if aug:
            self._aug = build_augment(glyph=cfg.glyph_aug)
        self.replace_bad = replace_bad
        self.stats = SkipStats(key)
        self.items: List[Tuple[object, List[int], str, str]] = []  # (image key, ids, text, where)
        self.tags: List[str] | None = None  # per-item tag (e.g. the font of a synthetic line), see attach_tags
        if cfg.format == "label_file":
            self._init_label_files(key)
        else:
            self._init_lmdb(key)
        if not first_loadable(self):
            where = (", ".join(cfg.label_file_list) or "no label_file_list") if cfg.format == "label_file" \
                else (cfg.data_dir or "no data_dir")
            raise DataError(f"{key}: no usable samples in {where} ({self.stats.summary()}); check data_dir / "
                            f"label files and the character dict")
        logger.info("%s: %d samples (%s)", key, len(self.items), self.stats.summary())

    # ------------------------------------------------------------------ init
    def _keep(self, image_key, text: str, where: str) -> None:
        text = normalize_width(text, self.cfg.normalize_width)
        res = self.charset.check(text, self.keep_max_length)
        if res.ids is None:
            missing = self.charset.unknown_chars(text) if res.reason == "unknown_char" else ()
            self.stats.add(where, res.reason, res.detail, missing)
        else:
            self.items.append((image_key, res.ids, text, where))

    def _init_label_files(self, key: str) -> None:
        data_dir = _check_path(self.cfg.data_dir, f"{key}.data_dir", "data_dir")
        if not self.cfg.label_file_list:
            raise DataPathError(f"{key}.label_file_list is empty (format label_file needs at least one file)")
        self._source = None
        spans = []
        for i, lf in enumerate(self.cfg.label_file_list):
            _check_path(lf, f"{key}.label_file_list[{i}]", "label file")
            spans.append(len(self.items))
            # strict=False: malformed lines (no tab, empty label) are skipped and counted, not fatal.
            recs = read_label_file(lf, delimiter=self.cfg.delimiter, strict=False)
            for s in recs.skipped:
                where, _, why = s.partition(": ")
                reason = "empty" if why.startswith("empty label") else "malformed_line"
                self.stats.add(where, reason, why)
            for rec in recs:
                path = data_dir / rec.image_path
                try:
                    check_file(path, self.cfg.max_image_bytes)  # missing, not a regular file, too many bytes
                except ImageError as exc:
                    self.stats.add(rec.source, exc.reason, str(path))
                    continue
                self._keep(str(path), rec.label, rec.source)
        if self.cfg.ratio_list:  # (start, stop, ratio) per label file, for the sampler
            self.ratio_spans = list(zip(spans, spans[1:] + [len(self.items)], self.cfg.ratio_list))

    def _init_lmdb(self, key: str) -> None:
        root = _check_path(self.cfg.data_dir, f"{key}.data_dir", "data_dir")
        dirs = find_lmdb_dirs(root)
        if not dirs:
            raise DataPathError(f"{key}.data_dir: no LMDB (data.mdb) found under {str(root)!r}")
        self._source = LmdbDataset(dirs)
        for i in range(len(self._source)):
            part, k = self._source.locate(i)
            try:
                _, label = self._source[i]
            except LmdbLabelError as exc:  # counted, named by lmdb:index
                self.stats.add(f"{dirs[part]}:{k}", "malformed_line", str(exc))
                continue
            self._keep(i, label, f"{dirs[part]}:{k}")

    def attach_tags(self, tags: Sequence[str]) -> None:
        """Give every item a tag (e.g. its font) from ``tags``, one per source record in file order
        (line ``n`` of a single label file / LMDB key ``n`` -> ``tags[n - 1]``); samples then carry
        ``"tag"`` and batches ``batch["tag"]``."""
        out = []
        for _, _, _, where in self.items:
            n = int(str(where).rsplit(":", 1)[1])
            if not 1 <= n <= len(tags):
                raise ValueError(f"{where}: no tag for this record ({len(tags)} tags given)")
            out.append(tags[n - 1])
        self.tags = out

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        return len(self.items)

    def sample_name(self, idx: int) -> str:
        """Where sample ``idx`` comes from: "label file:line" or "lmdb dir:index" (loader errors name it)."""
        return self.items[idx][3]

    def label_lengths(self) -> List[int]:
        """Characters (label ids) per sample, in index order (the length curriculum reads them)."""
        return [len(ids) for _, ids, _, _ in self.items]

    def load(self, idx: int, image_shape: Sequence[int] | None = None):
        """Sample dict, or ("skip", where, reason) when the image can't be read/decoded (data.read_image's reasons).
        image_shape: (C, H, W) of this sample (default self.image_shape; multi-scale training passes others)."""
        image_key, ids, text, where = self.items[idx]
        src = image_key if self._source is None else self._source[image_key][0]
        try:
            img = read_image(src, self.cfg.max_image_pixels, self.cfg.max_image_bytes, name=where)
        except ImageError as exc:
            return ("skip", where, exc.reason)
        if self._aug is not None:  # seeded from numpy's state (per-sample seeds under MultiScaleDataset)
            reseed(self._aug, int(np.random.randint(2**31 - 1)))
            img = self._aug(image=img)["image"]
        x, _ = resize_norm_pad(img, image_shape or self.image_shape)
        label = np.zeros([self.max_text_length], dtype=np.int32)
        label[:len(ids)] = ids
        sample = {"image": x, "label": label, "length": np.int64(len(ids)), "text": text}
        if self.tags is not None:
            sample["tag"] = self.tags[idx]
        return sample

    def __getitem__(self, idx: int):
        return self.get_scaled(idx)

    def get_scaled(self, idx: int, h: int | None = None, w: int | None = None):
        """Sample `idx` resized to height h, width w (None: Global.image_shape); MultiScaleDataset calls it."""
        shape = None if h is None else (self.image_shape[0], int(h), int(w))
        sample = self.load(int(idx), shape)
        if not isinstance(sample, tuple) or not self.replace_bad:
            return sample
        skipped = [sample[1:]]
        rng = random.Random(int(idx))
        for _ in range(10):
            sample = self.load(rng.randrange(len(self.items)), shape)
            if not isinstance(sample, tuple):
                sample["skipped"] = skipped
                return sample
            skipped.append(sample[1:])
        return ("skip_many", skipped)

def collate(samples: list) -> dict:
    """Stack good samples; drop skip records into ``batch["skipped"]`` [(where, reason), ...].

    Keys: image [B,C,H,W] float32, label [B,L] int32 (0-padded), length [B] int64,
    text (list of str), skipped (list of (where, reason)), num_samples [1] int64 (readable samples),
    tag (list of str, when the dataset has tags).
    """
    good, skipped = [], []
    for s in samples:
        if isinstance(s, dict):
            skipped.extend(tuple(x) for x in s.get("skipped", ()))
            good.append(s)
        elif s[0] == "skip":
            skipped.append((s[1], s[2]))
        else:  # ("skip_many", [...])
            skipped.extend(tuple(x) for x in s[1])
    # num_samples is an array, so a batch whose samples were all unreadable still reaches the
    # training step (paddle's DataLoader drops batches without arrays: ranks would fall out of step).
    batch = {"skipped": [f"{w}\t{r}" for w, r in skipped], "text": [s["text"] for s in good],
             "num_samples": np.asarray([len(good)], dtype=np.int64)}
    if good and "tag" in good[0]:
        batch["tag"] = [s["tag"] for s in good]
    if good:
        batch["image"] = np.stack([s["image"] for s in good])
        batch["label"] = np.stack([s["label"] for s in good])
        batch["length"] = np.asarray([s["length"] for s in good], dtype=np.int64)
    return batch


def collate_gtc(samples: list, max_text_length: int = 25) -> dict:
    """`collate` plus ``label_gtc`` [B, max_text_length] int64: the NRTR labels of a MultiHead model
    (PaddleOCR's MultiLabelEncode; the dataset keeps only labels that fit, see nrtr_fits)."""
    batch = collate(samples)
    if "label" in batch:
        batch["label_gtc"] = nrtr_labels(batch["label"], batch["length"], max_text_length)
    return batch
