"""Train N steps, save, resume to 2N == 2N uninterrupted, bit for bit (weights, EMA, LR, scaler)."""
import numpy as np
import paddle
import pytest

from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.train.accumulate import GradAccumulator
from paddle_recipes.train.amp import Amp, AmpConfig
from paddle_recipes.checkpoint.format import CheckpointError, load_checkpoint, save_checkpoint
from paddle_recipes.train.ema import ModelEMA
from paddle_recipes.data.reproducible import SeededDataset, build_batch_sampler, sample_seed
from paddle_recipes.train.trainer import Callback, Trainer, TrainerOptions


class NoisyDataset(paddle.io.Dataset):
    """Augmentation draws from numpy's global RNG, so resume must restore it."""

    def __init__(self, n=40):
        rng = np.random.default_rng(5)
        self.x = rng.normal(size=(n, 6)).astype("float32")
        self.y = rng.normal(size=(n, 2)).astype("float32")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i] + np.random.normal(scale=0.1, size=6).astype("float32"), self.y[i]


class CountSteps(Callback):
    def __init__(self):
        self.steps = 0

    def on_step_end(self, trainer):
        self.steps += 1

    def state_dict(self):
        return {"steps": self.steps}

    def set_state_dict(self, state):
        self.steps = state["steps"]


def train_step(model, batch):
    x, y = batch
    loss = paddle.nn.functional.mse_loss(model(x), y)
    return {"loss": loss}


def build(output_dir, max_steps):
    dist_utils.seed_everything(11)
    model = paddle.nn.Sequential(paddle.nn.Linear(6, 16), paddle.nn.ReLU(), paddle.nn.Dropout(0.3),
                                 paddle.nn.Linear(16, 2))
    sched = paddle.optimizer.lr.CosineAnnealingDecay(learning_rate=0.05, T_max=20)
    opt = paddle.optimizer.AdamW(learning_rate=sched, parameters=model.parameters())
    ds = SeededDataset(NoisyDataset(), seed=3)
    sampler = build_batch_sampler(ds, 4, shuffle=True, with_epoch=True)
    loader = paddle.io.DataLoader(ds, batch_sampler=sampler, num_workers=0)
    amp = Amp(AmpConfig(enable=True, force_loss_scaling=True, init_loss_scaling=8.0, incr_every_n_steps=3))
    return Trainer(model, opt, train_step, loader, lr_scheduler=sched, amp=amp, accumulator=GradAccumulator(2),
                   ema=ModelEMA(model, decay=0.9, warmup="threshold"), callbacks=[CountSteps()], output_dir=output_dir,
                   options=TrainerOptions(epochs=100, max_steps=max_steps, save_every_steps=7, save_every_epochs=0,
                                          log_every=5))


def snapshot(trainer):
    return {"params": [p.numpy().copy() for p in trainer.model.parameters()],
            "ema": {k: v.numpy().copy() for k, v in trainer.ema.shadow.items()},
            "lr": trainer.optimizer.get_lr(), "scale": trainer.amp.scaler.scale_value,
            "step": trainer.global_step, "cb": trainer.callbacks[0].steps}


def test_resume_is_bit_exact(tmp_path):
    n = 7  # 5 optimizer steps per epoch: step 7 is in the middle of epoch 2
    full = build(tmp_path / "full", 2 * n)
    full.fit()
    ref = snapshot(full)

    first = build(tmp_path / "split", n)
    first.fit()
    assert first.global_step == n and first.batch_in_epoch == 4
    second = build(tmp_path / "split", 2 * n)
    second.fit(resume_from=tmp_path / "split" / "checkpoints")
    got = snapshot(second)

    assert got["step"] == ref["step"] == 2 * n and got["cb"] == ref["cb"] == 2 * n
    assert got["lr"] == ref["lr"] and got["scale"] == ref["scale"]
    for a, b in zip(ref["params"], got["params"]):
        np.testing.assert_array_equal(a, b)
    for k in ref["ema"]:
        np.testing.assert_array_equal(ref["ema"][k], got["ema"][k])


