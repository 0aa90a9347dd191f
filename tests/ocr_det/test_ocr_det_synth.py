"""Synthetic det pages: deterministic, labels readable by the det dataset, polygons on the ink, crops for rec;
and the DB train/eval sample pipelines on them."""
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from shapely.geometry import Polygon

from paddle_recipes.tasks.ocr_rec.fonts import fonts_for
from paddle_recipes.tasks.ocr_rec.synth import LineRenderer
from paddle_recipes.tasks.ocr_det.batch import collate
from paddle_recipes.tasks.ocr_det.dataset import DetDataset
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, bend, ink_box, render_page, write_pages
from paddle_recipes.tasks.ocr_det.transforms import DBEvalTransform, DBTrainTransform

CHARS = [c.strip() for c in Path("datasets/ocr_rec/ch_hanzi_100.txt").read_text(encoding="utf-8").splitlines()
         if c.strip()]
CFG = PageSynthConfig(width=160, height=128, lines=(2, 4), font_size=(14, 22), vertical_prob=0.3, curve_prob=0.5)


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("pages")
    write_pages(out, "train", 6, CFG, CHARS)
    return out / "train"


def test_pages_are_deterministic_and_labels_load_without_skips(pages, tmp_path):
    again = write_pages(tmp_path, "train", 6, CFG, CHARS, workers=3)  # chunks in 3 processes: same files
    assert (again / "crop_label.txt").read_text(encoding="utf-8") == (pages / "crop_label.txt").read_text(
        encoding="utf-8")
    assert (again / "label.txt").read_text(encoding="utf-8") == (pages / "label.txt").read_text(encoding="utf-8")
    assert (again / "images/00000003.jpg").read_bytes() == (pages / "images/00000003.jpg").read_bytes()
    ds = DetDataset(pages / "label.txt", pages, strict=True)
    assert len(ds) == 6 and ds.stats.total == 0
    for i in range(len(ds)):
        s = ds[i]
        # lines=(2, 4) lines are wanted; the last block (a paragraph, columns or a table of up to 12 cells) may pass that
        assert isinstance(s, dict) and s["polygon_problems"] == [] and 1 <= len(s["polys"]) <= 3 + 12
        h, w = s["image"].shape[:2]
        for p, text in zip(s["polys"], s["texts"]):
            assert Polygon(p).is_valid and p[:, 0].min() >= 0 and p[:, 0].max() <= w and p[:, 1].max() <= h
            assert text and not s["ignore_tags"][0]


def test_every_line_has_a_crop_as_the_system_cuts_it(pages):
    det = [json.loads(line.split("\t")[1]) for line in (pages / "label.txt").read_text(encoding="utf-8").splitlines()]
    rec = [line.split("\t") for line in (pages / "crop_label.txt").read_text(encoding="utf-8").splitlines()]
    by_name = dict(rec)
    for i, items in enumerate(det):
        for j, item in enumerate(items):
            name = f"crops/{i:08d}_{j:02d}.jpg"
            pts = np.array(item["points"])
            assert by_name[name] == item["transcription"]
            crop = cv2.imread(str(pages / name))
            assert crop.shape[0] == CFG.crop_height
            if np.ptp(pts[:, 1]) > 2 * np.ptp(pts[:, 0]):  # a vertical line is turned, so the crop is wide
                assert crop.shape[1] > crop.shape[0]


def test_heldout_pages_use_only_eval_fonts():
    renderer = LineRenderer(CFG.line_config(), CHARS, "eval")
    assert {f.name for f in renderer.fonts} <= {f.name for f in fonts_for("eval")}
    img, lines = render_page(renderer, CFG, np.random.default_rng(0))
    assert img.shape == (128, 160, 3) and lines


def test_polygon_covers_the_ink_of_a_bent_line():
    mask = np.zeros((20, 100), np.float32)
    mask[6:14, 5:95] = 1.0
    box = ink_box(mask)
    np.testing.assert_array_equal(box, [[4, 5], [96, 5], [96, 15], [4, 15]])
    bent, poly = bend(mask, box, amp=6.0, cycles=0.5, phase=0.0, points=8)
    ink = np.argwhere(bent > 0.5)[:, ::-1] + 0.5  # (x, y) pixel centres
    shape = Polygon(poly).buffer(0.75)
    assert len(poly) == 18 and all(shape.contains(Polygon.from_bounds(x - .1, y - .1, x + .1, y + .1)) for x, y in ink)
    assert Polygon(poly).area < 1.3 * (box[2, 1] - box[0, 1]) * (box[1, 0] - box[0, 0])


