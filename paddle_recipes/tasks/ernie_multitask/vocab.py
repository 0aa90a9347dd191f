"""Chinese char-level vocabulary for ErnieTokenizer (no download needed).

Layout of vocab.txt (one token a line, id = line number):
  [PAD] [UNK] [CLS] [SEP] [MASK], then digits 0-9, latin a-z (the tokenizer lower-cases),
  common Chinese punctuation, then the 3755 GB2312 level-1 hanzi (bytes 0xB0A1-0xD7F9
  decoded as gb2312, in GB2312 order). Build: `python -m paddle_recipes.tasks.ernie_multitask.vocab [out]`.
"""
from __future__ import annotations

import os
import string
import sys
from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PUNCT = list("，。！？、：；“”‘’（）《》—…·-.,!?:;()%")
DEFAULT_VOCAB = Path(__file__).resolve().parents[2] / "assets" / "nlp" / "vocab.txt"  # packaged; datasets/nlp/vocab.txt links here


def gb2312_level1() -> list[str]:
    """The 3755 level-1 hanzi of GB2312 (rows 0xB0-0xD7, cells 0xA1-0xFE; row 0xD7 ends at 0xF9)."""
    chars = []
    for hi in range(0xB0, 0xD8):
        last = 0xF9 if hi == 0xD7 else 0xFE
        for lo in range(0xA1, last + 1):
            chars.append(bytes([hi, lo]).decode("gb2312"))
    return chars


def build_vocab_tokens() -> list[str]:
    tokens = SPECIAL_TOKENS + list(string.digits) + list(string.ascii_lowercase) + PUNCT + gb2312_level1()
    seen, out = set(), []
    for t in tokens:  # keep first occurrence, ids stay stable
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def write_vocab(path: str | os.PathLike = DEFAULT_VOCAB) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(build_vocab_tokens()) + "\n", encoding="utf-8")
    return path


def ensure_vocab(path: str | os.PathLike | None = None) -> Path:
    """Return the vocab path, building the default one if it is missing."""
    path = Path(path) if path else DEFAULT_VOCAB
    if not path.exists():
        if path != DEFAULT_VOCAB:
            raise FileNotFoundError(f"vocab file not found: {path}")
        write_vocab(path)
    return path


def load_tokenizer(path: str | os.PathLike | None = None):
    """An ErnieTokenizer on the shipped char vocab (never from a hub name)."""
    from paddlenlp.transformers import ErnieTokenizer

    return ErnieTokenizer(vocab_file=str(ensure_vocab(path)), do_lower_case=True)


if __name__ == "__main__":
    out = write_vocab(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_VOCAB)
    print(f"wrote {out} ({len(build_vocab_tokens())} tokens)")
