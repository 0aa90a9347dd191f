"""benchmarks/indep_render.py (the plain independent renderer) and benchmarks/generalisation.py's scoring pieces; no
model is trained or run here."""
from __future__ import annotations

import ast
import importlib.util
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

REPO = Path(__file__).resolve().parents[2]


def _load(script):
    spec = importlib.util.spec_from_file_location(script[:-3], REPO / "benchmarks" / script)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[script[:-3]] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


ir = _load("indep_render.py")
FONTS = [f for f in ir.HELDOUT_FONTS if Path(f.path).is_file()]
needs_fonts = pytest.mark.skipif(len(FONTS) < 2, reason="held-out fonts not installed "
                                 "(python benchmarks/indep_render.py fonts --install)")


def test_the_renderer_imports_nothing_of_the_project():
    tree = ast.parse((REPO / "benchmarks" / "indep_render.py").read_text(encoding="utf-8"))
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    mods |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m.split(".")[0] in ("paddle_recipes", "paddle", "cv2", "harness") for m in mods), mods
    assert {m.split(".")[0] for m in mods} <= {"__future__", "argparse", "json", "math", "os", "random", "shutil",
                                                "subprocess", "sys", "dataclasses", "pathlib", "typing", "PIL",
                                                "fontTools"}


def test_heldout_fonts_are_not_train_or_eval_fonts_of_the_project():
    from paddle_recipes.tasks.ocr_rec.fonts import FONTS as PROJECT
    names = {f.family.lower() for f in PROJECT} | {f.name for f in PROJECT}
    files = {Path(f.file).name for f in PROJECT}
    for f in ir.HELDOUT_FONTS:
        assert f.name not in names and Path(f.path).name not in files
        assert "droid" not in f.path.lower() and "gbsn" not in f.path.lower()  # sources of Micro Hei / UMing


def _flat(self, rnd, w, h, dark):  # a flat background: every non-background pixel is text ink
    rnd.random()
    return Image.new("RGB", (w, h), (40, 40, 40) if dark else (235, 235, 235))


@needs_fonts
def test_pages_and_lines_are_deterministic_per_seed():
    a, b = ir.Renderer(ir.RenderConfig()), ir.Renderer(ir.RenderConfig())
    pa, la = a.page(7)
    pb, lb = b.page(7)
    assert pa.tobytes() == pb.tobytes() and la == lb
    pc, lc = a.page(8)
    assert pc.tobytes() != pa.tobytes()
    ia, ta = a.line(3)
    ib, tb = b.line(3)
    assert ia.tobytes() == ib.tobytes() and ta == tb


def _inside(points, shape, grow=1.5):
    """Boolean mask of the pixels inside the quad grown by ``grow`` px."""
    q = np.asarray(points, np.float64)
    c = q.mean(axis=0)
    q = c + (q - c) * (1 + grow / max(1.0, min(np.linalg.norm(q[1] - q[0]), np.linalg.norm(q[2] - q[1])) / 2))
    m = Image.new("L", (shape[1], shape[0]), 0)
    ImageDraw.Draw(m).polygon([tuple(p) for p in q], fill=1)
    return np.asarray(m, bool)


@needs_fonts
def test_label_quads_contain_the_drawn_ink(monkeypatch):
    monkeypatch.setattr(ir.Renderer, "background", _flat)
    r = ir.Renderer(ir.RenderConfig())
    lines_seen = 0
    for seed in range(6):
        img, lines = r.page(seed)
        a = np.asarray(img, np.int16)
        bg = a[0, 0]
        ink = np.abs(a - bg).max(axis=2) > 40
        inside = np.zeros(ink.shape, bool)
        for ln in lines:
            q = _inside(ln.points, ink.shape)
            assert (ink & q).sum() > 10, ln  # each quad holds ink
            inside |= q
        assert not (ink & ~inside).any(), f"page {seed}: {(ink & ~inside).sum()} ink pixels outside every quad"
        lines_seen += len(lines)
    assert lines_seen > 15


@needs_fonts
def test_a_quad_is_tight_around_its_text():
    r = ir.Renderer(ir.RenderConfig())
    font = r.fonts[0]
    for vertical in (False, True):
        mask, box = r.text_mask("啊" * 5, font, 30, vertical, 0.0)
        ink = mask.getbbox()
        assert box[0] <= ink[0] and box[1] <= ink[1] and box[2] >= ink[2] and box[3] >= ink[3]
        assert max(ink[0] - box[0], ink[1] - box[1], box[2] - ink[2], box[3] - ink[3]) <= 30 * 0.6