def _rect(points):
    (_, _), (w, h), _ = cv2.minAreaRect(np.asarray(points, np.float32))
    return min(w, h), max(w, h)


def test_labels_have_an_annotators_margin_around_the_ink_and_never_overlap():
    """Each label is the ink box grown by label_margin x its thickness on each side (curved lines: the same box,
    bent), inside the page, and no two labels of a page overlap; label_margin (0, 0) gives the ink box itself."""
    renderer = LineRenderer(CFG.line_config(), CHARS, "train")
    flat = PageSynthConfig(**{**vars(CFG), "perspective_prob": 0.0})  # a page in perspective warps the margins too
    warped = PageSynthConfig(**{**vars(CFG), "perspective_prob": 1.0})
    margins = []
    for seed in range(12):
        cfg = flat if seed < 6 else warped
        img, lines = render_page(renderer, cfg, np.random.default_rng(seed))
        polys = [Polygon(ln.points) for ln in lines]
        for k, (ln, poly) in enumerate(zip(lines, polys)):
            assert poly.is_valid and poly.buffer(1e-3).contains(Polygon(ln.ink))
            assert ln.points.min() >= 0 and ln.points[:, 0].max() <= CFG.width and ln.points[:, 1].max() <= CFG.height
            assert all(not poly.intersects(other) for other in polys[k + 1:])
            if len(ln.points) == 4 and cfg is flat:
                (thick, long), (ink_thick, ink_long) = _rect(ln.points), _rect(ln.ink)
                margins.append((thick - ink_thick) / 2 / ink_thick)
                assert long - ink_long == pytest.approx(thick - ink_thick, abs=0.05)  # the same pad on each side
    assert len(margins) >= 10 and min(margins) >= 0.1 - 1e-3 and max(margins) <= 0.25 + 1e-3
    assert max(margins) - min(margins) > 0.05  # drawn per line
    tight = PageSynthConfig(**{**vars(CFG), "label_margin": (0.0, 0.0), "perspective_prob": 0.0})
    _, lines = render_page(LineRenderer(tight.line_config(), CHARS, "train"), tight, np.random.default_rng(0))
    for ln in lines:
        np.testing.assert_allclose(ln.points, ln.ink, atol=1e-4)
    with pytest.raises(ValueError, match="label_margin"):
        PageSynthConfig(label_margin=(0.3, 0.1))
    with pytest.raises(ValueError, match="crop_jitter"):
        PageSynthConfig(crop_jitter=0.5)


def test_train_and_eval_pipelines_make_db_batches(pages):
    np.random.seed(0)
    train = DetDataset(pages / "label.txt", pages, transform=DBTrainTransform(size=(96, 64)))
    batch = collate([train[i] for i in range(3)])
    assert batch["image"].shape == (3, 3, 64, 96) and batch["num_samples"].tolist() == [3]
    for key in ("threshold_map", "threshold_mask", "shrink_map", "shrink_mask"):
        assert batch[key].shape == (3, 64, 96) and batch[key].dtype == np.float32
    assert batch["shrink_map"].sum() > 0 and set(np.unique(batch["shrink_map"])) <= {0.0, 1.0}
    assert 0.3 - 1e-6 <= batch["threshold_map"].min() and batch["threshold_map"].max() <= 0.7 + 1e-6
    ev = DetDataset(pages / "label.txt", pages, transform=DBEvalTransform(limit_side_len=96, limit_type="max"))
    batch = collate([ev[0], ev[1], ("skip", "x:1", "corrupt_image")])
    assert batch["image"].shape == (2, 3, 64, 96) and batch["image_hw"].tolist() == [[64, 96], [64, 96]]
    np.testing.assert_allclose(batch["shape"][0], [128, 160, 0.5, 0.6])  # 160 -> 96, 128 * 0.6 = 76.8 -> 64
    assert batch["skipped"] == ["x:1\tcorrupt_image"] and len(batch["polys"][1]) == len(ev.load(1)["polys"])


