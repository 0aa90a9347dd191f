"""Fault suite: config values that used to end in a traceback (issue 21 item 7), duplicate YAML keys, and
a resume with another optimizer. The 2-process launcher case is in test_faults_launch.py."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import paddle
import pytest

from conftest import REPO_ROOT, run_cli
from paddle_recipes.checkpoint import load_weights, save_checkpoint
from paddle_recipes.cli import USER_ERRORS
from paddle_recipes.config import ConfigError, load_config, load_yaml
from paddle_recipes.optim import OptimizerConfig, build_optimizer
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.tasks.ocr.config import RecConfig
from paddle_recipes.trainer import Trainer

OCR_SMOKE = REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml"


def _cli_error_lines(argv, capsys) -> list[str]:
    code, err = run_cli(OcrRec, argv, capsys)
    assert code == 2
    assert "Traceback" not in err, err
    return [ln for ln in err.splitlines() if ln.startswith("ocr_rec:")]


@pytest.mark.parametrize("override, line", [
    ("Eval.loader.batch_size_per_card=0", f"Eval.loader: batch_size_per_card must be >= 1, got 0 (in {OCR_SMOKE})"),
    ("Global.max_text_length=0", f"Global.max_text_length must be >= 1, got 0 (in {OCR_SMOKE})"),
])
def test_config_values_are_one_line(tmp_path, capsys, override, line):
    assert _cli_error_lines(["-c", str(OCR_SMOKE), "-o", f"Global.output_dir={tmp_path}", override], capsys) == \
        [f"ocr_rec: error: {line}"]


@pytest.mark.skipif(paddle.is_compiled_with_cuda(), reason="needs a CPU-only paddle build")
def test_gpu_device_on_a_cpu_build_is_one_line(tmp_path, capsys):
    assert _cli_error_lines(["-c", str(OCR_SMOKE), "-o", f"Global.output_dir={tmp_path}", "Global.device=gpu"],
                            capsys) == ["ocr_rec: error: Global.device 'gpu:0': this paddle build has no CUDA (a CPU "
                                        "wheel); use Global.device=cpu, or install paddlepaddle-gpu (README: GPU install)"]


def test_truncated_ema_weights_are_one_line(tmp_path):
    """What --mode eval loads (the EMA weights of `best`/latest): a truncated file is one line naming it, of a
    class the recipe CLI turns into exit 2."""
    model = paddle.nn.Linear(4, 3)
    folder = save_checkpoint(tmp_path, {"model": model.state_dict(), "ema": model.state_dict()}, "step_1")
    ema = folder / "ema.pdparams"
    ema.write_bytes(ema.read_bytes()[:100])
    with pytest.raises(USER_ERRORS) as err:
        load_weights(model, tmp_path)
    assert str(ema) in str(err.value) and "\n" not in str(err.value)


def test_duplicate_yaml_key_names_both_lines(tmp_path):
    cfg = tmp_path / "dup.yml"
    cfg.write_text("Global:\n  epochs: 2\nOptimizer:\n  lr: 0.1\n  name: adam\n  lr: 0.5\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg, [], RecConfig)
    assert str(err.value) == (f"{cfg}: duplicate key 'lr' on lines 4 and 6 (YAML would keep only the second): "
                              "remove one")
    with pytest.raises(ConfigError, match="duplicate key 'a' on lines 1 and 1"):
        load_config(None, ["Optimizer={a: 1, a: 2}"], RecConfig)
    # a `<<: *anchor` merge may be overridden: that is YAML's own override, not a duplicate
    assert load_yaml("base: &b {x: 1, y: 2}\nder:\n  <<: *b\n  x: 3\n") == {"base": {"x": 1, "y": 2},
                                                                           "der": {"x": 3, "y": 2}}


@dataclass
class _Cfg:
    Optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)


def _trainer(tmp_path, opt_cfg: OptimizerConfig, epochs: int) -> Trainer:
    paddle.seed(0)
    model = paddle.nn.Linear(4, 1)
    opt, _ = build_optimizer(opt_cfg, model.parameters(), total_steps=8)
    x = paddle.to_tensor(np.random.default_rng(0).normal(size=(8, 4)).astype("float32"))
    ds = paddle.io.TensorDataset([x])
    loader = paddle.io.DataLoader(ds, batch_sampler=paddle.io.BatchSampler(ds, batch_size=4))
    return Trainer(model, opt, lambda m, b: {"loss": m(b[0]).square().mean()}, loader, epochs=epochs,
                   output_dir=str(tmp_path), save_every_epochs=1, log_every=100, config=_Cfg(opt_cfg))


def test_resume_with_another_optimizer_says_so(tmp_path, caplog):
    adam = OptimizerConfig(name="adam", lr=0.01, schedule="constant")
    _trainer(tmp_path, adam, epochs=1).fit()
    with caplog.at_level(logging.WARNING):
        _trainer(tmp_path, OptimizerConfig(name="sgd", lr=0.01, schedule="constant"), epochs=2).fit(
            resume_from=tmp_path / "checkpoints")
    lines = [r.getMessage() for r in caplog.records if "another optimizer" in r.getMessage()]
    assert len(lines) == 1 and "Optimizer.name: 'adam' in checkpoint, 'sgd' now" in lines[0]
    assert "is NOT restored" in lines[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # the same optimizer, another lr: its state is restored
        _trainer(tmp_path, OptimizerConfig(name="sgd", lr=0.02, schedule="constant"), epochs=3).fit(
            resume_from=tmp_path / "checkpoints")
    lines = [r.getMessage() for r in caplog.records if "another optimizer" in r.getMessage()]
    assert len(lines) == 1 and "Optimizer.lr: 0.01 in checkpoint, 0.02 now (the new values apply from here)" in lines[0]
