"""benchmarks/finetune_forgetting.py: the YAML a run trains with (the runs themselves are benchmarks)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def _harness():
    spec = importlib.util.spec_from_file_location("rec_ft", REPO / "benchmarks" / "finetune_forgetting.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_drop_transform_trains_paddleocrs_yaml_without_that_op(tmp_path):
    from paddle_recipes.compat.paddleocr import translate_rec_config as translate

    h = _harness()
    assert h.train_yaml(tmp_path, []) == h.YAML  # nothing dropped: PaddleOCR's YAML itself
    derived = h.train_yaml(tmp_path, ["RecAug"])
    cfg = yaml.safe_load(derived.read_text(encoding="utf-8"))
    names = [next(iter(op)) for op in cfg["Train"]["dataset"]["transforms"]]
    assert names == ["DecodeImage", "RecConAug", "MultiLabelEncode", "KeepKeys"]
    assert cfg["Eval"] == yaml.safe_load(h.YAML.read_text(encoding="utf-8"))["Eval"]
    assert translate(cfg)[0]["Train"]["dataset"]["aug"] is False
    assert translate(yaml.safe_load(h.YAML.read_text(encoding="utf-8")))[0]["Train"]["dataset"]["aug"] is True
    with pytest.raises(SystemExit, match=r"--drop-transform \['RecAugment'\]: not in PP-OCRv4_mobile_rec.yml"):
        h.train_yaml(tmp_path, ["RecAugment"])
