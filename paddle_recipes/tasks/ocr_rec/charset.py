"""Character dictionary for CTC text recognition.

A dict file has one character per line (like PaddleOCR's ``ppocr_keys_v1.txt``).
Index 0 is reserved for the CTC blank, so character ``i`` of the file
(0-based) gets class id ``i + 1`` and ``num_classes = len(chars) + 1``.

An entry may be one user-perceived character made of several code points (PaddleOCR's
``ppocrv5_dict.txt`` has flag emoji such as "🇨🇳", two regional indicators); such entries are one
class, and labels are split into entries by longest match. Two base characters on one line are an
error. Lines are kept as they are apart from the line break, so a full-width space (U+3000) line
is an entry.
"""
from __future__ import annotations

import functools
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

from ...assets import resolve_path
from ...config import bounded_repr
from ...data.files import check_size, regular_file_size
from ...formats.inference_files import InferenceFormatError, capped, is_inference_model, read_inference_yml

WIDTH_MODES = ("none", "halfwidth", "fullwidth")

BLANK = 0


class CharDictError(ValueError):
    """A dict file is missing or malformed (message names the file and line)."""


@dataclass
class EncodeResult:
    """Result of :meth:`CharDict.check`: ``ids`` is None when the label is rejected."""

    ids: List[int] | None
    reason: str | None = None  # "empty" | "too_long" | "unknown_char"
    detail: str = ""


def _joins(cp: str) -> bool:
    """Code points that attach to a base character: marks, format chars (ZWJ), variation
    selectors, emoji skin-tone modifiers, regional indicators (flag halves)."""
    o = ord(cp)
    return (unicodedata.category(cp) in ("Mn", "Mc", "Me", "Cf") or 0xFE00 <= o <= 0xFE0F
            or 0xE0100 <= o <= 0xE01EF or 0x1F3FB <= o <= 0x1F3FF or 0x1F1E6 <= o <= 0x1F1FF)


