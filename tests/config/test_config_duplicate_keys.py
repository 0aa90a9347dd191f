"""A key written twice in one YAML mapping: refused in our configs (one line naming both lines); in a file read as
a PaddleOCR or PaddleDetection YAML the last value is used, as their own loaders (yaml.load) do, with one note
naming the key and lines.

PaddleOCR publishes such files. Seen by hand in upstream commit a8369219 ("add ocr-det v5 model", 13 May 2025;
also the index's copy at 03a00acaf98) configs/det/PP-OCRv5/PP-OCRv5_server_det.yml has `transforms:` twice under
Eval.dataset (lines 144-145; later fixed upstream), and in fork XucroYuri/PaddleOCR-Dev 857a01d (5 Aug 2026)
PP-OCRv3_det_cml/dml and ch_PP-OCRv2_det_cml/dml have `model_name_pairs` twice in one loss. The fixtures here are
our own: our re-dumped fixtures of those files (tests/fixtures/paddleocr_det_configs) with the same duplicate shape
written back in. With $PADDLEOCR_SRC (a PaddleOCR checkout) every real det/rec YAML that has a duplicate key is
also read (skipped otherwise).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from paddle_recipes.compat.ppdet import ppdet_config_translator
from paddle_recipes.config import ConfigError, OverrideNote, load_config, load_yaml
from paddle_recipes.recipes.ocr_det import OcrDet
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.tasks.det_ppyoloe.config import DetConfig

REPO = Path(__file__).resolve().parents[2]
DET = REPO / "tests" / "fixtures" / "paddleocr_det_configs"
PPDET = REPO / "tests" / "fixtures" / "ppdet_configs" / "ppyoloe"
KEPT_LAST = "the value on line {1} is used, as the YAML loaders of PaddleOCR and PaddleDetection do"


def with_lines(src: Path, before: int, lines: str, dst: Path) -> Path:
    """`src` with `lines` inserted before its line `before` (1-based), written to `dst`."""
    text = src.read_text(encoding="utf-8").splitlines(keepends=True)
    assert text[before - 1].strip(), "insert before a written line"
    dst.write_text("".join(text[:before - 1]) + lines + "".join(text[before - 1:]), encoding="utf-8")
    return dst


def load_det(path: Path, notes: list | None = None):
    return load_config(path, [], OcrDet.Config, translators=OcrDet.config_translators, notes=notes)


def test_our_config_refuses_a_duplicate_key(tmp_path):
    cfg = with_lines(REPO / "recipes" / "configs" / "ocr_det.yml", 2, "Global: {epochs: 1}\n", tmp_path / "ours.yml")
    first = next(i for i, ln in enumerate(cfg.read_text().splitlines(), 1) if ln.startswith("Global:") and i != 2)
    with pytest.raises(ConfigError) as err:
        load_det(cfg)
    assert str(err.value) == f"{cfg}: duplicate key 'Global' on lines 2 and {first} (YAML would keep only the " \
                             "second): remove one"


def test_paddleocr_det_file_keeps_the_last_transforms_with_one_note(tmp_path):
    """PP-OCRv5_server_det's shape: an empty `transforms:` right above the real one (Eval.dataset)."""
    src = DET / "PP-OCRv5" / "PP-OCRv5_server_det.yml"
    line = next(i for i, ln in enumerate(src.read_text().splitlines(), 1) if ln == "    transforms:" and i > 60)
    dup = with_lines(src, line, "    transforms:\n", tmp_path / "PP-OCRv5_server_det.yml")
    notes = []
    cfg = load_det(dup, notes)
    assert notes[0] == f"{dup}: duplicate key 'transforms' on lines {line} and {line + 1}: " + \
        KEPT_LAST.format(line, line + 1)
    clean = load_det(src)
    assert cfg.Eval == clean.Eval and cfg.Architecture == clean.Architecture  # the second (full) list is used
    assert not any(isinstance(n, OverrideNote) for n in notes)


