"""Optimizer/LR builder: warmup then cosine, per optimizer step; no decay on norms/biases; bad names rejected."""
import math

import paddle
import pytest

from paddle_recipes.train.ema import EmaConfig, ModelEMA, build_ema
from paddle_recipes.train.optim import OptimizerConfig, build_optimizer


def test_warmup_cosine_values():
    model = paddle.nn.Linear(3, 3)
    opt, sched = build_optimizer(OptimizerConfig(lr=1.0, warmup_steps=4, schedule="cosine", min_lr=0.0),
                                 model.parameters(), total_steps=14)
    lrs = []
    for _ in range(14):
        lrs.append(opt.get_lr())
        sched.step()
    assert lrs[:4] == pytest.approx([0.0, 0.25, 0.5, 0.75])
    assert lrs[4] == pytest.approx(1.0)
    assert lrs[9] == pytest.approx(0.5 * (1 + math.cos(math.pi * 5 / 10)))


def test_adamw_skips_decay_on_bias_and_rejects_bad_names():
    model = paddle.nn.Linear(3, 3)
    opt, _ = build_optimizer(OptimizerConfig(weight_decay=0.1), model.parameters(), 10)
    assert opt._apply_decay_param_fun(model.weight.name) and not opt._apply_decay_param_fun(model.bias.name)
    with pytest.raises(ValueError, match="Optimizer.name"):
        OptimizerConfig(name="lamb2")
    with pytest.raises(ValueError, match="schedule"):
        OptimizerConfig(schedule="poly9")


def test_build_ema():
    model = paddle.nn.Linear(2, 2)
    assert build_ema(EmaConfig(), model) is None
    ema = build_ema(EmaConfig(enable=True, decay=0.99, warmup="exponential", warmup_steps=10), model)
    assert isinstance(ema, ModelEMA) and ema.decay == 0.99 and ema.warmup == "exponential"
