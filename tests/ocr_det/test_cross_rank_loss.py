"""Cross-rank DB loss (tasks/ocr_det/cross_rank_loss.py, Loss.cross_rank): the global top-k, one process against
DBLoss, and real 2-rank GLOO runs: the loss alone and one SGD step of the DB det network (with the cross-rank BN),
2 processes x batch 2 == 1 process x batch 4, judged against the same step in float64."""
from __future__ import annotations

import json
import logging

import numpy as np
import paddle
import pytest

from conftest import REPO_ROOT, run_1_and_2_ranks, worst_by_kind
from paddle_recipes.config import ConfigError, from_dict
from paddle_recipes.tasks.ocr_det.config import DetConfig
from paddle_recipes.tasks.ocr_det.cross_rank_loss import CrossRankDBLoss, build_db_loss, top_k_weights
from paddle_recipes.tasks.ocr_det.losses import DBLoss

SCRIPT = REPO_ROOT / "tests" / "scripts" / "db_loss_equiv.py"
CASES = {"DiceLoss": {}, "BCELoss": {"main_loss_type": "BCELoss"},
         "DiceFocalLoss": {"main_loss_type": "DiceFocalLoss", "aux_weight_p4": 0.5}}


def _exact_top_k(v, k):
    """The reference: sorted sum of the k largest, and the tie-share weights built from the sorted values."""
    t = np.sort(v.astype(np.float64))[::-1][k - 1]
    above, equal = (v > t).sum(), (v == t).sum()
    return np.where(v > t, 1.0, np.where(v == t, (k - above) / equal, 0.0))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_top_k_weights_one_process(dtype):
    rng = np.random.RandomState(0)
    for v in (rng.rand(2000), np.round(rng.rand(2000), 2), rng.rand(2000) * 1e-30, np.zeros(50)):
        v = v.astype(dtype)
        v[::13] = 0.0
        for k in (1, 2, 17, min(500, v.size - 2), v.size - 1, v.size):
            w = top_k_weights(v, k)
            assert np.allclose(w, _exact_top_k(v, k), rtol=0, atol=1e-12)
            assert abs(w.sum() - k) < 1e-9
    assert np.array_equal(top_k_weights(np.array([-0.0, 1.0], "float32"), 1), [0.0, 1.0])  # -0.0 is 0
    with pytest.raises(ValueError, match="more than"):
        top_k_weights(np.ones(3, "float32"), 4)
    with pytest.raises(ValueError, match="non-negative"):
        top_k_weights(np.array([0.5, -1.0], "float32"), 1)


def _inputs(case, batch=4, size=32, seed=0):
    rng = np.random.RandomState(seed)
    keys = ["maps"] + {"BCELoss": ["cbn_maps"], "DiceFocalLoss": ["aux_maps_p4"]}.get(case, [])
    maps = {k: (0.01 + 0.98 * rng.rand(batch, 3, size, size)).astype("float64") for k in keys}
    s_map = (rng.rand(batch, size, size) > 0.85).astype("float64")
    s_mask = (rng.rand(batch, size, size) > 0.1).astype("float64")
    labels = [rng.rand(batch, size, size) * 0.4 + 0.3, (rng.rand(batch, size, size) > 0.5) * 1.0, s_map, s_mask]
    return maps, labels


