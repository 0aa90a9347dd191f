"""Cross-rank BatchNorm (nn/sync_bn.py, Global.use_sync_bn): 2 processes x batch b == 1 process x batch 2b on one
training step (loss, gradients, updated weights, BN running statistics), for a small conv net and the DB det network;
one process runs paddle's own BatchNorm bit for bit; eval mode never communicates."""
from __future__ import annotations

import json

import numpy as np
import paddle
import pytest

from conftest import REPO_ROOT, run_1_and_2_ranks, worst_by_kind
from paddle_recipes.nn.sync_bn import cross_rank_batch_norm, is_sync_bn, use_sync_bn
from paddle_recipes.weights.freeze_bn import freeze_bn_stats

SCRIPT = REPO_ROOT / "tests" / "scripts" / "sync_bn_equiv.py"


def _pair(cls, *args, **kw):
    paddle.seed(1)
    ref = cls(*args, **kw)
    paddle.seed(1)
    ours = cls(*args, **kw)
    with paddle.no_grad():  # non-trivial scale / shift and running statistics
        for layer in (ref, ours):
            layer.weight.set_value(paddle.linspace(0.5, 1.5, layer.weight.shape[0]))
            layer.bias.set_value(paddle.linspace(-0.2, 0.3, layer.bias.shape[0]))
            layer._variance.set_value(paddle.full(layer._variance.shape, 2.0))
    return ref, ours


def _step(layer, x, g):
    x = paddle.to_tensor(x, stop_gradient=False)
    y = layer(x)
    (y * paddle.to_tensor(g)).sum().backward()
    return [y.numpy(), x.grad.numpy(), layer.weight.grad.numpy(), layer.bias.grad.numpy(), layer._mean.numpy(),
            layer._variance.numpy()]


@pytest.mark.parametrize("cls,kw", [(paddle.nn.BatchNorm2D, {}), (paddle.nn.BatchNorm, {"act": "relu"}),
                                    (paddle.nn.BatchNorm1D, {"momentum": 0.8})])
def test_one_process_is_paddles_batchnorm_bit_for_bit(cls, kw):
    ref, ours = _pair(cls, 4, **kw)
    assert use_sync_bn(ours) == 1 and is_sync_bn(ours) and isinstance(ours, cls) and not is_sync_bn(ref)
    shape = [3, 4] if cls is paddle.nn.BatchNorm1D else [3, 4, 5, 6]
    rng = np.random.RandomState(0)
    for _ in range(2):  # two steps: the running statistics carry over
        x, g = (rng.randn(*shape) * 2 + 1).astype("float32"), rng.randn(*shape).astype("float32")
        for a, b in zip(_step(ref, x, g), _step(ours, x, g)):
            assert np.array_equal(a, b)
        ref.clear_gradients()
        ours.clear_gradients()
    ref.eval()
    ours.eval()
    assert np.array_equal(ref(paddle.to_tensor(x)).numpy(), ours(paddle.to_tensor(x)).numpy())