def test_train_pipeline_without_crop_or_augment_gives_the_maps_of_the_labels(pages):
    from paddle_recipes.tasks.ocr_det.label_maps import make_border_map, make_shrink_map
    from paddle_recipes.tasks.ocr_det.transforms import normalize_chw

    raw = DetDataset(pages / "label.txt", pages).load(2)
    tf = DBTrainTransform(size=(160, 128), max_tries=0, augment=False)  # no crop found -> whole page, scale 1
    out = tf(raw)
    smap, smask, _ = make_shrink_map(128, 160, raw["polys"], raw["ignore_tags"])
    # the crop hands the maps float64 polygons (PaddleOCR's too: (poly - xy) * scale)
    tmap, tmask = make_border_map(128, 160, [p.astype(np.float64) for p in raw["polys"]], raw["ignore_tags"])
    np.testing.assert_array_equal(out["shrink_map"], smap)
    np.testing.assert_array_equal(out["shrink_mask"], smask)
    np.testing.assert_array_equal(out["threshold_map"], tmap)
    np.testing.assert_array_equal(out["threshold_mask"], tmask)
    np.testing.assert_array_equal(out["image"], normalize_chw(raw["image"]))


class _MapModel:
    """Stands in for a detector: returns given probability maps (one per call)."""

    def __init__(self, maps):
        self.maps = list(maps)

    def eval(self):
        pass

    def __call__(self, x):
        import paddle
        m = self.maps.pop(0)
        assert list(x.shape[2:]) == list(m.shape[1:]) and x.shape[0] == m.shape[0]
        return {"maps": paddle.to_tensor(m[:, None])}


def test_evaluate_det_scores_perfect_and_empty_maps(pages):
    """Maps filled inside the labels, at the resized eval resolution (128x160 -> 64x96): evaluate_det (padding
    crop, shape ratios, DBPostProcess, matching) gives the counts of a direct computation, near-perfect."""
    import paddle.io

    from paddle_recipes.tasks.ocr_det.metrics import combine_results, evaluate_image
    from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess
    from paddle_recipes.tasks.ocr_det.step import evaluate_det

    ds = DetDataset(pages / "label.txt", pages, transform=DBEvalTransform(limit_side_len=96, limit_type="max"))
    post = DBPostProcess(box_thresh=0.6, unclip_ratio=0.2, box_type="poly")
    maps, direct = [], []
    for i in range(len(ds)):
        raw = ds.load(i)
        m = np.zeros((64, 96), np.float32)
        for p in raw["polys"]:
            cv2.fillPoly(m, [np.round(p * (0.6, 0.5)).astype(np.int32)], 0.9)
        maps.append(m[None])
        dets = post(m[None], [[128, 160, 0.5, 0.6]])[0]["points"]
        direct.append(evaluate_image([p.tolist() for p in raw["polys"]], raw["ignore_tags"], dets))
    want = combine_results(direct)
    loader = paddle.io.DataLoader(ds, batch_size=2, shuffle=False, collate_fn=collate)
    got = evaluate_det(_MapModel([np.concatenate(maps[i:i + 2]) for i in range(0, len(maps), 2)]), loader, post)
    assert {k: got[k] for k in want} == want and want["hmean"] >= 0.9 and want["precision"] == 1.0
    empty = evaluate_det(_MapModel([np.zeros((2, 64, 96), np.float32)] * 3), loader, post)
    assert (empty["recall"], empty["precision"], empty["hmean"]) == (0.0, 0, 0)


def test_train_crops_follow_the_sample_key_not_the_global_state(pages):
    from paddle_recipes.data import GuardedDataset

    ds = GuardedDataset(DetDataset(pages / "label.txt", pages, transform=DBTrainTransform(size=(96, 64), seed=5)),
                        unwrap_keys=True)
    np.random.seed(1)
    a = ds[(3, 2)]
    np.random.seed(2)
    b, c = ds[(3, 2)], ds[(4, 2)]
    np.testing.assert_array_equal(a["image"], b["image"])  # same (epoch, index): same augmentation
    np.testing.assert_array_equal(a["shrink_map"], b["shrink_map"])
    assert not np.array_equal(a["image"], c["image"])  # next epoch: another crop


