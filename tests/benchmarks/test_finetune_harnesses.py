"""benchmarks/det_finetune_forgetting.py and finetune_forgetting.py: the pieces that score a run and the YAML it
trains with (the runs themselves are benchmarks)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _harness(script="det_finetune_forgetting.py"):
    spec = importlib.util.spec_from_file_location(script[:-3], REPO / "benchmarks" / script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def box(x, y, w=40, h=10):
    return [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]


def test_agreement_matches_boxes_one_to_one_at_iou_half():
    h = _harness()
    released = {"a.jpg": [box(0, 0), box(0, 20), box(0, 40)], "b.jpg": [box(5, 5)]}
    after = {"a.jpg": [box(1, 0), box(0, 21), box(200, 200)], "b.jpg": []}  # 2 kept, 1 moved away, 1 lost
    got = h.agreement(released, after)
    assert got == {"boxes_released": 4, "boxes_after": 3, "matched": 2, "agreement_f": round(4 / 7, 4)}
    assert h.agreement(released, released)["agreement_f"] == 1.0


def test_the_real_photos_are_the_ones_the_real_crops_were_cut_from():
    h = _harness()
    stems = {Path(p).stem for p in h.photo_paths_in_notice()}
    labels = (REPO / "tests/fixtures/real_crops/label.txt").read_text(encoding="utf-8").splitlines()
    cut_from = {Path(ln.split("\t")[0]).stem.rsplit("_", 1)[0] for ln in labels if not ln.startswith("images/word_")}
    assert stems == cut_from and len(stems) == 13


def test_drop_transform_trains_paddleocrs_yaml_without_that_op(tmp_path):
    from paddle_recipes.compat.paddleocr import translate_rec_config as translate

    h = _harness("finetune_forgetting.py")
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
