"""Multi-font text-line generator, font registry and train/eval split, text sampler, per-font metrics,
full-size dicts, the missing-character summary and width normalisation."""
from __future__ import annotations

import hashlib
import sys
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from paddle_recipes.tasks.ocr_rec.charset import (CharDict, CharDictError, gb2312_level1_hanzi, normalize_width)  # noqa: E402
from paddle_recipes.data.skips import SkipStats  # noqa: E402
from paddle_recipes.tasks.ocr_rec.dataset import DatasetConfig, RecDataset, collate  # noqa: E402
from paddle_recipes.tasks.ocr_rec.fonts import (FONTS, FontError, FontSpec, coverage, fonts_for, missing_chars)  # noqa: E402
from paddle_recipes.tasks.ocr_rec.metrics import PerTagRecMetric, format_per_tag, per_font_metrics  # noqa: E402
from paddle_recipes.tasks.ocr_rec.postprocess import ctc_greedy_decode  # noqa: E402
from paddle_recipes.tasks.ocr_rec.synth import (LineRenderer, SynthConfig, build_dataset, dataset_fingerprint,
                                                generate_samples, read_font_tags)  # noqa: E402
from paddle_recipes.tasks.ocr_rec.textgen import UNITS, TextSampler, load_char_freq  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DICTS = {name: REPO / "datasets" / "ocr_rec" / name
         for name in ("ch_hanzi_100.txt", "ch_hanzi_500.txt", "ch_common_3000.txt")}
# Fonts with partial coverage of the 3000-char dict (traditional-Chinese cwTeX fonts): the generator
# only gives them lines of characters they have.
PARTIAL_FONTS = {"cwtex_fangsong", "cwtex_yen"}
MIX_CHARS = list("天地人你我他中国上下左右大小山水年月日") + list("0123456789") + list("abcXYZ") + list("，。、：,.-")


def _digest(samples) -> str:
    h = hashlib.sha256()
    for s in samples:
        for part in s:
            h.update(part if isinstance(part, bytes) else part.encode("utf-8"))
    return h.hexdigest()


# ----------------------------------------------------------------------------- font registry
def test_train_and_eval_fonts_never_overlap():
    train, evals = fonts_for("train"), fonts_for("eval")
    assert train and evals and len(train) + len(evals) == len(FONTS)
    assert not {f.name for f in train} & {f.name for f in evals}
    assert not {(f.path(), f.index) for f in train} & {(f.path(), f.index) for f in evals}
    assert len({f.name for f in FONTS}) == len(FONTS)
    # the main styles are on both sides, so held-out accuracy measures unseen typefaces, not unseen styles
    for style in ("hei", "song", "kai"):
        assert any(f.style == style for f in train) and any(f.style == style for f in evals), style
    assert {f.style for f in FONTS} >= {"hei", "song", "kai", "fangsong", "rounded", "mono"}
    assert any(f.bold for f in train) and any(f.bold for f in evals)
    with pytest.raises(ValueError, match="font split"):
        fonts_for("test")


def test_every_font_exists_and_draws_the_default_dicts():
    chars = {name: CharDict.from_file(p).chars for name, p in DICTS.items()}
    for spec in FONTS:
        assert Path(spec.path()).is_file(), spec
        for name, cs in chars.items():
            lacking = missing_chars(spec, cs)
            if spec.name in PARTIAL_FONTS:
                assert len(lacking) < 0.4 * len(cs), (spec.name, name, len(lacking))
            else:
                assert lacking == [], f"{spec.name} lacks {len(lacking)} chars of {name}: {''.join(lacking[:30])}"
        # the cmap is honest: covered glyphs have ink
        font = ImageFont.truetype(spec.path(), 32, index=spec.index)
        for ch in "国的8A":
            if ord(ch) in coverage(spec):
                x0, y0, x1, y1 = font.getbbox(ch)
                assert x1 > x0 and y1 > y0, (spec.name, ch)
    with pytest.raises(FontError, match="not found"):
        coverage(FontSpec("nope", "Nope", "hei", "train", "no_such_font.ttf"))


