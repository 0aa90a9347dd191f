"""Every method card in docs/cards/ has the required parts and its python examples run."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CARDS = sorted((REPO / "docs" / "cards").glob("*.md"))
PARTS = ("**What it does.**", "**When it helps.**", "**Defaults and units.**", "**Measured effect.**")


def block_modules() -> list[str]:
    """The modules of README's "The blocks" table (`| `x.py` | ...` or a package `| `x/` | ...`)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text.split("## The blocks", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)(?:\.py|/)` \|", table, flags=re.M)


def test_every_block_module_has_a_card():
    """A card covers a module when its title line names `paddle_recipes.<module>`."""
    titles = {card.name: card.read_text(encoding="utf-8").splitlines()[0] for card in CARDS}
    blocks = block_modules()
    assert len(blocks) >= 10 and all((REPO / "paddle_recipes" / f"{m}.py").exists() or
                                     (REPO / "paddle_recipes" / m / "__init__.py").exists() for m in blocks)
    missing = [m for m in blocks if not any(re.search(rf"`paddle_recipes\.{m}[`.]", t) for t in titles.values())]
    assert not missing, f"block modules without a card in docs/cards/: {missing}"


@pytest.mark.parametrize("card", CARDS, ids=[c.stem for c in CARDS])
def test_card_parts_and_example(card):
    text = card.read_text(encoding="utf-8")
    for part in PARTS:
        assert part in text, f"{card.name}: missing {part}"
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks, f"{card.name}: no python example"
    for code in blocks:
        exec(compile(code, str(card), "exec", dont_inherit=True), {"__name__": f"card_{card.stem}"})


# `Section.key: value` in a card's **YAML key.** paragraph (a card of an always-on block starts it with "none")
YAML_KEY = re.compile(r"`([A-Z]\w*(?:\.\w+)+): ([^`]+)`")


def _yaml_key_paragraph(text: str) -> str:
    part = text.split("**YAML key.**", 1)[1]
    return part.split("\n\n", 1)[0]


@pytest.mark.parametrize("card", CARDS, ids=[c.stem for c in CARDS])
def test_card_names_the_yaml_keys_that_reach_it(card):
    """Every key a card lists, with its value, loads together into one recipe's typed config (and reads back),
    so a card can name only keys a recipe YAML really has."""
    import yaml

    from paddle_recipes.config import ConfigError, load_config, to_dict
    from paddle_recipes.recipes.det_ppyoloe import DetPPYOLOE
    from paddle_recipes.recipes.ernie_multitask import ErnieMultitask
    from paddle_recipes.recipes.ocr_det import OcrDet
    from paddle_recipes.recipes.ocr_rec import OcrRec

    text = card.read_text(encoding="utf-8")
    assert "**YAML key.**" in text, f"{card.name}: no **YAML key.** paragraph"
    para = _yaml_key_paragraph(text)
    keys = YAML_KEY.findall(para)
    if not keys:
        assert para.strip().lower().startswith("none"), f"{card.name}: no `Section.key: value` and not 'none ...'"
        return
    errors = {}
    for recipe in (OcrRec, DetPPYOLOE, ErnieMultitask, OcrDet):
        try:
            cfg = to_dict(load_config(None, [f"{k}={v}" for k, v in keys], recipe.Config))
        except ConfigError as exc:
            errors[recipe.name] = str(exc)
            continue
        for k, v in keys:
            node = cfg
            for part in k.split("."):
                node = node[part]
            assert node == yaml.safe_load(v), (card.name, k, node)
        return
    pytest.fail(f"{card.name}: no recipe config takes {keys} together: {errors}")
