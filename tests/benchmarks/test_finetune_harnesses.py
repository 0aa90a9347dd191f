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


def test_space_changes_counts_space_only_differences_by_direction(tmp_path):
    """Agreement with the released readings, exact and with spaces ignored (RecMetric's ignore_space); lines that
    differ only in spaces are counted as added (more spaces than the released reading) or dropped."""
    h = _harness("finetune_forgetting.py")
    base = {"a": "USPresident", "b": "chances of the", "c": "（频繁）", "d": "same", "e": "x y z"}
    reads = {"a": "US President", "b": "chancesofthe", "c": "(频繁)", "d": "same", "e": "x yz"}
    assert h.space_changes(base, reads) == {"lines": 5, "agree": 0.2, "agree_no_space": 0.8, "spaces_added": 1,
                                            "spaces_dropped": 2}
    res = tmp_path / "r.txt"
    res.write_text("/x/images/a.jpg\tUS President\t0.9\n/x/images/b.jpg\n", encoding="utf-8")
    assert h.read_predictions(res) == {"a.jpg": "US President", "b.jpg": ""}
