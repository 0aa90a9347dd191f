"""Faster rec data / eval paths give the very output of the code they replace (issue 55)."""
from __future__ import annotations

import numpy as np
import pytest

from paddle_recipes.tasks.ocr_rec.augment import build_augment, reseed


def _lines(n=6, seed=0):
    rs = np.random.RandomState(seed)
    return [rs.randint(0, 256, (rs.randint(20, 60), rs.randint(40, 400), 3), dtype=np.uint8) for _ in range(n)]


@pytest.mark.parametrize("glyph", [False, True])
def test_reseed_gives_set_random_seeds_draws(glyph):
    """reseed(aug, s) then aug(...) == set_random_seed(s) then aug(...), sample after sample (fails if the nodes
    shared one generator, or if a node were left unseeded)."""
    old, new = build_augment(glyph), build_augment(glyph)
    imgs, rs = _lines(), np.random.RandomState(1)
    for k in range(40):
        s, img = int(rs.randint(2**31 - 1)), imgs[k % len(imgs)]
        old.set_random_seed(s)
        reseed(new, s)
        a, b = old(image=img)["image"], new(image=img)["image"]
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), k
    assert new._reseed_nodes is not None and len(new._reseed_nodes) == (8 if glyph else 7)


def test_reseed_falls_back_when_nodes_share_generators():
    aug = build_augment()
    aug.set_random_state(np.random.default_rng(0), __import__("random").Random(0))  # shared generators
    aug.__dict__.pop("_reseed_nodes", None)
    reseed(aug, 5)  # seeds them apart again (albumentations' own set_random_seed)
    ref = build_augment()
    ref.set_random_seed(5)
    img = _lines(1)[0]
    assert aug(image=img)["image"].tobytes() == ref(image=img)["image"].tobytes()


def _edit_distance_before(a, b) -> int:
    """metrics.edit_distance as it was before the prefix / suffix trim (the reference)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[-1]


def test_edit_distance_equals_the_full_table():
    from paddle_recipes.tasks.ocr_rec.metrics import edit_distance

    rs = np.random.RandomState(0)
    alphabet = list("abc 中文")
    pairs = [("", ""), ("", "ab"), ("abc", ""), ("abc", "abc"), ("abcab", "ab"), ("aab", "ab"), ("aba", "aa")]
    for _ in range(3000):
        a = "".join(rs.choice(alphabet, rs.randint(0, 9)))
        b = list(a) if rs.rand() < 0.5 else list(rs.choice(alphabet, rs.randint(0, 9)))
        for _ in range(rs.randint(0, 3)):  # a few edits of a
            if b and rs.rand() < 0.5:
                b[rs.randint(len(b))] = rs.choice(alphabet)
            else:
                b.insert(rs.randint(len(b) + 1), rs.choice(alphabet))
        pairs.append((a, "".join(b)))
    for a, b in pairs:
        assert edit_distance(a, b) == _edit_distance_before(a, b) == edit_distance(b, a), (a, b)


def _ctc_decode_before(probs, charset, is_logits=True, with_confidence=True):
    """postprocess.ctc_greedy_decode as it was before (max as a second pass, one sample at a time): the reference."""
    from paddle_recipes.tasks.ocr_rec.charset import BLANK
    from paddle_recipes.tasks.ocr_rec.postprocess import softmax_np

    probs = np.asarray(probs, dtype=np.float32)
    if probs.ndim == 2:
        probs = probs[None]
    if is_logits and with_confidence:
        probs = softmax_np(probs)
    ids, best, out = probs.argmax(axis=-1), probs.max(axis=-1), []
    for seq, p in zip(ids, best):
        keep = np.ones(len(seq), dtype=bool)
        keep[1:] = seq[1:] != seq[:-1]
        keep &= seq != BLANK
        text = charset.decode_ids(seq[keep].tolist())
        out.append((text, float(p[keep].mean()) if keep.any() and with_confidence else 0.0))
    return out


def test_ctc_decode_equals_the_previous_decode():
    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.postprocess import ctc_greedy_decode

    charset = CharDict(list("abcdefg 中文字"))
    rs = np.random.RandomState(0)
    c = charset.num_classes
    for trial in range(30):
        x = rs.randn(rs.randint(1, 6), rs.randint(1, 30), c).astype(np.float32) * 3
        x[:, ::3, 0] += 4 * (trial % 2)  # blanks
        if x.shape[1] > 2:
            x[:, 1] = x[:, 2]  # repeats
        x[0, 0, :] = 0.0  # a tie: the first index wins on both
        for is_logits in (True, False):
            for conf in (True, False):
                got = ctc_greedy_decode(x, charset, is_logits, conf)
                assert got == _ctc_decode_before(x, charset, is_logits, conf)
    assert ctc_greedy_decode(x[0], charset) == _ctc_decode_before(x[0], charset)  # 2-D input


def test_host_float32_is_a_read_only_view_with_numpys_values():
    import paddle

    from paddle_recipes.runtime.host import host_float32

    x = paddle.to_tensor(np.random.RandomState(0).rand(2, 3, 5).astype(np.float32))
    v = host_float32(x)
    assert v.dtype == np.float32 and np.array_equal(v, x.numpy()) and not v.flags.writeable
    with pytest.raises(ValueError):
        v[0, 0, 0] = 1.0
    h = host_float32(x.astype("float16"))  # other dtypes: a float32 copy
    assert h.dtype == np.float32 and np.allclose(h, x.numpy(), atol=1e-3)
    assert host_float32(np.ones(3, np.float64)).dtype == np.float32
