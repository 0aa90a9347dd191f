"""Data blocks: the DataLoader (``loader``), the one image reader (``images``), bounded reads of files a user names
(``files``: regular files only, a byte cap checked before reading), and the PaddleOCR formats every OCR task reads:
label files (``labelfile``) and LMDB sets (``lmdb``). Each is usable alone::

    loader = build_loader(dataset, batch_sampler, LoaderConfig(num_workers=2), name="Train.loader")
    records = read_label_file("train.txt")              # [LabelRecord(image_path, label, "train.txt:3"), ...]
    write_lmdb("out/lmdb", [(jpeg_bytes, "你好"), ...])  # PaddleOCR keys, 1-based
    LmdbDataset("out/lmdb")[0] -> (jpeg_bytes, "你好")

The albumentations adapter (image + boxes) belongs to detection: paddle_recipes.tasks.det_ppyoloe.augment.
"""
from .images import (IMAGE_EXTS, MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS, ImageError, check_file, image_pixels, image_size,
                     list_images, read_image)
from .labelfile import LabelFileDataset, LabelFileError, LabelRecord, LabelRecords, read_label_file
from .lmdb import LmdbDataset, LmdbFormatError, LmdbLabelError, write_lmdb
from .loader import (DataError, GuardedCollate, GuardedDataset, LoaderConfig, LoaderTimeout, build_loader,
                     current_sample_key, seed_worker, shm_free_mb)

__all__ = [
    "LoaderConfig", "build_loader", "shm_free_mb", "seed_worker", "DataError", "LoaderTimeout", "GuardedDataset",
    "GuardedCollate",
    "current_sample_key", "IMAGE_EXTS", "list_images", "MAX_IMAGE_PIXELS", "MAX_IMAGE_BYTES", "image_pixels",
    "image_size", "ImageError", "check_file", "read_image",
    "LabelFileError", "LabelRecord", "LabelRecords", "read_label_file", "LabelFileDataset",
    "LmdbFormatError", "LmdbLabelError", "write_lmdb", "LmdbDataset",
]
