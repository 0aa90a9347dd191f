"""Every method card in docs/cards/ has the required parts and its python examples run."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

CARDS = sorted((Path(__file__).resolve().parents[1] / "docs" / "cards").glob("*.md"))
PARTS = ("**What it does.**", "**When it helps.**", "**Defaults and units.**", "**Measured effect.**")


def test_there_are_cards():
    assert len(CARDS) >= 5


@pytest.mark.parametrize("card", CARDS, ids=[c.stem for c in CARDS])
def test_card_parts_and_example(card):
    text = card.read_text(encoding="utf-8")
    for part in PARTS:
        assert part in text, f"{card.name}: missing {part}"
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, f"{card.name}: no python example"
    for code in blocks:
        exec(compile(code, str(card), "exec"), {"__name__": f"card_{card.stem}"})
