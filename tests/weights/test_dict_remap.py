"""Rows follow characters (weights.dict_remap): a model's class layers are re-indexed from the dict its weights were
trained with to the dict the run names. Another order -> the same outputs permuted (the same texts); added characters
start below every known class; dropped characters lose their rows; what cannot match is one line."""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import paddle
import pytest
import yaml

from conftest import run_cli
from paddle_recipes.checkpoint.format import CheckpointError
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.tasks.ocr_rec.charset import CharDict, CharDictError
from paddle_recipes.tasks.ocr_rec.class_rows import weights_dict
from paddle_recipes.tasks.ocr_rec.ppocr_models import PPOCR_MOBILE_REC_ARCH, build_ppocr_rec_model
from paddle_recipes.weights.dict_remap import (NEW_ROW_MARGIN, ClassMap, ClassMapError, ClassNames,
                                               checkpoint_class_names, remap_class_rows)
from test_ppocr_import import KEYS, REC_DIR, REC_YAML, needs_official

HERE = Path(__file__).resolve().parents[1]
SOURCE = tuple("0123456789abcdefghijklmnopqrstuvwxyz")
SMALL_ARCH = {**PPOCR_MOBILE_REC_ARCH, "Backbone": {"name": "PPLCNetV3", "scale": 0.25}}  # MultiHead: CTC + GTC


def model_for(chars, seed: int = 0, space: bool = False):
    paddle.seed(seed)
    model = build_ppocr_rec_model(SMALL_ARCH, len(chars) + 1 + int(space))
    model.eval()
    model.set_eval_output("logits")
    return model


def logits(model, x) -> np.ndarray:
    with paddle.no_grad():
        return model(paddle.to_tensor(x)).numpy()


def assert_same(actual, desired):
    """Equal to float32 rounding of the scale: a random net's logits reach 1e10, and the class layer's matmul may sum
    another way for another column order."""
    assert actual.shape == desired.shape
    assert np.abs(actual - desired).max() <= 1e-5 * np.abs(desired).max()


def remapped(source_model, target_chars, source_chars=SOURCE, space=False):
    target = model_for(target_chars, seed=1, space=space)
    weights, report = remap_class_rows(source_model.state_dict(), target, ClassMap(source_chars, tuple(target_chars)))
    target.set_state_dict(weights)
    return target, report


@pytest.fixture(scope="module")
def source_model():
    return model_for(SOURCE)


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(0).normal(size=(2, 3, 48, 96)).astype("float32")


def test_another_order_gives_the_same_logits_permuted(source_model, x):
    target_chars = SOURCE[::-1]
    target, report = remapped(source_model, target_chars)
    before, after = logits(source_model, x), logits(target, x)
    rows = [0] + [1 + SOURCE.index(c) for c in target_chars]  # blank, then each run character's old row
    assert_same(after, before[..., rows])
    decode_before = ["".join(SOURCE[i - 1] for i in path if i) for path in before.argmax(-1)]
    decode_after = ["".join(target_chars[i - 1] for i in path if i) for path in after.argmax(-1)]
    assert decode_after == decode_before  # the same texts
    assert (report.kept, report.moved, report.new, report.dropped) == (36, 36, [], [])
    assert "kept 36 (36 moved), new 0, dropped 0" in report.line()


def test_gtc_rows_follow_characters_too(source_model):
    target_chars = SOURCE[::-1]
    target, report = remapped(source_model, target_chars)
    src, dst = source_model.state_dict(), target.state_dict()
    lead = 4  # the NRTR vocabulary's <blank> <unk> <s> </s>
    emb, prj = "head.gtc_head.embedding.embedding.weight", "head.gtc_head.tgt_word_prj.weight"
    assert emb in report.tensors and prj in report.tensors
    for j, c in enumerate(target_chars):
        i = SOURCE.index(c)
        np.testing.assert_array_equal(dst[emb].numpy()[lead + j], src[emb].numpy()[lead + i])
        np.testing.assert_array_equal(dst[prj].numpy()[:, lead + j], src[prj].numpy()[:, lead + i])
    np.testing.assert_array_equal(dst[emb].numpy()[:lead], src[emb].numpy()[:lead])


def test_added_characters_start_below_every_known_class(source_model, x):
    target_chars = ("新", *SOURCE[:18], "字", "℃", *SOURCE[18:])
    target, report = remapped(source_model, target_chars)
    before, after = logits(source_model, x), logits(target, x)
    known = [j + 1 for j, c in enumerate(target_chars) if c in SOURCE]
    assert_same(after[..., [0] + known], before)  # known classes unchanged
    new = [j + 1 for j, c in enumerate(target_chars) if c not in SOURCE]
    assert (after[..., new].max(-1) < after[..., known].max(-1) - NEW_ROW_MARGIN / 2).all()
    assert report.new == ["新", "字", "℃"] and report.kept == 36 and "new 3 (新字℃)" in report.line()