def test_generator_never_draws_a_char_its_font_lacks():
    chars = CharDict.from_file(DICTS["ch_common_3000.txt"]).chars
    cfg = SynthConfig(min_len=1, max_len=12)
    for side in ("train", "eval"):
        r = LineRenderer(cfg, chars, side)
        rng = np.random.default_rng(0)
        for k, font in enumerate(r.fonts):
            cov = r.cov[k]
            for _ in range(30):
                text = r.samplers[k].sample(rng, 12)
                assert all(ord(c) in cov for c in text), (font.name, text)
                assert all(r.font_for_char(k, c) == k for c in text)
    # a dict char no font of the side has is never generated (and is reported)
    r = LineRenderer(SynthConfig(fonts=("cwtex_yen",)), ["天", "们", "山"], "eval")  # traditional: no 们
    assert r.undrawable == ["们"] and r.chars == ["天", "山"]


# ----------------------------------------------------------------------------- generator
def test_generator_is_deterministic_per_seed_and_uses_many_fonts():
    cfg = SynthConfig(min_len=1, max_len=8, height=32, seed=5)
    a = generate_samples(cfg, MIX_CHARS, "train", 70, workers=1, return_fonts=True)
    b = generate_samples(cfg, MIX_CHARS, "train", 70, workers=2, return_fonts=True)  # pool path (>= 64)
    assert _digest(a) == _digest(b)
    fonts = Counter(f for _, _, f in a)
    assert len(fonts) >= 5 and set(fonts) <= {f.name for f in fonts_for("train")}
    other = generate_samples(SynthConfig(min_len=1, max_len=8, height=32, seed=6), MIX_CHARS, "train", 10,
                             return_fonts=True)
    assert _digest(other) != _digest(a[:10])
    held = generate_samples(cfg, MIX_CHARS, "heldout", 30, return_fonts=True)
    assert {f for _, _, f in held} <= {f.name for f in fonts_for("eval")}
    for data, text, _ in a[:20] + held[:20]:
        img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert img.shape[0] == 32 and img.shape[1] >= 8
        assert 1 <= len(text) <= 8 and set(text) <= set(MIX_CHARS)


def test_generator_restricted_fonts_and_clean_mode():
    cfg = SynthConfig(min_len=2, max_len=4, height=32, aug=False, fonts=("noto_sans_sc", "lxgw_wenkai"))
    tr = generate_samples(cfg, MIX_CHARS, "val", 6, return_fonts=True)
    ho = generate_samples(cfg, MIX_CHARS, "heldout", 6, return_fonts=True)
    assert {f for *_, f in tr} == {"noto_sans_sc"} and {f for *_, f in ho} == {"lxgw_wenkai"}
    img = cv2.imdecode(np.frombuffer(tr[0][0], np.uint8), cv2.IMREAD_GRAYSCALE)
    assert img.max() >= 250 and img.min() < 100  # dark text on white
    with pytest.raises(ValueError, match="unknown font"):
        SynthConfig(fonts=("comic_sans",))
    with pytest.raises(ValueError, match="no eval font"):
        generate_samples(SynthConfig(fonts=("noto_sans_sc",)), MIX_CHARS, "heldout", 2)


