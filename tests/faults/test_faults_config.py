"""Fault suite: config values that used to end in a traceback (issue 21 item 7), duplicate YAML keys, a resume
with another optimizer, and YAML bombs (issue 37 item 7: aliases, size, nesting, a SIGTERM while the config loads).
The 2-process launcher case is in test_faults_launch.py."""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field

import numpy as np
import paddle
import pytest

from conftest import REPO_ROOT, run_cli
from paddle_recipes.weights.load import load_weights
from paddle_recipes.checkpoint.format import save_checkpoint
from paddle_recipes.cli import USER_ERRORS
from paddle_recipes.config import ConfigError, load_config, load_yaml
from paddle_recipes.train.optim import OptimizerConfig, build_optimizer
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.tasks.ocr_rec.config import RecConfig
from paddle_recipes.train.trainer import Trainer, TrainerOptions

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
    return Trainer(model, opt, lambda m, b: {"loss": m(b[0]).square().mean()}, loader, output_dir=str(tmp_path),
                   config=_Cfg(opt_cfg), options=TrainerOptions(epochs=epochs, save_every_epochs=1, log_every=100))


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


# ----------------------------------------------------------------------------- YAML bombs (issue 37 item 7)
def _alias_bomb(levels: int = 9) -> str:
    """`levels` anchors of 9 aliases each: 9**levels values once expanded, a few hundred bytes as written."""
    rows = ["    l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    rows += [f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(rows) + "\n"


def test_an_alias_bomb_is_one_line_fast_in_bounded_memory(tmp_path):
    """Issue 37: a bomb under the free-form Architecture.Backbone ran > 300 s and 2.7 GB in dataclasses.asdict.
    Now: refused while loading, in one line naming the file and where it expands, well under a second."""
    import time
    import tracemalloc

    from paddle_recipes.tasks.ocr_det.config import DetConfig

    cfg = tmp_path / "bomb.yml"
    cfg.write_text("Global: {epochs: 1}\nArchitecture:\n  Backbone:\n    name: PPLCNetV3\n" + _alias_bomb())
    tracemalloc.start()
    t0 = time.time()
    try:
        with pytest.raises(ConfigError) as err:
            load_config(cfg, [], DetConfig)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.time() - t0 < 5 and peak < 50e6, (time.time() - t0, peak)
    assert str(err.value) == f"{cfg}: YAML aliases under 'Architecture.Backbone.l6' expand to more than 1,000,000 " \
                             "values (an alias bomb?): refused"
    with pytest.raises(ConfigError, match=r"^override 'Architecture.Backbone=\{.*: YAML aliases under 'l6' expand"):
        load_config(None, ["Architecture.Backbone={" + ", ".join(
            ln.strip() for ln in _alias_bomb().splitlines()) + "}"], DetConfig)
    small = _alias_bomb(levels=3)  # 9**3 values: aliases as such are fine
    cfg.write_text("Global: {epochs: 1}\nArchitecture:\n  Backbone:\n    name: PPLCNetV3\n" + small)
    assert len(load_config(cfg, [], DetConfig).Architecture.Backbone["l2"]) == 9


def test_recursive_and_too_deep_yaml_are_one_line(tmp_path):
    cfg = tmp_path / "rec.yml"
    cfg.write_text("Global: {epochs: 1}\nTrain: &t\n  loop: *t\n")
    with pytest.raises(ConfigError, match=rf"^{cfg}: a YAML alias under 'Train.loop' refers to its own parent"):
        load_config(cfg, [], RecConfig)
    cfg.write_text("Global: {epochs: " + "[" * 5000 + "]" * 5000 + "}\n")
    with pytest.raises(ConfigError, match=rf"^{cfg}: YAML nested too deeply to read: refused$"):
        load_config(cfg, [], RecConfig)


def test_a_config_over_1_mib_is_refused_before_parsing(tmp_path, capsys):
    from paddle_recipes.config import MAX_CONFIG_BYTES

    cfg = tmp_path / "big.yml"
    cfg.write_text("Global: {epochs: 1}\n" + "#" * MAX_CONFIG_BYTES + "\n")
    size = cfg.stat().st_size
    assert _cli_error_lines(["-c", str(cfg)], capsys) == [
        f"ocr_rec: error: {cfg}: {size:,} bytes: a config file may have at most 1,048,576 bytes (1 MiB): refused"]
    cfg.write_bytes(b"Global: {epochs: 1}\n# \xff\n")
    assert _cli_error_lines(["-c", str(cfg)], capsys) == [f"ocr_rec: error: {cfg}: not UTF-8 text (at byte offset 22: 0xff)"]


def _wait_for_read(path, timeout_s: float) -> bool:
    """Block until some process closes `path` after reading it (Linux inotify IN_CLOSE_NOWRITE); False on timeout."""
    import ctypes
    import os
    import select

    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init()
    assert fd >= 0 and libc.inotify_add_watch(fd, str(path).encode(), 0x10) >= 0  # IN_CLOSE_NOWRITE
    try:
        return bool(select.select([fd], [], [], timeout_s)[0])
    finally:
        os.close(fd)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify (Linux) tells when the config is read")
def test_sigterm_while_the_config_loads_is_our_one_line(tmp_path):
    """Issue 37: a SIGTERM during config loading printed paddle's C++ FatalError dump (our handler came later).
    A big-but-allowed config (0.9 MiB: seconds of parsing) is read; the SIGTERM lands once the file is read."""
    import subprocess

    from conftest import _clean_env, sigterm_and_wait

    cfg = tmp_path / "slow.yml"
    rows = "".join(f"    k{i}: [1, 2, 3]\n" for i in range(45000))
    cfg.write_text("Global: {epochs: 1}\nArchitecture:\n  Backbone:\n    name: PPLCNetV3\n" + rows)
    assert 0.8e6 < cfg.stat().st_size < 1 << 20
    proc = subprocess.Popen([sys.executable, "recipes/ocr_det.py", "-c", str(cfg), "-o",
                             f"Global.output_dir={tmp_path / 'out'}"], cwd=REPO_ROOT, env=_clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not _wait_for_read(cfg, 60):
        proc.kill()
        raise AssertionError(f"the recipe never read its config: {proc.communicate()[1][-3000:]}")
    err, seconds = sigterm_and_wait(proc)
    assert seconds < 5, f"{seconds:.1f} s to stop"
    assert "FatalError" not in err and "Termination signal" not in err, err[-3000:]
    assert proc.returncode == 143, (proc.returncode, err[-3000:])
    assert [ln for ln in err.splitlines() if "SIGTERM" in ln] == [f"process {proc.pid}: stopped by SIGTERM"], err
    assert "Traceback" not in err and "error" not in err, err[-3000:]
