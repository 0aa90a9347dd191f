"""Text content of synthetic lines: hanzi drawn by real-usage frequency, with digits, Latin letters and
punctuation mixed in the way real lines have them (numbers, dates, codes, words, trailing punctuation), and, when
the dict has the space character (PaddleOCR's use_space_char), spaces where real lines have them: between Latin
words and around numbers and words ("MU 2379", "航班 FLIGHT", "Hong Leong Bank").

Only characters of the allowed set (the dict, restricted to what the split's fonts can draw) are
ever produced; a dict without digits or punctuation gets lines of hanzi only.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Sequence

import numpy as np

# packaged (datasets/ocr_rec/char_freq.txt in a checkout links here)
DEFAULT_FREQ_FILE = Path(__file__).resolve().parents[2] / "assets" / "ocr_rec" / "char_freq.txt"

DIGITS = "0123456789"
LATIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
# punctuation that follows text (weighted towards the common ones), and paired brackets/quotes
TRAIL_PUNCT = "，，，。。、：；！？,.:;!?…"
PAIRS = ("（）", "《》", "“”", "()", "【】", "「」", "\"\"")
NUM_JOIN = ".-:/%"
UNITS = "年月日时分元号个岁米斤次"


class CharFreqError(ValueError):
    """The character frequency file is malformed (message names the file and line)."""


def load_char_freq(path: str | os.PathLike = DEFAULT_FREQ_FILE) -> Dict[str, float]:
    """``char<TAB>count`` lines ('#' comments) -> {char: count}."""
    out: Dict[str, float] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line or line.startswith("#"):
                continue
            ch, sep, n = line.partition("\t")
            try:
                out[ch] = float(n)
            except ValueError:
                raise CharFreqError(f"{path}:{lineno}: expected 'char<TAB>count', got {line!r}") from None
            if not sep or len(ch) != 1:
                raise CharFreqError(f"{path}:{lineno}: expected 'char<TAB>count', got {line!r}")
    return out


class TextSampler:
    """Draws line texts from ``chars`` (dict entries the fonts can draw).

    Args:
        chars: allowed characters (dict order).
        freq: {char: count} of real usage ({} = uniform).
        freq_mix: weight of the real-usage distribution in the hanzi draw; the rest is uniform over
            the dict so rare characters still get examples (0 = uniform, 1 = real usage only).
        mixed_prob: probability that a line mixes in digits / Latin / punctuation (when the dict has them).
        space_prob: probability of a space at each boundary of a mixed line next to a Latin word or a number
            (only when ``chars`` has " "; a dict with a space whose training lines never hold one teaches the
            model to drop the spaces it reads). Without " " in ``chars`` no random draw is made for it.
    """

    def __init__(self, chars: Sequence[str], freq: Dict[str, float] | None = None, freq_mix: float = 0.5,
                 mixed_prob: float = 0.5, space_prob: float = 0.0):
        if not 0.0 <= freq_mix <= 1.0:
            raise ValueError(f"freq_mix must be in [0, 1], got {freq_mix}")
        allowed = list(dict.fromkeys(chars))
        if not allowed:
            raise ValueError("no characters to draw from (dict empty or no font covers it)")
        aset = set(allowed)
        self.digits = [c for c in DIGITS if c in aset]
        self.latin = [c for c in LATIN if c in aset]
        self.trail = [c for c in TRAIL_PUNCT if c in aset]
        self.pairs = [p for p in PAIRS if p[0] in aset and p[1] in aset]
        self.joins = [c for c in NUM_JOIN if c in aset]
        self.units = [c for c in UNITS if c in aset]
        special = set(DIGITS) | set(LATIN) | set(TRAIL_PUNCT) | set("".join(PAIRS)) | set(NUM_JOIN) | {" ", "\u3000"}
        # "main" characters: everything else (hanzi and any other symbols of the dict)
        self.main = [c for c in allowed if c not in special] or [c for c in allowed if not c.isspace()] or allowed
        freq = freq or {}
        counts = np.asarray([float(freq.get(c, 0.0)) for c in self.main])
        uniform = np.full(len(self.main), 1.0 / len(self.main))
        if counts.sum() > 0 and freq_mix > 0:
            p = freq_mix * counts / counts.sum() + (1.0 - freq_mix) * uniform
        else:
            p = uniform
        self.cdf = np.cumsum(p / p.sum())
        self.mixed_prob = float(mixed_prob)
        if not 0.0 <= space_prob <= 1.0:
            raise ValueError(f"space_prob must be in [0, 1], got {space_prob}")
        self.space_prob = float(space_prob) if " " in aset else 0.0
        self.has_mixed = bool(self.digits or self.latin or self.trail)

    def _main(self, rng: np.random.Generator, n: int) -> List[str]:
        idx = np.searchsorted(self.cdf, rng.random(n) * self.cdf[-1], side="right")
        return [self.main[min(i, len(self.main) - 1)] for i in idx]

    def _number(self, rng: np.random.Generator, n: int) -> List[str]:
        out = [self.digits[int(rng.integers(len(self.digits)))] for _ in range(n)]
        if n >= 3 and self.joins and rng.random() < 0.3:  # 12.5 / 2023-10 / 10:30 / 35%
            out[int(rng.integers(1, n - 1))] = self.joins[int(rng.integers(len(self.joins)))]
        return out

    def _word(self, rng: np.random.Generator, n: int) -> List[str]:
        word = [self.latin[int(rng.integers(len(self.latin)))] for _ in range(n)]
        if rng.random() < 0.5:  # lowercase / Capitalized / UPPER as available
            low = [c.lower() if c.lower() in self.latin else c for c in word]
            word = low if rng.random() < 0.6 else [c.upper() if c.upper() in self.latin else c for c in word]
        return word

    def sample(self, rng: np.random.Generator, length: int) -> str:
        """One line of exactly ``length`` characters."""
        if length <= 0:
            raise ValueError(f"length must be >= 1, got {length}")
        if not self.has_mixed or rng.random() >= self.mixed_prob:
            return "".join(self._main(rng, length))
        kind = rng.random()
        if kind < 0.08:  # a code / number only: AB-1234, 2023.10, 13812345678
            pool = []
            while len(pool) < length:
                k = int(rng.integers(1, length + 1))
                pool += self._word(rng, k) if self.latin and rng.random() < 0.4 else (
                    self._number(rng, k) if self.digits else self._main(rng, k))
            return "".join(pool[:length])
        out: List[str] = []
        last = ""  # kind of the previous segment: main | number | latin | other
        while len(out) < length:
            left = length - len(out)
            r = rng.random()
            if r < 0.55 or left == 1 and not self.trail:
                kind, seg = "main", self._main(rng, int(rng.integers(1, min(left, 6) + 1)))
            elif r < 0.75 and self.digits:
                kind, seg = "number", self._number(rng, int(rng.integers(1, min(left, 5) + 1)))
                if self.units and len(seg) < left and rng.random() < 0.5:
                    seg.append(self.units[int(rng.integers(len(self.units)))])
            elif r < 0.87 and self.latin:
                kind, seg = "latin", self._word(rng, int(rng.integers(1, min(left, 6) + 1)))
            elif r < 0.93 and self.pairs and left >= 3:
                a, b = self.pairs[int(rng.integers(len(self.pairs)))]
                kind, seg = "other", [a] + self._main(rng, int(rng.integers(1, min(left - 2, 5) + 1))) + [b]
            elif self.trail and out:
                kind, seg = "other", [self.trail[int(rng.integers(len(self.trail)))]]
            else:
                kind, seg = "main", self._main(rng, 1)
            if (self.space_prob and out and left >= 2 and kind != "other" and {kind, last} & {"number", "latin"}
                    and rng.random() < self.space_prob):
                out.append(" ")
            out += seg
            last = kind
        if out[length - 1] == " ":  # a space cut at the end of the line: no trailing space
            out[length - 1] = self._main(rng, 1)[0]
        return "".join(out[:length])
