"""Fault suite: no process outlives its parent (issue 21 item 9).

Found after `pytest -m slow`: benchmark ranks (and their DataLoader workers, which share the command line)
alive 46 min later with parent pid 1, blocked in a pipe read. Three paths, three tests:
- a DataLoader worker whose process is killed: paddle's own watchdog polls every 5 s and can block forever
  in a pipe read; ours (PR_SET_PDEATHSIG, set in seed_worker) kills it at once;
- the benchmark harness's launcher (its own session, so a kill of the harness does not reach it) now gets
  SIGTERM when the harness dies (preexec_fn=die_with_parent), and stops its ranks;
- the suite itself: conftest.pytest_sessionfinish fails the run when a process carrying the session's mark
  is left (session_processes, tested here).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from conftest import REPO_ROOT, _clean_env, session_processes

LOADER_CHILD = """
import multiprocessing, sys, time
import numpy as np, paddle
from paddle_recipes.data import LoaderConfig, build_loader

class Slow(paddle.io.Dataset):
    def __len__(self):
        return 10000
    def __getitem__(self, i):
        time.sleep(0.01)
        return np.zeros(4, "float32")

ds = Slow()
it = iter(build_loader(ds, paddle.io.BatchSampler(ds, batch_size=2), LoaderConfig(num_workers=2)))
next(it)
print(*[p.pid for p in multiprocessing.active_children()], flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids, seconds: float) -> list[int]:
    deadline = time.time() + seconds
    alive = list(pids)
    while alive and time.time() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if _alive(p)]
    return alive


def _kill_all(pids):
    for p in pids:
        if _alive(p):
            os.kill(p, signal.SIGKILL)


def test_dataloader_workers_die_with_their_process():
    child = subprocess.Popen([sys.executable, "-c", LOADER_CHILD], cwd=REPO_ROOT, env=_clean_env(),
                             stdout=subprocess.PIPE, text=True)
    workers = []
    try:
        workers = [int(x) for x in child.stdout.readline().split()]
        assert len(workers) == 2
        child.kill()
        child.wait()
        t0 = time.time()
        alive = _wait_gone(workers, 10)
        assert not alive, f"workers {alive} outlived their process"
        assert time.time() - t0 < 2.0  # paddle's own watchdog: up to 5 s, or never when blocked in a read
    finally:
        child.kill()
        _kill_all(workers)


HARNESS_CHILD = """
import subprocess, sys, time
from paddle_recipes.runtime.lifetime import die_with_parent
# as benchmarks/harness/runner.run_row launches a row: the launcher in its own session
p = subprocess.Popen([sys.executable, "-m", "paddle.distributed.launch", "--nproc_per_node", "2", "--log_dir",
                      sys.argv[1] + "/log", sys.argv[2], sys.argv[1]], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
print(p.pid, flush=True)
time.sleep(300)
"""


def test_harness_launch_stops_when_the_harness_is_killed(tmp_path):
    loop = tmp_path / "loop.py"
    loop.write_text("import os, sys, time\n"
                    "from paddle_recipes.runtime import distributed as d\n"
                    "info = d.setup(seed=0)\n"
                    "open(os.path.join(sys.argv[1], f'pid{info.rank}'), 'w').write(str(os.getpid()))\n"
                    "time.sleep(300)\n")
    harness = subprocess.Popen([sys.executable, "-c", HARNESS_CHILD, str(tmp_path), str(loop)], cwd=REPO_ROOT,
                               env=_clean_env(), stdout=subprocess.PIPE, text=True)
    pids = []
    try:
        launcher = int(harness.stdout.readline())
        pids = [launcher]
        for _ in range(240):
            if (tmp_path / "pid0").exists() and (tmp_path / "pid1").exists():
                break
            time.sleep(0.5)
        pids += [int((tmp_path / f"pid{r}").read_text()) for r in (0, 1)]
        harness.kill()  # SIGKILL: nothing of the harness runs any more
        harness.wait()
        alive = _wait_gone(pids, 20)
        assert not alive, f"launcher/ranks {alive} outlived the harness"
    finally:
        harness.kill()
        _kill_all(pids)


def test_session_mark_finds_left_processes():
    """What conftest.pytest_sessionfinish relies on: a detached process of this session is found."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=_clean_env(),
                         start_new_session=True)
    try:
        assert p.pid in session_processes()
    finally:
        p.kill()
        p.wait()
    assert p.pid not in session_processes()
