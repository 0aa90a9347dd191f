"""Shared test helpers.

`run_launch` runs a script under `python -m paddle.distributed.launch` (GLOO on CPU)
and fails with the workers' logs when a rank fails.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _clean_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    # Launch picks these up and would nest inside an outer launch.
    for key in list(env):
        if key.startswith(("PADDLE_TRAINER", "PADDLE_RANK", "PADDLE_LOCAL", "PADDLE_GLOBAL", "PADDLE_WORLD",
                           "PADDLE_CURRENT", "PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB")):
            env.pop(key)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("FLAGS_call_stack_level", "2")
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


def run_launch(script: str | os.PathLike, args: list[str], nproc: int, log_dir: str | os.PathLike,
               timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `script args` on `nproc` local CPU ranks; raise AssertionError with logs on failure."""
    log_dir = Path(log_dir)
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", str(nproc),
           "--log_dir", str(log_dir), str(script), *map(str, args)]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=_clean_env(env), capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        logs = []
        for f in sorted(log_dir.glob("*")):
            if f.is_file():
                logs.append(f"--- {f.name} ---\n" + f.read_text(errors="replace")[-4000:])
        failed = [ln for ln in proc.stderr.splitlines() if "Container rank" in ln or "Exit code" in ln]
        raise AssertionError(f"launch failed rc={proc.returncode}\n" + "\n".join(failed) + f"\ncmd: {' '.join(cmd)}\n"
                             f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}\n" + "\n".join(logs))
    return proc


def run_python(args: list[str], timeout: float = 600, env: dict | None = None,
               check: bool = True) -> subprocess.CompletedProcess:
    """Run `python args...` from the repo root in a clean environment."""
    proc = subprocess.run([sys.executable, *map(str, args)], cwd=REPO_ROOT, env=_clean_env(env),
                          capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"command failed rc={proc.returncode}: {args}\nstdout:\n{proc.stdout[-4000:]}\n"
                             f"stderr:\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture
def launch():
    return run_launch


@pytest.fixture(autouse=True)
def _seed():
    import random

    import numpy as np
    import paddle

    random.seed(0)
    np.random.seed(0)
    paddle.seed(0)
    yield
