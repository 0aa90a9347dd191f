"""paddle_recipes.train.build / recipe: the final-eval rule, ETA under accumulation, init weights in train mode,
resume alias, rank-0 data preparation, and recipes as importable modules of the right size."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import paddle
import pytest

from paddle_recipes.checkpoint.format import CheckpointError, save_checkpoint
from paddle_recipes.config import ConfigError, from_dict
from paddle_recipes.runtime.distributed import DistInfo
from paddle_recipes.recipes.base import Recipe, prepare_on_rank0
from paddle_recipes.train.build import build_training
from paddle_recipes.train.config import GlobalConfig, TrainingConfig

REPO = Path(__file__).resolve().parents[2]


class Squares(paddle.io.Dataset):
    def __init__(self, n=32):
        rng = np.random.default_rng(0)
        self.x = rng.normal(size=(n, 4)).astype("float32")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], (self.x[i] ** 2).sum(keepdims=True)


def _step(model, batch):
    x, y = batch
    return {"loss": paddle.nn.functional.mse_loss(model(x), y)}


def _cfg(tmp_path, **g) -> TrainingConfig:
    return from_dict(TrainingConfig, {"Global": {"output_dir": str(tmp_path), "epochs": 2, "log_every": 1, **g},
                                      "Optimizer": {"name": "sgd", "lr": 0.01, "schedule": "constant"},
                                      "Train": {"loader": {"batch_size_per_card": 4}, "accumulate_steps": 2}})


def _run(tmp_path, **g):
    calls = []

    def eval_fn(m):
        calls.append(1)
        return {"score": float(len(calls))}

    run = build_training(_cfg(tmp_path, **g), paddle.nn.Linear(4, 1), Squares(), step=_step, info=DistInfo(),
                         eval_fn=eval_fn, main_metric="score")
    return run, run.fit(), calls


def test_no_final_eval_and_no_best_when_eval_and_save_are_off(tmp_path):
    run, summary, calls = _run(tmp_path, eval_every_epochs=0, save_every_epochs=0)
    assert calls == [] and summary["final_eval"] == {} and summary["global_step"] == 8
    assert not (tmp_path / "checkpoints").exists()  # no `best` (0.0 used to beat "no best yet")
    assert json.loads((tmp_path / "summary.json").read_text())["global_step"] == 8


def test_eval_every_epoch_is_not_repeated_at_the_end(tmp_path):
    _, summary, calls = _run(tmp_path, eval_every_epochs=1)
    assert len(calls) == 2 and summary["final_eval"] == {"score": 2.0}
    assert [r["global_step"] for r in summary["eval_history"]] == [4, 8]
    assert (tmp_path / "checkpoints" / "best").is_dir()


def test_final_eval_when_training_stops_between_evals(tmp_path):
    _, summary, calls = _run(tmp_path, eval_every_epochs=1, max_steps=6)  # stops mid-epoch 2
    assert len(calls) == 2 and summary["global_step"] == 6 and summary["eval_history"][-1]["global_step"] == 6


def test_eta_counts_the_same_unit_as_its_total_under_accumulation(tmp_path):
    """ERNIE passed optimizer steps as total but the timer counts micro-batches: ETA was k times too short.
    build_training leaves the timer to the Trainer, which counts micro-batches on both sides."""
    run, summary, _ = _run(tmp_path, eval_every_epochs=0, save_every_epochs=0)
    timer = run.trainer.timer
    assert run.trainer.accumulator.steps == 2 and summary["global_step"] == 8
    assert timer.total_steps == timer.steps == 16          # 8 micro-batches x 2 epochs
    assert timer.summary()["eta_seconds"] == 0.0
    src = (REPO / "paddle_recipes" / "recipes" / "ernie_multitask.py").read_text()
    assert "build_training(" in src and "StepTimer" not in src


class TinyRecipe(Recipe):
    name, Config = "tiny", TrainingConfig

    def build_model(self):
        paddle.seed(1)
        return paddle.nn.Linear(4, 1)


def test_global_weights_in_train_mode_load_or_fail_in_one_line(tmp_path):
    src_model = paddle.nn.Linear(4, 1)
    paddle.save(src_model.state_dict(), str(tmp_path / "init.pdparams"))
    for path in (tmp_path / "init.pdparams", tmp_path / "init"):       # file, or PaddleOCR-style prefix
        for key in ("weights", "pretrained_model"):
            recipe = TinyRecipe(_cfg(tmp_path, **{key: str(path)}), DistInfo())
            model = recipe.build_model()
            recipe.init_weights(model)
            assert np.allclose(model.weight.numpy(), src_model.weight.numpy())
    save_checkpoint(tmp_path / "ckpts", {"model": src_model.state_dict()}, "step_1")   # our checkpoint folder
    recipe = TinyRecipe(_cfg(tmp_path, pretrained_model=str(tmp_path / "ckpts")), DistInfo())
    model = recipe.build_model()
    recipe.init_weights(model)
    assert np.allclose(model.weight.numpy(), src_model.weight.numpy())
    recipe = TinyRecipe(_cfg(tmp_path, weights=str(tmp_path / "missing")), DistInfo())
    with pytest.raises(CheckpointError,
                       match=r"^pretrained weights not found: .*missing \(tried .*missing and .*missing.pdparams\)$"):
        recipe.init_weights(recipe.build_model())


def test_paddleocr_checkpoints_resumes_and_init_conflicts_only_in_training(tmp_path):
    """Global.checkpoints (PaddleOCR's key) is ours too: in train mode it is the checkpoint to continue from, over
    resume "auto"; naming another checkpoint than Global.resume is an error (docs/weights.md for the other modes)."""
    from paddle_recipes.checkpoint.resume import resume_from

    assert from_dict(GlobalConfig, {"checkpoints": None}).checkpoints == ""
    save_checkpoint(tmp_path / "a", {"model": paddle.nn.Linear(2, 2).state_dict()}, "step_1")
    (tmp_path / "out" / "checkpoints").mkdir(parents=True)
    g = from_dict(GlobalConfig, {"checkpoints": str(tmp_path / "a"), "resume": "auto", "output_dir": str(tmp_path / "out")})
    assert resume_from(g) == str(tmp_path / "a")
    g.resume = str(tmp_path / "b")
    with pytest.raises(CheckpointError, match="name different checkpoints to continue from: set one"):
        resume_from(g)
    # both set is fine for eval/predict/export (weights are used); only training refuses two init sources
    g = from_dict(GlobalConfig, {"weights": "a", "pretrained_model": "b"})
    assert (g.weights, g.pretrained_model) == ("a", "b")
    assert from_dict(GlobalConfig, {"weights": None, "pretrained_model": None}).pretrained_model == ""
    recipe = TinyRecipe(_cfg(tmp_path, weights="a", pretrained_model="b"), DistInfo())
    with pytest.raises(ConfigError, match=r"both set init weights for training: set one"):
        recipe.init_weights(recipe.build_model())


def test_rank0_prepares_other_ranks_poll(tmp_path):
    built = []
    fp = {"n": 3}
    assert prepare_on_rank0(tmp_path, fp, lambda: built.append(0) or "r0", DistInfo(rank=0, world_size=2)) == "r0"
    # rank 1 finds the fingerprint at once and runs build() itself (a cache hit in real builders)
    assert prepare_on_rank0(tmp_path, fp, lambda: "r1", DistInfo(rank=1, world_size=2), timeout_s=1) == "r1"
    with pytest.raises(TimeoutError):
        prepare_on_rank0(tmp_path, {"n": 4}, lambda: "x", DistInfo(rank=1, world_size=2), timeout_s=0.3, poll_s=0.1)


def test_recipes_are_modules_under_150_lines_and_entry_points_are_thin():
    from paddle_recipes.recipes import RECIPES

    for name in RECIPES:
        lines = (REPO / "paddle_recipes" / "recipes" / f"{name}.py").read_text().splitlines()
        assert len(lines) < 150, (name, len(lines))
        entry = (REPO / "recipes" / f"{name}.py").read_text()
        assert len(entry.splitlines()) <= 4 and "sys.path" not in entry
    for f in (REPO / "paddle_recipes").rglob("*.py"):
        text = f.read_text()
        assert "sys.path.insert" not in text and "noqa: E402" not in text, f


def test_ema_warmup_reads_the_trainer_step():
    from paddle_recipes.train.ema import ModelEMA, ema_decay

    ema = ModelEMA(paddle.nn.Linear(2, 2), decay=0.999, warmup="threshold")
    assert ema.update(paddle.nn.Linear(2, 2), step=40) == pytest.approx(ema_decay(40, 0.999, "threshold"))
    assert ema.num_updates == 41
    with pytest.raises(ConfigError, match="EMA.warmup: unknown name 'linear'; valid names: exponential, none, threshold"):
        from_dict(TrainingConfig, {"EMA": {"warmup": "linear"}})


def test_use_visualdl_without_visualdl_warns_once(tmp_path, monkeypatch, caplog):
    import importlib.util

    from paddle_recipes.train import build as training

    real = importlib.util.find_spec
    monkeypatch.setattr(training.importlib.util, "find_spec", lambda n, *a: None if n == "visualdl" else real(n, *a))
    with caplog.at_level("WARNING", logger="paddle_recipes.train.build"):
        writer = training.scalar_writer(GlobalConfig(use_visualdl=True, output_dir=str(tmp_path)), DistInfo())
    writer.close()
    lines = [r.getMessage() for r in caplog.records if "visualdl is not installed" in r.getMessage()]
    assert len(lines) == 1 and "paddle-recipes[vdl]" in lines[0]


def test_warmup_epochs_resolve_to_optimizer_steps(tmp_path, caplog):
    import logging

    from paddle_recipes.train.optim import OptimizerConfig, build_optimizer, resolve_warmup

    assert resolve_warmup(OptimizerConfig(warmup_epochs=2.5), steps_per_epoch=4).warmup_steps == 10
    plain = OptimizerConfig(warmup_steps=7)
    assert resolve_warmup(plain, 4) is plain
    with pytest.raises(ConfigError, match="same setting: set one"):
        OptimizerConfig(warmup_steps=5, warmup_epochs=1.0)
    with pytest.raises(ValueError, match="resolve them with resolve_warmup"):
        build_optimizer(OptimizerConfig(warmup_epochs=1.0), paddle.nn.Linear(2, 1).parameters(), total_steps=10)
    cfg = _cfg(tmp_path, eval_every_epochs=0, save_every_epochs=0)
    cfg.Optimizer = OptimizerConfig(name="sgd", lr=0.1, schedule="constant", warmup_epochs=1.5)
    with caplog.at_level(logging.INFO, logger="paddle_recipes.train.build"):
        run = build_training(cfg, paddle.nn.Linear(4, 1), Squares(), step=_step, info=DistInfo())
    # 32 samples / batch 4 = 8 micro-batches, accumulate 2 -> 4 optimizer steps per epoch; 1.5 epochs = 6 steps
    assert "Optimizer.warmup_epochs 1.5 = 6 optimizer steps (4 per epoch)" in caplog.text
    lrs = []
    for _ in range(8):
        lrs.append(run.trainer.optimizer.get_lr())
        run.trainer.lr_scheduler.step()
    np.testing.assert_allclose(lrs, [0.0, 0.1 / 6, 0.2 / 6, 0.05, 0.4 / 6, 0.5 / 6, 0.1, 0.1], rtol=1e-6)
