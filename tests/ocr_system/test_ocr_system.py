"""The OCR system (recipes/ocr_system.py): crop geometry and reading order with PaddleOCR's semantics, the
end-to-end metric on hand-computed cases, and the pipeline end to end (GT-box oracle + a tiny random rec model,
so every text the system reports is checked against the same model run on independently made crops)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cv2
import numpy as np
import paddle
import pytest

from test_paddleocr_inference import VENV2_PY, _run_json, paddleocr_python  # noqa: F401
from paddle_recipes.config import load_config
from paddle_recipes.runtime.distributed import DistInfo
from paddle_recipes.recipes.ocr_det import OcrDet
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.recipes.ocr_system import OcrSystem
from paddle_recipes.tasks.ocr_rec.metrics import edit_distance
from paddle_recipes.tasks.ocr_rec.postprocess import ctc_greedy_decode
from paddle_recipes.tasks.ocr_rec.transforms import resize_norm_infer
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, write_pages
from paddle_recipes.tasks.ocr_det.geometry import min_area_quad, order_quad, rotate_crop
from paddle_recipes.tasks.ocr_system.geometry import crop_box, reading_order
from paddle_recipes.tasks.ocr_system.metric import E2EMetric, match_lines
from paddle_recipes.tasks.ocr_system.pipeline import OcrPipeline, rec_fn, run_files

DET_CFG, REC_CFG = "recipes/configs/ocr_det_smoke.yml", "recipes/configs/ocr_rec_smoke.yml"
REPO = Path(__file__).resolve().parents[2]


def _pattern(h, w, seed=0):
    """A smooth grey pattern (Gaussian-blurred noise, sigma 3 px) spanning 0..255: interpolation error is small."""
    p = cv2.GaussianBlur(np.random.default_rng(seed).uniform(0, 255, (h, w)).astype(np.float32), (0, 0), 3)
    return (p - p.min()) / (p.max() - p.min()) * 255


# ------------------------------------------------------------------ geometry
def test_axis_aligned_and_quarter_turn_crops_are_exact():
    img = np.random.default_rng(1).integers(0, 255, (50, 80, 3), dtype=np.uint8)
    x0, y0, w, h = 10, 5, 40, 12
    tl, tr, br, bl = [x0, y0], [x0 + w, y0], [x0 + w, y0 + h], [x0, y0 + h]
    assert np.array_equal(rotate_crop(img, [tl, tr, br, bl]), img[y0:y0 + h, x0:x0 + w])
    # the same box listed from its bottom-right corner reads it upside down (corner (0, 0) of the crop is the
    # pixel at br, so the region is the one 1 px down-right, reversed)
    assert np.array_equal(rotate_crop(img, [br, bl, tl, tr]), img[y0 + 1:y0 + h + 1, x0 + 1:x0 + w + 1][::-1, ::-1])
    # a tall region (h / w >= 1.5) is turned 90 degrees counter-clockwise, like PaddleOCR's np.rot90
    x0, y0, w, h = 20, 2, 10, 15
    tall = [[x0, y0], [x0 + w, y0], [x0 + w, y0 + h], [x0, y0 + h]]
    assert np.array_equal(rotate_crop(img, tall), np.rot90(img[y0:y0 + h, x0:x0 + w]))
    x0, w, h = 20, 10, 14  # h / w = 1.4: kept upright
    assert rotate_crop(img, [[x0, y0], [x0 + w, y0], [x0 + w, y0 + h], [x0, y0 + h]]).shape == (14, 10, 3)


@pytest.mark.parametrize("cos_sin", [(4 / 5, 3 / 5), (12 / 13, -5 / 13), (3 / 5, 4 / 5)])
def test_crop_of_a_rotated_line_equals_the_rendered_line(cos_sin):
    """A line pattern drawn rotated into a page, cropped back by its quad: equal up to the two cubic
    interpolations. Rotations with rational cos/sin keep the quad's side lengths integers (PaddleOCR's crop
    truncates them), so the crop has the line's exact size."""
    c, s = cos_sin
    h, w = 26, 65
    line = _pattern(h, w)
    m = np.float64([[c, -s, 70], [s, c, 70]])
    page = cv2.warpAffine(line, m, (160, 160), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REPLICATE)
    quad = np.float64([[0, 0], [w, 0], [w, h], [0, h]]) @ m[:, :2].T + m[:, 2]
    crop = rotate_crop(page, quad)
    assert crop.shape == (h, w)
    err = np.abs(crop - line)[2:-2, 2:-2]
    shifted = np.abs(rotate_crop(page, quad + [2, 0]) - line)[2:-2, 2:-2]  # a box 2 px off reads other pixels
    assert err.mean() < 1.0 and err.max() < 8.0  # of 255; the 2-px-off crop is an order of magnitude worse:
    assert shifted.mean() > 10 * err.mean()