def test_dropped_characters_lose_their_rows(source_model, x):
    target_chars = tuple(c for c in SOURCE if c not in "aeiou")
    target, report = remapped(source_model, target_chars)
    before, after = logits(source_model, x), logits(target, x)
    assert_same(after, before[..., [0] + [1 + SOURCE.index(c) for c in target_chars]])
    assert report.dropped == list("aeiou") and report.new == []


def test_weights_trained_with_a_space_keep_it(x):
    source = model_for(SOURCE, space=True)  # use_space_char: " " is the row after the last character
    target, report = remapped(source, (" ", *SOURCE), space=False)
    assert_same(logits(target, x), logits(source, x)[..., [0, 37, *range(1, 37)]])
    assert "use_space_char" in report.source


def test_what_cannot_match_is_one_line(source_model):
    with pytest.raises(ClassMapError, match=r"shares no character with the weights' dict \(w.txt, 36 characters\)"):
        ClassMap(SOURCE, ("甲", "乙"), source="w.txt")
    target = model_for(SOURCE[:10])
    with pytest.raises(ClassMapError, match=r"holds 37 class rows, but the weights' dict \(w.txt\) has 10 .*"
                                            r"Global.pretrained_dict"):
        remap_class_rows(source_model.state_dict(), target, ClassMap(SOURCE[:10], SOURCE[:10], source="w.txt"))


def test_a_resumed_run_keeps_its_dict():
    part = ClassNames(list("abc"), "dict.txt")
    part.set_state_dict(ClassNames(list("abc")).state_dict())
    with pytest.raises(CheckpointError, match=r"another dict \(3 characters\) than this run's dict.txt \(2\)"):
        ClassNames(list("ab"), "dict.txt").set_state_dict(part.state_dict())


@pytest.mark.parametrize("content,says", [
    ("a\nb\na\n", r"dup\.txt: character 'a' appears twice \(entries 1 and 3\)"),
    ("a\n\nb\n", r"dup\.txt:2: empty line"),
    ("\ufeffa\nb\n", r"dup\.txt:1: starts with a byte-order mark"),
    (b"a\n\xff\xfe\n", r"dup\.txt:2: not UTF-8 text"),
])
def test_bad_dict_files_name_file_and_line(tmp_path, content, says):
    path = tmp_path / "dup.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    with pytest.raises(CharDictError, match=says):
        CharDict.from_file(path)


# --- through the recipe, with PaddleOCR's released PP-OCRv4 rec --------------------------------------------------

TEXTS = ["登机牌", "航班 FLIGHT", "71,243,800"]


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    root = tmp_path_factory.mktemp("remap")
    imgs = root / "img"
    imgs.mkdir()
    for name in ("00006737_00.jpg", "00006737_07.jpg", "00015504_63.jpg"):  # the TEXTS
        shutil.copy(HERE / "fixtures" / "real_crops" / "images" / name, imgs / name)
    chars = [c for c in KEYS.read_text(encoding="utf-8").split("\n") if c]
    px = root / "PP-OCRv4_mobile_rec"  # a PaddleX folder: inference.yml carries the dict
    shutil.copytree(REC_DIR, px)
    (px / "inference.yml").write_text(yaml.safe_dump({"Global": {"model_name": "PP-OCRv4_mobile_rec"}, "PostProcess": {
        "name": "CTCLabelDecode", "character_dict": chars}}, allow_unicode=True), encoding="utf-8")
    reversed_dict = root / "reversed.txt"
    reversed_dict.write_text("\n".join(chars[::-1]) + "\n", encoding="utf-8")
    return root, imgs, px, reversed_dict


def predict(root: Path, imgs: Path, *extra, capsys=None):
    from test_paddleocr_recipe import run

    out = root / f"out{len(list(root.glob('out*')))}"
    argv = ["-c", str(REC_YAML), "--mode", "predict", "-o", f"Global.infer_img={imgs}",
            f"Global.save_model_dir={out}", f"Global.save_res_path={out / 'predicts.txt'}", *extra]
    return run(argv) if capsys is None else (run_cli(OcrRec, argv, capsys), out)


@needs_official
def test_a_paddlex_folder_read_with_its_dict_in_another_order(real, caplog):
    root, imgs, px, reversed_dict = real
    with caplog.at_level(logging.INFO):
        got = predict(root, imgs, f"Global.pretrained_model={px}", f"Global.character_dict_path={reversed_dict}")
    assert [t for _, t, _ in got] == TEXTS  # rows by position read 登机牌 as 鏂🐳韔
    said = [r.getMessage() for r in caplog.records if "class rows follow characters" in r.getMessage()]
    assert len(said) == 1 and "kept 6624 (6622 moved), new 0, dropped 0" in said[0], said


