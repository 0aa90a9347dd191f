"""Contract every Trainer callback must meet (Composer-style): with gradient accumulation, with
AMP loss scaling on or off, and across save/resume, a run split in two equals one uninterrupted run.
Exercised with the distillation callback, whose temperature schedule follows optimizer steps."""
import numpy as np
import paddle
import pytest

from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.train.accumulate import GradAccumulator
from paddle_recipes.train.amp import Amp, AmpConfig
from paddle_recipes.train.distill import DistillCallback, DistillLoss, LinearT, make_distill_step
from paddle_recipes.data.reproducible import SeededDataset, build_batch_sampler
from paddle_recipes.train.trainer import Trainer, TrainerOptions


class Blobs(paddle.io.Dataset):
    def __init__(self, n=48):
        rng = np.random.default_rng(2)
        self.x = rng.normal(size=(n, 8)).astype("float32")
        self.y = (self.x[:, 0] > 0).astype("int64") + (self.x[:, 1] > 0).astype("int64")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i] + np.random.normal(scale=0.05, size=8).astype("float32"), self.y[i]


def base_step(model, batch):
    x, y = batch
    logits = model(x)
    return {"loss": paddle.nn.functional.cross_entropy(logits, y), "logits": logits}


def build(out_dir, max_steps, amp_on):
    dist_utils.seed_everything(5)
    teacher = paddle.nn.Sequential(paddle.nn.Linear(8, 32), paddle.nn.ReLU(), paddle.nn.Linear(32, 3))
    student = paddle.nn.Sequential(paddle.nn.Linear(8, 8), paddle.nn.ReLU(), paddle.nn.Linear(8, 3))
    step = make_distill_step(teacher, base_step, DistillLoss(LinearT(8.0, 1.0), alpha=0.7), total_steps=12)
    opt = paddle.optimizer.Adam(learning_rate=0.01, parameters=student.parameters())
    ds = SeededDataset(Blobs(), seed=1)
    loader = paddle.io.DataLoader(ds, batch_sampler=build_batch_sampler(ds, 4, with_epoch=True))
    amp = Amp(AmpConfig(enable=amp_on, force_loss_scaling=amp_on, init_loss_scaling=64.0, incr_every_n_steps=2))
    trainer = Trainer(student, opt, step, loader, amp=amp, accumulator=GradAccumulator(2),
                      callbacks=[DistillCallback(step)], output_dir=out_dir,
                      options=TrainerOptions(epochs=10, max_steps=max_steps, save_every_steps=5, save_every_epochs=0,
                                             log_every=100))
    return trainer, step


@pytest.mark.parametrize("amp_on", [False, True])
def test_distill_callback_resume_and_accumulation(tmp_path, amp_on):
    full, full_step = build(tmp_path / "full", 10, amp_on)
    full.fit()
    assert full_step.step == full.global_step == 10  # schedule counts optimizer steps, not micro-steps

    first, _ = build(tmp_path / "split", 5, amp_on)
    first.fit()
    second, second_step = build(tmp_path / "split", 10, amp_on)
    second.fit(resume_from=tmp_path / "split" / "checkpoints")
    assert second_step.step == 10
    assert second.amp.scaler.scale_value == full.amp.scaler.scale_value
    if amp_on:
        assert full.amp.scaler.scale_value > 64.0  # the forced scaler really ran and grew
    for a, b in zip(full.model.parameters(), second.model.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
