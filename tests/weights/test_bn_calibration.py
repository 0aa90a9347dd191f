"""bn_calibration.calibrate_at_start on a dataset with random augmentation: the same statistics in every run of
a seed whatever the global random states were (the det race logged train-vs-eval gaps 1.103 -> 0.418 and
1.083 -> 0.208 for one seed before the calibration reads were seeded), another seed draws others, and the global
states come back as they were."""
from __future__ import annotations

import random

import numpy as np
import paddle

from paddle_recipes.weights.bn_calibration import calibrate_at_start
from paddle_recipes.nn.reparam import PASSTHROUGH_FLAG, passthrough_bns


class Augmented(paddle.io.Dataset):
    """Images whose augmentation draws from the global numpy and python random states, as the OCR transforms do."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        base = np.full([3, 8, 8], float(i), "float32")
        return (base + np.random.standard_normal(base.shape).astype("float32") * random.uniform(0.5, 2.0),)


def _model():
    paddle.seed(0)
    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3, padding=1), paddle.nn.BatchNorm2D(4))
    setattr(net[1], PASSTHROUGH_FLAG, True)  # as reparam.unfuse_into leaves it: running mean 0, var 1
    return net


def _calibrated_means(seed: int, global_seed: int) -> np.ndarray:
    random.seed(global_seed)
    np.random.seed(global_seed)
    paddle.seed(global_seed)
    net = _model()
    state = np.random.get_state()[1].copy(), random.getstate()
    calibrate_at_start(net, Augmented(), num_batches=2, batch_size=4, seed=seed)
    assert np.array_equal(np.random.get_state()[1], state[0]) and random.getstate() == state[1]
    (_, bn), = passthrough_bns(net)
    return np.concatenate([bn._mean.numpy(), bn._variance.numpy()])


def test_the_same_calibration_in_every_run_of_a_seed():
    first = _calibrated_means(seed=7, global_seed=1)
    assert np.array_equal(first, _calibrated_means(seed=7, global_seed=12345))  # other global states: same
    assert not np.array_equal(first, _calibrated_means(seed=8, global_seed=1))  # another seed: other draws
