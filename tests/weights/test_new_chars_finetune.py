"""Added characters are learned (issue 50 item 3): the released PP-OCRv4 rec loaded by the recipe with
Global.character_dict_path = ppocr_keys_v1 + 3 new characters and Global.pretrained_dict = ppocr_keys_v1 reads every
known class exactly as the released model does and never a new one; a short CTC fine-tune on lines holding the new
characters (the class layer alone, on the released features: fast) makes it read them. The benchmark (benchmarks/finetune_forgetting.py --domain new_chars) measures the same
at scale."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import pytest

from paddle_recipes.config import load_config
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.runtime.distributed import DistInfo
from paddle_recipes.tasks.ocr_rec.synth import LineRenderer, SynthConfig
from paddle_recipes.tasks.ocr_rec.transforms import resize_norm_pad
from test_ppocr_import import KEYS, REC_DIR, REC_YAML, needs_official

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: benchmarks/
from benchmarks.harness.new_chars import check_new_chars, write_extended_dict  # noqa: E402

NEW = ["㎜", "赟", "∴"]  # a unit sign, a rare hanzi, a symbol: none in ppocr_keys_v1
TEXTS = ["长12㎜", "王赟", "∴A成立", "宽8㎜", "赟的书", "∴3"]
STEPS, LR = 40, 1e-2  # Adam on the class layer alone: the released features stay as they are


def recipe_model(dict_file: Path, *extra: str):
    """The v4 rec network our recipe builds for `dict_file`, with the released weights loaded as init weights (train
    mode's Global.pretrained_model path), in eval mode (BN frozen) returning CTC logits."""
    cfg = load_config(str(REC_YAML), [f"Global.character_dict_path={dict_file}", "Global.use_gpu=false", *extra],
                      OcrRec.Config, translators=OcrRec.config_translators)
    recipe = OcrRec(cfg, DistInfo())
    paddle.seed(0)
    model = recipe.build_model()
    recipe.load_pretrained(model, str(REC_DIR))
    model.eval()
    model.set_eval_output("logits")
    return model, recipe.charset.chars


def lines(chars):
    renderer = LineRenderer(SynthConfig(aug=False, fonts=("noto_sans_sc",)), list(chars) + NEW, "train")
    rng = np.random.default_rng(0)
    imgs = [resize_norm_pad(renderer.render(t, rng, 0)[..., ::-1], (3, 48, 160))[0] for t in TEXTS]
    return paddle.to_tensor(np.stack(imgs).astype("float32"))


def greedy(logits: np.ndarray, chars) -> list:
    out = []
    for path in logits.argmax(-1):
        keep = [int(p) for i, p in enumerate(path) if p and (i == 0 or p != path[i - 1])]
        out.append("".join(chars[p - 1] for p in keep))
    return out


@needs_official
def test_new_characters_start_unread_and_a_short_finetune_learns_them(tmp_path):
    ext = write_extended_dict(KEYS, check_new_chars(NEW, KEYS), tmp_path / "dict_ext.txt")
    released, known_chars = recipe_model(KEYS)
    model, chars = recipe_model(ext, f"Global.pretrained_dict={KEYS}")
    assert set(chars) == set(known_chars) | set(NEW)  # use_space_char: " " stays the last row of both
    x = lines(known_chars)
    with paddle.no_grad():
        before_rel, before = released(x).numpy(), model(x).numpy()
    known_cols = [0] + [chars.index(c) + 1 for c in known_chars]  # blank + the released characters, in their order
    np.testing.assert_allclose(before[..., known_cols], before_rel, rtol=0, atol=1e-4 * np.abs(before_rel).max())
    new_cols = [chars.index(c) + 1 for c in NEW]
    assert (before[..., new_cols].max(-1) < before[..., known_cols].max(-1)).all()  # never read before training
    assert greedy(before, chars) == greedy(before_rel, known_chars)

    # a short CTC fine-tune of the class layer (the rows the remap wrote) on the released features of the lines
    layer = getattr(model.ctc_head, model.ctc_head.class_layer)
    feats = []
    hook = layer.register_forward_pre_hook(lambda _, inputs: feats.append(inputs[0].detach()))
    with paddle.no_grad():
        model(x)
    hook.remove()
    labels = paddle.to_tensor([[chars.index(c) + 1 for c in t] + [0] * (8 - len(t)) for t in TEXTS], dtype="int32")
    label_len = paddle.to_tensor([len(t) for t in TEXTS], dtype="int64")
    frames = paddle.full([len(TEXTS)], feats[0].shape[1], "int64")
    opt = paddle.optimizer.Adam(learning_rate=LR, parameters=layer.parameters())
    for _ in range(STEPS):
        loss = paddle.nn.functional.ctc_loss(layer(feats[0]).transpose([1, 0, 2]), labels, frames, label_len,
                                             blank=0, reduction="mean")
        loss.backward()
        opt.step()
        opt.clear_grad()
    with paddle.no_grad():
        after = model(x).numpy()
    def best_log_prob(out):  # per new character: its highest log-probability over every frame of every line
        out = out - out.max(-1, keepdims=True)
        return (out - np.log(np.exp(out).sum(-1, keepdims=True)))[..., new_cols].max(axis=(0, 1))

    rise = best_log_prob(after) - best_log_prob(before)
    assert (rise > 5.0).all(), rise  # learned: every new character became far likelier
    read = greedy(after, chars)
    for c in NEW:  # and the model reads each one on its lines only
        assert all((c in r) == (c in t) for r, t in zip(read, TEXTS)), (c, read)


@needs_official
def test_new_characters_must_be_new_and_drawable():
    from benchmarks.harness.new_chars import NEW_CHARS

    assert len(check_new_chars(NEW_CHARS, KEYS)) == 20
    with pytest.raises(ValueError, match=r"already in ppocr_keys_v1.txt: 中; no train font draws: 😀"):
        check_new_chars(["㎜", "中", "😀"], KEYS)


def test_new_character_scores_count_lines_and_occurrences():
    from benchmarks.harness.new_chars import new_char_scores

    truth = {"a": "12㎜长", "b": "王赟赟", "c": "没有"}
    got = new_char_scores(truth, {"a": "12㎜长", "b": "王赟", "c": "没"}, ["㎜", "赟"])
    assert got["new_lines"] == 2 and got["new_exact"] == 0.5  # line c has no new character: not counted
    assert got["per_char"]["㎜"] == {"lines": 1, "exact": 1.0, "recall": 1.0}
    assert got["per_char"]["赟"] == {"lines": 1, "exact": 0.0, "recall": 0.5}


@needs_official
def test_lookalike_lines_hold_no_new_character_and_only_known_ones(tmp_path):
    from benchmarks.harness.new_chars import LOOKALIKES, NEW_CHARS, make_new_char_split
    from benchmarks.harness.real_crops import read_label_file

    known = set(KEYS.read_text(encoding="utf-8").splitlines()) | {" "}
    assert set(LOOKALIKES) == set(NEW_CHARS) and not set("".join(sum(LOOKALIKES.values(), ()))) - known
    lines = read_label_file(make_new_char_split(tmp_path / "la", KEYS, NEW_CHARS, 12, 5, lookalike=True))
    texts = [t for _, t in lines]
    assert len(texts) == 12 and all(p.is_file() for p, _ in lines)
    assert not set("".join(texts)) - known, texts  # no new character, nothing outside the released dict
    alikes = {a for v in LOOKALIKES.values() for a in v}
    assert sum(any(a in t for a in alikes) for t in texts) >= 6, texts  # the tokens are there


class _Enc(paddle.nn.Layer):
    def forward(self, x):  # [N, C, 1, T] -> [N, T, C]
        return x.squeeze(2).transpose([0, 2, 1])


class _Head(paddle.nn.Layer):
    def __init__(self, classes):
        super().__init__()
        from paddle_recipes.tasks.ocr_rec.ppocr_heads import CTCHead

        self.ctc_encoder, self.ctc_head = _Enc(), CTCHead(8, classes)

    def forward(self, x):
        return self.ctc_head(self.ctc_encoder(x))


class _Model(paddle.nn.Layer):
    """What fit_new_rows needs of a rec model: .head (ctc_encoder, ctc_head), .ctc_head, set_eval_output."""

    def __init__(self, classes):
        super().__init__()
        self.head = _Head(classes)

    @property
    def ctc_head(self):
        return self.head.ctc_head

    def set_eval_output(self, kind):
        self.head.ctc_head.return_logits = kind == "logits"


def test_fit_new_rows_loss_is_the_full_ctc_and_only_new_columns_change():
    """The rows stage's CTC on a reduced vocabulary equals the full-vocabulary CTC (lr 0: the first loss), and a fit
    with negatives changes the new columns only."""
    from benchmarks.harness.new_chars import fit_new_rows

    paddle.seed(3)
    chars = list("abcdefghij") + ["㎜", "赟"]
    model = _Model(len(chars) + 1)
    lines = [(None, t) for t in ["ab㎜", "a赟b", "㎜㎜a", "bab", "赟ab"]]  # c..j: the "rest" column
    feats = paddle.randn([8, 8, 1, 12]) * 2  # 5 lines, then 3 negatives
    layer = model.ctc_head.fc
    w0, b0 = layer.weight.numpy().copy(), layer.bias.numpy().copy()
    with paddle.no_grad():
        logits = layer(model.head.ctc_encoder(feats[:5]))
    labels = paddle.to_tensor([[chars.index(c) + 1 for c in t] + [0] * (3 - len(t)) for _, t in lines], dtype="int32")
    full = paddle.nn.functional.ctc_loss(logits.transpose([1, 0, 2]), labels, paddle.full([5], 12, "int64"),
                                         paddle.to_tensor([3] * 5, dtype="int64"), blank=0, reduction="mean")
    rec = fit_new_rows(model, chars, ["㎜", "赟"], lines, steps=1, lr=0.0, batch=5, feats=feats[:5])
    assert abs(rec["rows"]["loss_first"] - float(full)) < 1e-3 * max(1.0, float(full)), (rec, float(full))
    rec = fit_new_rows(model, chars, ["㎜", "赟"], lines, steps=20, lr=0.1, batch=5, feats=feats,
                       negatives=[(None, "")] * 3)
    w, b = layer.weight.numpy(), layer.bias.numpy()
    np.testing.assert_array_equal(w[:, :11], w0[:, :11])
    np.testing.assert_array_equal(b[:11], b0[:11])
    assert np.abs(w[:, 11:] - w0[:, 11:]).max() > 1e-3 and rec["rows"]["loss_last"] < rec["rows"]["loss_first"]
