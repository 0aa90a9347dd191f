"""OCR recognition task package: charset, transforms, models, CTC loss, decode, metrics, synth, dataset."""
from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import sys
from pathlib import Path

import numpy as np
import paddle
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from paddle_recipes.data import LmdbDataset, build_loader, LoaderConfig, write_lmdb  # noqa: E402
from paddle_recipes.tasks.ocr_rec.charset import (BLANK, CharDict, CharDictError, common_chars, gb2312_level1_hanzi,
                                                  spread_subset)  # noqa: E402
from paddle_recipes.data.skips import SkipStats, unpack_skipped  # noqa: E402
from paddle_recipes.tasks.ocr_rec.dataset import DataPathError, DatasetConfig, RecDataset, collate  # noqa: E402
from paddle_recipes.tasks.ocr_rec.losses import CTCLoss  # noqa: E402
from paddle_recipes.tasks.ocr_rec.metrics import RecMetric, edit_distance  # noqa: E402
from paddle_recipes.config import ConfigError, UnknownNameError, from_dict  # noqa: E402
from paddle_recipes.tasks.ocr_rec.config import RecConfig  # noqa: E402
from paddle_recipes.tasks.ocr_rec.models import (ArchitectureConfig, BackboneConfig, HeadConfig, Im2Seq,  # noqa: E402
                                                  NeckConfig, build_rec_model)
from paddle_recipes.nn import catalog  # noqa: E402
from paddle_recipes.tasks.ocr_rec.postprocess import ctc_greedy_decode  # noqa: E402
from paddle_recipes.tasks.ocr_rec.synth import SynthConfig, generate_samples, write_split  # noqa: E402
from paddle_recipes.tasks.ocr_rec.transforms import decode_image, resize_norm_pad  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TINY_CHARS = list("天地人你我他中国上下左右大小山水12")
NOTO = ("noto_sans_sc", "noto_sans_mono_sc")


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def tiny_samples():
    """30 rendered lines (height 32) from an 18-char dict, shared by the tests of this module
    (clean rendering in the two Noto Sans faces: dark text on a flat background)."""
    cfg = SynthConfig(min_len=2, max_len=4, height=32, seed=3, aug=False, fonts=NOTO)
    return generate_samples(cfg, TINY_CHARS, "train", 30, workers=1)


@pytest.fixture
def charset(tmp_path):
    p = tmp_path / "dict.txt"
    p.write_text("\n".join(TINY_CHARS) + "\n", encoding="utf-8")
    return CharDict.from_file(p)