def test_build_dataset_writes_font_tags_and_heldout_split(tmp_path, caplog):
    cfg = SynthConfig(min_len=1, max_len=5, height=32, seed=1)
    splits = {"train": 12, "val": 4, "heldout": 8}
    out = build_dataset(tmp_path / "s", MIX_CHARS, splits, cfg, workers=1)
    meta = dataset_fingerprint(MIX_CHARS, splits, cfg)
    assert meta["fonts"] and meta["generator_version"] >= 2
    tags = read_font_tags(out / "heldout")
    assert len(tags) == 8 and set(tags) <= {f.name for f in fonts_for("eval")}
    assert set(read_font_tags(out / "train")) <= {f.name for f in fonts_for("train")}
    charset = CharDict(MIX_CHARS)
    # tags line up with both formats' records, through RecDataset and collate
    for ds_cfg in (DatasetConfig(format="lmdb", data_dir=str(out / "heldout" / "lmdb")),
                   DatasetConfig(data_dir=str(out / "heldout"), label_file_list=[str(out / "heldout" / "label.txt")])):
        ds = RecDataset(ds_cfg, charset, (3, 32, 160), max_text_length=5)
        ds.attach_tags(tags)
        assert ds.tags == tags
        batch = collate([ds[i] for i in range(3)])
        assert batch["tag"] == tags[:3]
    labels = [ln.split("\t")[1] for ln in (out / "heldout" / "label.txt").read_text(encoding="utf-8").splitlines()]
    again = build_dataset(tmp_path / "s", MIX_CHARS, splits, cfg, workers=1)  # cached: nothing rewritten
    assert again == out and read_font_tags(out / "heldout") == tags
    assert [ln.split("\t")[1] for ln in (out / "heldout" / "label.txt").read_text(encoding="utf-8").splitlines()] == labels


# ----------------------------------------------------------------------------- text content
def test_text_sampler_follows_frequencies_and_mixes_content():
    freq = load_char_freq()
    assert freq["的"] > freq["霄"] > 0
    chars = CharDict.from_file(DICTS["ch_common_3000.txt"]).chars
    rng = np.random.default_rng(0)
    real = TextSampler(chars, freq, freq_mix=1.0, mixed_prob=0.0)
    counts = Counter("".join(real.sample(rng, 10) for _ in range(500)))
    assert counts["的"] > 20 and counts["的"] > 5 * max(1, counts["霄"])
    mixed = TextSampler(chars, freq, freq_mix=0.5, mixed_prob=1.0)
    lines = [mixed.sample(rng, int(rng.integers(1, 13))) for _ in range(300)]
    assert all(set(t) <= set(chars) for t in lines)
    assert sum(any(c.isdigit() for c in t) for t in lines) > 30
    assert sum(any(c.isascii() and c.isalpha() for c in t) for t in lines) > 20
    assert [len(t) for t in lines] == [len(t) for t in lines]  # exact lengths checked below
    rng = np.random.default_rng(1)
    assert all(len(mixed.sample(rng, n)) == n for n in range(1, 26))
    # a dict of hanzi only gives hanzi-only lines
    only = TextSampler(list("天地人"), freq, mixed_prob=1.0)
    assert set("".join(only.sample(rng, 8) for _ in range(20))) <= set("天地人")



def test_a_dict_with_the_space_gets_spaces_where_real_lines_have_them():
    """use_space_char dicts: spaces between words / numbers and their neighbours, never leading, trailing or
    doubled, lengths exact; a dict without " " draws the very same lines whatever space_prob says."""
    chars = CharDict.from_file(DICTS["ch_common_3000.txt"]).chars
    spaced = TextSampler(chars + [" "], {}, mixed_prob=1.0, space_prob=0.5)
    rng = np.random.default_rng(3)
    lines = [spaced.sample(rng, int(rng.integers(2, 16))) for _ in range(400)]
    with_space = [t for t in lines if " " in t]
    assert len(with_space) > 40
    assert not any(t.startswith(" ") or t.endswith(" ") or "  " in t for t in lines)
    word_or_number = lambda c: (c.isascii() and c.isalnum()) or c in UNITS  # noqa: E731 (a number may end in 年)
    for t in with_space:
        for i in (i for i, c in enumerate(t) if c == " "):
            assert word_or_number(t[i - 1]) or word_or_number(t[i + 1]), t
    rng = np.random.default_rng(4)
    assert all(len(spaced.sample(rng, n)) == n for n in range(1, 26))
    draws = [[TextSampler(chars, {}, mixed_prob=1.0, space_prob=p).sample(np.random.default_rng(5), 12)
              for _ in range(1)] for p in (0.0, 0.9)]
    assert draws[0] == draws[1] and " " not in draws[0][0]
    assert TextSampler(chars + [" "], {}, mixed_prob=1.0).space_prob == 0.0  # off unless asked
    with pytest.raises(ValueError, match="space_prob"):
        SynthConfig(space_prob=1.5)

