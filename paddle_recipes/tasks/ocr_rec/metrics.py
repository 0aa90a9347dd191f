"""Recognition metrics: line accuracy and 1 - normalized edit distance."""
from __future__ import annotations

import re
from typing import Dict, Sequence

from paddle_recipes.data import DataError


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance (insert / delete / substitute cost 1), O(len(a)*len(b)) time, O(len(b)) memory, on
    what is left after the common prefix and suffix (they never change the distance; equal texts cost nothing)."""
    if a == b:
        return 0
    n, i = min(len(a), len(b)), 0
    while i < n and a[i] == b[i]:
        i += 1
    a, b, n, j = a[i:], b[i:], n - i, 0
    while j < n and a[-1 - j] == b[-1 - j]:
        j += 1
    if j:
        a, b = a[:-j], b[:-j]
    if not a or not b:
        return len(a) + len(b)
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1]


class RecMetric:
    """Accumulates line accuracy (exact match) and norm_edit_dis = 1 - mean(ED / max(len(pred), len(gt), 1)).
    ignore_space: drop spaces first (PaddleOCR's default). is_filter: keep only [a-z0-9] after lowercasing."""

    def __init__(self, ignore_space: bool = False, is_filter: bool = False):
        self.ignore_space, self.is_filter = ignore_space, is_filter
        self.reset()

    def normalize(self, text: str) -> str:
        if self.ignore_space:
            text = text.replace(" ", "")
        if self.is_filter:
            text = re.sub(r"[^0-9a-z]", "", text.lower())
        return text

    def reset(self):
        self.correct = 0
        self.total = 0
        self.norm_ed_sum = 0.0

    def update(self, preds: Sequence[str], labels: Sequence[str]) -> None:
        for p, g in zip(preds, labels):
            p, g = self.normalize(p), self.normalize(g)
            self.total += 1
            self.correct += int(p == g)
            self.norm_ed_sum += edit_distance(p, g) / max(len(p), len(g), 1)

    def state(self) -> Dict[str, float]:
        """Raw sums (for all-reduce across ranks)."""
        return {"correct": float(self.correct), "total": float(self.total), "norm_ed_sum": self.norm_ed_sum}

    @staticmethod
    def from_state(state: Dict[str, float]) -> Dict[str, float]:
        if state["total"] <= 0:  # not "norm_edit_dis 1.0 on nothing"

            raise DataError("evaluation saw 0 readable samples (every eval image was skipped); "
                            "see the skipped-sample warnings above")
        total = max(state["total"], 1.0)
        return {"acc": state["correct"] / total, "norm_edit_dis": 1.0 - state["norm_ed_sum"] / total,
                "num_samples": state["total"]}

    def compute(self) -> Dict[str, float]:
        return self.from_state(self.state())

class PerTagRecMetric:
    """Line accuracy and norm_edit_dis overall and per tag (e.g. per font of a held-out-font set).

    Args:
        tags: every tag that can occur, in report order. Fixed up front so that :meth:`state` has the
            same keys on every rank (sums can be all-reduced key by key even when a rank's slice
            misses a tag). An unknown tag in :meth:`update` is an error.
    """

    def __init__(self, tags: Sequence[str], **rec_metric_options):
        self.tags = list(dict.fromkeys(tags))
        self.overall = RecMetric(**rec_metric_options)
        self.by_tag = {t: RecMetric(**rec_metric_options) for t in self.tags}

    def update(self, preds: Sequence[str], labels: Sequence[str], tags: Sequence[str]) -> None:
        if not len(preds) == len(labels) == len(tags):
            raise ValueError(f"preds, labels and tags differ in length: {len(preds)}, {len(labels)}, {len(tags)}")
        self.overall.update(preds, labels)
        for p, g, t in zip(preds, labels, tags):
            if t not in self.by_tag:
                raise KeyError(f"unknown tag {t!r}; expected one of {self.tags}")
            self.by_tag[t].update([p], [g])

    def state(self) -> Dict[str, float]:
        """Flat raw sums: RecMetric's keys, plus "<tag>/<key>" for every tag."""
        out = dict(self.overall.state())
        for t, m in self.by_tag.items():
            out.update({f"{t}/{k}": v for k, v in m.state().items()})
        return out

    @staticmethod
    def from_state(state: Dict[str, float]) -> Dict[str, object]:
        """-> {"acc", "norm_edit_dis", "num_samples", "per_tag": {tag: {"acc", "norm_edit_dis", "n"}},
        "mean_tag_acc"} (mean over tags with samples: every font counts the same)."""
        out: Dict[str, object] = dict(RecMetric.from_state({k: state[k] for k in ("correct", "total", "norm_ed_sum")}))
        per = {}
        for key in state:
            if key.endswith("/total"):
                t = key[: -len("/total")]
                if state[key] > 0:
                    m = RecMetric.from_state({k: state[f"{t}/{k}"] for k in ("correct", "total", "norm_ed_sum")})
                    per[t] = {"acc": m["acc"], "norm_edit_dis": m["norm_edit_dis"], "n": int(m["num_samples"])}
        out["per_tag"] = per
        out["mean_tag_acc"] = sum(v["acc"] for v in per.values()) / len(per) if per else 0.0
        return out

    def compute(self) -> Dict[str, object]:
        return self.from_state(self.state())

def per_font_metrics(preds: Sequence[str], labels: Sequence[str], fonts: Sequence[str]) -> Dict[str, object]:
    """One-shot per-font report: {"acc", "norm_edit_dis", "num_samples", "mean_font_acc",
    "per_font": {font: {"acc", "norm_edit_dis", "n"}}} (fonts in order of first appearance)."""
    m = PerTagRecMetric(fonts)
    m.update(preds, labels, fonts)
    r = m.compute()
    return {"acc": r["acc"], "norm_edit_dis": r["norm_edit_dis"], "num_samples": r["num_samples"],
            "mean_font_acc": r["mean_tag_acc"], "per_font": r["per_tag"]}

def format_per_tag(report: Dict[str, object], name: str = "font") -> str:
    """One log line from :meth:`PerTagRecMetric.from_state`:
    "acc: 0.9120, norm_edit_dis: 0.9800, mean over 5 fonts: 0.9050 | wqy_zenhei 0.9300 (n=200) | ..."."""
    per = report["per_tag"]
    head = (f"acc: {report['acc']:.4f}, norm_edit_dis: {report['norm_edit_dis']:.4f}, "
            f"mean over {len(per)} {name}s: {report['mean_tag_acc']:.4f}")
    return " | ".join([head] + [f"{t} {v['acc']:.4f} (n={v['n']})" for t, v in per.items()])
