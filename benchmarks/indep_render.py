"""A plain, independent renderer of evaluation pages and text lines (issue 54 item 4): PIL and the standard library
only, nothing imported from paddle_recipes (its generators are tasks/ocr_rec/synth.py, tasks/ocr_det/synth_pages.py,
datasets/make_*.py), and fonts that no training run ever draws (Debian packages, HELDOUT_FONTS), so that a held-out
figure measured on these pages is not the project's generator grading itself.

    python benchmarks/indep_render.py fonts [--install]          # which held-out fonts are here; --install: apt-get them
    python benchmarks/indep_render.py pages --out D/pages --num 200 [--seed 0] [--size 480]
    python benchmarks/indep_render.py lines --out D/rec_h --num 1400 [--vertical-prob 0] [--min-len 2 --max-len 6]

pages: D/pages/imgs/page_NNNNN.jpg and D/pages/Label.txt, PaddleOCR's det label file
(``imgs/page_00000.jpg<TAB>[{"transcription": "...", "points": [[x, y] x 4]}, ...]``, points clockwise from the
text's top-left; a vertical column is a tall quad), plus D/pages/lines.jsonl: one row per labelled line, in label
order, with its page, font, orientation, characters, size (px, the em size), angle. ~5 lines per page, 15 % vertical
columns, 2-12 characters (as many as fit), 14-40 px, rotation +-15 degrees, dark or light text on flat, gradient or
noisy backgrounds with distractor shapes.
lines: D/imgs/line_NNNNN.png and D/label.txt (``imgs/line_00000.png<TAB>text``, PaddleOCR's rec label file), one
font per line in D/fonts.txt (same order) and D/lines.jsonl; vertical lines are tall crops (top to bottom).
Everything is a pure function of (--seed, index, the font files, the dict): the same call draws the same files.

Text: characters of the rec dict the default recipes train with (datasets/ocr_rec/ch_hanzi_100.txt, read as a text
file; --dict another), each line in one font and only characters that font has (its cmap, read with fontTools), drawn
uniformly. The dict has no digits or Latin, so neither has the text.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from PIL import Image, ImageDraw, ImageFilter, ImageFont

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DICT = REPO / "datasets" / "ocr_rec" / "ch_hanzi_100.txt"


@dataclass(frozen=True)
class HeldoutFont:
    """A font no training run draws: name, Debian package, file, face index, style."""
    name: str
    package: str
    path: str
    index: int
    style: str


# None of these is among the train fonts or the 5 eval fonts of datasets/fonts/FONTS.md, nor a source of one of them
# (Droid Sans Fallback -> Micro Hei and AR PL SungtiL GB -> UMing are left out for that reason). The Noto Black / Light
# faces are other weights of train families (Noto Sans CJK Regular / Bold, Noto Serif CJK Regular): held out by
# weight, not by typeface. The Japanese faces draw the Japanese forms of shared characters and lack some simplified
# ones (those lines only use the characters they have).
HELDOUT_FONTS: Tuple[HeldoutFont, ...] = (
    HeldoutFont("hanazono_mincho", "fonts-hanazono", "/usr/share/fonts/truetype/hanazono/HanaMinA.ttf", 0, "mincho serif"),
    HeldoutFont("ipa_mincho", "fonts-ipafont-mincho", "/usr/share/fonts/opentype/ipafont-mincho/ipam.ttf", 0,
                "mincho serif (Japanese)"),
    HeldoutFont("noto_serif_sc_black", "fonts-noto-cjk-extra", "/usr/share/fonts/opentype/noto/NotoSerifCJK-Black.ttc",
                2, "song, black weight"),
    HeldoutFont("noto_sans_sc_black", "fonts-noto-cjk-extra", "/usr/share/fonts/opentype/noto/NotoSansCJK-Black.ttc",
                2, "hei, black weight"),
    HeldoutFont("noto_sans_sc_light", "fonts-noto-cjk-extra", "/usr/share/fonts/opentype/noto/NotoSansCJK-Light.ttc",
                2, "hei, light weight (thin strokes)"),
    HeldoutFont("vl_gothic", "fonts-vlgothic", "/usr/share/fonts/truetype/vlgothic/VL-Gothic-Regular.ttf", 0,
                "gothic sans (Japanese)"),
    HeldoutFont("klee_one", "fonts-klee", "/usr/share/fonts/truetype/klee/KleeOne-Regular.ttf", 0,
                "pen script (Japanese)"),
)


def font_packages(fonts: Sequence[HeldoutFont] = HELDOUT_FONTS) -> List[str]:
    return sorted({f.package for f in fonts})


def package_versions(fonts: Sequence[HeldoutFont] = HELDOUT_FONTS) -> Dict[str, str]:
    """{debian package: installed version ('' when not installed or dpkg-query is missing)}."""
    out = {}
    for pkg in font_packages(fonts):
        try:
            r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, check=False)
            out[pkg] = r.stdout.strip() if r.returncode == 0 else ""
        except OSError:
            out[pkg] = ""
    return out


def install_fonts(fonts: Sequence[HeldoutFont] = HELDOUT_FONTS) -> bool:
    """apt-get install the missing fonts' packages; one line and False when that cannot be done here."""
    missing = sorted({f.package for f in fonts if not Path(f.path).is_file()})
    if not missing:
        return True
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        print(f"skipped: cannot apt-get install {' '.join(missing)} here (no apt-get or not root); "
              "install them, or the renderer uses the fonts found")
        return False
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    r = subprocess.run(["apt-get", "install", "-y", "-q", *missing], env=env, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        print(f"skipped: apt-get install {' '.join(missing)} failed: {r.stderr.strip().splitlines()[-1:]}")
        return False
    return True


def available_fonts(names: Sequence[str] = ()) -> List[HeldoutFont]:
    fonts = [f for f in HELDOUT_FONTS if (not names or f.name in names) and Path(f.path).is_file()]
    if not fonts:
        raise SystemExit(f"error: no held-out font installed ({', '.join(font_packages())}): "
                         "run python benchmarks/indep_render.py fonts --install")
    return fonts


def font_chars(font: HeldoutFont, chars: Sequence[str]) -> List[str]:
    """The characters of ``chars`` that ``font`` maps in its cmap."""
    from fontTools.ttLib import TTFont  # optional: only to read the cmap (installed with the project's dev extras)
    cmap = TTFont(font.path, fontNumber=font.index, lazy=True).getBestCmap()
    return [c for c in chars if all(ord(u) in cmap for u in c)]


def read_dict(path: str | os.PathLike = DEFAULT_DICT) -> List[str]:
    return [ln.strip() for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()]


# ---------------------------------------------------------------------------------------------------------- drawing
@dataclass
class RenderConfig:
    """Page and line settings (the defaults are the evaluation set of issue 54)."""
    page_size: int = 480
    lines_per_page: Tuple[int, int] = (3, 7)
    min_len: int = 2
    max_len: int = 12
    font_size: Tuple[int, int] = (14, 40)
    max_angle: float = 15.0
    vertical_prob: float = 0.17  # ~15 % of the placed lines (a tall column finds room less often)
    line_max_angle: float = 2.0  # rec crops: a slight tilt
    fonts: Tuple[str, ...] = ()
    dict_path: str = str(DEFAULT_DICT)


@dataclass
class Line:
    text: str
    font: str
    vertical: bool
    size: int
    angle: float
    points: List[List[float]] = field(default_factory=list)


class Renderer:
    def __init__(self, cfg: RenderConfig):
        self.cfg = cfg
        self.fonts = available_fonts(cfg.fonts)
        chars = read_dict(cfg.dict_path)
        self.chars = {f.name: font_chars(f, chars) for f in self.fonts}
        self._pil: Dict[Tuple[str, int], ImageFont.FreeTypeFont] = {}

    def pil_font(self, font: HeldoutFont, size: int) -> ImageFont.FreeTypeFont:
        key = (font.name, size)
        if key not in self._pil:
            self._pil[key] = ImageFont.truetype(font.path, size, index=font.index)
        return self._pil[key]

    def text_mask(self, text: str, font: HeldoutFont, size: int, vertical: bool, spacing: float
                  ) -> Tuple[Image.Image, Tuple[int, int, int, int]]:
        """White-on-black 'L' mask of the text with a margin, and the label box (x0, y0, x1, y1) in it: the ink's
        extent along the line, the em box across it, plus a margin of 0.1 em."""
        f = self.pil_font(font, size)
        pad = size
        step = size * (1.0 + spacing)
        if vertical:
            w, h = 3 * size, int(math.ceil(step * len(text))) + 2 * pad
            mask = Image.new("L", (w, h), 0)
            d = ImageDraw.Draw(mask)
            for i, ch in enumerate(text):
                d.text((w / 2, pad + step * i + size / 2), ch, font=f, fill=255, anchor="mm")
        else:
            advances = [f.getlength(ch) for ch in text]
            w = int(math.ceil(sum(advances) + spacing * size * (len(text) - 1))) + 2 * pad
            h = 3 * size
            mask = Image.new("L", (w, h), 0)
            d = ImageDraw.Draw(mask)
            x = float(pad)
            for ch, adv in zip(text, advances):
                d.text((x, h / 2), ch, font=f, fill=255, anchor="lm")
                x += adv + spacing * size
        ink = mask.getbbox() or (pad, pad, pad + 1, pad + 1)
        m = max(1, round(0.1 * size))
        if vertical:  # across: the em column; along: the ink
            box = (min(ink[0], int(w / 2 - size / 2)) - m, ink[1] - m, max(ink[2], int(w / 2 + size / 2)) + m, ink[3] + m)
        else:
            box = (ink[0] - m, min(ink[1], int(h / 2 - size / 2)) - m, ink[2] + m, max(ink[3], int(h / 2 + size / 2)) + m)
        return mask, box

    @staticmethod
    def rotate(mask: Image.Image, box, angle: float) -> Tuple[Image.Image, List[List[float]]]:
        """Rotate ``mask`` by ``angle`` degrees (counter-clockwise on screen) about its centre onto a canvas that
        holds it all; returns it and the box's corners (clockwise from its top-left) in the canvas."""
        w, h = mask.size
        a = math.radians(angle)
        c, s = math.cos(a), math.sin(a)
        cx, cy = w / 2, h / 2

        def fwd(x, y):  # image coordinates (y down): a counter-clockwise turn on screen
            dx, dy = x - cx, y - cy
            return c * dx + s * dy, -s * dx + c * dy

        corners = [fwd(x, y) for x, y in ((0, 0), (w, 0), (w, h), (0, h))]
        ow = int(math.ceil(max(p[0] for p in corners) - min(p[0] for p in corners)))
        oh = int(math.ceil(max(p[1] for p in corners) - min(p[1] for p in corners)))
        ocx, ocy = ow / 2, oh / 2
        # inverse map, output (u, v) -> input (x, y): x = c (u - ocx) - s (v - ocy) + cx, y = s (u - ocx) + c (v - ocy) + cy
        coeffs = (c, -s, -c * ocx + s * ocy + cx, s, c, -s * ocx - c * ocy + cy)
        out = mask.transform((ow, oh), Image.Transform.AFFINE, coeffs, resample=Image.Resampling.BICUBIC)
        x0, y0, x1, y1 = box
        pts = []
        for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1)):
            u, v = fwd(x, y)
            pts.append([u + ocx, v + ocy])
        return out, pts

    def sample_text(self, rnd: random.Random, font: HeldoutFont, n: int) -> str:
        own = self.chars[font.name]
        return "".join(rnd.choice(own) for _ in range(n))

    # ------------------------------------------------------------------------------------------------- pages
    def background(self, rnd: random.Random, w: int, h: int, dark: bool) -> Image.Image:
        base = [rnd.randint(20, 90) for _ in range(3)] if dark else [rnd.randint(170, 255) for _ in range(3)]
        img = Image.new("RGB", (w, h), tuple(base))
        kind = rnd.random()
        if kind < 0.35:  # a linear gradient
            other = [min(255, max(0, v + rnd.randint(-60, 60))) for v in base]
            grad = Image.linear_gradient("L").resize((w, h)).rotate(rnd.uniform(0, 360))
            img = Image.composite(Image.new("RGB", (w, h), tuple(other)), img, grad)
        elif kind < 0.6:  # noise
            noise = Image.frombytes("L", (w, h), rnd.randbytes(w * h)).convert("RGB")  # seeded, unlike effect_noise
            img = Image.blend(img, noise, rnd.uniform(0.05, 0.2))
        d = ImageDraw.Draw(img)
        for _ in range(rnd.randint(0, 4)):  # distractors: lines, boxes, circles in a faint colour
            col = tuple(min(255, max(0, v + rnd.randint(-70, 70))) for v in base)
            x0, y0 = rnd.randint(0, w), rnd.randint(0, h)
            x1, y1 = x0 + rnd.randint(-w // 2, w // 2), y0 + rnd.randint(-h // 2, h // 2)
            shape = rnd.random()
            if shape < 0.5:
                d.line([(x0, y0), (x1, y1)], fill=col, width=rnd.randint(1, 3))
            elif shape < 0.8:
                d.rectangle([min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)], outline=col, width=rnd.randint(1, 2))
            else:
                r = rnd.randint(5, 40)
                d.ellipse([x0 - r, y0 - r, x0 + r, y0 + r], outline=col, width=1)
        return img

    def page(self, seed: int) -> Tuple[Image.Image, List[Line]]:
        cfg = self.cfg
        rnd = random.Random(f"page-{seed}")
        size = cfg.page_size
        dark = rnd.random() < 0.15
        img = self.background(rnd, size, size, dark)
        taken: List[Tuple[float, float, float, float]] = []
        lines: List[Line] = []
        want = rnd.randint(*cfg.lines_per_page)
        for _ in range(want * 15):
            if len(lines) >= want:
                break
            font = rnd.choice(self.fonts)
            px = rnd.randint(*cfg.font_size)
            vertical = rnd.random() < cfg.vertical_prob
            spacing = rnd.choice([0.0, 0.0, rnd.uniform(0.0, 0.15), rnd.uniform(0.15, 0.4)])
            room = int(0.9 * size / (px * (1 + spacing))) - 1
            if room < cfg.min_len:
                continue
            n = rnd.randint(cfg.min_len, min(cfg.max_len, room))
            text = self.sample_text(rnd, font, n)
            angle = rnd.uniform(-cfg.max_angle, cfg.max_angle)
            mask, box = self.text_mask(text, font, px, vertical, spacing)
            rot, pts = self.rotate(mask, box, angle)
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            span_x, span_y = max(xs) - min(xs), max(ys) - min(ys)
            if span_x > size - 6 or span_y > size - 6:
                continue
            ox = rnd.uniform(3 - min(xs), size - 3 - max(xs))
            oy = rnd.uniform(3 - min(ys), size - 3 - max(ys))
            rect = (min(xs) + ox - 3, min(ys) + oy - 3, max(xs) + ox + 3, max(ys) + oy + 3)
            if any(rect[0] < t[2] and t[0] < rect[2] and rect[1] < t[3] and t[1] < rect[3] for t in taken):
                continue
            ix, iy = int(round(ox)), int(round(oy))
            col = tuple(rnd.randint(200, 255) for _ in range(3)) if dark else tuple(rnd.randint(0, 80) for _ in range(3))
            if rnd.random() < 0.1:  # low contrast
                col = tuple(rnd.randint(90, 130) for _ in range(3))
            layer = rot
            if rnd.random() < 0.15:
                layer = layer.filter(ImageFilter.GaussianBlur(rnd.uniform(0.3, 0.8)))
            img.paste(Image.new("RGB", rot.size, col), (ix, iy), layer)
            taken.append(rect)
            lines.append(Line(text, font.name, vertical, px, round(angle, 3),
                              [[round(x + ix, 1), round(y + iy, 1)] for x, y in pts]))
        return img, lines

    def line(self, seed: int) -> Tuple[Image.Image, Line]:
        """One recognizer crop: the label box (plus a random margin) of a line drawn on its own background."""
        cfg = self.cfg
        rnd = random.Random(f"line-{seed}")
        font = rnd.choice(self.fonts)
        px = rnd.randint(*cfg.font_size)
        vertical = rnd.random() < cfg.vertical_prob
        spacing = rnd.choice([0.0, 0.0, rnd.uniform(0.0, 0.15)])
        text = self.sample_text(rnd, font, rnd.randint(cfg.min_len, cfg.max_len))
        angle = rnd.uniform(-cfg.line_max_angle, cfg.line_max_angle)
        mask, box = self.text_mask(text, font, px, vertical, spacing)
        rot, pts = self.rotate(mask, box, angle)
        dark = rnd.random() < 0.15
        bg = self.background(rnd, rot.size[0], rot.size[1], dark)
        col = tuple(rnd.randint(200, 255) for _ in range(3)) if dark else tuple(rnd.randint(0, 80) for _ in range(3))
        bg.paste(Image.new("RGB", rot.size, col), (0, 0), rot)
        m = rnd.uniform(0.0, 0.25) * px
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        crop = bg.crop((int(max(0, min(xs) - m)), int(max(0, min(ys) - m)),
                        int(min(rot.size[0], max(xs) + m + 1)), int(min(rot.size[1], max(ys) + m + 1))))
        return crop, Line(text, font.name, vertical, px, round(angle, 3), [[round(x, 1), round(y, 1)] for x, y in pts])