# ----------------------------------------------------------------------------- per-font metrics
def test_per_font_metrics_and_rank_merge():
    preds = ["天地", "人", "山水", "大x", ""]
    labels = ["天地", "人", "山川", "大小", "中"]
    fonts = ["a", "a", "b", "b", "c"]
    r = per_font_metrics(preds, labels, fonts)
    assert r["acc"] == pytest.approx(2 / 5) and r["num_samples"] == 5
    assert r["per_font"]["a"] == {"acc": 1.0, "norm_edit_dis": 1.0, "n": 2}
    assert r["per_font"]["b"]["acc"] == 0.0 and r["per_font"]["b"]["norm_edit_dis"] == pytest.approx(0.5)
    assert r["per_font"]["c"] == {"acc": 0.0, "norm_edit_dis": 0.0, "n": 1}
    assert r["mean_font_acc"] == pytest.approx(1 / 3)
    assert r["norm_edit_dis"] == pytest.approx(1 - (0 + 0 + 0.5 + 0.5 + 1) / 5)
    # two "ranks" with disjoint slices: summed states give the same report as one pass
    m1, m2 = PerTagRecMetric(["a", "b", "c"]), PerTagRecMetric(["a", "b", "c"])
    m1.update(preds[:3], labels[:3], fonts[:3])
    m2.update(preds[3:], labels[3:], fonts[3:])
    s1, s2 = m1.state(), m2.state()
    assert s1.keys() == s2.keys()
    merged = PerTagRecMetric.from_state({k: s1[k] + s2[k] for k in s1})
    assert merged["per_tag"] == r["per_font"] and merged["acc"] == r["acc"]
    with pytest.raises(KeyError, match="unknown tag"):
        m1.update(["x"], ["x"], ["zz"])
    line = format_per_tag(merged)
    assert line.startswith("acc: 0.4000, norm_edit_dis: 0.6000, mean over 3 fonts: 0.3333 | a 1.0000 (n=2) | ")
    assert line.endswith("c 0.0000 (n=1)")


# ----------------------------------------------------------------------------- dicts
def _ppocr_like_dict(path: Path, n: int, flags: bool) -> list:
    """A dict of PaddleOCR's format and size: one entry a line, U+3000 line, ASCII, punctuation,
    hanzi (GB2312 level 1 then other CJK ideographs), optionally flag emoji (two code points)."""
    entries = ["\u3000"] + list("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") + list("，。！？、：；（）《》“”")
    if flags:
        entries += ["🇨🇳", "🇯🇵", "🇺🇸"]
    entries += gb2312_level1_hanzi()
    cp = 0x4E00
    have = set(entries)
    while len(entries) < n:
        if chr(cp) not in have:
            entries.append(chr(cp))
        cp += 1
    path.write_text("\n".join(entries[:n]) + "\n", encoding="utf-8")
    return entries[:n]


@pytest.mark.parametrize("n,flags", [(6623, False), (18383, True)])
def test_full_size_dicts_load_encode_decode(tmp_path, n, flags):
    entries = _ppocr_like_dict(tmp_path / "d.txt", n, flags)
    cd = CharDict.from_file(tmp_path / "d.txt", use_space_char=True)
    assert len(cd) == n + 1 and cd.num_classes == n + 2  # + " " (use_space_char) + blank, as PaddleOCR
    text = "中国\u3000AB 12。" + ("🇨🇳" if flags else "") + entries[-1]
    ids = cd.encode(text)
    assert max(ids) < cd.num_classes and cd.decode_ids(ids) == text
    assert len(ids) == len(text) - (1 if flags else 0)  # a flag is one class made of two code points
    assert cd.check(text, len(ids)).ids == ids and cd.check(text, len(ids) - 1).reason == "too_long"
    # CTC decode over all classes: one-hot logits [1, T, C] of the ids with blanks between
    seq = [i for t in ids for i in (t, 0)]
    logits = np.full((1, len(seq), cd.num_classes), -5.0, np.float32)
    logits[0, np.arange(len(seq)), seq] = 5.0
    assert ctc_greedy_decode(logits, cd)[0][0] == text


