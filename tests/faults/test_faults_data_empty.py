"""Fault suite: empty training sets are one line naming the source, exit 2 (issue 21 item 5).

Each case runs the recipe's command line in this process (Recipe.cli), as `python recipes/x.py` would.
"""
from __future__ import annotations

import lmdb
import pytest
from PIL import Image

from conftest import REPO_ROOT, run_cli
from paddle_recipes.recipes.ernie_multitask import ErnieMultitask
from paddle_recipes.recipes.ocr_rec import OcrRec

OCR_SMOKE = REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml"
ERNIE_SMOKE = REPO_ROOT / "recipes" / "configs" / "ernie_multitask_smoke.yml"


def _cli_error(recipe, argv, capsys) -> list[str]:
    code, err = run_cli(recipe, argv, capsys)
    assert code == 2
    assert "Traceback" not in err, err
    return [ln for ln in err.splitlines() if ln.startswith(f"{recipe.name}:")]


def _label_set(root, name: str, text: str) -> str:
    (root / "img").mkdir(exist_ok=True)
    Image.new("RGB", (64, 32), "white").save(root / "img" / "a.png")
    (root / name).write_text(text, encoding="utf-8")
    return str(root / name)


@pytest.mark.parametrize("case", ["empty", "blank", "outside_dict"])
def test_ocr_label_file_without_usable_samples(tmp_path, capsys, case):
    text = {"empty": "", "blank": "\n  \n\n", "outside_dict": "img/a.png\t☃☃\nimg/a.png\t♞\n"}[case]
    labels = _label_set(tmp_path, f"{case}.txt", text)
    errors = _cli_error(OcrRec, ["-c", str(OCR_SMOKE), "-o", f"Global.output_dir={tmp_path / 'out'}",
                                 f"Train.dataset.data_dir={tmp_path}", f"Train.dataset.label_file_list=[{labels}]",
                                 f"Synthetic.root={tmp_path / 'synth'}", "Synthetic.num_val=4", "Synthetic.num_heldout=0"],
                        capsys)
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"ocr_rec: error: Train.dataset: no usable samples in {labels} (")
    if case == "outside_dict":
        assert "unknown_char=2" in errors[0] and "'☃'x1" in errors[0]


def test_ocr_lmdb_with_zero_samples(tmp_path, capsys):
    env = lmdb.open(str(tmp_path / "lmdb0"), map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"num-samples", b"0")
    env.close()
    errors = _cli_error(OcrRec, ["-c", str(OCR_SMOKE), "-o", f"Global.output_dir={tmp_path / 'out'}",
                                 "Train.dataset.format=lmdb", f"Train.dataset.data_dir={tmp_path / 'lmdb0'}",
                                 f"Synthetic.root={tmp_path / 'synth'}", "Synthetic.num_val=4", "Synthetic.num_heldout=0"],
                        capsys)
    assert errors == [f"ocr_rec: error: Train.dataset: no usable samples in {tmp_path / 'lmdb0'} "
                      "(Train.dataset: no samples skipped); check data_dir / label files and the character dict"]


def test_ocr_synthetic_num_train_zero(tmp_path, capsys):
    errors = _cli_error(OcrRec, ["-c", str(OCR_SMOKE), "-o", f"Global.output_dir={tmp_path / 'out'}",
                                 f"Synthetic.root={tmp_path / 'synth'}", "Synthetic.num_train=0", "Synthetic.num_val=4",
                                 "Synthetic.num_heldout=0"], capsys)
    assert len(errors) == 1 and errors[0].startswith(
        f"ocr_rec: error: Train.dataset: no usable samples in {tmp_path / 'synth'}"), errors


@pytest.mark.parametrize("key", ["train_size", "eval_size"])
def test_ernie_empty_task_data(tmp_path, capsys, key):
    errors = _cli_error(ErnieMultitask, ["-c", str(ERNIE_SMOKE), "-o", f"Global.output_dir={tmp_path}",
                                         f"Data.{key}=0"], capsys)
    assert errors == [f"ernie_multitask: error: Data.{key} must be >= 1, got 0 (in {ERNIE_SMOKE})"]
