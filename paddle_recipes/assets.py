"""Files shipped inside the package (configs, character dicts, vocab) and how relative paths find them.

    resolve_path("datasets/ocr_rec/ch_hanzi_100.txt")  # CWD first, then the packaged copy
    resolve_path("recipes/configs/ocr_rec_smoke.yml")  # -> .../paddle_recipes/configs/ocr_rec_smoke.yml

A relative path is looked up relative to the current directory first (your own files win), then
in the package: the checkout-layout prefixes `recipes/configs/`, `datasets/ocr_rec/` and
`datasets/nlp/` map to `paddle_recipes/configs/` and `paddle_recipes/assets/{ocr_rec,nlp}/`, so the
documented paths work from any directory once the wheel is installed.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CONFIG_DIR = PACKAGE_DIR / "configs"
ASSET_DIR = PACKAGE_DIR / "assets"
# checkout-relative prefix -> packaged folder
LEGACY_PREFIXES = {"recipes/configs": CONFIG_DIR, "paddle_recipes/configs": CONFIG_DIR,
                   "datasets/ocr_rec": ASSET_DIR / "ocr_rec", "datasets/nlp": ASSET_DIR / "nlp",
                   "paddle_recipes/assets": ASSET_DIR}


def packaged(path: str | os.PathLike) -> Path | None:
    """The packaged copy of a checkout-relative path, or None when the package has none."""
    if Path(path).is_absolute():
        return None
    p = Path(path).as_posix()
    while p.startswith("./"):
        p = p[2:]
    for prefix, folder in LEGACY_PREFIXES.items():
        if p.startswith(prefix + "/"):
            cand = folder / p[len(prefix) + 1:]
            return cand if cand.exists() else None
    for folder in (CONFIG_DIR, ASSET_DIR):
        cand = folder / p
        if cand.exists():
            return cand
    return None


def resolve_path(path: str | os.PathLike) -> str:
    """`path` if it exists (absolute or relative to CWD), else its packaged copy, else `path` unchanged
    (so the caller's "not found" error names what the user wrote)."""
    if not path or Path(path).exists():
        return str(path)
    found = packaged(path)
    return str(found) if found is not None else str(path)