def test_min_area_quad_orders_corners_like_paddleocr():
    # a 14-point bent polygon and a rotated rectangle: min-area rectangle, corners tl, tr, br, bl
    rect = cv2.boxPoints(((50.0, 40.0), (60.0, 20.0), 20.0))
    q = min_area_quad(rect)
    assert q[0][0] < q[1][0] and q[3][0] < q[2][0] and q[0][1] < q[3][1] and q[1][1] < q[2][1]
    assert abs(np.linalg.norm(q[0] - q[1]) - 60) < 1.5 and abs(np.linalg.norm(q[0] - q[3]) - 20) < 1.5
    img = _pattern(100, 100).astype(np.uint8)
    poly = np.concatenate([rect, rect[:1] + [0.2, 0.1]])  # 5 points: the min-area path in both modes
    # rotate (paddleocr 2.x) warps with the installed cv2, minarea (3.x) with OpenCV 4.x's cubic warp bytes
    assert np.array_equal(crop_box(img, poly, "rotate"), rotate_crop(img, min_area_quad(poly), opencv4=False))
    assert np.array_equal(crop_box(img, poly, "minarea"), rotate_crop(img, min_area_quad(poly)))
    assert np.array_equal(crop_box(img, rect, "rotate"), rotate_crop(img, rect, opencv4=False))
    with pytest.raises(ValueError, match="crop mode 'quad': must be one of"):
        crop_box(img, rect, "quad")


def test_reading_order_rows_within_10px_left_to_right():
    def box(x, y):
        return [[x, y], [x + 20, y], [x + 20, y + 8], [x, y + 8]]
    boxes = [box(100, 48), box(5, 50), box(60, 12), box(10, 14), box(150, 55), box(0, 80)]
    # by (y, x): 2 (y 12), 3 (14), 0 (48), 1 (50), 4 (55), 5 (80); then first points < 10 px apart in y swap when
    # the lower one is further left: 3 before 2, 1 before 0; 4 stays (right of 0), 5 is 25 px lower
    assert reading_order(boxes) == [3, 2, 1, 0, 4, 5]
    assert reading_order([box(50, 0), box(0, 9.9)]) == [1, 0] and reading_order([box(50, 0), box(0, 10)]) == [0, 1]
    assert reading_order([]) == []


