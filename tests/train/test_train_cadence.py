"""PaddleOCR's cadence keys and eval log lines in the shared training loop (training.build_training + Trainer):
Global.eval_batch_step, keep_every_epochs, the `cur metric` / `best metric` lines and PaddleOCR's tie rule."""
from __future__ import annotations

import logging
import re

import numpy as np
import paddle
import pytest

from paddle_recipes.checkpoint.format import load_checkpoint
from paddle_recipes.formats.ppocr_logs import PPOCREvalLog
from paddle_recipes.config import ConfigError, from_dict
from paddle_recipes.runtime.distributed import DistInfo
from paddle_recipes.train.build import build_training
from paddle_recipes.train.config import GlobalConfig, TrainingConfig
from paddle_recipes.tasks.ocr_rec.config import RecGlobal


class Squares(paddle.io.Dataset):
    def __init__(self, n=32):
        self.x = np.random.default_rng(0).normal(size=(n, 4)).astype("float32")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], (self.x[i] ** 2).sum(keepdims=True)


def _step(model, batch):
    x, y = batch
    return {"loss": paddle.nn.functional.mse_loss(model(x), y)}


def _fit(tmp_path, scores=None, cur_metric=None, ppocr_lines=True, **g):
    """32 samples, batch 4, accumulate 2: 4 optimizer steps per epoch. eval_fn returns scores in turn."""
    cfg = from_dict(TrainingConfig, {"Global": {"output_dir": str(tmp_path), "epochs": 3, "log_every": 4, **g},
                                     "Optimizer": {"name": "sgd", "lr": 0.01, "schedule": "constant"},
                                     "Train": {"loader": {"batch_size_per_card": 4}, "accumulate_steps": 2}})
    seq = list(scores or [])

    def eval_fn(m):
        return {"score": seq.pop(0) if seq else 0.0, "n": 8}

    paddle.seed(0)
    run = build_training(cfg, paddle.nn.Linear(4, 1), Squares(), step=_step, info=DistInfo(), eval_fn=eval_fn,
                         main_metric="score", eval_log=PPOCREvalLog(cur_metric) if ppocr_lines else None)
    return run, run.fit()


def _steps(summary):
    return [e["global_step"] for e in summary["eval_history"]]


def test_eval_batch_step_evaluates_at_paddleocr_steps(tmp_path):
    # [start 2, every 3] over 12 steps: 5, 8, 11; then the final-eval rule adds 12 (last weights unevaluated)
    _, summary = _fit(tmp_path / "a", eval_batch_step=[2, 3], eval_every_epochs=0)
    assert _steps(summary) == [5, 8, 11, 12]
    # an integer n is [0, n]; a step eval at an epoch end is not repeated by eval_every_epochs, nor at the end
    _, summary = _fit(tmp_path / "b", eval_batch_step=4, eval_every_epochs=1)
    assert _steps(summary) == [4, 8, 12]
    # [] = off: per-epoch evals only
    _, summary = _fit(tmp_path / "c", eval_batch_step=[], eval_every_epochs=1)
    assert _steps(summary) == [4, 8, 12]


def test_best_is_saved_on_step_evals_with_paddleocr_tie_rule(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    run, summary = _fit(tmp_path, scores=[0.5, 0.9, 0.9, 0.3], eval_batch_step=[0, 3], eval_every_epochs=0,
                        save_every_epochs=0, cur_metric=lambda m: {"score": m["score"]})
    assert _steps(summary) == [3, 6, 9, 12]
    best = load_checkpoint(tmp_path / "checkpoints" / "best")
    assert best["global_step"] == 9  # the tie at step 9 replaced the 0.9 of step 6 (PaddleOCR: >=)
    assert best["best"] == {"value": 0.9, "metrics": {"score": 0.9, "n": 8}, "epoch": 3}
    assert summary["best_metric"] == 0.9
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs.count("cur metric, score: 0.9") == 2 and "cur metric, score: 0.3" in msgs
    # epoch of a mid-epoch eval = the epoch in progress (1-based), as PaddleOCR logs it
    assert [m for m in msgs if m.startswith("best metric")] == [
        "best metric, score: 0.5, best_epoch: 1", "best metric, score: 0.9, best_epoch: 2",
        "best metric, score: 0.9, best_epoch: 3", "best metric, score: 0.9, best_epoch: 3"]
    assert any(re.fullmatch(r"eval at epoch 3, global_step 12: score: 0\.300000, n: 8", m) for m in msgs)


def test_default_cur_metric_shows_every_metric(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    _fit(tmp_path, scores=[0.25], epochs=1, eval_every_epochs=1)
    msgs = [r.getMessage() for r in caplog.records]
    assert "cur metric, score: 0.25, n: 8" in msgs and "best metric, score: 0.25, n: 8, best_epoch: 1" in msgs


def test_eval_log_is_pluggable_and_plain_by_default(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    run, _ = _fit(tmp_path, scores=[0.25, 0.5], epochs=2, eval_every_epochs=1, ppocr_lines=False)
    msgs = [r.getMessage() for r in caplog.records]
    assert not [m for m in msgs if m.startswith(("cur metric", "best metric"))]
    assert [m for m in msgs if m.startswith("best score")] == ["best score: 0.25 (epoch 1)", "best score: 0.5 (epoch 2)"]
    assert run.total_steps == run.trainer.total_steps == 8  # 2 epochs x 32 / (4 x 2)


def test_keep_every_epochs_keeps_tagged_checkpoints_through_pruning(tmp_path):
    run, _ = _fit(tmp_path, epochs=5, keep_every_epochs=2, save_every_epochs=1, keep_last=1, eval_every_epochs=0)
    root = tmp_path / "checkpoints"
    kept = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    # epochs 1, 3, 5 rotate (keep_last 1: only step 20 left); epochs 2 and 4 are permanent; best from the final eval
    assert kept == ["best", "iter_epoch_2", "iter_epoch_4", "step_00000020"]
    assert load_checkpoint(root / "iter_epoch_2")["global_step"] == 8
    assert load_checkpoint(root / "iter_epoch_4")["epoch"] == 4


def test_cadence_keys_are_checked():
    assert GlobalConfig(eval_batch_step=500).eval_batch_step == [0, 500]
    assert GlobalConfig(eval_batch_step=[0, 2000]).eval_batch_step == [0, 2000]
    assert from_dict(GlobalConfig, {"eval_batch_step": 7}).eval_batch_step == [0, 7]
    for bad in ([0, 0], [1], [1, 2, 3], [-1, 5], True):
        with pytest.raises(ConfigError, match="Global.eval_batch_step"):
            GlobalConfig(eval_batch_step=bad)
    with pytest.raises(ConfigError, match="keep_every_epochs"):
        GlobalConfig(keep_every_epochs=-1)
    with pytest.raises(ConfigError, match="cal_metric_during_train"):  # an OCR key (a period: test_speedups.py)
        from_dict(RecGlobal, {"cal_metric_during_train": "no"})
    with pytest.raises(ConfigError, match="unknown key 'cal_metric_during_train'"):
        from_dict(GlobalConfig, {"cal_metric_during_train": True})
