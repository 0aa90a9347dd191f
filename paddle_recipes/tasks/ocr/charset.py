"""Character dictionary for CTC text recognition.

A dict file has one character per line (like PaddleOCR's ``ppocr_keys_v1.txt``).
Index 0 is reserved for the CTC blank, so character ``i`` of the file
(0-based) gets class id ``i + 1`` and ``num_classes = len(chars) + 1``.
"""
from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from typing import Iterable, List, Sequence

BLANK = 0


class CharDictError(ValueError):
    """A dict file is missing or malformed (message names the file and line)."""


@dataclass
class EncodeResult:
    """Result of :meth:`CharDict.check`: ``ids`` is None when the label is rejected."""

    ids: List[int] | None
    reason: str | None = None  # "empty" | "too_long" | "unknown_char"
    detail: str = ""


def is_single_symbol(entry: str) -> bool:
    """One character, or one symbol written with several code points: a flag (two regional
    indicators) or a base followed by combining marks, variation selectors, skin-tone modifiers or
    zero-width-joined parts. PaddleOCR's ``ppocrv5_dict.txt`` has 10 flag entries (lines 17744-17753);
    they keep their class id (so the class count matches PaddleOCR's), decode to the symbol, and like
    in PaddleOCR, whose encoder walks code points, labels never encode to them."""
    if len(entry) == 1:
        return True
    if len(entry) == 2 and all(0x1F1E6 <= ord(ch) <= 0x1F1FF for ch in entry):
        return True
    if not entry or unicodedata.combining(entry[0]):
        return False
    after_zwj = False
    for ch in entry[1:]:
        cp = ord(ch)
        extender = (unicodedata.combining(ch) or 0xFE00 <= cp <= 0xFE0F or 0x1F3FB <= cp <= 0x1F3FF
                    or cp == 0x200D)
        if not (extender or after_zwj):
            return False
        after_zwj = cp == 0x200D
    return not after_zwj


class CharDict:
    """Map characters <-> CTC class ids (blank = 0).

    Args:
        chars: characters in class order (without blank); duplicates are an error.
        use_space_char: append " " as the last class if it is not already there.
    """

    def __init__(self, chars: Sequence[str], use_space_char: bool = False, source: str = "<list>"):
        chars = list(chars)
        if use_space_char and " " not in chars:
            chars.append(" ")
        seen = {}
        for i, c in enumerate(chars):
            if not is_single_symbol(c):
                raise CharDictError(f"{source}: entry {i + 1} is {c!r}; expected exactly one character")
            if c in seen:
                raise CharDictError(f"{source}: character {c!r} appears twice (entries {seen[c] + 1} and {i + 1})")
            seen[c] = i
        if not chars:
            raise CharDictError(f"{source}: dictionary is empty")
        self.chars: List[str] = chars
        self.source = source
        self._index = {c: i + 1 for i, c in enumerate(chars)}

    @classmethod
    def from_file(cls, path: str | os.PathLike, use_space_char: bool = False) -> "CharDict":
        """Load a one-char-per-line dict. Empty lines are skipped; "\\r\\n" is tolerated."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise CharDictError(f"character dict file not found: {path!r}")
        chars = []
        with open(path, "r", encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                c = line.rstrip("\r\n")
                if c == "":
                    continue
                if not is_single_symbol(c):
                    raise CharDictError(f"{path}:{lineno}: expected one character per line, got {c!r}")
                chars.append(c)
        return cls(chars, use_space_char=use_space_char, source=path)

    @property
    def num_classes(self) -> int:
        """Number of CTC output classes including the blank."""
        return len(self.chars) + 1

    def __len__(self) -> int:
        return len(self.chars)

    def __contains__(self, ch: str) -> bool:
        return ch in self._index

    def unknown_chars(self, text: str) -> List[str]:
        """Distinct characters of ``text`` not in the dict, in order of appearance."""
        out = []
        for c in text:
            if c not in self._index and c not in out:
                out.append(c)
        return out

    def encode(self, text: str) -> List[int]:
        """Encode text to class ids; raises KeyError naming unknown characters."""
        bad = self.unknown_chars(text)
        if bad:
            raise KeyError(f"characters not in dict {self.source}: {''.join(bad)!r} (label {text!r})")
        return [self._index[c] for c in text]

    def check(self, text: str, max_text_length: int) -> EncodeResult:
        """Validate and encode a label without raising; see :class:`EncodeResult`."""
        if text == "":
            return EncodeResult(None, "empty", "empty label")
        bad = self.unknown_chars(text)
        if bad:
            return EncodeResult(None, "unknown_char", f"characters not in dict: {''.join(bad)!r}")
        if len(text) > max_text_length:
            return EncodeResult(None, "too_long", f"label length {len(text)} > max_text_length {max_text_length}")
        return EncodeResult([self._index[c] for c in text])

    def decode_ids(self, ids: Iterable[int]) -> str:
        """Ids (blank/duplicates already removed) -> text. Blank ids are ignored."""
        return "".join(self.chars[i - 1] for i in ids if i != BLANK)

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for c in self.chars:
                f.write(c + "\n")


def gb2312_level1_hanzi() -> List[str]:
    """The 3755 GB2312 level-1 (most common) hanzi, in GB2312 order (by pinyin).

    Generated from the codec, no download: rows 0xB0..0xD7, cells 0xA1..0xFE,
    the last row ends at 0xD7F9.
    """
    out = []
    for hi in range(0xB0, 0xD8):
        for lo in range(0xA1, 0xFF):
            if hi == 0xD7 and lo > 0xF9:
                break
            out.append(bytes([hi, lo]).decode("gb2312"))
    return out


def common_chars(num_hanzi: int = 3000, with_ascii: bool = True) -> List[str]:
    """First ``num_hanzi`` GB2312 level-1 hanzi, plus digits and latin letters."""
    chars = gb2312_level1_hanzi()[:num_hanzi]
    if with_ascii:
        chars += list("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return chars


def spread_subset(chars: Sequence[str], n: int) -> List[str]:
    """``n`` characters taken at even steps through ``chars`` (deterministic; for a smaller
    dict that still covers the whole list, e.g. all pinyin initials of GB2312 level 1)."""
    chars = list(chars)
    if n >= len(chars):
        return chars
    return [chars[(i * len(chars)) // n] for i in range(n)]