def _bad_label_dir(tmp_path, samples):
    """A label-file dataset with 4 good lines and one line of each bad-input kind."""
    d = tmp_path / "data"
    write_split(d, samples[:4], fmt="label_file")
    (d / "images" / "corrupt.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    (d / "images" / "ok_too_long.jpg").write_bytes(samples[4][0])
    (d / "images" / "ok_unknown.jpg").write_bytes(samples[5][0])
    (d / "images" / "ok_empty.jpg").write_bytes(samples[6][0])
    lines = (d / "label.txt").read_text(encoding="utf-8").splitlines()
    lines += ["images/corrupt.jpg\t天地",          # line 5: corrupt image (found at load time)
              "images/missing.jpg\t天地",          # line 6: missing image
              "images/ok_unknown.jpg\t天X地",      # line 7: unknown char X
              "images/ok_empty.jpg\t",             # line 8: empty label
              "images/ok_too_long.jpg\t天地人你我他中国上"]  # line 9: 9 chars > max_text_length 6
    (d / "label.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d


# ----------------------------------------------------------------------------- charset
def test_charset_blank_zero_and_encode(charset):
    assert BLANK == 0
    assert charset.num_classes == len(TINY_CHARS) + 1
    assert charset.encode("天地") == [1, 2]
    assert charset.decode_ids([1, 0, 2]) == "天地"
    with pytest.raises(KeyError, match="X"):
        charset.encode("天X")
    assert charset.check("天X", 5).reason == "unknown_char"
    assert charset.check("", 5).reason == "empty"
    assert charset.check("天地人", 2).reason == "too_long"
    assert charset.check("天地", 2).ids == [1, 2]


def test_charset_file_errors(tmp_path):
    with pytest.raises(CharDictError, match="not found"):
        CharDict.from_file(tmp_path / "nope.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("天\n地地\n", encoding="utf-8")
    with pytest.raises(CharDictError, match=r"bad.txt:2"):
        CharDict.from_file(bad)
    dup = tmp_path / "dup.txt"
    dup.write_text("天\n地\n天\n", encoding="utf-8")
    with pytest.raises(CharDictError, match="twice"):
        CharDict.from_file(dup)
    sp = tmp_path / "sp.txt"
    sp.write_text("天\r\n地\r\n", encoding="utf-8")
    cd = CharDict.from_file(sp, use_space_char=True)
    assert cd.chars == ["天", "地", " "] and cd.encode("天 地") == [1, 3, 2]


def test_shipped_common_dict_is_gb2312_level1():
    level1 = gb2312_level1_hanzi()
    assert len(level1) == 3755 and len(set(level1)) == 3755
    assert level1[0] == "啊" and level1[-1] == "座"
    shipped = CharDict.from_file(REPO / "datasets/ocr_rec/ch_common_3000.txt")
    assert shipped.chars == common_chars(3000)
    assert shipped.chars[:3000] == level1[:3000]
    small = CharDict.from_file(REPO / "datasets/ocr_rec/ch_hanzi_500.txt")
    assert small.chars == spread_subset(level1, 500) and len(set(small.chars)) == 500


# ----------------------------------------------------------------------------- decode / metrics
def test_greedy_ctc_decode_collapses_repeats_and_blanks(charset):
    # steps: 天 天 blank 天 地 blank -> "天天地"
    ids = [1, 1, 0, 1, 2, 0]
    probs = np.full((1, len(ids), charset.num_classes), 0.01, np.float32)
    for t, i in enumerate(ids):
        probs[0, t, i] = 0.9 if t != 3 else 0.6
    (text, conf), = ctc_greedy_decode(probs, charset, is_logits=False)
    assert text == "天天地"
    # kept steps: t=0 (0.9), t=3 (0.6), t=4 (0.9)
    assert conf == pytest.approx((0.9 + 0.6 + 0.9) / 3, rel=1e-6)
    blank_only = np.zeros((1, 4, charset.num_classes), np.float32)
    blank_only[..., 0] = 5.0
    assert ctc_greedy_decode(blank_only, charset) == [("", 0.0)]
    logits = np.log(probs)
    assert ctc_greedy_decode(logits, charset, with_confidence=False) == [("天天地", 0.0)]


def test_edit_distance_known_values():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("", "abc") == 3
    assert edit_distance("中国人", "中国") == 1
    assert edit_distance("flaw", "lawn") == 2
    assert edit_distance("同样", "同样") == 0


def test_rec_metric_acc_and_norm_edit():
    m = RecMetric()
    m.update(["中国人", "天", ""], ["中国人", "地", "ab"])
    r = m.compute()
    assert r["acc"] == pytest.approx(1 / 3)
    # per-sample normalized ED: 0, 1/1, 2/2 -> mean 2/3
    assert r["norm_edit_dis"] == pytest.approx(1 - 2 / 3)
    assert RecMetric.from_state(m.state()) == r


# ----------------------------------------------------------------------------- transforms
@pytest.mark.parametrize("h,w", [(32, 100), (48, 1000), (10, 5)])
def test_resize_pad_shape(h, w):
    img = np.full((h, w, 3), 255, np.uint8)
    x, ratio = resize_norm_pad(img, (3, 48, 320))
    assert x.shape == (3, 48, 320) and x.dtype == np.float32
    used = min(320, math.ceil(48 * w / h))
    assert ratio == pytest.approx(used / 320)
    assert np.allclose(x[:, :, :used], 1.0)           # white -> +1 after normalization
    assert np.all(x[:, :, used:] == 0.0)              # right padding
    assert decode_image(b"garbage") is None


# ----------------------------------------------------------------------------- models / loss
@pytest.mark.parametrize("arch,ws,t", [
    ({"Backbone": {"name": "ResNet34vd", "scale": 0.125}, "Neck": {"name": "BiLSTM", "hidden_size": 16},
      "Head": {"name": "CTCHead"}}, 4, 80),
    ({"Backbone": {"name": "LCNetRec", "scale": 0.25}, "Neck": {"name": "Conv", "hidden_size": 16},
      "Head": {"name": "CTCHead", "mid_channels": 16}}, 4, 80),
    ({"Backbone": {"name": "LCNetRec", "scale": 0.25}, "Neck": {"name": "Im2Seq"}, "Head": {"name": "CTCHead"}}, 8, 40),
])
def test_model_forward_shapes(arch, ws, t):
    arch = {**arch, "Backbone": {**arch["Backbone"], "width_stride": ws}}
    model = build_rec_model(arch, num_classes=11)
    y = model(paddle.randn([2, 3, 48, 320]))
    assert list(y.shape) == [2, t, 11]


def test_conv_neck_context_groups():
    """0 = depthwise (the default), 1 = dense; the dense conv mixes channels, the depthwise one cannot."""
    from paddle_recipes.tasks.ocr_rec.models import ConvNeck

    depthwise, dense = ConvNeck(8, hidden_size=16), ConvNeck(8, hidden_size=16, context_groups=1)
    assert depthwise.context.weight.shape == [16, 1, 1, 5] and dense.context.weight.shape == [16, 16, 1, 5]
    x = paddle.zeros([1, 16, 1, 7])
    x[:, 3] = 1.0                                    # one channel lit
    # output channel 5 of the depthwise conv sees only (unlit) input channel 5: its bias everywhere
    np.testing.assert_array_equal(depthwise.context(x)[0, 5].numpy(), np.full([1, 7], float(depthwise.context.bias[5])))
    assert not np.allclose(dense.context(x)[0, 5].numpy(), float(dense.context.bias[5]))
    with pytest.raises(ConfigError, match=r"Architecture.Neck.context_groups: 5 must divide hidden_size 16"):
        ConvNeck(8, hidden_size=16, context_groups=5)
    arch = {"Backbone": {"name": "DenseConvRec", "scale": 0.25, "width_stride": 8},
            "Neck": {"name": "Conv", "hidden_size": 16, "context_groups": 4}, "Head": {"name": "CTCHead"}}
    assert build_rec_model(arch, 11).neck.context.weight.shape == [16, 4, 1, 5]


def test_build_rec_model_unknown_name():
    with pytest.raises(UnknownNameError, match=r"Architecture.Backbone.name: unknown name .ResNet9.; valid names: "
                                               r"DenseConvRec, LCNetRec, MobileNetV1Enhance, PPHGNetV2_B4, PPLCNetV3, "
                                               r"PPLCNetV4, ResNet, ResNet34vd \(did you mean .ResNet.\?\)"):
        build_rec_model({"Backbone": {"name": "ResNet9"}, "Neck": {"name": "Conv"}, "Head": {"name": "CTCHead"}}, 5)


def test_component_argument_it_does_not_take_is_an_error():
    """Im2Seq has no hidden_size: the key is rejected, not silently ignored."""
    arch = {"Backbone": {"name": "LCNetRec", "scale": 0.25}, "Neck": {"name": "Im2Seq", "hidden_size": 64},
            "Head": {"name": "CTCHead"}}
    with pytest.raises(ConfigError, match=r"Architecture.Neck: Im2Seq does not take \['hidden_size'\]"):
        build_rec_model(arch, 5)
    with pytest.raises(UnknownNameError, match=r"Architecture.algorithm: unknown name 'SAR'; valid names: CRNN, SVTR"):
        ArchitectureConfig(algorithm="SAR")
    with pytest.raises(ConfigError, match=r"Architecture.Backbone: PPLCNetV3 does not take \['layers'\] \(it takes "):
        ArchitectureConfig(Backbone={"name": "pplcnetv3", "layers": 34})  # checked when the config is read


def test_registered_component_becomes_a_valid_name(monkeypatch):
    """A neck registered in the catalogue next to its class is a valid Neck name of the config and the builder."""
    monkeypatch.setattr(catalog, "ENTRIES", list(catalog.ENTRIES))  # the registration ends with the test

    @catalog.register(catalog.NECK, "TestIdentity", catalog.REC, ours=True)
    class TestIdentity(Im2Seq):
        pass

    arch = {"Backbone": {"name": "LCNetRec", "scale": 0.25}, "Neck": {"name": "TestIdentity"}, "Head": {"name": "CTCHead"}}
    assert isinstance(build_rec_model(arch, 5).neck, TestIdentity)
    ArchitectureConfig(Backbone=BackboneConfig(name="LCNetRec"), Neck=NeckConfig(name="TestIdentity"))  # checked: ok


def test_typed_neck_and_head_hold_the_keys_their_catalogue_entries_take():
    """NeckConfig / HeadConfig are derived from the catalogue (not listed by hand): every key a rec neck / head takes
    is a typed field (PP-OCRv6's lightsvtr local_kernel, PaddleOCR CTCHead's use_guide, our BiLSTM's num_layers) and
    reaches the builder; an unknown key is one line with a suggestion."""
    arch = {"Backbone": {"name": "PPLCNetV3", "scale": 0.25},
            "Neck": {"name": "SequenceEncoder", "encoder_type": "lightsvtr", "dims": 16, "local_kernel": 5},
            "Head": {"name": "CTCHead", "use_guide": True}}
    cfg = from_dict(RecConfig, {"Architecture": arch})
    assert (cfg.Architecture.Neck.local_kernel, cfg.Architecture.Head.use_guide) == (5, True)
    net = build_rec_model(cfg.Architecture, 5)
    assert net.neck.encoder.local_conv[0].weight.shape[-1] == 5 and net.head.use_guide
    for kind, section in ((catalog.NECK, NeckConfig), (catalog.HEAD, HeadConfig)):
        fields = {f.name for f in dataclasses.fields(section)}
        for part in catalog.networks(catalog.REC, kind=kind):
            assert set(part.config_types()) <= fields, part.name
    for section, key, hint in (("Neck", "hiden_size", "hidden_size"), ("Head", "mid_chanels", "mid_channels")):
        with pytest.raises(ConfigError, match=rf"^unknown key 'Architecture\.{section}\.{key}'; did you mean '{hint}'\?$"):
            from_dict(RecConfig, {"Architecture": {section: {key: 1}}})


def _brute_force_ctc(logits: np.ndarray, label: list[int]) -> float:
    """-log sum over all alignments that collapse to `label` (tiny T and C only)."""
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(p.shape[1]), repeat=p.shape[0]):
        collapsed = [k for i, k in enumerate(path) if k != 0 and (i == 0 or path[i - 1] != k)]
        if collapsed == label:
            total += np.prod([p[t, k] for t, k in enumerate(path)])
    return -math.log(total)


def test_ctc_loss_matches_brute_force():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 4, 3)).astype(np.float32)  # B=2, T=4, C=3 (blank + 2 chars)
    labels = np.array([[1, 2], [2, 0]], np.int32)
    lengths = np.array([2, 1], np.int64)
    loss = CTCLoss()(paddle.to_tensor(logits), paddle.to_tensor(labels), paddle.to_tensor(lengths))
    expected = (_brute_force_ctc(logits[0], [1, 2]) + _brute_force_ctc(logits[1], [2])) / 2
    assert float(loss) == pytest.approx(expected, rel=1e-4)