def test_listed_dicts_load_and_dict_errors(tmp_path):
    sizes = {name: len(CharDict.from_file(p)) for name, p in DICTS.items()}
    assert sizes == {"ch_hanzi_100.txt": 100, "ch_hanzi_500.txt": 500, "ch_common_3000.txt": 3062}
    (tmp_path / "two.txt").write_text("天\n天地\n", encoding="utf-8")
    with pytest.raises(CharDictError, match="two.txt:2"):
        CharDict.from_file(tmp_path / "two.txt")
    (tmp_path / "dup.txt").write_text("天\n\u3000\n天\n", encoding="utf-8")  # PaddleOCR keeps both; we refuse
    with pytest.raises(CharDictError, match="twice"):
        CharDict.from_file(tmp_path / "dup.txt")
    (tmp_path / "sp.txt").write_text("天\n \n地\n", encoding="utf-8")  # a space line is an entry
    cd = CharDict.from_file(tmp_path / "sp.txt", use_space_char=True)
    assert cd.chars == ["天", " ", "地"]  # use_space_char does not add a second " "


# ----------------------------------------------------------------------------- real-data hygiene
def _label_dir(tmp_path: Path, labels) -> DatasetConfig:
    ok, buf = cv2.imencode(".jpg", np.full((32, 64, 3), 255, np.uint8))
    (tmp_path / "img").mkdir()
    lines = []
    for i, lab in enumerate(labels):
        (tmp_path / "img" / f"{i}.jpg").write_bytes(buf.tobytes())
        lines.append(f"img/{i}.jpg\t{lab}")
    (tmp_path / "l.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return DatasetConfig(data_dir=str(tmp_path), label_file_list=[str(tmp_path / "l.txt")])


def test_summary_names_the_top_missing_characters(tmp_path):
    labels = ["天地", "天龘", "龘龘地", "人鑫", "鑫龘", "Ａ天", "天地人"]
    ds = RecDataset(_label_dir(tmp_path, labels), CharDict(list("天地人")), (3, 32, 64), max_text_length=8)
    assert len(ds) == 2 and ds.stats.counts()["unknown_char"] == 5
    assert ds.stats.top_missing() == [("龘", 3), ("鑫", 2), ("Ａ", 1)]  # labels containing each
    assert ds.stats.top_missing(1) == [("龘", 3)]
    summary = ds.stats.summary()
    assert "'龘'x3 '鑫'x2 'Ａ'x1" in summary
    assert ds.stats.report()["missing_chars"] == [["龘", 3], ["鑫", 2], ["Ａ", 1]]
    st = SkipStats("x")
    for i in range(25):
        st.add(f"f:{i}", "unknown_char", missing=[chr(0x4E00 + i)] * (1 + (i == 3)))
    st.add("f:3", "unknown_char", missing=["丁"])  # same place again: not counted twice
    assert len(st.top_missing()) == 20 and st.top_missing()[0] == ("一", 1) and "(+5 more)" in st.summary()


def test_width_normalisation_is_an_explicit_option(tmp_path):
    assert normalize_width("ＡＢ１２，。\u3000x", "halfwidth") == "AB12,。 x"
    assert normalize_width("AB12,。 x", "fullwidth") == "ＡＢ１２，。\u3000ｘ"
    assert normalize_width("ＡＢ", "none") == "ＡＢ"
    with pytest.raises(ValueError, match="halfwidth"):
        normalize_width("x", "nfkc")
    with pytest.raises(ValueError, match="normalize_width"):
        DatasetConfig(normalize_width="nfkc")
    charset = CharDict(list("天AB1,"))
    cfg = _label_dir(tmp_path, ["天ＡＢ", "ＡＢ１，", "天AB"])
    default = RecDataset(cfg, charset, (3, 32, 64), max_text_length=8)
    assert len(default) == 1 and default.stats.top_missing() == [("Ａ", 2), ("Ｂ", 2), ("，", 1), ("１", 1)]
    cfg.normalize_width = "halfwidth"
    norm = RecDataset(cfg, charset, (3, 32, 64), max_text_length=8)
    assert [it[2] for it in norm.items] == ["天AB", "AB1,", "天AB"] and norm.stats.total == 0


def test_evaluate_rec_per_tag_reports_each_font(tmp_path):
    """evaluate_rec(tags=...) over a tagged dataset: a fake model that always reads '天地' scores on the
    lines whose label is '天地', per font."""
    import paddle

    from paddle_recipes.tasks.ocr_rec.evaluate import evaluate_rec

    charset = CharDict(list("天地人"))
    ds = RecDataset(_label_dir(tmp_path, ["天地", "人", "天地", "地"]), charset, (3, 32, 64), max_text_length=4)
    ds.attach_tags(["f1", "f1", "f2", "f2"])

    class ReadsTianDi(paddle.nn.Layer):
        def forward(self, x):
            logits = np.full((x.shape[0], 4, charset.num_classes), -5.0, np.float32)
            for t, c in enumerate([1, 0, 2, 0]):  # 天 _ 地 _
                logits[:, t, c] = 5.0
            return paddle.to_tensor(logits)

    loader = [collate([ds[0], ds[1]]), collate([ds[2], ds[3]])]
    for b in loader:
        b["image"] = paddle.to_tensor(b["image"])
    r = PerTagRecMetric.from_state(evaluate_rec(ReadsTianDi(), loader, charset, tags=["f1", "f2", "f3"]))
    assert r["acc"] == 0.5 and r["per_tag"]["f1"]["acc"] == 0.5 and r["per_tag"]["f2"]["n"] == 2
    assert "f3" not in r["per_tag"] and r["mean_tag_acc"] == 0.5
    del loader[0]["tag"]
    with pytest.raises(ValueError, match="attach_tags"):
        evaluate_rec(ReadsTianDi(), loader, charset, tags=["f1", "f2"])


def test_missing_font_files_fall_back_to_the_installed_ones(tmp_path, monkeypatch, caplog):
    """A wheel install has no datasets/fonts/: train lines use the Noto PyPI faces (warned), and the
    held-out-font split is dropped with a warning instead of failing."""
    from paddle_recipes.tasks.ocr_rec import fonts as fonts_mod, synth

    monkeypatch.setattr(fonts_mod, "FONTS_DIR", tmp_path / "no_fonts")
    monkeypatch.setattr(synth, "_WARNED_MISSING", set())
    cfg = synth.SyntheticSetConfig(num_train=3, num_val=2, num_heldout=4, min_len=2, max_len=4, height=32)
    with caplog.at_level("WARNING", logger="paddle_recipes.tasks.ocr_rec.synth"):
        assert cfg.splits() == {"train": 3, "val": 2}
        samples = generate_samples(cfg, MIX_CHARS, "train", 6, return_fonts=True)
    assert {f for _, _, f in samples} <= {"noto_sans_sc", "noto_sans_mono_sc"}
    assert "no eval font file is installed" in caplog.text and "not installed, rendering with the 2 found" in caplog.text
    with pytest.raises(FontError, match="no eval font file is installed"):
        synth.selected_fonts(cfg, "eval")
    monkeypatch.setattr(fonts_mod, "FONTS_DIR", REPO / "datasets" / "fonts")  # the checkout: every font, heldout kept
    assert synth.SyntheticSetConfig(num_heldout=4).splits()["heldout"] == 4