@pytest.mark.parametrize("shift", [0.0, 100.0])
def test_cross_rank_math_on_one_rank_matches_paddle(shift):
    """The cross-rank function itself (group=False: this rank's batch alone) against paddle's kernel and a float64
    reference: forward, input / scale / shift gradients, running statistics (paddle's momentum convention, biased
    variance); a mean of 100 (x - mean cancels in float32) is computed as accurately as paddle does."""
    ref, layer = _pair(paddle.nn.BatchNorm2D, 3, momentum=0.8)
    rng = np.random.RandomState(1)
    x = (rng.randn(4, 3, 5, 5) * 2 + 1 + shift).astype("float32")
    g = rng.randn(4, 3, 5, 5).astype("float32")
    want = _step(ref, x, g)
    xt = paddle.to_tensor(x, stop_gradient=False)
    y = cross_rank_batch_norm(xt, layer._mean, layer._variance, layer.weight, layer.bias, momentum=0.8,
                              epsilon=1e-5, group=False)
    (y * paddle.to_tensor(g)).sum().backward()
    got = [y.numpy(), xt.grad.numpy(), layer.weight.grad.numpy(), layer.bias.grad.numpy(), layer._mean.numpy(),
           layer._variance.numpy()]
    x64, g64 = x.astype("float64"), g.astype("float64")
    mean, var = x64.mean((0, 2, 3), keepdims=True), x64.var((0, 2, 3), keepdims=True)
    x_hat = (x64 - mean) / np.sqrt(var + 1e-5)
    w = np.linspace(0.5, 1.5, 3).reshape(1, 3, 1, 1)
    exact = [x_hat * w + np.linspace(-0.2, 0.3, 3).reshape(1, 3, 1, 1),
             w / np.sqrt(var + 1e-5) * (g64 - g64.mean((0, 2, 3), keepdims=True)
                                        - x_hat * (g64 * x_hat).mean((0, 2, 3), keepdims=True)),
             (g64 * x_hat).sum((0, 2, 3)), g64.sum((0, 2, 3)), 0.2 * mean.ravel(), 0.8 * 2.0 + 0.2 * var.ravel()]
    for name, p, o, e in zip(("y", "dx", "dweight", "dbias", "mean", "var"), want, got, exact):
        scale = np.abs(e).max()
        err_paddle, err_ours = np.abs(p - e).max() / scale, np.abs(o - e).max() / scale
        assert err_ours <= max(2 * err_paddle, 1e-6), (name, err_ours, err_paddle)


def test_channel_last_and_eval_and_frozen_do_not_communicate(monkeypatch):
    bn = paddle.nn.BatchNorm2D(3, data_format="NHWC")
    ref = paddle.nn.BatchNorm2D(3, data_format="NHWC")
    x = paddle.to_tensor(np.random.RandomState(2).randn(2, 4, 4, 3).astype("float32"))
    y = cross_rank_batch_norm(x, bn._mean, bn._variance, bn.weight, bn.bias, axis=-1, group=False)
    np.testing.assert_allclose(y.numpy(), ref(x).numpy(), atol=1e-5)
    np.testing.assert_allclose(bn._mean.numpy(), ref._mean.numpy(), atol=1e-6)
    # a converted layer in eval mode, or frozen (weights.freeze_bn), runs paddle's kernel: never the cross-rank path
    import paddle_recipes.nn.sync_bn as sync_bn

    def boom(*a, **k):
        raise AssertionError("cross-rank path taken")

    monkeypatch.setattr(sync_bn, "cross_rank_batch_norm", boom)
    monkeypatch.setattr(sync_bn.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(sync_bn.dist, "get_world_size", lambda group=None: 2)
    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 3, 1), paddle.nn.BatchNorm2D(3))
    use_sync_bn(net)
    net.eval()
    net(paddle.ones([1, 3, 2, 2]))
    net.train()
    with pytest.raises(AssertionError, match="cross-rank path"):  # the check can fail: training does communicate
        net(paddle.ones([2, 3, 2, 2]))
    freeze_bn_stats(net)
    net(paddle.ones([2, 3, 2, 2]))


def test_switch_keeps_parameters_names_and_weights():
    paddle.seed(0)
    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3), paddle.nn.BatchNorm2D(4), paddle.nn.BatchNorm(4, act="relu"))
    before = {k: v.numpy() for k, v in net.state_dict().items()}
    names = [p.name for p in net.parameters()]
    params = [id(p) for p in net.parameters()]
    assert use_sync_bn(net) == 2 and use_sync_bn(net) == 2  # idempotent
    assert [type(m).__name__ for m in net] == ["Conv2D", "CrossRankBatchNorm2D", "CrossRankBatchNorm"]
    assert isinstance(net[1], paddle.nn.BatchNorm2D) and isinstance(net[2], paddle.nn.BatchNorm)
    assert [p.name for p in net.parameters()] == names and [id(p) for p in net.parameters()] == params
    after = net.state_dict()
    assert list(after) == list(before) and all(np.array_equal(before[k], after[k].numpy()) for k in before)
    plain = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3), paddle.nn.BatchNorm2D(4), paddle.nn.BatchNorm(4))
    plain.set_state_dict(net.state_dict())  # a checkpoint of a converted run loads into the plain network
    net.set_state_dict({k: paddle.to_tensor(v) for k, v in before.items()})  # and the other way round