def test_tiny_crnn_overfits_a_batch(tiny_samples, charset):
    """Loss must drop and greedy decoding must recover most labels of one fixed batch."""
    paddle.seed(0)
    batch = [(decode_image(b), t) for b, t in tiny_samples[:8]]
    x = paddle.to_tensor(np.stack([resize_norm_pad(im, (3, 32, 128))[0] for im, _ in batch]))
    labels = np.zeros((8, 4), np.int32)
    for i, (_, t) in enumerate(batch):
        labels[i, :len(t)] = charset.encode(t)
    lengths = paddle.to_tensor([len(t) for _, t in batch], dtype="int64")
    model = build_rec_model({"Backbone": {"name": "LCNetRec", "scale": 0.25}, "Neck": {"name": "Conv",
                             "hidden_size": 32}, "Head": {"name": "CTCHead"}}, charset.num_classes)
    opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
    loss_fn = CTCLoss()
    losses = []
    for _ in range(100):  # 60 sufficed before BGR input and multi-face, margin-varied lines
        loss = loss_fn(model(x), paddle.to_tensor(labels), lengths)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    assert np.isfinite(losses).all()
    assert losses[-1] < 0.3 * losses[0]
    preds = [p for p, _ in ctc_greedy_decode(model(x).numpy(), charset)]  # batch-stat BN, as trained
    assert sum(p == t for p, (_, t) in zip(preds, batch)) >= 6