def test_checkpoint_atomic_layout_and_errors(tmp_path):
    model = paddle.nn.Linear(2, 2)
    path = save_checkpoint(tmp_path, {"model": model.state_dict(), "epoch": 1}, "step_1", keep_last=2)
    save_checkpoint(tmp_path, {"model": model.state_dict(), "epoch": 2}, "step_2", keep_last=2)
    save_checkpoint(tmp_path, {"model": model.state_dict(), "epoch": 3}, "step_3", keep_last=2)
    assert (tmp_path / "latest").read_text().strip() == "step_3"
    assert not path.exists()  # pruned
    assert load_checkpoint(tmp_path)["epoch"] == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp leftovers
    with pytest.raises(CheckpointError, match="not found"):
        load_checkpoint(tmp_path / "missing")
    (tmp_path / "latest").write_text("step_9\n")
    with pytest.raises(CheckpointError, match="step_9"):
        load_checkpoint(tmp_path)
    (tmp_path / "step_3" / "state.pkl").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="cannot read checkpoint"):
        load_checkpoint(tmp_path / "step_3")


def test_failed_save_leaves_previous_checkpoint(tmp_path, monkeypatch):
    model = paddle.nn.Linear(2, 2)
    save_checkpoint(tmp_path, {"model": model.state_dict(), "epoch": 1}, "step_1")

    def boom(obj, f, where):  # the write fails half way
        f.write(b"\x80\x05partial")
        raise RuntimeError("disk full")

    monkeypatch.setattr("paddle_recipes.checkpoint.format.dump_plain", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        save_checkpoint(tmp_path, {"model": model.state_dict(), "epoch": 2}, "step_2")
    assert (tmp_path / "latest").read_text().strip() == "step_1"
    assert load_checkpoint(tmp_path)["epoch"] == 1
    assert not (tmp_path / "step_2").exists()


def test_seeded_augmentation_is_independent_of_workers():
    ds = SeededDataset(NoisyDataset(16), seed=1)
    sampler = build_batch_sampler(ds, 4, shuffle=True, with_epoch=True)
    runs = []
    for workers in (0, 2):
        sampler.set_epoch(3)
        loader = paddle.io.DataLoader(ds, batch_sampler=sampler, num_workers=workers)
        runs.append(np.concatenate([x.numpy() for x, _ in loader]))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert sample_seed(1, 3, 5) != sample_seed(1, 4, 5) != sample_seed(1, 3, 6)


def test_resume_source(tmp_path):
    from paddle_recipes.checkpoint.resume import resume_source

    assert resume_source("", tmp_path) is None
    assert resume_source("auto", tmp_path) is None  # nothing saved yet: a fresh run
    save_checkpoint(tmp_path / "checkpoints", {"epoch": 1}, "step_1")
    assert resume_source("auto", tmp_path) == str(tmp_path / "checkpoints")
    assert resume_source("some/ckpt", tmp_path) == "some/ckpt"


def test_empty_resume_over_a_checkpoint_warns(tmp_path, caplog):
    """A job restarted by its launcher (--max_restart) without Global.resume=auto starts over: say so (issue 53)."""
    from paddle_recipes.checkpoint.resume import resume_source

    with caplog.at_level("WARNING", logger="paddle_recipes.checkpoint.format"):
        assert resume_source("", tmp_path) is None
    assert not caplog.records  # nothing saved: a fresh run is no news
    save_checkpoint(tmp_path / "checkpoints", {"epoch": 1}, "step_1")
    with caplog.at_level("WARNING", logger="paddle_recipes.checkpoint.format"):
        assert resume_source("", tmp_path) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"Global.resume is empty: starting fresh although {tmp_path / 'checkpoints'} holds checkpoint step_1 (its "
        "checkpoints will be replaced); a restarted job continues only with -o Global.resume=auto"]
