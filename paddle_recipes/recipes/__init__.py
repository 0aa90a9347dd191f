"""The end-to-end recipes, importable: `from paddle_recipes.recipes import ocr_rec`; `paddle-recipes <name> ...`.

Entry points (`paddle-recipes`, `paddle-recipes-<name>`, recipes/<name>.py, `python -m paddle_recipes.recipes.<name>`)
install the one-line SIGTERM / SIGINT handlers before paddle is imported (runtime/stopping.py), then run the
recipe's pre-flight (recipes/preflight.py: bad weights files and dicts in one line before paddle is imported)."""
from __future__ import annotations

import importlib
import sys

from ..runtime import stopping

RECIPES = {"ocr_rec": "ocr_rec", "ocr_det": "ocr_det", "ocr_cls": "ocr_cls", "ocr_system": "ocr_system",
           "det_ppyoloe": "det_ppyoloe", "ernie_multitask": "ernie_multitask"}

PREFLIGHT = f"{__name__}.preflight"

if stopping.started_as_module(__name__):  # `python -m paddle_recipes.recipes.<name>`: its imports come next
    stopping.install()  # our handlers; the pre-flight imports no paddle, so the signals come through meanwhile
    importlib.import_module(PREFLIGHT).check(stopping.module_target(), sys.argv[1:])
    stopping.hold()


def main(argv: list[str] | None = None) -> None:
    """`paddle-recipes <recipe> [-c CFG] [-o k=v ...] [--mode M]`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in RECIPES:
        print(f"usage: paddle-recipes {{{','.join(RECIPES)}}} [-c CONFIG] [-o KEY=VALUE ...] [--mode MODE]",
              file=sys.stderr)
        sys.exit(2)
    stopping.run_entry(f"{__name__}.{RECIPES[argv[0]]}", argv[1:], preflight=PREFLIGHT)


def _console_script(name: str):
    def cli(argv: list[str] | None = None) -> None:
        stopping.run_entry(f"{__name__}.{name}", argv, preflight=PREFLIGHT)
    cli.__doc__ = f"`paddle-recipes-{name.replace('_', '-')}`: recipes.{name}.cli, signal handlers first."
    return cli


cli_ocr_rec, cli_ocr_det, cli_ocr_cls, cli_ocr_system, cli_det_ppyoloe, cli_ernie_multitask = map(
    _console_script, RECIPES)
