"""Registry of the CJK fonts the text-line generator renders with, split into train and eval fonts.

Eval fonts are never used to render training lines: accuracy on them measures how well a model
reads typefaces it has not seen. Each style (hei, song, kai, ...) appears on both sides where a
second free font of that style exists. Fonts come with the install: two faces of the
``noto-cjk-sans-otc`` PyPI package (a dependency) and subsets of Debian-packaged fonts shipped in
``datasets/fonts/`` (names, sources and licenses in ``datasets/fonts/FONTS.md``).

Glyph coverage comes from the font's cmap (fontTools); the generator never draws a character with
a font that lacks it.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import FrozenSet, Iterable, List, Sequence



def _fonts_dir() -> Path:
    """$PADDLE_RECIPES_FONTS_DIR, else the checkout's datasets/fonts/, else ./datasets/fonts/ (the font
    files are not package data: an installed wheel has only the Noto faces of the PyPI package)."""
    env = os.environ.get("PADDLE_RECIPES_FONTS_DIR")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[3] / "datasets" / "fonts"
    return checkout if checkout.is_dir() else Path.cwd() / "datasets" / "fonts"


FONTS_DIR = _fonts_dir()
SPLITS = ("train", "eval")
PIP_NOTO = "pip:noto_cjk_sans_otc"


class FontError(FileNotFoundError):
    """A registered font file is missing or unreadable (message names the font and the path)."""


@dataclass(frozen=True)
class FontSpec:
    """One font face.

    name: short tag (written per sample in fonts.txt). style: hei | song | kai | fangsong | rounded |
    mono | display. bold: a bold weight. split: train | eval. file: path under ``datasets/fonts/``, or
    ``pip:<module>`` for a font shipped by a PyPI package. index: face index inside a .ttc.
    """

    name: str
    family: str
    style: str
    split: str
    file: str
    index: int = 0
    bold: bool = False
    license: str = ""

    def path(self, fonts_dir: str | os.PathLike | None = None) -> str:
        if self.file == PIP_NOTO:
            try:
                from noto_cjk_sans_otc import FONT_PATH
            except ImportError as exc:  # pragma: no cover - a declared dependency
                raise FontError(f"font {self.name}: the PyPI package noto-cjk-sans-otc is not installed") from exc
            return str(FONT_PATH)
        return str(Path(fonts_dir or FONTS_DIR) / self.file)


FONTS: tuple = (
    # ---- train fonts
    FontSpec("noto_sans_sc", "Noto Sans CJK SC", "hei", "train", PIP_NOTO, 2, license="OFL-1.1"),
    FontSpec("noto_sans_mono_sc", "Noto Sans Mono CJK SC", "mono", "train", PIP_NOTO, 7, license="OFL-1.1"),
    FontSpec("noto_sans_sc_bold", "Noto Sans CJK SC Bold", "hei", "train", "noto_sans_sc_bold.otf", bold=True,
             license="OFL-1.1"),
    FontSpec("noto_serif_sc", "Noto Serif CJK SC", "song", "train", "noto_serif_sc.otf", license="OFL-1.1"),
    FontSpec("ar_pl_ukai", "AR PL UKai CN", "kai", "train", "ar_pl_ukai.ttf", license="Arphic-1999"),
    FontSpec("wqy_microhei", "WenQuanYi Micro Hei", "hei", "train", "wqy_microhei.ttf",
             license="Apache-2.0 OR GPL-3.0-only WITH font-exception"),
    FontSpec("smiley_sans", "Smiley Sans Oblique", "display", "train", "smiley_sans.ttf", license="OFL-1.1"),
    FontSpec("cwtex_fangsong", "cwTeX FangSong", "fangsong", "train", "cwtex_fangsong.ttf", license="GPL-2.0+"),
    # the extreme weights (issue 54), from PyPI wheels: Noto Sans CJK TC (traditional default glyphs; same hei design)
    FontSpec("noto_sans_tc_thin", "Noto Sans CJK TC Thin", "hei", "train", "noto_sans_tc_thin.otf", license="OFL-1.1"),
    FontSpec("noto_sans_tc_black", "Noto Sans CJK TC Black", "hei", "train", "noto_sans_tc_black.otf", bold=True,
             license="OFL-1.1"),
    # ---- eval fonts (never rendered into training data)
    FontSpec("wqy_zenhei", "WenQuanYi Zen Hei", "hei", "eval", "wqy_zenhei.ttf",
             license="GPL-2.0 WITH font-embedding-exception"),
    FontSpec("ar_pl_uming", "AR PL UMing CN", "song", "eval", "ar_pl_uming.ttf", license="Arphic-1999"),
    FontSpec("lxgw_wenkai", "LXGW WenKai", "kai", "eval", "lxgw_wenkai.ttf", license="OFL-1.1"),
    FontSpec("noto_serif_sc_bold", "Noto Serif CJK SC Bold", "song", "eval", "noto_serif_sc_bold.otf", bold=True,
             license="OFL-1.1"),
    FontSpec("cwtex_yen", "cwTeX Yen (rounded)", "rounded", "eval", "cwtex_yen.ttf", license="GPL-2.0+"),
)


def fonts_for(split: str, fonts: Sequence[FontSpec] = FONTS) -> List[FontSpec]:
    """Fonts of one side: "train" or "eval"."""
    if split not in SPLITS:
        raise ValueError(f"font split must be one of {SPLITS}, got {split!r}")
    return [f for f in fonts if f.split == split]


def font_available(spec: FontSpec, fonts_dir: str | os.PathLike | None = None) -> bool:
    """True when the font's file is installed."""
    try:
        return os.path.isfile(spec.path(fonts_dir))
    except FontError:
        return False


def font_by_name(name: str, fonts: Sequence[FontSpec] = FONTS) -> FontSpec:
    for f in fonts:
        if f.name == name:
            return f
    raise KeyError(f"unknown font {name!r}; registered: {', '.join(f.name for f in fonts)}")


@functools.lru_cache(maxsize=64)
def _cmap(path: str, index: int) -> FrozenSet[int]:
    from fontTools.ttLib import TTFont

    if not os.path.isfile(path):
        raise FontError(f"font file not found: {path}")
    try:
        font = TTFont(path, fontNumber=index, lazy=True)
        return frozenset(font.getBestCmap() or {})
    except Exception as exc:  # fontTools raises many types on a bad file
        raise FontError(f"{path}: cannot read the font's character map ({exc})") from exc


def coverage(spec: FontSpec, fonts_dir: str | os.PathLike | None = None) -> FrozenSet[int]:
    """Code points the font has a glyph for (from its cmap)."""
    return _cmap(spec.path(fonts_dir), spec.index)


def missing_chars(spec: FontSpec, chars: Iterable[str], fonts_dir: str | os.PathLike | None = None) -> List[str]:
    """Entries of ``chars`` the font cannot draw (a multi-code-point entry needs every code point)."""
    cov = coverage(spec, fonts_dir)
    return [c for c in chars if not all(ord(u) in cov for u in c)]
