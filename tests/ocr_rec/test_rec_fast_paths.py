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