@needs_fonts
def test_vertical_labels_are_tall_quads_clockwise_from_top_left():
    r = ir.Renderer(ir.RenderConfig(vertical_prob=1.0, max_angle=0.0, min_len=2))
    n = 0
    for seed in range(5):
        _, lines = r.page(seed)
        for ln in lines:
            (x0, y0), (x1, y1), (x2, y2), (x3, y3) = ln.points
            assert ln.vertical and y2 - y1 > x1 - x0 > 0, ln  # taller than wide, top edge left to right
            assert abs(y0 - y1) < 1e-6 and abs(x1 - x2) < 1e-6
            n += 1
    assert n >= 10
    r = ir.Renderer(ir.RenderConfig(vertical_prob=1.0, max_angle=15.0))
    for seed in range(3):
        for ln in r.page(seed)[1]:
            q = np.asarray(ln.points)
            top, side = np.linalg.norm(q[1] - q[0]), np.linalg.norm(q[2] - q[1])
            assert side > top and math.degrees(math.atan2(q[1][1] - q[0][1], q[1][0] - q[0][0])) == pytest.approx(
                -ln.angle, abs=0.5)


@needs_fonts
def test_page_and_line_writers(tmp_path):
    d = ir.write_pages(tmp_path / "pages", 3, ir.RenderConfig(), seed=1)
    rows = (d / "Label.txt").read_text(encoding="utf-8").splitlines()
    metas = (d / "lines.jsonl").read_text(encoding="utf-8").splitlines()
    import json
    labels = [json.loads(r.split("\t")[1]) for r in rows]
    assert len(rows) == 3 and sum(map(len, labels)) == len(metas)
    assert all(len(b["points"]) == 4 and b["transcription"] for lab in labels for b in lab)
    ln = ir.write_lines(tmp_path / "rec", 5, ir.RenderConfig(min_len=2, max_len=6, vertical_prob=0.0), seed=1)
    lab = (ln / "label.txt").read_text(encoding="utf-8").splitlines()
    assert len(lab) == 5 == len((ln / "fonts.txt").read_text().split())
    assert all(2 <= len(t.split("\t")[1]) <= 6 and (ln / t.split("\t")[0]).is_file() for t in lab)


@needs_fonts
def test_line_text_only_uses_characters_its_font_has():
    r = ir.Renderer(ir.RenderConfig())
    for f in r.fonts:
        rnd = random.Random(0)
        assert set(r.sample_text(rnd, f, 200)) <= set(r.chars[f.name])


def test_bucket_counts_sum_to_the_totals():
    g = _load("generalisation.py")
    b = g.Buckets()
    rnd = random.Random(0)
    for _ in range(300):
        m = {"font": rnd.choice("abc"), "vertical": rnd.random() < 0.2, "text": "x" * rnd.randint(2, 12),
             "size": rnd.randint(14, 40)}
        b.add(m, recall=float(rnd.random() < 0.8))
    tab = b.table()
    total = tab["all"]["n"]
    assert total == 300
    for prefix in ("font ", "len ", "height "):
        assert sum(v["n"] for k, v in tab.items() if k.startswith(prefix)) == total, prefix
    assert tab["horizontal"]["n"] + tab["vertical"]["n"] == total
    hits = sum(v["recall"] * v["n"] for k, v in tab.items() if k.startswith("font "))
    assert hits == pytest.approx(tab["all"]["recall"] * total, abs=0.01)
    assert "height < 20 px" in tab


def test_det_matches_count_as_the_det_metric():
    g = _load("generalisation.py")
    rnd = random.Random(1)

    def box(x, y, w, h):
        return [[x, y], [x + w, y], [x + w, y + h], [x, y + h]]

    metric, matched, gts_n = g.DetMetric(), 0, 0
    for _ in range(30):
        gts = [box(rnd.randint(0, 300), rnd.randint(0, 300), rnd.randint(20, 90), rnd.randint(10, 30))
               for _ in range(rnd.randint(1, 6))]
        dets = [[[x + rnd.uniform(-6, 6), y + rnd.uniform(-4, 4)] for x, y in gq] for gq in gts if rnd.random() < 0.8]
        dets += [box(rnd.randint(0, 300), rnd.randint(0, 300), 30, 12) for _ in range(rnd.randint(0, 2))]
        metric.update([dets], [gts], [[False] * len(gts)])
        matched += len(g.det_matches(gts, dets))
        gts_n += len(gts)
    assert metric.get_metric()["recall"] == pytest.approx(matched / gts_n)