@needs_official
def test_a_legacy_folder_with_global_pretrained_dict(real, caplog):
    root, imgs, _, reversed_dict = real
    base = predict(root, imgs, f"Global.pretrained_model={REC_DIR}", f"Global.character_dict_path={KEYS}")
    with caplog.at_level(logging.WARNING):
        extended = root / "extended.txt"
        extended.write_text(reversed_dict.read_text(encoding="utf-8") + "㎜\n龘\n", encoding="utf-8")
        got = predict(root, imgs, f"Global.pretrained_model={REC_DIR}", f"Global.character_dict_path={extended}",
                      f"Global.pretrained_dict={KEYS}")
    assert [t for _, t, _ in got] == [t for _, t, _ in base] == TEXTS
    np.testing.assert_allclose([s for *_, s in got], [s for *_, s in base], rtol=1e-5)
    warned = [r.getMessage() for r in caplog.records if "never trained" in r.getMessage()]
    assert len(warned) == 1 and warned[0].startswith("2 characters of the dict were never trained"), warned


@needs_official
@pytest.mark.parametrize("case", ["no shared character", "yml without dict", "bad named dict"])
def test_dicts_that_cannot_match_exit_2_and_write_nothing(real, capsys, case):
    root, imgs, px, _ = real
    bad = root / case.replace(" ", "_")
    if case == "no shared character":
        (root / "unrelated.txt").write_text("𪚥\n⿰\n㊣\n", encoding="utf-8")  # none in ppocr_keys_v1
        extra = [f"Global.pretrained_model={px}", f"Global.character_dict_path={root / 'unrelated.txt'}"]
        says = "shares no character with the weights' dict"
    elif case == "yml without dict":
        shutil.copytree(px, bad)
        (bad / "inference.yml").write_text("Global: {model_name: PP-OCRv4_mobile_rec}\n", encoding="utf-8")
        extra = [f"Global.pretrained_model={bad}", f"Global.character_dict_path={KEYS}"]
        says = "Global.pretrained_dict"
    else:
        bad.write_text("a\nb\na\n", encoding="utf-8")
        extra = [f"Global.pretrained_model={REC_DIR}", f"Global.character_dict_path={KEYS}",
                 f"Global.pretrained_dict={bad}"]
        says = f"{bad}: character 'a' appears twice"
    (code, err), out = predict(root, imgs, *extra, capsys=capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and "Traceback" not in err and says in err, err
    assert len([ln for ln in lines if ln.startswith("ocr_rec:")]) == 1, err
    assert not (out / "predicts.txt").exists()


# --- our checkpoints carry their class names ----------------------------------------------------------------------

SMOKE = HERE.parent / "recipes" / "configs" / "ocr_rec_smoke.yml"


def test_a_checkpoint_carries_its_dict_and_a_resume_keeps_it(tmp_path, capsys):
    from test_paddleocr_recipe import run, write_label_set

    out = tmp_path / "run"
    common = [f"Global.output_dir={out}", f"Synthetic.root={tmp_path / 'data'}"]
    run(["-c", str(SMOKE), "-o", *common, "Global.epochs=1"])
    ckpt = out / "checkpoints"
    chars = checkpoint_class_names(ckpt)
    assert chars == CharDict.from_file(HERE.parent / "datasets" / "ocr_rec" / "ch_common_3000.txt").chars
    assert weights_dict(str(ckpt))[0] == chars
    shuffled = tmp_path / "shuffled.txt"
    order = np.random.default_rng(0).permutation(len(chars))
    shuffled.write_text("\n".join(chars[i] for i in order) + "\n", encoding="utf-8")
    imgs = write_label_set(tmp_path / "lines", "0123456789", n=8) / "img"

    def predict(*extra):
        return run(["-c", str(SMOKE), "--mode", "predict", "-o", *common, f"Global.weights={ckpt}",
                    f"Predict.images={imgs}", *extra])

    first, again = predict(), predict(f"Global.character_dict_path={shuffled}")
    assert [t for _, t, _ in again] == [t for _, t, _ in first] and any(t for _, t, _ in first)
    np.testing.assert_allclose([s for *_, s in again], [s for *_, s in first], rtol=1e-5)
    code, err = run_cli(OcrRec, ["-c", str(SMOKE), "-o", *common, "Global.epochs=2", "Global.resume=auto",
                                 f"Global.character_dict_path={shuffled}"], capsys)
    assert code == 2 and "Traceback" not in err and "a resumed run keeps its dict" in err, err
