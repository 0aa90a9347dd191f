"""Fault injection, processes: a killed launcher takes its workers down; a fully unreadable data set on
2 GLOO ranks ends with one DataError line, no desync (issue 14)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT, _clean_env


@pytest.mark.slow
def test_killing_the_launcher_stops_its_workers(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text("import os, sys, time\n"
                      "from paddle_recipes.runtime import distributed as d\n"
                      "info = d.setup(seed=0)\n"
                      "open(os.path.join(sys.argv[1], f'pid{info.rank}'), 'w').write(str(os.getpid()))\n"
                      "time.sleep(120)\n")
    launcher = subprocess.Popen([sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2",
                                 "--log_dir", str(tmp_path / "log"), str(script), str(tmp_path)],
                                env=_clean_env(), cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    pids = []
    try:
        for _ in range(240):
            if (tmp_path / "pid0").exists() and (tmp_path / "pid1").exists():
                break
            time.sleep(0.5)
        pids = [int((tmp_path / f"pid{r}").read_text()) for r in (0, 1)]
        os.killpg(launcher.pid, 9)  # the workers run in their own sessions: this does not reach them
        launcher.wait()
        deadline = time.time() + 30
        alive = pids
        while alive and time.time() < deadline:
            time.sleep(0.5)
            alive = [p for p in pids if _alive(p)]
        assert not alive, f"workers {alive} kept running after the launcher died"
    finally:
        for p in pids:
            if _alive(p):
                os.kill(p, 9)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_ocr_fully_corrupt_set_two_ranks_fails_cleanly(tmp_path):
    """Every image unreadable, 2 GLOO ranks: the set is refused when it is built (the image reader finds no loadable
    sample), one DataError line on each rank and a non-zero exit; no gloo desync, no 'trained 0 steps, exit 0'."""
    d = tmp_path / "bad"
    d.mkdir()
    lines = []
    for i in range(32):
        (d / f"{i}.jpg").write_bytes(b"\xff\xd8 not really a jpeg " + bytes([i]))
        lines.append(f"{i}.jpg\t啊阿")
    (d / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ds = ["format=label_file", f"data_dir={d}", f"label_file_list=[{d / 'train.txt'}]"]
    cmd = [sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2", "--log_dir", str(tmp_path / "log"),
           str(REPO_ROOT / "recipes" / "ocr_rec.py"), "-c", str(REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml"),
           "-o", f"Global.output_dir={tmp_path / 'out'}", "Global.epochs=1", "Train.loader.batch_size_per_card=8",
           *[f"Train.dataset.{x}" for x in ds], *[f"Eval.dataset.{x}" for x in ds]]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=_clean_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    logs = "".join((tmp_path / "log" / f"workerlog.{r}").read_text(errors="replace") for r in (0, 1))
    for r in (0, 1):
        log = (tmp_path / "log" / f"workerlog.{r}").read_text(errors="replace")
        assert (f"ocr_rec: error: Train.dataset: no usable samples in {d / 'train.txt'} (Train.dataset: skipped 32 "
                "samples: corrupt_image=32)") in log, log[-2000:]
    for bad in ("EnforceNotMet", "Blocking queue", "Traceback"):
        assert bad not in logs, bad
    assert not (tmp_path / "out" / "summary.json").exists()
