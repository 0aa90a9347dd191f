"""The end-to-end recipes, importable: `from paddle_recipes.recipes import ocr_rec`; `paddle-recipes <name> ...`."""
from __future__ import annotations

import importlib
import sys

RECIPES = {"ocr_rec": "ocr_rec", "ocr_det": "ocr_det", "ocr_cls": "ocr_cls", "ocr_system": "ocr_system",
           "det_ppyoloe": "det_ppyoloe", "ernie_multitask": "ernie_multitask"}


def main(argv: list[str] | None = None) -> None:
    """`paddle-recipes <recipe> [-c CFG] [-o k=v ...] [--mode M]`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in RECIPES:
        print(f"usage: paddle-recipes {{{','.join(RECIPES)}}} [-c CONFIG] [-o KEY=VALUE ...] [--mode MODE]",
              file=sys.stderr)
        sys.exit(2)
    importlib.import_module(f"{__name__}.{RECIPES[argv[0]]}").cli(argv[1:])
