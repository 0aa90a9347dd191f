"""Recognition metrics: line accuracy and 1 - normalized edit distance."""
from __future__ import annotations

import re
from typing import Dict, Sequence


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance (insert / delete / substitute cost 1), O(len(a)*len(b)) time, O(len(b)) memory."""
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
        total = max(state["total"], 1.0)
        return {"acc": state["correct"] / total, "norm_edit_dis": 1.0 - state["norm_ed_sum"] / total,
                "num_samples": state["total"]}

    def compute(self) -> Dict[str, float]:
        return self.from_state(self.state())
