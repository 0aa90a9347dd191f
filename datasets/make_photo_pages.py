"""Photo-like OCR test pages: Chinese text lines in the HELD-OUT fonts (never rendered into training data) laid onto
real photographs that installed PyPI packages ship, then warped, blurred and JPEG-compressed as a camera would.

    python datasets/make_photo_pages.py --out datasets/cache/photo_pages [--pages 15] [--seed 0]

Writes ``page_XXX.jpg`` and ``label.txt`` (PaddleOCR det label format: ``name<TAB>[{"transcription", "points"}]``,
points in the final image's pixels, clockwise from the text's top-left as DB's boxes are, i.e. in image order for a
line turned by 180 degrees). Deterministic for a seed (same package versions). The photographs are read from the
installed packages at run time (sklearn's china.jpg / flower.jpg, matplotlib's grace_hopper.jpg), never copied here.
Per page: 800 x 600 crop of one photo, ~20 lines of 4-14 characters (hanzi by real-usage frequency, some digits and
Latin), 18-34 px glyphs, some on a sign-like plate, some tilted by up to 6 degrees, ~1 in 6 turned by 180 degrees;
then a mild perspective warp of the whole page (corners moved by up to 4 %), Gaussian blur (sigma 0-1.2) and JPEG
quality 45-90.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import List

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from paddle_recipes.tasks.ocr_rec.fonts import font_available, fonts_for, missing_chars  # noqa: E402
from paddle_recipes.tasks.ocr_rec.textgen import DIGITS, LATIN, TextSampler, load_char_freq  # noqa: E402

PAGE_W, PAGE_H = 800, 600
CHARS_FILE = Path(__file__).resolve().parent / "ocr_rec" / "ch_common_3000.txt"


def photo_paths() -> List[Path]:
    """The real photographs installed packages ship (sklearn, matplotlib); ImportError when one is missing."""
    import matplotlib
    import sklearn

    sk = Path(sklearn.__file__).parent / "datasets" / "images"
    mpl = Path(matplotlib.get_data_path()) / "sample_data"
    paths = [sk / "china.jpg", sk / "flower.jpg", mpl / "grace_hopper.jpg"]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"photo(s) not installed: {missing}")
    return paths


def _background(photo: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random 4:3 crop (70-100 % of the photo's height), maybe mirrored, scaled to the page (BGR)."""
    h, w = photo.shape[:2]
    ch = int(min(h, w * 3 / 4) * rng.uniform(0.7, 1.0))
    cw = ch * 4 // 3
    y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
    crop = photo[y:y + ch, x:x + cw]
    if rng.random() < 0.5:
        crop = crop[:, ::-1]
    return cv2.resize(np.ascontiguousarray(crop), (PAGE_W, PAGE_H), interpolation=cv2.INTER_CUBIC)


