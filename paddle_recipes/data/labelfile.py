"""PaddleOCR label files: one ``relative/path.jpg<TAB>label`` per line; errors name ``file:line``.

    records = read_label_file("train.txt")   # [LabelRecord(image_path, label, "train.txt:3"), ...]
    LabelFileDataset(["train.txt"], data_dir="data")[0] -> (image_bytes, label)
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import NamedTuple, Sequence

from .images import ImageError, read_file

__all__ = ["LabelFileError", "LabelRecord", "LabelRecords", "read_label_file", "LabelFileDataset"]

class LabelFileError(ValueError):
    """A label file is missing, undecodable or has a malformed line (message names file:line)."""


class LabelRecord(NamedTuple):
    image_path: str  # as written in the file (relative to the data dir)
    label: str
    source: str      # "file:line" (1-based line)


class LabelRecords(list):
    """List of LabelRecord; ``skipped`` lists "file:line: reason" of skipped lines (non-strict)."""

    def __init__(self, items=(), skipped=None):
        super().__init__(items)
        self.skipped: list[str] = list(skipped or [])


_MAX_SKIP_WARNINGS = 20


def read_label_file(path: str | os.PathLike, delimiter: str = "\t", strict: bool = True) -> LabelRecords:
    """Read a PaddleOCR label file: one ``relative/path.jpg<delimiter>label`` per line.

    Splits on the first delimiter only, so labels may contain spaces (and further
    delimiters). A UTF-8 BOM, blank lines and CRLF endings are handled. A malformed line
    (no delimiter, empty path, empty label, invalid UTF-8) raises LabelFileError naming
    ``file:line`` when ``strict``; otherwise it is skipped, counted in ``.skipped`` and warned.
    """
    path = Path(path)
    if not path.is_file():
        raise LabelFileError(f"label file not found: {path}" +
                             (" (it is a directory)" if path.is_dir() else ""))
    raw = read_file(path, 0)  # a regular file (no FIFO / device, even if swapped in since the check)
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    out = LabelRecords()
    for lineno, bline in enumerate(raw.split(b"\n"), start=1):
        src = f"{path}:{lineno}"
        try:
            line = bline.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            problem = f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
        else:
            if not line.strip():
                continue
            img, sep, label = line.partition(delimiter)
            if not sep:
                problem = f"no {delimiter!r} delimiter between image path and label: {line[:80]!r}"
            elif not img.strip():
                problem = f"empty image path: {line[:80]!r}"
            elif not label:
                problem = f"empty label for {img!r}"
            else:
                out.append(LabelRecord(img.strip(), label, src))
                continue
        if strict:
            raise LabelFileError(f"{src}: malformed label line: {problem}")
        out.skipped.append(f"{src}: {problem}")
        if len(out.skipped) <= _MAX_SKIP_WARNINGS:
            warnings.warn(f"skipping malformed label line {src}: {problem}", RuntimeWarning, stacklevel=2)
    if len(out.skipped) > _MAX_SKIP_WARNINGS:
        warnings.warn(f"{path}: skipped {len(out.skipped)} malformed lines in total "
                      f"(only the first {_MAX_SKIP_WARNINGS} were shown)", RuntimeWarning, stacklevel=2)
    return out


class LabelFileDataset:
    """Images on disk listed by one or more PaddleOCR label files.

    ``ds[i] -> (image_bytes, label)`` (same as LmdbDataset); ``ds.records[i].source`` says
    where a sample came from. A missing image raises FileNotFoundError naming file:line.
    """

    read_label_file = staticmethod(read_label_file)

    def __init__(self, label_files: str | os.PathLike | Sequence[str | os.PathLike],
                 data_dir: str | os.PathLike = ".", delimiter: str = "\t", strict: bool = True):
        if isinstance(label_files, (str, os.PathLike)):
            label_files = [label_files]
        self.data_dir = Path(data_dir)
        self.records: list[LabelRecord] = []
        self.skipped: list[str] = []
        for f in label_files:
            recs = read_label_file(f, delimiter=delimiter, strict=strict)
            self.records.extend(recs)
            self.skipped.extend(recs.skipped)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, idx: int) -> tuple[bytes, str]:
        rec = self.records[idx]
        img = self.data_dir / rec.image_path
        try:
            return read_file(img), rec.label  # a regular file within the byte cap (data.images)
        except ImageError as exc:
            if exc.reason == "missing_image":
                raise FileNotFoundError(f"image {img} listed at {rec.source} does not exist") from None
            raise ImageError(exc.reason, f"{img} (listed at {rec.source})", exc.detail) from None
