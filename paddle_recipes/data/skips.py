"""Counted bad-input skips, shared by every dataset (rec, det, cls): ``SkipStats`` counts each skipped sample once
per place and reason (warning for the first 20 of each), ``first_loadable`` fails a set with no readable sample
early, ``unpack_skipped`` reads the skip records a collate carries out of DataLoader workers.

    stats = SkipStats("Train.dataset")
    stats.add("train.txt:8", "empty")           # WARNING "skipping sample train.txt:8: empty"
    stats.summary()                              # "Train.dataset: skipped 1 samples: empty=1"
"""
from __future__ import annotations

import logging
import random
from collections import Counter
from typing import Dict, List, Sequence, Tuple

import numpy as np

logger = logging.getLogger(__name__)

# The reasons a sample is skipped (every report lists them, 0 when none); others are counted too.
REASONS = ("unknown_char", "empty", "too_long", "missing_image", "corrupt_image", "malformed_line", "too_large")
_MAX_WARNINGS_PER_REASON = 20


class SkipStats:
    """Counts skipped samples per reason (distinct places), warns for the first few of each.

    ``missing`` counts, for every character outside the dict, the skipped labels that contain it
    (see :meth:`top_missing`), so users know what to add to their dict.
    """

    def __init__(self, name: str = "data"):
        self.name = name
        self.places: Dict[str, set] = {r: set() for r in REASONS}
        self.missing: Counter = Counter()

    def add(self, where: str, reason: str, detail: str = "", missing: Sequence[str] = ()) -> None:
        """Count a skip once per place; ``missing``: the label's distinct characters outside the dict."""
        bucket = self.places.setdefault(reason, set())
        if where in bucket:
            return
        bucket.add(where)
        self.missing.update(dict.fromkeys(missing, 1))
        if len(bucket) <= _MAX_WARNINGS_PER_REASON:
            logger.warning("skipping sample %s: %s%s", where, reason, f" ({detail})" if detail else "")
        elif len(bucket) == _MAX_WARNINGS_PER_REASON + 1:
            logger.warning("more %s samples in %s; further warnings for this reason are suppressed", reason, self.name)

    def add_batch(self, skipped: Sequence[Tuple[str, str]]) -> None:
        for where, reason in skipped:
            self.add(where, reason)

    def counts(self) -> Dict[str, int]:
        return {r: len(p) for r, p in self.places.items()}

    @property
    def total(self) -> int:
        return sum(len(p) for p in self.places.values())

    def top_missing(self, n: int = 20) -> List[Tuple[str, int]]:
        """The ``n`` characters outside the dict found in the most skipped labels: [(char, labels)],
        most frequent first (ties by code point, so the order is reproducible)."""
        return sorted(self.missing.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def summary(self) -> str:
        c = {k: v for k, v in self.counts().items() if v}
        if not c:
            return f"{self.name}: no samples skipped"
        text = f"{self.name}: skipped {self.total} samples: " + ", ".join(f"{k}={v}" for k, v in c.items())
        top = self.top_missing(20)
        if top:
            text += ("; characters not in the dict (labels containing them): "
                     + " ".join(f"{ch!r}x{k}" for ch, k in top)
                     + (f" (+{len(self.missing) - len(top)} more)" if len(self.missing) > len(top) else ""))
        return text

    # ---------------------------------------------------------------- cross-rank merge (recipe.merge_skips)
    def rank_state(self) -> dict:
        """What this rank saw, picklable: {"places": {reason: [place, ...]}, "missing": {char: labels}}."""
        return {"places": {r: sorted(p) for r, p in self.places.items()}, "missing": dict(self.missing)}

    def merged(self, states: Sequence[dict]) -> "SkipStats":
        """The union over ranks of rank_state()s: places are unioned; label-time skips (characters outside the
        dict) are found by every rank over the whole set, so per character the max over ranks, not the sum."""
        union = type(self)(self.name)
        for s in states:
            for reason, places in s["places"].items():
                union.places.setdefault(reason, set()).update(places)
            for ch, n in s["missing"].items():
                union.missing[ch] = max(union.missing.get(ch, 0), n)
        return union

    def report(self, top: int = 20) -> dict:
        """skipped.json / summary.json entry: {reason: count, ..., "missing_chars": [[char, labels], ...]}."""
        return {**self.counts(), "missing_chars": [[c, k] for c, k in self.top_missing(top)]}


def first_loadable(dataset) -> bool:
    """Whether some sample of ``dataset`` (``load(i)`` -> sample or ("skip", where, reason), ``stats``) loads: tried
    in order until one does (one image read in a sound set), the skips counted. Datasets call it when built, so a
    set with no readable image is one error line, not hours of zero-sample batches."""
    states = random.getstate(), np.random.get_state()  # augmentations draw from them: training stays as it was
    try:
        for i in range(len(dataset)):
            sample = dataset.load(i)
            if not isinstance(sample, tuple):
                return True
            dataset.stats.add(sample[1], sample[2])
        return False
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])


def unpack_skipped(batch: dict) -> List[Tuple[str, str]]:
    """``batch["skipped"]`` -> [(where, reason)] (strings survive DataLoader workers unchanged)."""
    out = []
    for s in batch.get("skipped", []) or []:
        where, _, reason = str(s).rpartition("\t")
        out.append((where, reason))
    return out
