"""benchmarks/harness/dot_matrix.py: the weak domain of the fine-tuning benchmarks (dot-matrix prints of clean
lines) is deterministic, prints only where the glyphs are, and keeps the label file."""
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.harness.dot_matrix import make_split, to_dot_matrix  # noqa: E402


def clean_line(text="国家 2024", size=(200, 48)):
    from noto_cjk_sans_otc import FONT_PATH

    img = Image.new("RGB", size, (255, 255, 255))
    ImageDraw.Draw(img).text((6, 6), text, font=ImageFont.truetype(str(FONT_PATH), 32, index=2), fill=(0, 0, 0))
    return img


def dark(img, below=160):
    return np.asarray(img.convert("L")) < below


def test_same_seed_same_print_other_seed_other_print():
    a, b, c = (np.asarray(to_dot_matrix(clean_line(), s)) for s in (3, 3, 4))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_dots_fall_on_the_glyphs_and_a_blank_line_gets_none():
    src = clean_line()
    out = to_dot_matrix(src, 7)
    assert out.size == src.size
    ink = dark(src, 128)
    near = np.asarray(Image.fromarray(ink).filter(ImageFilter.MaxFilter(7))) > 0
    printed = dark(out)
    assert printed.sum() > 0.3 * ink.sum()  # the text is printed ...
    assert (printed & ~near).sum() <= 0.02 * printed.sum()  # ... and only where the glyphs are
    assert not dark(to_dot_matrix(Image.new("RGB", (120, 48), (255, 255, 255)), 7)).any()


def test_make_split_keeps_labels_and_sizes(tmp_path):
    src = tmp_path / "clean"
    (src / "images").mkdir(parents=True)
    lines = []
    for i, text in enumerate(["国家", "发票 No.12"]):
        clean_line(text, (150 + 20 * i, 48)).save(src / "images" / f"{i:08d}.jpg")
        lines.append(f"images/{i:08d}.jpg\t{text}")
    (src / "label.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert make_split(src, tmp_path / "dot", seed=5) == 2
    assert (tmp_path / "dot/label.txt").read_text(encoding="utf-8") == (src / "label.txt").read_text(encoding="utf-8")
    for i in range(2):
        assert Image.open(tmp_path / "dot/images" / f"{i:08d}.jpg").size == (150 + 20 * i, 48)


def test_a_low_coverage_keeps_a_thin_stroke_the_default_drops():
    """A 1-px stroke covers 1/5 of each 5-px cell: struck at coverage 0.1, gone at the default 0.35."""
    img = Image.new("RGB", (140, 48), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    draw.rectangle([4, 9, 40, 38], fill=(0, 0, 0))  # the ink rows: 30 px, 6 dots -> pitch 5
    draw.line([100, 9, 100, 38], fill=(0, 0, 0), width=1)
    near_stroke = (slice(None), slice(94, 107))
    thin = dark(to_dot_matrix(img, 3, dots_per_line=(6, 6), coverage=0.1))[near_stroke]
    default = dark(to_dot_matrix(img, 3, dots_per_line=(6, 6)))[near_stroke]
    assert thin.sum() > 20 and not default.any()


def test_make_weak_splits_reprints_when_the_print_options_change(tmp_path, monkeypatch):
    import json

    from benchmarks.harness import dot_matrix, official_init

    calls = []
    real = dot_matrix.make_split
    monkeypatch.setattr(dot_matrix, "make_split", lambda *a, **k: calls.append(k) or real(*a, **k))
    chars = list("国家发票号码一二三")
    args = (tmp_path, chars, {"val": 3}, "dot_matrix", 5, {"val": 9})
    official_init.make_weak_splits(*args, min_len=2, max_len=3)
    official_init.make_weak_splits(*args, min_len=2, max_len=3)  # cached: same clean lines, same options
    official_init.make_weak_splits(*args, {"coverage": 0.2}, min_len=2, max_len=3)
    assert calls == [{}, {"coverage": 0.2}]
    assert json.loads((tmp_path / "val/print.json").read_text()) == {"seed": 9, "dots_per_line": [10, 14],
                                                                       "coverage": 0.2}
