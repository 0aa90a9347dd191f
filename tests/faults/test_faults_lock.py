"""Fault suite: the output-dir lock (issue 21 item 3).

The lock is taken before a training run writes anything into its output dir, and acquisition is atomic:
a lock file that exists but is not yet written is held, never taken as stale.
"""
from __future__ import annotations

import fcntl
import multiprocessing as mp
import os
import socket
import time

import pytest

from conftest import REPO_ROOT, run_python
from paddle_recipes.checkpoint.format import CheckpointError
from paddle_recipes.checkpoint.rundir import OutputLock

SMOKE = REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml"


def _contend(root: str, rounds: int, start: float, out) -> None:
    """Acquire/release `rounds` times; inside the lock create `inside` with O_EXCL: a second holder fails."""
    while time.time() < start:
        pass
    got = violations = 0
    for _ in range(rounds):
        lock = OutputLock(root)
        try:
            lock.acquire()
        except CheckpointError:
            continue
        got += 1
        try:
            fd = os.open(os.path.join(root, "inside"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            violations += 1
        else:
            os.close(fd)
            time.sleep(0.0002)
            os.unlink(os.path.join(root, "inside"))
        lock.release()
    out.put((got, violations))


def test_lock_is_exclusive_under_many_concurrent_acquirers(tmp_path):
    """12 processes x 200 attempts at once, starting from a stale lock of a dead pid: never two holders."""
    (tmp_path / ".lock").write_text(f"999999999 {socket.gethostname()}\n")  # stale: no such pid
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    start = time.time() + 0.5
    procs = [ctx.Process(target=_contend, args=(str(tmp_path), 200, start, out)) for _ in range(12)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert sum(v for _, v in results) == 0, results
    assert sum(g for g, _ in results) > 12  # the lock changed hands many times (else the test proves nothing)
    assert not (tmp_path / ".lock").exists()  # the last holder removed it


def test_lock_created_but_not_yet_written_is_held(tmp_path):
    """The race of issue 21: a holder between creating `.lock` and writing its pid is not 'stale'."""
    fd = os.open(tmp_path / ".lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # locked, still empty
        with pytest.raises(CheckpointError, match="is in use by another process"):
            OutputLock(tmp_path).acquire()
    finally:
        os.close(fd)
    lock = OutputLock(tmp_path).acquire()  # flock gone: an empty file of a dead writer is stale
    assert (tmp_path / ".lock").read_text().split()[0] == str(os.getpid())
    lock.release()


def test_second_run_writes_nothing_before_the_lock(tmp_path):
    """A training run into a locked output dir exits 2 in one line and leaves config.yml and train.log alone."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.yml").write_text("the first run's config\n")
    (out / "train.log").write_text("the first run's log\n")
    with OutputLock(out):
        proc = run_python([REPO_ROOT / "recipes" / "ocr_rec.py", "-c", SMOKE, "-o", f"Global.output_dir={out}",
                           f"Synthetic.root={tmp_path / 'data'}", "Optimizer.lr=0.5"], check=False, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("ocr_rec:") or "Traceback" in ln]
    assert errors == [f"ocr_rec: error: output dir {out} is in use by pid {os.getpid()} on {socket.gethostname()} "
                      f"(lock {out / '.lock'}); use another Global.output_dir or stop that run"], proc.stderr[-2000:]
    assert (out / "config.yml").read_text() == "the first run's config\n"
    assert (out / "train.log").read_text() == "the first run's log\n"
    assert not (tmp_path / "data").exists()  # nor did it start building data
