"""Rebuild datasets/ocr_rec/char_freq.txt from the word list that ships with the ``jieba`` PyPI package.

    pip install jieba && python datasets/ocr_rec/make_char_freq.py

jieba's dict.txt (MIT license) lists ~350k words with corpus counts ("word count pos"). A
character's count is the sum of the counts of the words containing it (times its occurrences):
an estimate of how often the character appears in running text. Only CJK unified ideographs are kept.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "paddle_recipes" / "assets" / "ocr_rec" / "char_freq.txt"  # packaged


def is_hanzi(c: str) -> bool:
    return 0x4E00 <= ord(c) <= 0x9FFF or 0x3400 <= ord(c) <= 0x4DBF


def main():
    import jieba

    src = Path(os.path.dirname(jieba.__file__)) / "dict.txt"
    counts: Counter = Counter()
    with open(src, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue
            word, n = parts[0], int(parts[1])
            for c in word:
                if is_hanzi(c):
                    counts[c] += n
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(f"# character<TAB>count, most frequent first; {len(counts)} hanzi\n")
        f.write(f"# derived from jieba {jieba.__version__} dict.txt (MIT license): sum of the corpus counts of the "
                "words containing the character; rebuild: python datasets/ocr_rec/make_char_freq.py\n")
        for c, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            f.write(f"{c}\t{n}\n")
    print(f"{OUT}: {len(counts)} characters")


if __name__ == "__main__":
    main()
