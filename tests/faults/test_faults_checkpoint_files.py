"""Checkpoint files missing or left half-deleted: resume without ema.pdparams is one line; a step folder a kill
left without state.pkl (mid-prune) is removed, logged, on the next start; pruning renames before it deletes."""
from __future__ import annotations

import logging
import shutil

import numpy as np
import paddle
import pytest

import paddle_recipes.checkpoint.format as ckpt
from paddle_recipes.checkpoint.format import CheckpointError, clean_stale, save_checkpoint
from paddle_recipes.train.ema import ModelEMA
from paddle_recipes.train.trainer import Trainer, TrainerOptions


def build(output_dir, max_steps):
    paddle.seed(0)
    model = paddle.nn.Linear(4, 2)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    data = [(np.ones((2, 4), np.float32), np.zeros((2, 2), np.float32))] * 3

    def step(m, batch):
        return {"loss": paddle.nn.functional.mse_loss(m(paddle.to_tensor(batch[0])), paddle.to_tensor(batch[1]))}

    return Trainer(model, opt, step, data, ema=ModelEMA(model, decay=0.9), output_dir=output_dir,
                   options=TrainerOptions(epochs=10, max_steps=max_steps, save_every_steps=2, save_every_epochs=0,
                                          log_every=100))


def test_resume_without_ema_file_is_one_line(tmp_path):
    build(tmp_path, 2).fit()
    folder = tmp_path / "checkpoints" / "step_00000002"
    (folder / "ema.pdparams").unlink()
    with pytest.raises(CheckpointError) as exc:
        build(tmp_path, 4).fit(resume_from=tmp_path / "checkpoints")
    assert str(exc.value) == f"{folder}: no ema state, but this run uses it", exc.value


def test_step_folder_without_state_is_cleaned_and_logged(tmp_path, caplog):
    root = tmp_path / "checkpoints"
    for i in (1, 2, 3):
        save_checkpoint(root, {"model": paddle.nn.Linear(2, 2).state_dict()}, f"step_{i:08d}", keep_last=5)
    (root / "step_00000001" / "state.pkl").unlink()  # what a kill in the middle of an in-place delete leaves
    (root / "iter_epoch_2").mkdir()  # an empty folder of a permanent tag, the last file gone
    (root / "notes").mkdir()  # not a checkpoint tag: left alone
    with caplog.at_level(logging.WARNING, logger="paddle_recipes.checkpoint.format"):
        removed = clean_stale(root)
    assert sorted(removed) == ["iter_epoch_2", "step_00000001"]
    assert sorted(p.name for p in root.iterdir()) == ["latest", "notes", "step_00000002", "step_00000003"]
    assert "removed 2 incomplete checkpoint folder(s)" in caplog.text and "step_00000001" in caplog.text


def test_a_kill_while_pruning_leaves_only_a_hidden_temp(tmp_path, monkeypatch):
    root = tmp_path / "checkpoints"
    save_checkpoint(root, {"model": paddle.nn.Linear(2, 2).state_dict()}, "step_00000001", keep_last=1)
    real = shutil.rmtree

    def killed(path, *a, **k):  # the process dies after deleting state.pkl, before the rest
        (ckpt.Path(path) / "state.pkl").unlink(missing_ok=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(ckpt.shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(root, {"model": paddle.nn.Linear(2, 2).state_dict()}, "step_00000002", keep_last=1)
    monkeypatch.setattr(ckpt.shutil, "rmtree", real)
    assert sorted(p.name for p in root.iterdir()) == [".step_00000001.tmp-prune", "latest", "step_00000002"]
    assert clean_stale(root) == [".step_00000001.tmp-prune"]
    assert sorted(p.name for p in root.iterdir()) == ["latest", "step_00000002"]
