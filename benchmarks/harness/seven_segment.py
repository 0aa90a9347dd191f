"""A fine-tuning domain the released PP-OCR rec reads badly: seven-segment displays (electricity / water / gas
meters, fuel pumps, scales, clocks, instrument panels), a frequent reason PaddleOCR users fine-tune a rec model.

`render_line(text, seed)` draws a line of digits, `-`, `.` and `:` as segments (no font file): each digit is seven
bars (a top, b upper right, c lower right, d bottom, e lower left, f upper left, g middle) of a random height
(24-40 px), width, bar thickness, gap and slant, on one of two looks: an LCD (dark segments on a grey-green or grey
glass, the unlit segments faintly visible) or an LED (bright red / green / amber / cyan segments with a glow on a
dark panel); then blur, noise and JPEG. The line is 48 px high. Deterministic in `seed`.

`make_split(dst, num, seed)` writes `num` lines of meter-like readings (`random_reading`: integers with leading
zeros, 1-3 decimals, a sign, clock times) as a PaddleOCR label file dst/label.txt + dst/images/.
"""
from __future__ import annotations

import io
import math
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

SEGMENTS = {"0": "abcdef", "1": "bc", "2": "abged", "3": "abgcd", "4": "fgbc", "5": "afgcd", "6": "afgedc",
            "7": "abc", "8": "abcdefg", "9": "abcdfg", "-": "g"}
CHARS = "".join(SEGMENTS) + ".:"
LCD_GLASS = ((170, 185, 160), (190, 200, 185), (150, 165, 150), (200, 205, 195))
LCD_INK = ((25, 30, 25), (40, 45, 50), (20, 20, 35))
LED_INK = ((255, 40, 30), (60, 255, 90), (255, 170, 30), (80, 220, 255))
LED_PANEL = ((15, 12, 12), (20, 25, 20), (8, 8, 14))


def random_reading(rng: random.Random) -> str:
    """One meter-like reading, 1-9 characters."""
    kind = rng.random()
    if kind < 0.15:
        return f"{rng.randrange(24):02d}:{rng.randrange(60):02d}" + (f":{rng.randrange(60):02d}" if rng.random() < 0.3 else "")
    digits = rng.randint(2, 6)
    whole = str(rng.randrange(10 ** digits)).zfill(digits if rng.random() < 0.5 else 1)
    text = whole + (f".{rng.randrange(10 ** (d := rng.randint(1, 3))):0{d}d}" if rng.random() < 0.6 else "")
    return ("-" + text if rng.random() < 0.1 else text)[:9]


def _bar(cx0, cy0, cx1, cy1, t, gap):
    """Hexagonal bar from (cx0, cy0) to (cx1, cy1), thickness t, shortened by gap at both ends."""
    length = math.hypot(cx1 - cx0, cy1 - cy0)
    ux, uy = (cx1 - cx0) / length, (cy1 - cy0) / length
    nx, ny = -uy, ux
    a = (cx0 + ux * gap, cy0 + uy * gap)
    b = (cx1 - ux * gap, cy1 - uy * gap)
    h = t / 2
    return [a, (a[0] + ux * h + nx * h, a[1] + uy * h + ny * h), (b[0] - ux * h + nx * h, b[1] - uy * h + ny * h), b,
            (b[0] - ux * h - nx * h, b[1] - uy * h - ny * h), (a[0] + ux * h - nx * h, a[1] + uy * h - ny * h)]


def _digit_bars(x, top, w, h, t, gap):
    """{segment: polygon} of one digit cell (upright; the slant is applied to the whole line)."""
    left, right, mid, bottom = x + t / 2, x + w - t / 2, top + h / 2, top + h - t / 2
    up = top + t / 2
    ends = {"a": (left, up, right, up), "b": (right, up, right, mid), "c": (right, mid, right, bottom),
            "d": (left, bottom, right, bottom), "e": (left, mid, left, bottom), "f": (left, up, left, mid),
            "g": (left, mid, right, mid)}
    return {s: _bar(*e, t, gap) for s, e in ends.items()}