def test_system_crop_is_the_systems_crop_of_the_grown_box():
    from paddle_recipes.tasks.ocr_det.synth_pages import system_crop
    from paddle_recipes.tasks.ocr_system.geometry import crop_box

    img = np.random.default_rng(0).integers(0, 255, (120, 200, 3), dtype=np.uint8)
    box = np.float32([[40, 50], [140, 50], [140, 70], [40, 70]])  # 100 x 20, axis-aligned
    np.testing.assert_array_equal(system_crop(img, box), img[50:70, 40:140])
    np.testing.assert_array_equal(system_crop(img, box), crop_box(img, box, "minarea"))
    grown = system_crop(img, box, margin=0.25)  # 0.25 x 20 px = 5 px on each side
    np.testing.assert_array_equal(grown, img[45:75, 35:145])
    tall = np.float32([[90, 10], [110, 10], [110, 110], [90, 110]])  # a vertical line: turned like the system's
    np.testing.assert_array_equal(system_crop(img, tall), np.rot90(img[10:110, 90:110]))
    np.testing.assert_array_equal(system_crop(img, tall), crop_box(img, tall, "minarea"))
    assert system_crop(img, box, height=10).shape == (10, 50, 3)
    # jitter moves each corner by (offset x the shorter side): the crop of that moved quad, warped as given
    jitter = np.float32([[0.1, -0.1], [0.0, 0.05], [-0.05, 0.1], [0.1, 0.0]])
    from paddle_recipes.tasks.ocr_det.geometry import order_quad
    moved = order_quad(cv2.boxPoints(cv2.minAreaRect(box)) + jitter * 20)  # offsets in cv2.boxPoints order
    # the synthetic crops use the 4.x warp (the same data under OpenCV 4 and 5)
    np.testing.assert_array_equal(system_crop(img, box, jitter=jitter), crop_box(img, moved, "rotate", opencv4=True))
    assert not np.array_equal(system_crop(img, box, jitter=jitter), system_crop(img, box))


def test_rendering_pools_end_without_a_paddle_crash_dump(tmp_path, monkeypatch):
    """The page and line renderers' worker pools are closed and joined before the pool is left: terminate() on
    live workers SIGTERMs them, and a worker with paddle's signal handlers printed a C++ "FatalError" dump (seen
    in a benchmark's console). Checked without the race: no worker may still be alive when terminate() runs."""
    import multiprocessing.pool as mpp

    from paddle_recipes.tasks.ocr_rec.synth import SynthConfig, generate_samples

    alive_at_terminate = []
    terminate = mpp.Pool.terminate

    def recording_terminate(self):
        alive_at_terminate.append(sum(p.is_alive() for p in self._pool))
        terminate(self)

    monkeypatch.setattr(mpp.Pool, "terminate", recording_terminate)
    write_pages(tmp_path, "train", 4, PageSynthConfig(width=96, height=96), CHARS, workers=2)
    assert len(generate_samples(SynthConfig(), CHARS, "train", 64, workers=2)) == 64
    assert len(alive_at_terminate) == 2 and alive_at_terminate == [0, 0]


def test_rendering_pools_do_not_hang_after_the_parent_used_opencv_threads(tmp_path):
    """A parent whose OpenCV thread pool has run (a large blur / resize) then forks the line and page renderers:
    before render_pool.fork_map switched the parent's OpenCV to 1 thread around the fork, the workers blocked
    forever in cv2.setNumThreads (pthread_cond_destroy on the inherited pool). Run in a subprocess with a
    deadline, so a regression fails instead of hanging the suite; the parent's thread count is restored."""
    import subprocess
    import sys

    code = f"""
import cv2, numpy as np
from pathlib import Path
from paddle_recipes.tasks.ocr_rec.synth import SynthConfig, generate_samples
from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, write_pages
chars = {CHARS[:40]!r}
big = np.random.default_rng(0).integers(0, 255, (1500, 1500, 3), dtype=np.uint8)
for _ in range(3):
    cv2.GaussianBlur(big, (0, 0), 3); cv2.resize(big, (2500, 2500))
threads = cv2.getNumThreads()
assert len(generate_samples(SynthConfig(), chars, "train", 64, workers=2)) == 64
write_pages({str(tmp_path)!r}, "train", 4, PageSynthConfig(width=96, height=96), chars, workers=2)
assert cv2.getNumThreads() == threads, (cv2.getNumThreads(), threads)
print("ok")
"""
    cmd = [sys.executable, "-c", code]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        import os
        import signal
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("rendering pools hung after the parent used OpenCV's threads")
    assert proc.returncode == 0 and out.strip().endswith("ok"), err[-2000:]
    assert len((tmp_path / "train" / "label.txt").read_text(encoding="utf-8").splitlines()) == 4
