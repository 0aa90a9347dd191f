"""Every YAML shipped in recipes/configs loads into its recipe's typed config and passes the recipe's checks
(so a README command never starts with a config error), and the OCR system's defaults name configs that exist."""
from __future__ import annotations

from pathlib import Path

import pytest

from paddle_recipes.assets import resolve_path
from paddle_recipes.config import load_config

CONFIGS = Path(__file__).resolve().parents[2] / "recipes" / "configs"


def recipe_for(name: str):
    """The recipe class of a shipped config, by its file name's recipe prefix (the longest RECIPES name that matches)."""
    import importlib

    from paddle_recipes.recipes import RECIPES
    prefixes = sorted((p for p in RECIPES if name.startswith(p)), key=len, reverse=True)
    assert prefixes, f"{name}: no recipe for this config name"
    module = importlib.import_module(f"paddle_recipes.recipes.{RECIPES[prefixes[0]]}")
    return module.main.__self__


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yml")), ids=lambda p: p.name)
def test_shipped_config_loads_and_passes_its_recipes_checks(path):
    cls = recipe_for(path.name)
    cfg = load_config(path, [], cls.Config, translators=cls.config_translators)
    if hasattr(cls, "check"):
        from paddle_recipes.runtime.distributed import DistInfo
        cls(cfg, DistInfo()).check()
    if cls.__name__ == "OcrSystem":
        for m in (cfg.Det, cfg.Rec, cfg.Cls):
            assert Path(resolve_path(m.config)).is_file(), m.config


def test_the_system_reads_crops_the_det_recipe_writes():
    """ocr_rec_pages.yml trains on the crops of ocr_det.yml's synthetic pages: its paths are that config's root."""
    from paddle_recipes.recipes.ocr_det import OcrDet
    from paddle_recipes.recipes.ocr_rec import OcrRec
    det = load_config(CONFIGS / "ocr_det.yml", [], OcrDet.Config, translators=OcrDet.config_translators)
    rec = load_config(CONFIGS / "ocr_rec_pages.yml", [], OcrRec.Config, translators=OcrRec.config_translators)
    root = det.Synthetic.root
    assert rec.Train.dataset.data_dir == f"{root}/train"
    assert rec.Train.dataset.label_file_list == [f"{root}/train/crop_label.txt"]
    assert rec.Eval.dataset.label_file_list == [f"{root}/val/crop_label.txt"]
    assert rec.Global.character_dict_path == det.Global.character_dict_path