def render_line(text: str, seed: int, height: int = 48) -> Image.Image:
    """The seven-segment image of `text` (characters of CHARS), `height` px high, width to fit."""
    bad = sorted(set(text) - set(CHARS))
    if bad:
        raise ValueError(f"seven_segment: no segments for {bad} (valid: {CHARS})")
    rng = random.Random(seed)
    scale = 3  # drawn at 3x, then reduced: anti-aliased bars
    h = rng.uniform(24, 40) * scale
    w = h * rng.uniform(0.45, 0.62)
    t = h * rng.uniform(0.09, 0.16)
    gap = t * rng.uniform(0.1, 0.45)
    pitch = w + h * rng.uniform(0.18, 0.35)
    slant = math.tan(math.radians(rng.uniform(0, 10)))
    led = rng.random() < 0.45
    bg = LED_PANEL[rng.randrange(len(LED_PANEL))] if led else LCD_GLASS[rng.randrange(len(LCD_GLASS))]
    ink = LED_INK[rng.randrange(len(LED_INK))] if led else LCD_INK[rng.randrange(len(LCD_INK))]
    ghost = tuple(int(b + (i - b) * rng.uniform(0.06, 0.16)) for b, i in zip(bg, ink))  # unlit segments
    top = (height * scale - h) / 2 + rng.uniform(-0.1, 0.1) * (height * scale - h)
    margin = rng.uniform(0.3, 1.0) * w
    shapes, x = [], margin
    for ch in text:
        if ch == ".":
            r = t * 0.6
            shapes.append((True, [(x - pitch * 0.12 - r, top + h - 2 * r), (x - pitch * 0.12 + r, top + h)], "dot"))
            continue
        if ch == ":":
            r = t * 0.6
            for cy in (top + h * 0.3, top + h * 0.7):
                shapes.append((True, [(x + r * 0.5, cy - r), (x + r * 2.5, cy + r)], "dot"))
            x += r * 3 + pitch - w
            continue
        lit = SEGMENTS[ch]
        for s, poly in _digit_bars(x, top, w, h, t, gap).items():
            shapes.append((s in lit, poly, "bar"))
        x += pitch
    width = int(x + margin - (pitch - w) + slant * h)
    img = Image.new("RGB", (max(width, 8), height * scale), bg)
    draw = ImageDraw.Draw(img)
    base = top + h

    def sheared(pts):
        return [(px + slant * (base - py), py) for px, py in pts]

    for on, pts, kind in sorted(shapes, key=lambda s: s[0]):  # unlit first
        colour = ink if on else ghost
        if not on and led and rng.random() < 0.7:
            continue  # most LED panels show no unlit segments
        if kind == "bar":
            draw.polygon(sheared(pts), fill=colour)
        else:  # a dot (always lit): its bounding box, sheared
            (x0, y0), (x1, y1) = sheared(pts)
            draw.ellipse([x0, y0, x1, y1], fill=colour)
    img = img.resize((max(8, img.width // scale), height), Image.BILINEAR)
    if led:  # glow
        glow = img.filter(ImageFilter.GaussianBlur(rng.uniform(1.0, 2.5)))
        img = Image.blend(img, glow, rng.uniform(0.3, 0.6))
    img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.0, 0.8)))
    arr = np.asarray(img, dtype=np.float32)
    arr = arr + np.random.default_rng(seed).normal(0, rng.uniform(2, 10), arr.shape)
    img = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=rng.randint(60, 92))
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


def make_split(dst: Path, num: int, seed: int) -> int:
    """`num` readings (random_reading) rendered into dst/images/, with dst/label.txt; returns the count."""
    dst = Path(dst)
    (dst / "images").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    lines = []
    for i in range(num):
        text = random_reading(rng)
        rel = f"images/{i:08d}.jpg"
        render_line(text, seed * 1_000_003 + i).save(dst / rel, quality=95)
        lines.append(f"{rel}\t{text}\n")
    (dst / "label.txt").write_text("".join(lines), encoding="utf-8")
    return num