# ---------------------------------------------------------------------------------------------------------- writers
def write_pages(out: str | os.PathLike, num: int, cfg: RenderConfig, seed: int = 0) -> Path:
    out = Path(out)
    (out / "imgs").mkdir(parents=True, exist_ok=True)
    r = Renderer(cfg)
    labels, meta = [], []
    for i in range(num):
        img, lines = r.page(seed * 1_000_003 + i)
        rel = f"imgs/page_{i:05d}.jpg"
        img.save(out / rel, quality=92)
        labels.append(rel + "\t" + json.dumps([{"transcription": ln.text, "points": ln.points} for ln in lines],
                                              ensure_ascii=False))
        meta += [json.dumps({"page": rel, **asdict(ln)}, ensure_ascii=False) for ln in lines]
    (out / "Label.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")
    (out / "lines.jsonl").write_text("\n".join(meta) + "\n", encoding="utf-8")
    (out / "render.json").write_text(json.dumps({"pages": num, "seed": seed, "config": asdict(cfg),
                                                 "fonts": [asdict(f) for f in r.fonts],
                                                 "packages": package_versions(r.fonts)}, indent=1))
    return out


def write_lines(out: str | os.PathLike, num: int, cfg: RenderConfig, seed: int = 0) -> Path:
    out = Path(out)
    (out / "imgs").mkdir(parents=True, exist_ok=True)
    r = Renderer(cfg)
    labels, fonts, meta = [], [], []
    for i in range(num):
        img, ln = r.line(seed * 1_000_003 + i)
        rel = f"imgs/line_{i:05d}.png"
        img.save(out / rel)
        labels.append(f"{rel}\t{ln.text}")
        fonts.append(ln.font)
        meta.append(json.dumps({"image": rel, **asdict(ln)}, ensure_ascii=False))
    for name, rows in (("label.txt", labels), ("fonts.txt", fonts), ("lines.jsonl", meta)):
        (out / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    (out / "render.json").write_text(json.dumps({"lines": num, "seed": seed, "config": asdict(cfg),
                                                 "fonts": [asdict(f) for f in r.fonts],
                                                 "packages": package_versions(r.fonts)}, indent=1))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("what", choices=["fonts", "pages", "lines"])
    p.add_argument("--install", action="store_true", help="fonts: apt-get install the missing packages")
    p.add_argument("--out", default="output/indep")
    p.add_argument("--num", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, default=480, help="pages: width = height (px)")
    p.add_argument("--min-len", type=int, default=None)
    p.add_argument("--max-len", type=int, default=None)
    p.add_argument("--font-size", type=int, nargs=2, default=None)
    p.add_argument("--vertical-prob", type=float, default=None)
    p.add_argument("--fonts", nargs="*", default=[], help="names of HELDOUT_FONTS (default: every installed one)")
    p.add_argument("--dict", default=str(DEFAULT_DICT))
    a = p.parse_args(argv)
    if a.what == "fonts":
        if a.install:
            install_fonts()
        versions = package_versions()
        for f in HELDOUT_FONTS:
            print(f"{f.name:22s} {f.package:22s} {versions.get(f.package) or '-':24s} "
                  f"{'ok' if Path(f.path).is_file() else 'missing'}  {f.path}")
        return
    if not Path(a.dict).is_file():
        sys.stderr.write(f"error: --dict {a.dict}: no such file\n")
        raise SystemExit(2)
    cfg = RenderConfig(page_size=a.size, fonts=tuple(a.fonts), dict_path=a.dict)
    if a.what == "lines":  # the rec default's lines: 2-6 characters, horizontal
        cfg.min_len, cfg.max_len, cfg.vertical_prob, cfg.font_size = 2, 6, 0.0, (14, 40)
    for k, v in (("min_len", a.min_len), ("max_len", a.max_len), ("vertical_prob", a.vertical_prob)):
        if v is not None:
            setattr(cfg, k, v)
    if a.font_size:
        cfg.font_size = tuple(a.font_size)
    out = (write_pages if a.what == "pages" else write_lines)(a.out, a.num, cfg, a.seed)
    print(f"wrote {a.num} {a.what} to {out}")


if __name__ == "__main__":
    main()