# ----------------------------------------------------------------------------- synth
def test_synth_deterministic_and_in_dict(tiny_samples):
    cfg = SynthConfig(min_len=2, max_len=4, height=32, seed=3, aug=False, fonts=NOTO)
    again = generate_samples(cfg, TINY_CHARS, "train", 5, workers=1)
    assert again == tiny_samples[:5]  # same seed -> identical bytes and labels
    other = generate_samples(SynthConfig(min_len=2, max_len=4, height=32, seed=4), TINY_CHARS, "train", 5)
    assert [t for _, t in other] != [t for _, t in again]
    for data, text in tiny_samples:
        assert 2 <= len(text) <= 4 and set(text) <= set(TINY_CHARS)
        assert decode_image(data).shape[0] == 32


def test_synth_writes_both_formats(tmp_path, tiny_samples):
    out = write_split(tmp_path / "s", tiny_samples[:6], fmt="both")
    lines = (out / "label.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6
    path, label = lines[2].split("\t")
    assert (out / path).read_bytes() == tiny_samples[2][0] and label == tiny_samples[2][1]
    lm = LmdbDataset(out / "lmdb")
    assert len(lm) == 6 and lm[2] == tiny_samples[2]


# ----------------------------------------------------------------------------- dataset / bad input
def test_bad_inputs_counted_not_loaded(tmp_path, tiny_samples, charset, caplog):
    d = _bad_label_dir(tmp_path, tiny_samples)
    cfg = DatasetConfig("label_file", str(d), [str(d / "label.txt")])
    with caplog.at_level(logging.WARNING):
        ds = RecDataset(cfg, charset, (3, 32, 128), max_text_length=6, key="Train.dataset")
    c = ds.stats.counts()
    assert (c["missing_image"], c["unknown_char"], c["empty"], c["too_long"]) == (1, 1, 1, 1)
    assert len(ds) == 5  # 4 good + the corrupt one (detected only at load time)
    text = caplog.text
    for line in (6, 7, 8, 9):
        assert f"label.txt:{line}" in text
    # corrupt image: found at load time, dropped from the batch and reported
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=5), LoaderConfig(num_workers=0), collate_fn=collate)
    (batch,) = list(loader)
    assert batch["image"].shape[0] == 4
    assert unpack_skipped(batch) == [(f"{d / 'label.txt'}:5", "corrupt_image")]


