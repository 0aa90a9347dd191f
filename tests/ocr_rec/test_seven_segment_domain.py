"""benchmarks/harness/seven_segment.py: the meter-display weak domain is deterministic, draws the segments each
character lights, and writes a PaddleOCR label file the released dict can encode."""
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.harness.seven_segment import CHARS, SEGMENTS, make_split, random_reading, render_line  # noqa: E402


def contrast(img):
    """Pixels far from the panel colour (the median): the lit segments."""
    a = np.asarray(img.convert("L"), dtype=np.float32)
    return np.abs(a - np.median(a)) > 60


def test_same_seed_same_image_other_seed_other_image():
    a, b, c = (np.asarray(render_line("12.5", s)) for s in (3, 3, 4))
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert render_line("12.5", 3).height == 48


def test_more_lit_segments_more_ink():
    """Same seed = same geometry and colours: '8' lights 7 bars, '0' 6, '7' 3, '1' 2."""
    ink = {ch: contrast(render_line(ch * 4, 11)).sum() for ch in "8071"}
    assert ink["8"] > ink["0"] > ink["7"] > ink["1"] > 0
    assert [len(SEGMENTS[ch]) for ch in "8071"] == [7, 6, 3, 2]


def test_an_unknown_character_is_one_clear_error():
    with pytest.raises(ValueError, match=r"no segments for \['A'\]"):
        render_line("12A", 0)


def test_readings_use_only_drawable_characters_and_make_split_writes_a_label_file(tmp_path):
    rng = random.Random(0)
    readings = [random_reading(rng) for _ in range(500)]
    assert all(1 <= len(r) <= 9 and set(r) <= set(CHARS) for r in readings)
    assert any("." in r for r in readings) and any(":" in r for r in readings) and any(r.startswith("-") for r in readings)
    assert make_split(tmp_path / "val", 3, seed=5) == 3
    lines = (tmp_path / "val/label.txt").read_text(encoding="utf-8").splitlines()
    assert [ln.split("\t")[0] for ln in lines] == [f"images/{i:08d}.jpg" for i in range(3)]
    assert all(Image.open(tmp_path / "val" / ln.split("\t")[0]).height == 48 for ln in lines)


def test_weak_splits_check_the_dict_and_are_cached(tmp_path, monkeypatch):
    from benchmarks.harness import official_init, seven_segment

    with pytest.raises(ValueError, match=r"seven_segment: the dict lacks \[':'\]"):
        official_init.make_weak_splits(tmp_path, list("0123456789-."), {"val": 2}, "seven_segment", 1, {"val": 7})
    calls = []
    real = seven_segment.make_split
    monkeypatch.setattr(seven_segment, "make_split", lambda *a: calls.append(a[1:]) or real(*a))
    for num in (2, 2, 3):
        official_init.make_weak_splits(tmp_path, list(CHARS), {"val": num}, "seven_segment", 1, {"val": 7})
    assert calls == [(2, 7), (3, 7)]
    assert len((tmp_path / "val/label.txt").read_text(encoding="utf-8").splitlines()) == 3
