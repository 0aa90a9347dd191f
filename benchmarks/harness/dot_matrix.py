"""A fine-tuning domain the released PP-OCR rec reads badly: lines printed by a dot-matrix (impact) printer, as on
Chinese machine-printed invoices, bank slips and shipping labels.

`to_dot_matrix` re-prints a clean rendered line (dark ink on a flat light background, the generator's aug=False
output) on a grid of round dots: the pitch is the ink height divided by `dots_per_line` (a 24-pin head prints a
hanzi with about 16-24 dots, a 9-pin head about 9-12; default 10-14 per line height), a dot is struck where the
glyph covers more than `coverage` of its cell, then the paper tint, a ribbon colour, a slight blur and JPEG.
Deterministic in `seed`.

`coverage` decides whether thin strokes survive: at 0.35 (the default, every figure before 6 Dec 2026) a stroke
narrower than about a third of the pitch strikes no dot, so light fonts lose strokes and some prints no longer show
the labelled character (交 printed as 文, 白 as 门); at 0.2 every stroke keeps a dot, as a printer's own dot font
does, and the released PP-OCRv4 rec still reads only 0.45 of the lines at 10-14 dots.

`make_split(src, dst, seed, **print_options)` converts one split written by `synth.build_dataset` (label.txt +
images/) into dst and records the options in dst/print.json.
"""
from __future__ import annotations

import io
import json
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

RIBBONS = ((20, 20, 25), (35, 30, 90), (70, 30, 90), (40, 40, 40))  # black, blue, purple, worn black
PAPERS = ((250, 250, 245), (245, 238, 225), (236, 240, 250), (252, 235, 240), (230, 244, 230))


def ink_rows(mask: np.ndarray) -> tuple:
    rows = np.flatnonzero(mask.any(1))
    return (int(rows[0]), int(rows[-1]) + 1) if rows.size else (0, mask.shape[0])


def to_dot_matrix(img: Image.Image, seed: int, dots_per_line=(10, 14), coverage: float = 0.35) -> Image.Image:
    """The dot-matrix print of a clean line image (same size)."""
    rng = random.Random(seed)
    gray = np.asarray(img.convert("L"), dtype=np.float32)
    mask = gray < (gray.min() + gray.max()) / 2
    top, bottom = ink_rows(mask)
    pitch = max(2.0, (bottom - top) / rng.uniform(*dots_per_line))
    h, w = mask.shape
    paper = PAPERS[rng.randrange(len(PAPERS))]
    ribbon = RIBBONS[rng.randrange(len(RIBBONS))]
    scale = 4  # dots drawn at 4x, then reduced: round, anti-aliased dots
    out = Image.new("RGB", (w * scale, h * scale), paper)
    draw = ImageDraw.Draw(out)
    radius = pitch * rng.uniform(0.42, 0.55) * scale
    y = top + (pitch / 2 if rng.random() < 0.5 else 0.0)
    while y < bottom:
        x = rng.uniform(0, pitch)
        while x < w:
            y0, x0 = int(y), int(x)
            cell = mask[y0:max(y0 + 1, int(y + pitch)), x0:max(x0 + 1, int(x + pitch))]
            if cell.size and cell.mean() > coverage:
                cx, cy = (x + pitch / 2) * scale, (y + pitch / 2) * scale
                shade = tuple(min(255, c + rng.randint(0, 40)) for c in ribbon)  # uneven ribbon ink
                draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], fill=shade)
            x += pitch
        y += pitch
    out = out.resize((w, h), Image.BILINEAR).filter(ImageFilter.GaussianBlur(rng.uniform(0.0, 0.6)))
    buf = io.BytesIO()
    out.save(buf, format="JPEG", quality=rng.randint(60, 92))
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


def print_record(seed: int, dots_per_line=(10, 14), coverage: float = 0.35) -> dict:
    """What dst/print.json of make_split holds: the seed and the print options."""
    return {"seed": seed, "dots_per_line": list(dots_per_line), "coverage": coverage}


def make_split(src: Path, dst: Path, seed: int, dots_per_line=(10, 14), coverage: float = 0.35) -> int:
    """Dot-matrix copies of every line of split folder `src` (label.txt + images/) into `dst`, printed with
    `dots_per_line` and `coverage` (to_dot_matrix); dst/print.json records them. Returns the count."""
    (dst / "images").mkdir(parents=True, exist_ok=True)
    lines = (src / "label.txt").read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        rel = line.split("\t", 1)[0]
        to_dot_matrix(Image.open(src / rel), seed * 1_000_003 + i, tuple(dots_per_line), coverage).save(dst / rel, quality=95)
    (dst / "label.txt").write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    (dst / "print.json").write_text(json.dumps(print_record(seed, dots_per_line, coverage)), encoding="utf-8")
    return len(lines)