def _run(fn, maps, labels, order=None):
    order = np.arange(len(labels[0])) if order is None else order
    preds = {k: paddle.to_tensor(v[order], stop_gradient=False) for k, v in maps.items()}
    out = fn(preds, [None] + [paddle.to_tensor(a[order]) for a in labels])
    out["loss"].backward()
    return {k: float(v) for k, v in out.items()}, {k: p.grad.numpy()[np.argsort(order)] for k, p in preds.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_one_process_equals_dbloss_and_ignores_sample_order(case):
    """group=False (this rank alone): the same values and gradients as DBLoss (float64); a permuted batch gives the
    same loss and the same per-sample gradients (the tie rule depends on no order)."""
    maps, labels = _inputs(case)
    want, want_g = _run(DBLoss(**CASES[case]), maps, labels)
    got, got_g = _run(CrossRankDBLoss(**CASES[case], group=False), maps, labels)
    perm, perm_g = _run(CrossRankDBLoss(**CASES[case], group=False), maps, labels, order=np.array([2, 0, 3, 1]))
    for k in want:
        assert abs(got[k] - want[k]) <= 1e-12 * max(1, abs(want[k])) and abs(perm[k] - want[k]) <= 1e-12, k
    for k in want_g:
        assert np.allclose(got_g[k], want_g[k], rtol=1e-10, atol=1e-14), k
        assert np.allclose(perm_g[k], want_g[k], rtol=1e-10, atol=1e-14), k


def test_ties_share_the_gradient():
    """BCE OHEM where every negative pixel has the same loss: k of them are kept; DBLoss's topk gives k pixels the
    whole gradient, the cross-rank loss gives every tied pixel k / #tied of it; the loss is the same."""
    maps, labels = _inputs("BCELoss")
    del maps["cbn_maps"]
    maps["maps"][:] = 0.3
    labels[3][:] = 1.0  # no ignored pixel: #negatives > 3 x #positives, so k < #tied
    want, want_g = _run(DBLoss(main_loss_type="BCELoss"), maps, labels)
    got, got_g = _run(CrossRankDBLoss(main_loss_type="BCELoss", group=False), maps, labels)
    assert abs(got["loss"] - want["loss"]) < 1e-12
    neg = (labels[2] == 0)
    g = got_g["maps"][:, 0][neg]
    assert np.allclose(g, g[0]) and g[0] != 0  # one share for every tied negative
    assert not np.allclose(want_g["maps"][:, 0][neg], g[0])  # paddle.topk: some get all, the others nothing
    assert np.isclose(want_g["maps"][:, 0][neg].sum(), g.sum())


def test_config_key_and_builder(caplog):
    """Loss.cross_rank (null = as Global.use_sync_bn) picks the loss; one process always gets DBLoss."""
    cfg = from_dict(DetConfig, {})
    assert cfg.Loss.cross_rank is None and "cross_rank" not in cfg.Loss.kwargs()
    assert type(build_db_loss(cfg.Loss, False, 2)) is DBLoss
    with caplog.at_level(logging.INFO):
        assert isinstance(build_db_loss(cfg.Loss, True, 2, log=True), CrossRankDBLoss)
    assert "global batch of 2 processes" in caplog.text
    assert type(build_db_loss(cfg.Loss, True, 1)) is DBLoss
    off = from_dict(DetConfig, {"Loss": {"cross_rank": False, "main_loss_type": "BCELoss"}}).Loss
    assert type(build_db_loss(off, True, 2)) is DBLoss
    on = from_dict(DetConfig, {"Loss": {"cross_rank": True}}).Loss
    assert isinstance(build_db_loss(on, False, 2), CrossRankDBLoss)
    with pytest.raises(ConfigError, match="cross_rank"):
        from_dict(DetConfig, {"Loss": {"cross_rnk": True}})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_1_and_2_ranks(SCRIPT, tmp_path_factory.mktemp("db_loss"))


def test_top_k_across_ranks(runs):
    """The distributed k-th value: ties straddling the two ranks, an uneven split and an empty rank; the weights
    of the two ranks together are the 1-process weights of the whole array."""
    one = np.load(runs / "p1" / "ties_rank0.npz")
    r0, r1 = np.load(runs / "p2" / "ties_rank0.npz"), np.load(runs / "p2" / "ties_rank1.npz")
    v = one["values"]
    for key in one.files:
        if key == "values":
            continue
        k = int(key.rsplit("/", 1)[1])
        both = np.concatenate([r0[key], r1[key]])
        assert np.array_equal(both, one[key]) and np.allclose(both, _exact_top_k(v, k), atol=1e-12), key
    assert r1["empty/31"].size == 0


@pytest.mark.parametrize("case", ["DiceLoss", "BCELoss", "DiceFocalLoss_aux"])
def test_loss_alone_two_ranks_is_the_global_loss(runs, case):
    """On fixed maps: every rank's loss is DBLoss of the whole batch (float64 reference), and each rank's gradient
    is world_size x the global loss's gradient at its own pixels (DataParallel's mean divides it back)."""
    one = np.load(runs / "p1" / "loss_alone_rank0.npz")
    ranks = [np.load(runs / "p2" / f"loss_alone_rank{r}.npz") for r in (0, 1)]
    inputs = {k.split("/")[-1]: one[k].astype("float64") for k in one.files if k.startswith(f"{case}/input/")}
    labels = [one[f"labels/{i}"].astype("float64") for i in range(4)]
    kw = CASES["DiceFocalLoss" if case.startswith("DiceFocal") else case]
    want, want_g = _run(DBLoss(**kw), inputs, labels)
    for r in ranks:
        for k, v in want.items():
            assert abs(float(r[f"{case}/{k}"]) - v) <= 2e-6 * max(1.0, abs(v)), (case, k)
    for k, g in want_g.items():
        got = np.concatenate([r[f"{case}/grad/{k}"] for r in ranks]) / 2
        assert np.abs(got - g).max() <= 1e-5 * np.abs(g).max(), (case, k)


@pytest.mark.parametrize("loss", ["DiceLoss", "BCELoss"])
def test_two_ranks_equal_one_rank_with_double_batch(runs, loss):
    """One SGD step of the DB det network, cross-rank BN in both 2-process variants: with the cross-rank loss,
    2 x 2 is as close to the float64 step of 1 x 4 as 1 x 4 in float32 is (within 10 x; the det network's BN of
    near-zero variance amplifies any float32 rounding of one conv's gradient); with the per-rank loss it is far."""
    one, two = runs / "p1", runs / "p2"
    exact = np.load(one / f"{loss}_float64_rank0.npz")
    rounding = worst_by_kind(exact, np.load(one / f"{loss}_plain_rank0.npz"))
    xr = worst_by_kind(exact, np.load(two / f"{loss}_xr_rank0.npz"))
    assert all(xr[k] <= 10 * rounding[k] + 1e-6 for k in xr), (xr, rounding)
    assert max(xr.values()) <= 1e-2, xr
    plain = worst_by_kind(exact, np.load(two / f"{loss}_plain_rank0.npz"))
    assert plain["grad"] > 0.1 and plain["state"] > 1e-2, plain  # the check can fail
    r0, r1 = np.load(two / f"{loss}_xr_rank0.npz"), np.load(two / f"{loss}_xr_rank1.npz")
    assert float(r0["loss"]) == float(r1["loss"])
    assert all(np.array_equal(r0[k], r1[k]) for k in r0.files if k.startswith("state/"))
    info = json.loads((two / f"{loss}_xr_rank0.json").read_text())
    assert info["loss_all_reduce"] == 7  # shrink: 1 + 3 radix rounds + 1; threshold L1: 1; binary dice: 1