def test_corrupt_image_reported_from_worker_with_replacement(tmp_path, tiny_samples, charset):
    d = _bad_label_dir(tmp_path, tiny_samples)
    ds = RecDataset(DatasetConfig("label_file", str(d), [str(d / "label.txt")]), charset, (3, 32, 128),
                    max_text_length=6, replace_bad=True)
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=5), LoaderConfig(num_workers=1), collate_fn=collate)
    stats = SkipStats("train")
    for batch in loader:
        stats.add_batch(unpack_skipped(batch))
        assert batch["image"].shape[0] == 5  # replaced, so the batch keeps its size
    assert stats.counts()["corrupt_image"] == 1 and "corrupt_image=1" in stats.summary()


def test_lmdb_bad_labels_and_corrupt_bytes(tmp_path, tiny_samples, charset):
    samples = list(tiny_samples[:3]) + [(b"\x00\x01broken", "天地"), (tiny_samples[3][0], "天X"), (tiny_samples[4][0], "")]
    write_lmdb(tmp_path / "lm", samples)
    ds = RecDataset(DatasetConfig("lmdb", str(tmp_path)), charset, (3, 32, 128), max_text_length=6)
    c = ds.stats.counts()
    assert (c["unknown_char"], c["empty"]) == (1, 1) and len(ds) == 4
    batch = collate([ds[i] for i in range(len(ds))])
    assert len(batch["text"]) == 3 and unpack_skipped(batch)[0][1] == "corrupt_image"


def test_wrong_paths_give_clear_errors(tmp_path, charset):
    with pytest.raises(DataPathError, match=r"Train.dataset.data_dir: data_dir '.*nowhere' does not exist"):
        RecDataset(DatasetConfig("label_file", str(tmp_path / "nowhere"), ["x.txt"]), charset, key="Train.dataset")
    with pytest.raises(DataPathError, match=r"Eval.dataset.label_file_list\[0\]"):
        RecDataset(DatasetConfig("label_file", str(tmp_path), [str(tmp_path / "nope.txt")]), charset, key="Eval.dataset")
    with pytest.raises(DataPathError, match="no LMDB"):
        RecDataset(DatasetConfig("lmdb", str(tmp_path)), charset, key="Train.dataset")