def _line_image(text: str, font: ImageFont.FreeTypeFont, fill, plate) -> Image.Image:
    """RGBA image of one line with a margin of a third of the glyph size (and a plate behind it, if given)."""
    x0, y0, x1, y1 = font.getbbox(text)
    m = max(3, font.size // 3)
    img = Image.new("RGBA", (x1 - x0 + 2 * m, y1 - y0 + 2 * m), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    if plate is not None:
        d.rounded_rectangle([0, 0, img.width - 1, img.height - 1], radius=m, fill=plate)
    d.text((m - x0, m - y0), text, font=font, fill=fill)
    return img


def _contrast_colors(region: np.ndarray, rng: np.random.Generator):
    """(text RGBA, plate RGBA or None): dark text on a bright region or plate, light text on a dark one."""
    bright = float(region.mean()) > 110
    if rng.random() < 0.4:  # a sign: a plate of the opposite tone
        bright = not bright
        tone = int(rng.integers(200, 250)) if bright else int(rng.integers(10, 60))
        plate = (tone, tone - int(rng.integers(0, 20)), tone - int(rng.integers(0, 30)), int(rng.integers(190, 245)))
    else:
        plate = None
    c = rng.integers(0, 60, 3) if bright else rng.integers(205, 256, 3)
    return (int(c[0]), int(c[1]), int(c[2]), 255), plate


def _paste(page: Image.Image, line: Image.Image, x: int, y: int, angle: float, flip: bool) -> np.ndarray:
    """Paste ``line`` (turned by 180 when ``flip``, then by ``angle`` degrees) at (x, y); its quad on the page,
    corners clockwise from the text's own top-left."""
    w, h = line.size
    quad = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    if flip:
        line = line.rotate(180)
        quad = np.float32([w, h]) - quad  # the text's top-left is now at the image's bottom-right
    rot = line.rotate(angle, resample=Image.BICUBIC, expand=True)
    c = np.float32([w / 2, h / 2])
    t = np.deg2rad(angle)  # PIL turns counter-clockwise on screen: y grows downwards
    r = np.float32([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
    quad = (quad - c) @ r.T + np.float32([rot.width / 2, rot.height / 2])
    page.alpha_composite(rot, (x, y))
    return quad + np.float32([x, y])


def _warp(img: np.ndarray, quads: List[np.ndarray], rng: np.random.Generator):
    """Mild camera perspective: page corners moved by up to 4 % of the side (points follow)."""
    src = np.float32([[0, 0], [PAGE_W, 0], [PAGE_W, PAGE_H], [0, PAGE_H]])
    dst = src + rng.uniform(-0.04, 0.04, (4, 2)).astype(np.float32) * np.float32([PAGE_W, PAGE_H])
    dst = np.clip(dst, 0, [PAGE_W, PAGE_H]).astype(np.float32)
    m = cv2.getPerspectiveTransform(src, dst)
    out = cv2.warpPerspective(img, m, (PAGE_W, PAGE_H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
    return out, [cv2.perspectiveTransform(q.reshape(1, -1, 2), m).reshape(-1, 2) for q in quads]


def make_page(photo: np.ndarray, fonts: list, sampler: TextSampler, rng: np.random.Generator):
    """One page: (JPEG bytes, [{"transcription", "points"}])."""
    bg = _background(photo, rng)
    page = Image.fromarray(cv2.cvtColor(bg, cv2.COLOR_BGR2RGB)).convert("RGBA")
    quads, texts, y = [], [], int(rng.integers(8, 30))
    while True:
        size = int(rng.integers(18, 35))
        row_h = int(size * 1.9)
        if y + row_h + 30 > PAGE_H:
            break
        x = int(rng.integers(8, 120))
        while x < PAGE_W - 150:
            path, index = fonts[int(rng.integers(len(fonts)))]
            text = sampler.sample(rng, int(rng.integers(4, 15))).strip()
            if not text:
                continue
            font = ImageFont.truetype(path, size, index=index)
            angle = float(rng.uniform(-6, 6)) if rng.random() < 0.3 else 0.0
            region = bg[y:y + row_h, x:x + size * len(text)]
            line = _line_image(text, font, *_contrast_colors(region, rng))
            tw = int(line.width * abs(np.cos(np.deg2rad(angle))) + line.height * abs(np.sin(np.deg2rad(angle)))) + 2
            if x + tw > PAGE_W - 8:
                break
            quads.append(_paste(page, line, x, y, angle, flip=rng.random() < 1 / 6))
            texts.append(text)
            x += tw + int(rng.integers(30, 160))
        y += row_h + int(rng.integers(8, 40))
    img = cv2.cvtColor(np.asarray(page.convert("RGB")), cv2.COLOR_RGB2BGR)
    img, quads = _warp(img, quads, rng)
    sigma = float(rng.choice([0.0, 0.5, 0.8, 1.2]))
    if sigma > 0:
        img = cv2.GaussianBlur(img, (0, 0), sigma)
    ok, jpg = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(45, 91))])
    assert ok
    return jpg.tobytes(), [{"transcription": t, "points": np.round(q.astype(np.float64), 1).tolist()}
                           for t, q in zip(texts, quads)]


def heldout_fonts():
    """[(path, face index)] of the installed held-out ("eval") fonts and the characters all of them can draw."""
    specs = [f for f in fonts_for("eval") if font_available(f)]
    if not specs:
        raise FileNotFoundError("no held-out font installed (datasets/fonts/ comes with a checkout)")
    chars = CHARS_FILE.read_text(encoding="utf-8").split() + list(DIGITS + LATIN)
    lacking = set().union(*(missing_chars(f, chars) for f in specs))
    return [(f.path(), f.index) for f in specs], [c for c in chars if c not in lacking]


def make_pages(out_dir: str | os.PathLike, pages: int = 15, seed: int = 0) -> Path:
    """Write ``pages`` pages and label.txt into ``out_dir``; returns the label file. Page i uses photo i mod 3."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    photos = [cv2.imread(str(p)) for p in photo_paths()]
    fonts, chars = heldout_fonts()
    sampler = TextSampler(chars, load_char_freq(), mixed_prob=0.3)
    rows = []
    for i in range(pages):
        rng = np.random.default_rng([seed, i])
        jpg, lines = make_page(photos[i % len(photos)], fonts, sampler, rng)
        name = f"page_{i:03d}.jpg"
        (out / name).write_bytes(jpg)
        rows.append(f"{name}\t{json.dumps(lines, ensure_ascii=False)}")
    label = out / "label.txt"
    label.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return label


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="datasets/cache/photo_pages")
    p.add_argument("--pages", type=int, default=15)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    label = make_pages(a.out, a.pages, a.seed)
    n = sum(len(json.loads(r.split("\t", 1)[1])) for r in label.read_text(encoding="utf-8").splitlines())
    print(f"{a.pages} pages, {n} lines: {label}")


if __name__ == "__main__":
    main()
