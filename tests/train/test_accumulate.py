"""k micro-batches of b == one batch of k*b after one optimizer step (SGD and AdamW)."""
import numpy as np
import paddle
import pytest

from paddle_recipes.train.accumulate import GradAccumulator
from paddle_recipes.train.amp import Amp


def _model():
    paddle.seed(1)
    return paddle.nn.Sequential(paddle.nn.Linear(6, 16), paddle.nn.Tanh(), paddle.nn.Linear(16, 3))


def _opt(name, model):
    if name == "sgd":
        return paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    return paddle.optimizer.AdamW(learning_rate=0.01, parameters=model.parameters(), weight_decay=0.01)


def _data():
    rng = np.random.default_rng(0)
    return (paddle.to_tensor(rng.normal(size=(32, 6)).astype("float32")),
            paddle.to_tensor(rng.normal(size=(32, 3)).astype("float32")))


def _params(model):
    return [p.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
def test_accumulation_matches_big_batch(opt_name):
    x, y = _data()
    loss_fn = paddle.nn.MSELoss()

    big = _model()
    opt = _opt(opt_name, big)
    loss_fn(big(x), y).backward()
    opt.step()
    opt.clear_grad()

    small = _model()
    opt2 = _opt(opt_name, small)
    acc, amp = GradAccumulator(4), Amp()
    steps = 0
    for i in range(4):
        with acc.micro_step(small):
            amp.backward(acc.scale(loss_fn(small(x[i * 8:(i + 1) * 8]), y[i * 8:(i + 1) * 8])))
        assert acc.is_boundary == (i == 3)
        if acc.is_boundary:
            assert amp.step(opt2)
            opt2.clear_grad()
            steps += 1
    assert steps == 1
    for a, b in zip(_params(big), _params(small)):
        assert np.abs(a - b).max() <= 1e-5


def test_lr_scheduler_steps_per_optimizer_step():
    model = _model()
    sched = paddle.optimizer.lr.StepDecay(learning_rate=1.0, step_size=1, gamma=0.5)
    opt = paddle.optimizer.SGD(learning_rate=sched, parameters=model.parameters())
    acc = GradAccumulator(3)
    x, y = _data()
    for i in range(9):
        with acc.micro_step(model):
            acc.scale(paddle.nn.functional.mse_loss(model(x[:4]), y[:4])).backward()
        if acc.is_boundary:
            opt.step(); opt.clear_grad(); sched.step()
    assert sched.last_epoch == 3
    assert opt.get_lr() == pytest.approx(0.125)


def test_flush_rescales_partial_window():
    """A partial window of n micro-batches steps with the mean gradient over those n."""
    x, y = _data()
    ref = _model()
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=ref.parameters())
    paddle.nn.functional.mse_loss(ref(x[:16]), y[:16]).backward()
    opt.step()

    m = _model()
    opt2 = paddle.optimizer.SGD(learning_rate=0.1, parameters=m.parameters())
    acc = GradAccumulator(4)
    for i in range(2):
        with acc.micro_step(m):
            acc.scale(paddle.nn.functional.mse_loss(m(x[i * 8:(i + 1) * 8]), y[i * 8:(i + 1) * 8])).backward()
    assert not acc.is_boundary
    assert acc.flush(opt2) and acc.is_boundary
    opt2.step()
    for a, b in zip(_params(ref), _params(m)):
        assert np.abs(a - b).max() <= 1e-5
    assert not acc.flush(opt2)


def test_bad_steps_rejected():
    with pytest.raises(ValueError, match="accumulation steps"):
        GradAccumulator(0)