def test_crops_and_order_equal_paddleocr_textsystem():
    """PaddleOCR's own get_rotate_crop_image / get_minarea_rect_crop / sorted_boxes on the same image and boxes
    (tests/scripts/make_ppocr_system_fixtures.py): the same uint8 crops and the same order."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "scripts"))
    from make_ppocr_system_fixtures import OUT, image

    ref = json.loads(OUT.read_text())  # recorded under OpenCV 4.10 (paddlex's pin)
    ref5 = json.loads(OUT.with_name("geometry_opencv5.json").read_text())  # the same functions under OpenCV 5.1
    img, c = image(), ref["cases"]
    here = ref if cv2.__version__.startswith("4.") else ref5
    for q, want in zip(c["quads"], here["quad_crops"]):  # rotate (2.x): the installed OpenCV's warp
        assert np.array_equal(crop_box(img, q, "rotate"), np.uint8(want)), q
    for p, want in zip(c["polys"], ref["poly_crops"]):  # minarea (3.x): OpenCV 4.x's bytes whatever is installed
        assert np.array_equal(crop_box(img, p, "minarea"), np.uint8(want)), p
    for p, want in zip(c["polys"], here["poly_crops"]):  # the same boxes through 2.x's path on the installed cv2
        assert np.array_equal(crop_box(img, p, "minarea", opencv4=False), np.uint8(want)), p
    assert reading_order(c["order"]) == ref["order"] == ref5["order"]


def _random_boxes(rng, h: int, w: int, n: int) -> list:
    """``n`` float32 boxes on an ``h`` x ``w`` image, of six kinds in turn: DB-like (rotated rectangles rounded to
    int, corners ordered, clipped to the image), any 4 float points in any order (crossed / non-convex ones too),
    tall and near-tall axis-aligned boxes (h / w around 1.5), thin ones (1-3 px, some 0 px: collinear points),
    5-14-point polygons along a bent line, and boxes reaching past the image border."""
    boxes = []
    for i in range(n):
        c = rng.uniform([0, 0], [w, h])
        kind = i % 6
        if kind == 0:
            q = cv2.boxPoints((tuple(c), tuple(rng.uniform(3, [w / 2, h / 3])), float(rng.uniform(-90, 90))))
            q = np.clip(np.round(order_quad(q)), 0, [w, h])
        elif kind == 1:
            q = c + rng.uniform(-30, 30, (4, 2))
        elif kind == 2:
            bw = int(rng.integers(2, 30))
            bh = int(round(bw * rng.uniform(1.3, 1.7)))
            q = np.float32([[0, 0], [bw, 0], [bw, bh], [0, bh]]) + np.floor(c)
        elif kind == 3:  # thin: 1-3 px; every 5th degenerate (OpenCV then warps to the source's size, both sides)
            t = 0.0 if i % 30 == 3 else rng.uniform(1, 3)
            q = c + np.float32([[0, 0], [rng.uniform(0, 20), 0], [rng.uniform(0, 20), t], [0, t]])
            q = q[:, ::-1] if rng.random() < 0.5 else q  # along x or along y
        elif kind == 4:
            k = int(rng.integers(3, 8))
            xs = np.linspace(0, rng.uniform(20, 80), k)
            top = np.stack([xs, 6 * np.sin(xs / 15)], 1)
            q = c + np.concatenate([top, (top + [0, rng.uniform(6, 20)])[::-1]]) + rng.normal(0, 0.7, (2 * k, 2))
        else:
            q = np.float32([[-5, -5], [25, -4], [24, 12], [-6, 11]]) + rng.choice([[0, 0], [w - 15, h - 6]])
        boxes.append(np.float32(q))
    return boxes


def _crop_images() -> list:
    """The geometry fixture's noise image, and every picture of tests/fixtures and docs/img (a JPEG page of the
    synthetic held-out set, a PNG sheet of line samples) but the 305 real-photo line crops (48 px high, few pixels
    for a box to land on; tests/ocr_rec/test_real_crops.py)."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "scripts"))
    from make_ppocr_system_fixtures import image

    files = sorted(p for d in ("tests/fixtures", "docs/img") for p in (REPO / d).rglob("*")
                   if p.suffix.lower() in (".jpg", ".jpeg", ".png") and "real_crops" not in p.parts)
    return [image()] + [cv2.imread(str(f)) for f in files]