def _load(out, name):
    return np.load(out / f"{name}.npz")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_1_and_2_ranks(SCRIPT, tmp_path_factory.mktemp("sync_bn"))


@pytest.mark.parametrize("model", ["conv", "det"])
def test_two_ranks_equal_one_rank_with_double_batch(runs, model):
    one, two = runs / "p1", runs / "p2"
    # one process: the converted layers are paddle's BatchNorm bit for bit, and nothing communicates
    single, plain = _load(one, f"{model}_sync_rank0"), _load(one, f"{model}_plain_rank0")
    assert all(np.array_equal(single[k], plain[k]) for k in single.files)
    # two processes x batch 2 == one process x batch 4: loss, averaged gradients, weights after one SGD step,
    # running statistics, eval output of the updated model; "equal" = as close to the step computed in float64
    # as 1 process in float32 is (10 x its rounding error at most: the det network has BNs of near-zero variance
    # whose gradients amplify any float32 rounding, 2e-4 of the largest gradient for 1 process)
    exact = _load(one, f"{model}_float64_rank0")
    rounding = worst_by_kind(exact, single)
    sync = worst_by_kind(exact, _load(two, f"{model}_sync_rank0"))
    assert all(sync[k] <= 10 * rounding[k] + 1e-6 for k in sync), (sync, rounding)
    assert max(sync.values()) <= 1e-3, sync
    # without the cross-rank BN each rank normalises by its own 2 samples: far apart (the check can fail)
    alone = worst_by_kind(exact, _load(two, f"{model}_plain_rank0"))
    assert alone["grad"] > 1e-2 and alone["state"] > 1e-3, alone
    r0, r1 = _load(two, f"{model}_sync_rank0"), _load(two, f"{model}_sync_rank1")
    assert all(np.array_equal(r0[k], r1[k]) for k in r0.files if k.startswith("state/"))  # one model on both ranks
    info = json.loads((two / f"{model}_sync_rank0.json").read_text())
    n_bn = {"conv": 2, "det": 152}[model]
    assert info["sync_bns"] == n_bn and info["train_all_reduce"] == 2 * n_bn  # one all-reduce forward, one backward
    assert info["eval_all_reduce"] == 0


def test_paddleocr_key_and_build_training_hook(caplog):
    """Global.use_sync_bn, PaddleOCR's own key, reaches ours from a PaddleOCR det YAML (default false, as PaddleOCR);
    build_training switches every BN when there is more than one process, says so, and leaves one process alone."""
    import logging

    import yaml

    from paddle_recipes.compat.paddleocr_det import translate_det_config
    from paddle_recipes.config import ConfigError, from_dict
    from paddle_recipes.runtime.distributed import DistInfo
    from paddle_recipes.tasks.ocr_det.config import DetConfig
    from paddle_recipes.train.build import apply_sync_bn

    data = yaml.safe_load((REPO_ROOT / "tests" / "fixtures" / "paddleocr_det_configs" / "PP-OCRv5" /
                           "PP-OCRv5_mobile_det.yml").read_text(encoding="utf-8"))
    assert from_dict(DetConfig, translate_det_config(data, "v5", DetConfig)[0]).Global.use_sync_bn is False
    data["Global"]["use_sync_bn"] = True
    g = from_dict(DetConfig, translate_det_config(data, "v5", DetConfig)[0]).Global
    assert g.use_sync_bn is True
    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3), paddle.nn.BatchNorm2D(4), paddle.nn.BatchNorm(4))
    with caplog.at_level(logging.INFO):
        assert apply_sync_bn(net, DistInfo(), g) == 0 and not any(is_sync_bn(m) for m in net)
        assert apply_sync_bn(net, DistInfo(world_size=2), g) == 2 and is_sync_bn(net[1]) and is_sync_bn(net[2])
    assert "one process, nothing to synchronise" in caplog.text and "2 BatchNorm layers normalise" in caplog.text
    g.to_static = True
    with pytest.raises(ConfigError, match="use_sync_bn with Global.to_static"):
        apply_sync_bn(net, DistInfo(world_size=2), g)