def is_single_entry(entry: str) -> bool:
    """True for one user-perceived character: at most one base code point plus joining ones."""
    return len(entry) == 1 or (len(entry) > 1 and sum(not _joins(c) for c in entry) <= 1)


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
            if not is_single_entry(c):
                raise CharDictError(f"{source}: entry {i + 1} is {bounded_repr(c)}; expected exactly one character")
            if c in seen:
                raise CharDictError(f"{source}: character {c!r} appears twice (entries {seen[c] + 1} and {i + 1})")
            seen[c] = i
        if not chars:
            raise CharDictError(f"{source}: dictionary is empty")
        self.chars: List[str] = chars
        self.source = source
        self._index = {c: i + 1 for i, c in enumerate(chars)}
        self._longest = max(len(c) for c in chars)  # code points of the longest entry (1 = fast path)

    @classmethod
    def from_file(cls, path: str | os.PathLike, use_space_char: bool = False) -> "CharDict":
        """Load a one-char-per-line UTF-8 dict ("\\r\\n" tolerated; an empty line or a byte-order mark is a CharDictError
        naming the line: PaddleOCR would read them as classes). A ``.yml`` / ``.yaml`` is a PaddleX ``inference.yml`` (its ``PostProcess.character_dict``); a folder is an inference model folder
        (model_dict_file: its inference.yml, else its character_dict.txt)."""
        path = os.fspath(path)
        if os.path.isdir(path):
            found = model_dict_file(path)
            if found is None:
                raise CharDictError(f"{path}: a folder without a dict (no inference.yml with PostProcess."
                                    "character_dict, no character_dict.txt)")
            path = str(found)
        if not os.path.exists(path):
            raise CharDictError(f"character dict file not found: {path!r}")
        regular_file_size(path, CharDictError, "character dict file")  # a FIFO, a device: refused, never opened
        if path.endswith((".yml", ".yaml")):
            return cls(inference_yml_chars(path), use_space_char=use_space_char, source=path)
        try:  # at most file_caps()["dict"] bytes (1 MiB), from os.stat: nothing read from a larger file
            capped(Path(path), "dict", "character dict file", read=check_size)
        except InferenceFormatError as exc:
            raise CharDictError(str(exc)) from None
        chars = []
        with open(path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise CharDictError(f"{path}:{lineno}: not UTF-8 text") from None
                c = line.rstrip("\r\n")
                if lineno == 1 and c.startswith("\ufeff"):
                    raise CharDictError(f"{path}:1: starts with a byte-order mark (U+FEFF), which PaddleOCR reads as "
                                        "part of the first character: save the file as UTF-8 without BOM")
                if c == "":  # PaddleOCR makes an empty line a class: every row after it would shift against ours
                    raise CharDictError(f"{path}:{lineno}: empty line (PaddleOCR counts it as a class, so the rows "
                                        "after it would not match): remove it")
                if not is_single_entry(c):
                    raise CharDictError(f"{path}:{lineno}: expected one character per line, got {bounded_repr(c)}")
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

    def tokenize(self, text: str) -> List[str]:
        """Split ``text`` into dict entries (longest match; unknown code points become single tokens)."""
        if self._longest == 1:
            return list(text)
        out, i = [], 0
        while i < len(text):
            for n in range(min(self._longest, len(text) - i), 0, -1):
                if n == 1 or text[i:i + n] in self._index:
                    out.append(text[i:i + n])
                    i += n
                    break
        return out

    def unknown_chars(self, text: str) -> List[str]:
        """Distinct characters of ``text`` not in the dict, in order of appearance."""
        out = []
        for c in self.tokenize(text):
            if c not in self._index and c not in out:
                out.append(c)
        return out

    def encode(self, text: str) -> List[int]:
        """Encode text to class ids; raises KeyError naming unknown characters."""
        bad = self.unknown_chars(text)
        if bad:
            raise KeyError(f"characters not in dict {self.source}: {''.join(bad)!r} (label {text!r})")
        return [self._index[c] for c in self.tokenize(text)]

    def check(self, text: str, max_text_length: int) -> EncodeResult:
        """Validate and encode a label without raising; see :class:`EncodeResult`.
        Length is counted in dict entries (= characters for one-code-point dicts)."""
        if text == "":
            return EncodeResult(None, "empty", "empty label")
        tokens = self.tokenize(text)
        bad = [c for c in dict.fromkeys(tokens) if c not in self._index]
        if bad:
            return EncodeResult(None, "unknown_char", f"characters not in dict: {''.join(bad)!r}")
        if len(tokens) > max_text_length:
            return EncodeResult(None, "too_long", f"label length {len(tokens)} > max_text_length {max_text_length}")
        return EncodeResult([self._index[c] for c in tokens])

    def decode_ids(self, ids: Iterable[int]) -> str:
        """Ids (blank/duplicates already removed) -> text. Blank ids are ignored."""
        return "".join(self.chars[i - 1] for i in ids if i != BLANK)

    def save(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for c in self.chars:
                f.write(c + "\n")


def inference_yml_chars(path: str) -> List[str]:
    """PostProcess.character_dict of a PaddleX inference.yml (safe YAML; a leading "blank" entry is dropped). Read
    once per file version (model_dict_file checks the file, CharDict.from_file then reads it)."""
    stat = os.stat(path)
    return list(_read_inference_yml_chars(path, stat.st_mtime_ns, stat.st_size))


class NoDictInYml(CharDictError):
    """An inference.yml that reads fine but carries no PostProcess.character_dict (a det or cls model's)."""


@functools.lru_cache(maxsize=4)
def _read_inference_yml_chars(path: str, mtime_ns: int, size: int) -> tuple:
    try:
        cfg = read_inference_yml(path)  # capped bytes, safe YAML, aliases capped: "<path>: inference.yml refused: .."
    except InferenceFormatError as exc:
        raise CharDictError(str(exc)) from None
    post = cfg.get("PostProcess") if isinstance(cfg, dict) else None
    chars = post.get("character_dict") if isinstance(post, dict) else None
    if not isinstance(chars, list):
        raise NoDictInYml(f"{path}: no PostProcess.character_dict list (not a text-recognition inference.yml)")
    out = []
    for i, c in enumerate(chars):
        if isinstance(c, bool) or not isinstance(c, (str, int)):  # unquoted YAML `yes` / `1.5` / null
            raise CharDictError(f"{path}: PostProcess.character_dict entry {i + 1} is {bounded_repr(c)}; expected a "
                                "character")
        out.append(str(c))
    return tuple(out[1:] if out[:1] == ["blank"] else out)


def model_dict_file(folder: str | os.PathLike) -> Path | None:
    """The dict an inference model folder carries, or None: ``inference.yml`` when it has
    PostProcess.character_dict (PaddleX / paddleocr 3.x downloads, our exports), else ``character_dict.txt``
    (our exports, for paddleocr 2.x's --rec_char_dict_path). A file path is looked up in its folder. An inference.yml
    that is refused (too large, not safe YAML, an alias bomb, a bad entry) is a CharDictError, not passed over."""
    folder = Path(folder)
    if not folder.is_dir():
        folder = folder.parent
    yml = folder / "inference.yml"
    if yml.exists():
        try:
            inference_yml_chars(str(yml))
            return yml
        except NoDictInYml:
            pass
    txt = folder / "character_dict.txt"
    return txt if txt.is_file() else None


def run_dict(dict_path: str, weights: Iterable[str], use_space_char: bool = False) -> Tuple["CharDict", Path | None]:
    """A run's dict (Global.character_dict_path, resolved like every asset path) and, when that file does not
    exist, the dict carried by the first of ``weights`` (the set Global weights keys, in order) that is an inference
    model folder carrying one (model_dict_file). Returns (the dict, the carried file or None). Imports no paddle:
    recipes.preflight calls it before paddle's import, the recipe again after it."""
    path, carried = resolve_path(dict_path), None
    if dict_path and not os.path.exists(path):
        folders = (w for w in weights if is_inference_model(w))
        carried = next((found for found in map(model_dict_file, folders) if found is not None), None)
        path = str(carried) if carried is not None else path
    return CharDict.from_file(path, use_space_char=use_space_char), carried


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


def normalize_width(text: str, mode: str = "none") -> str:
    """Full-width / half-width normalisation of a label (an explicit option, never applied silently).

    mode: "none" (unchanged), "halfwidth" (full-width ASCII variants U+FF01..U+FF5E -> U+0021..U+007E
    and the ideographic space U+3000 -> " "), "fullwidth" (the reverse: printable ASCII -> full width).
    Other characters (hanzi, CJK punctuation such as "。" or "、") are never changed.
    """
    if mode == "none":
        return text
    if mode == "halfwidth":
        return text.translate(_TO_HALF)
    if mode == "fullwidth":
        return text.translate(_TO_FULL)
    raise ValueError(f"width normalisation must be one of {WIDTH_MODES}, got {mode!r}")


_TO_HALF = {0xFF01 + i: 0x21 + i for i in range(0x5E)}
_TO_HALF[0x3000] = 0x20
_TO_FULL = {v: k for k, v in _TO_HALF.items()}