@pytest.mark.slow  # 29 s (two side venvs); the pipeline-level parity tests in test_paddleocr_det_inference stay default
def test_crops_equal_paddleocr_2_and_3_byte_for_byte(paddleocr_python, tmp_path):
    """Our two crop modes on 240 random boxes per image equal PaddleOCR's own functions byte for byte (shape,
    dtype, every pixel): ``rotate`` = 2.x's get_rotate_crop_image for 4-point boxes and get_minarea_rect_crop for
    the others (TextSystem), ``minarea`` = paddlex 3.x's CropByPolys('quad') (the PaddleOCR(...) pipeline).
    tests/scripts/paddleocr_crops.py runs them in their venvs with ours beside them: in paddlex's venv (OpenCV
    4.10) ours with OpenCV 4.x's arithmetic (``minarea``'s own warp), in the 2.x venv ours with that venv's cv2
    (2.x pins no OpenCV); the 2.x venv has our OpenCV, so there its crops also equal ours made here."""
    rng = np.random.default_rng(0)
    imgs = _crop_images()
    boxes, owner = [], []
    for k, img in enumerate(imgs):
        boxes += _random_boxes(rng, *img.shape[:2], 240)
        owner += [k] * 240
    np.savez(tmp_path / "in.npz", owner=np.int32(owner), **{f"img_{k}": im for k, im in enumerate(imgs)},
             **{f"box_{i}": b for i, b in enumerate(boxes)})
    n4 = sum(len(b) == 4 for b in boxes)
    rep = _run_json(paddleocr_python, "paddleocr_crops.py", [3, tmp_path / "in.npz", tmp_path / "out3.npz"], tmp_path)
    print(f"paddlex 3.x venv (OpenCV {rep['opencv']}): {rep['crops_and_ours_equal']} crops / byte-equal to ours")
    assert rep["crops_and_ours_equal"] == {"minarea": [len(boxes), len(boxes)]}
    if not VENV2_PY.is_file():
        pytest.skip(f"3.x crops equal ours; no paddleocr 2.x venv at {VENV2_PY.parent.parent} (optional)")
    rep = _run_json(VENV2_PY, "paddleocr_crops.py", [2, tmp_path / "in.npz", tmp_path / "out2.npz"], tmp_path)
    print(f"paddleocr 2.x venv (OpenCV {rep['opencv']}): {rep['crops_and_ours_equal']} crops / byte-equal to ours")
    assert rep["crops_and_ours_equal"] == {"rotate": [n4, n4], "minarea": [len(boxes), len(boxes)], "kept": [n4, n4]}
    if rep["opencv"] == cv2.__version__:  # across processes: 2.x's crops == ours made here
        ref = np.load(tmp_path / "out2.npz")
        for i, (b, k) in enumerate(zip(boxes, owner)):
            for mode in ("rotate", "minarea"):
                want = ref[f"{mode}_{i}" if mode == "minarea" or len(b) == 4 else f"minarea_{i}"]
                got = crop_box(imgs[k], b, mode, opencv4=False)  # 2.x's crops: the installed OpenCV's warp
                assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want), (mode, i, b)