@pytest.mark.parametrize("name", ["PP-OCRv3/PP-OCRv3_det_cml.yml", "PP-OCRv3/PP-OCRv3_det_dml.yml"])
def test_distillation_file_with_a_duplicate_reaches_its_one_line_refusal(name, tmp_path, capsys):
    """PP-OCRv3_det_cml/dml's shape: DistillationDMLLoss's `model_name_pairs` written as a block list, then as
    a flow list. The file stops on the distillation model (one line), not on the duplicate."""
    from conftest import run_cli

    src = DET / name
    line = next(i for i, ln in enumerate(src.read_text().splitlines(), 1)
                if ln.strip() == "model_name_pairs: [Student, Student2]")
    dup = with_lines(src, line, "      model_name_pairs:\n      - [Student, Student2]\n", tmp_path / Path(name).name)
    found: list = []
    load_yaml(dup.read_text(), str(dup), duplicates=found)
    assert found == [("model_name_pairs", line, line + 2)]
    code, err = run_cli(OcrDet, ["-c", str(dup)], capsys)
    lines = [ln for ln in err.splitlines() if ln.startswith("ocr_det:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("ocr_det: error: Architecture.name: 'DistillationModel': PaddleOCR distillation "
                               "models (Models Student: ")


def test_ppdet_file_and_its_base_keep_the_last_value_with_one_note_each(tmp_path):
    base = with_lines(PPDET / "_base_" / "optimizer_80e.yml", 1, "epoch: 3\n", tmp_path / "optimizer.yml")
    top = tmp_path / "top.yml"
    bases = [PPDET.parent / "datasets" / "coco_detection.yml", PPDET.parent / "runtime.yml", base,
             PPDET / "_base_" / "ppyoloe_plus_crn.yml", PPDET / "_base_" / "ppyoloe_plus_reader.yml"]
    top.write_text(f"_BASE_: {[str(b) for b in bases]}\nlog_iter: 5\ndepth_mult: 0.33\nwidth_mult: 0.50\n"
                   "log_iter: 7\n", encoding="utf-8")
    notes = []
    cfg = load_config(top, [], DetConfig, translators=(ppdet_config_translator,), notes=notes)
    assert (cfg.Global.epochs, cfg.Global.log_every) == (80, 7)
    assert notes[:2] == [f"{top}: duplicate key 'log_iter' on lines 2 and 5: " + KEPT_LAST.format(2, 5),
                         f"{base}: duplicate key 'epoch' on lines 1 and 2: " + KEPT_LAST.format(1, 2)]


UPSTREAM = os.environ.get("PADDLEOCR_SRC", "")
# what the real files with a duplicate key must reach (when the checkout has them with the duplicate)
UPSTREAM_OUTCOME = {"det/PP-OCRv5/PP-OCRv5_server_det.yml": "translates",
                    **{f"det/{name}.yml": "PaddleOCR distillation models" for name in (
                        "PP-OCRv3/PP-OCRv3_det_cml", "PP-OCRv3/PP-OCRv3_det_dml", "ch_PP-OCRv2/ch_PP-OCRv2_det_cml",
                        "ch_PP-OCRv2/ch_PP-OCRv2_det_dml")}}


@pytest.mark.skipif(not UPSTREAM or not (Path(UPSTREAM) / "configs" / "det").is_dir(),
                    reason="set PADDLEOCR_SRC to a PaddleOCR checkout to read its real YAMLs")
def test_real_paddleocr_files_with_duplicate_keys_load_past_them():
    """Every configs/det and configs/rec YAML of the checkout with a duplicate key: it translates (with the
    note), or stops in one line that is not about the duplicate (distillation, a network not built here).
    Checked: fork XucroYuri/PaddleOCR-Dev at 857a01d (the 4 distillation files) and at a8369219 (also
    PP-OCRv5_server_det.yml, lines 144 and 145)."""
    root = Path(UPSTREAM) / "configs"
    seen = []
    for path in sorted([*root.glob("det/**/*.y*ml"), *root.glob("rec/**/*.y*ml")]):
        found: list = []
        load_yaml(path.read_text(encoding="utf-8"), str(path), duplicates=found)
        if not found:
            continue
        name = path.relative_to(root).as_posix()
        seen.append(name)
        recipe = OcrDet if name.startswith("det/") else OcrRec
        notes: list = []
        try:
            load_config(path, [], recipe.Config, translators=recipe.config_translators, notes=notes)
            outcome = "translates"
            assert sum("duplicate key" in n for n in notes) == len(found), (name, notes)
        except ConfigError as exc:
            outcome = str(exc)
            assert "duplicate key" not in outcome and "\n" not in outcome, (name, outcome)
        assert UPSTREAM_OUTCOME.get(name, outcome) in outcome, (name, outcome)
    if not seen:
        pytest.skip(f"no YAML under {root}/det or /rec has a duplicate key")