# ------------------------------------------------------------------ metric
def sq(x0, y0, x1, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


def test_e2e_metric_hand_computed():
    gts = [(sq(0, 0, 10, 10), "天地"), (sq(20, 0, 30, 10), "玄黄宇"), (sq(40, 0, 50, 10), "宙"), (sq(0, 20, 10, 30), "###")]
    preds = [(sq(0, 0, 10, 10), "天地"),        # IoU 1, exact: hit
             (sq(22, 0, 32, 10), "玄黄"),       # IoU 80/120 = 0.667 >= 0.5, text differs: ED 1 of 3
             (sq(45, 0, 55, 10), "宙"),         # IoU 50/150 = 0.333: unmatched although the text is right
             (sq(0, 20, 10, 30), "口")]         # on a ### region: not counted
    m = E2EMetric()
    assert sorted(m.update(preds, gts)) == [(0, 0), (1, 1)]
    r = m.compute()
    assert (r["pred"], r["gt"], r["hits"], r["matched"]) == (3, 3, 1, 2)
    assert r["precision"] == pytest.approx(1 / 3) and r["recall"] == pytest.approx(1 / 3) and r["f"] == pytest.approx(1 / 3)
    assert r["one_minus_ned"] == pytest.approx((1 + (1 - 1 / 3)) / 2)
    assert r["one_minus_ned_all"] == pytest.approx((1 + (1 - 1 / 3)) / 3)
    # a second image with nothing predicted: recall halves, precision stays
    m.update([], [(sq(0, 0, 5, 5), "人"), (sq(9, 9, 19, 19), "和"), (sq(30, 30, 40, 40), "平")])
    r = m.compute()
    assert (r["precision"], r["recall"]) == (pytest.approx(1 / 3), pytest.approx(1 / 6))
    assert r["f"] == pytest.approx(2 * (1 / 3) * (1 / 6) / (1 / 3 + 1 / 6))


def test_matching_is_one_to_one_highest_iou_first():
    gts = [(sq(0, 0, 10, 10), "a")]
    preds = [(sq(1, 0, 11, 10), "a"), (sq(0, 0, 10, 10), "b")]
    assert match_lines(preds, gts) == [(1, 0)]  # IoU 1 beats 0.82; the duplicate counts as a false positive
    m = E2EMetric()
    m.update(preds, gts)
    assert (m.compute()["precision"], m.compute()["recall"]) == (0.0, 0.0)
    assert E2EMetric().compute()["f"] == 0.0  # nothing seen: zeros, no division error


# ------------------------------------------------------------------ pipeline
@pytest.fixture(scope="module")
def rec_model():
    paddle.seed(0)
    cfg = load_config(REC_CFG, [], OcrRec.Config)
    r = OcrRec(cfg, None)
    model = r.build_model()
    model.eval()
    return model, r.charset, cfg.Global.image_shape


def read_one(model, charset, shape, crop):
    x = paddle.to_tensor(resize_norm_infer(crop, shape)[None])
    with paddle.no_grad():
        return ctc_greedy_decode(model(x).numpy(), charset)[0]


def test_rec_batches_by_width_and_restores_order(rec_model):
    model, charset, shape = rec_model
    rng = np.random.default_rng(3)
    crops = [rng.integers(0, 255, (32, w, 3), dtype=np.uint8) for w in (256, 64, 256, 64, 300)]
    got = rec_fn(model, charset, shape, batch_num=2)(crops)  # batches: [64, 64], [256, 256], [300]
    want = [read_one(model, charset, shape, c) for c in crops]
    assert [t for t, _ in got] == [t for t, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)


def test_drop_score_no_text_and_corrupt_image(tmp_path):
    img = np.full((40, 60, 3), 255, np.uint8)
    boxes = [np.float32(sq(2, 20, 30, 30)), np.float32(sq(2, 2, 30, 12))]
    pipe = OcrPipeline(lambda im: (boxes, [0.9, 0.9]), lambda crops: [("上", 0.4), ("下", 0.5)][:len(crops)], 0.5)
    out = pipe(img)  # reading order: the y=2 box first, read "上" at 0.4 < drop_score: dropped
    assert [(o["transcription"], o["points"][0]) for o in out] == [("下", [2.0, 20.0])]
    (tmp_path / "bad.jpg").write_bytes(b"not an image")
    cv2.imwrite(str(tmp_path / "blank.png"), img)
    empty = OcrPipeline(lambda im: ([], []), lambda crops: [], 0.5)
    res = run_files(empty, [str(tmp_path / "bad.jpg"), str(tmp_path / "blank.png")], tmp_path / "out", None)
    assert {k: res[k] for k in ("images", "lines", "no_text", "skipped")} == {"images": 1, "lines": 0, "no_text": 1,
                                                                             "skipped": 1}
    assert (tmp_path / "out" / "system_results.txt").read_text(encoding="utf-8") == f"{tmp_path / 'blank.png'}\t[]\n"


@pytest.fixture(scope="module")
def system(tmp_path_factory, rec_model):
    """3 synthetic pages, random tiny rec weights and smoke det weights saved as .pdparams."""
    tmp = tmp_path_factory.mktemp("ocr_system")
    chars = list("天地玄黄宇宙洪荒日月盈昃辰宿列张")
    root = write_pages(tmp / "pages", "val", 3, PageSynthConfig(width=160, height=128, lines=(2, 3), font_size=(14, 20),
                                                                vertical_prob=0.3, curve_prob=0.3), chars)
    model, _, _ = rec_model
    paddle.save(model.state_dict(), str(tmp / "rec.pdparams"))
    paddle.seed(0)
    det = OcrDet(load_config(DET_CFG, [], OcrDet.Config), None).build_model()
    paddle.save(det.state_dict(), str(tmp / "det.pdparams"))
    opts = [f"Global.output_dir={tmp / 'out'}", f"Det.config={DET_CFG}", f"Det.weights={tmp / 'det.pdparams'}",
            f"Rec.config={REC_CFG}", f"Rec.weights={tmp / 'rec.pdparams'}"]
    return {"tmp": tmp, "root": root, "opts": opts}


def test_eval_with_det_oracle_reports_what_the_rec_model_reads(system, rec_model, capsys):
    model, charset, shape = rec_model
    root = system["root"]
    lines = (root / "label.txt").read_text(encoding="utf-8").splitlines()
    rewritten, hits, n_gt, ned = [], 0, 0, 0.0
    for k, line in enumerate(lines):  # GT text of each page's first line := what the model reads there
        path, items = line.split("\t")
        items = json.loads(items)
        img = cv2.imread(str(root / path))
        for j, it in enumerate(items):
            text = read_one(model, charset, shape, crop_box(img, it["points"]))[0]
            if j == 0:
                it["transcription"] = text
            hits += text == it["transcription"]
            ned += 1 - edit_distance(text, it["transcription"]) / max(len(text), len(it["transcription"]), 1)
            n_gt += 1
        rewritten.append(f"{path}\t{json.dumps(items, ensure_ascii=False)}")
    rewritten.append("images/missing.jpg\t" + lines[0].split("\t")[1])  # a missing image: counted, not fatal
    (root / "e2e.txt").write_text("\n".join(rewritten) + "\n", encoding="utf-8")
    OcrSystem.main(["--mode", "eval", "-o", *system["opts"], "Det.oracle=true", "Global.drop_score=0",
                    "Global.rec_batch_num=1", f"Eval.dataset.data_dir={root}",
                    f"Eval.dataset.label_file_list=[{root / 'e2e.txt'}]"])
    r = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert hits >= len(lines)
    assert (r["gt"], r["pred"], r["matched"], r["hits"], r["images"]) == (n_gt, n_gt, n_gt, hits, len(lines))
    assert r["precision"] == pytest.approx(hits / n_gt) and r["recall"] == pytest.approx(hits / n_gt)
    assert r["one_minus_ned"] == pytest.approx(ned / n_gt)
    assert r["det_weights"].startswith("oracle") and r["skipped"]
    assert json.loads((system["tmp"] / "out" / "e2e_metrics.json").read_text(encoding="utf-8"))["hits"] == hits


def test_predict_writes_results_and_pictures_and_counts_bad_images(system, capsys, caplog):
    images = system["tmp"] / "images"
    images.mkdir()
    page = cv2.imread(str(system["root"] / "images" / "00000000.jpg"))
    cv2.imwrite(str(images / "page.png"), page)
    (images / "corrupt.jpg").write_bytes(b"\xff\xd8 truncated")
    OcrSystem.main(["--mode", "predict", "-o", *system["opts"], f"Predict.images={images}"])
    r = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (r["images"], r["skipped"]) == (1, 1) and r["det_weights"].endswith("det.pdparams")
    assert any("corrupt.jpg" in rec.getMessage() and "skipped" in rec.getMessage() for rec in caplog.records)
    path, lines = (system["tmp"] / "out" / "predict" / "system_results.txt").read_text(encoding="utf-8").split("\t")
    assert path.endswith("page.png") and len(json.loads(lines)) == r["lines"]
    assert all(set(d) == {"transcription", "points", "score"} and d["score"] >= 0.5 for d in json.loads(lines))
    pic = cv2.imread(str(system["tmp"] / "out" / "predict" / "page.png"))
    assert pic.shape == (page.shape[0], 2 * page.shape[1], 3)


@pytest.mark.parametrize("opts, crop", [([], "minarea"), (["Det.crop=rotate"], "rotate"),
                                        (["Det.crop=rotate", "Det.opt=[PostProcess.box_type=poly]"], "minarea")])
def test_det_crop_reaches_the_pipeline(system, opts, crop):
    """Det.crop (default minarea) is the pipeline's crop mode; a 'poly' detector's boxes are always cropped through
    their min-area rectangle (as paddleocr 2.x and 3.x do)."""
    cfg = load_config("recipes/configs/ocr_system.yml", [*system["opts"], *opts], OcrSystem.Config)
    assert OcrSystem(cfg, DistInfo()).pipeline().crop == crop


@pytest.mark.parametrize("opt, says", [("Det.oracle=true", "ocr_system: error: Det.oracle"),
                                       ("Det.crop=quad", "Det.crop: 'quad' is not one of ['minarea', 'rotate']"),
                                       ("Rec.weights=/nope.pdparams", "/nope.pdparams"),
                                       ("Global.font=comic_sans", "Global.font"),
                                       ("Det.opt=[Global.no_such_key=1]", "no_such_key")])
def test_bad_input_is_one_line_exit_2(system, capsys, opt, says):
    images = system["root"] / "images"
    with pytest.raises(SystemExit) as exc:
        OcrSystem.cli(["--mode", "predict", "-o", *system["opts"], opt, f"Predict.images={images}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and says in err[-1] and err[-1].startswith("ocr_system: error:")
