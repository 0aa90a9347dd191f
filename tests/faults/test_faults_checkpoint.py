"""Fault injection, checkpoints and the output dir (issue 14): non-finite states, atomic re-saves, stale temp
folders, disk full / read-only, `latest` = newest state, resume=auto, the output-dir lock, incompatible
checkpoints. Data faults: test_faults_data.py; processes: test_faults_distributed.py."""
from __future__ import annotations

import errno
import logging
import os
import socket
import subprocess
import sys
import time
import uuid

import numpy as np
import paddle
import pytest

from conftest import REPO_ROOT, _clean_env
from paddle_recipes.checkpoint import format as ckpt
from paddle_recipes.checkpoint.format import (CheckpointError, NonFiniteStateError, clean_stale, load_checkpoint,
                                              resolve_checkpoint, save_checkpoint)
from paddle_recipes.checkpoint.rundir import OutputLock
from paddle_recipes.checkpoint.compare import check_compatible
from paddle_recipes.checkpoint.resume import resume_source
from paddle_recipes.train.trainer import Trainer, TrainerOptions


def _state(value: float, step: int) -> dict:
    model = paddle.nn.Linear(2, 2)
    for p in model.parameters():
        p.set_value(np.full(p.shape, value, np.float32))
    return {"model": model.state_dict(), "global_step": step}


def _weight(folder) -> float:
    return float(load_checkpoint(folder)["model"]["weight"].numpy()[0, 0])


# ----------------------------------------------------------------------------- non-finite / re-save
def test_nonfinite_state_is_refused_and_previous_kept(tmp_path):
    save_checkpoint(tmp_path, _state(1.0, 1), "step_1")
    bad = _state(float("nan"), 2)
    with pytest.raises(NonFiniteStateError, match=r"step_2: model tensor 'weight' holds inf/nan; the previous "
                                                  r"checkpoint \(step_1\) is kept"):
        save_checkpoint(tmp_path, bad, "step_2")
    assert (tmp_path / "latest").read_text().strip() == "step_1" and not (tmp_path / "step_2").exists()
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_resaving_a_tag_is_atomic_and_recoverable(tmp_path):
    save_checkpoint(tmp_path, _state(1.0, 1), "best")
    save_checkpoint(tmp_path, _state(2.0, 2), "best")  # renameat2 exchange: `best` never absent
    assert _weight(tmp_path / "best") == 2.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best", "latest"]
    # the fallback path crashed between its two renames: only the trash copy exists
    os.replace(tmp_path / "best", tmp_path / ".best.old")
    assert resolve_checkpoint(tmp_path) == tmp_path / ".best.old"  # a resume still finds it
    clean_stale(tmp_path)
    assert _weight(tmp_path) == 2.0 and not (tmp_path / ".best.old").exists()


def test_stale_temp_folders_are_cleaned(tmp_path):
    save_checkpoint(tmp_path, _state(1.0, 1), "step_1")
    (tmp_path / ".step_2.tmp-abc").mkdir()
    (tmp_path / ".step_2.tmp-abc" / "model.pdparams").write_bytes(b"half")
    (tmp_path / ".latest.xyz").write_text("step_2")
    removed = clean_stale(tmp_path)
    assert sorted(removed) == [".latest.xyz", ".step_2.tmp-abc"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step_1"]


# ----------------------------------------------------------------------------- disk full / read-only
def _fail_writes(monkeypatch, err, times):
    real = ckpt.paddle.save
    calls = {"n": 0}

    def fake(obj, path, *a, **k):
        calls["n"] += 1
        if calls["n"] <= times:
            raise OSError(err, os.strerror(err), path)
        return real(obj, path, *a, **k)

    monkeypatch.setattr(ckpt.paddle, "save", fake)
    return calls


def test_disk_full_is_one_line_and_previous_kept(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, _state(1.0, 1), "step_1")
    _fail_writes(monkeypatch, errno.ENOSPC, times=2)
    with pytest.raises(CheckpointError) as err:
        save_checkpoint(tmp_path, _state(2.0, 2), "step_2")
    msg = str(err.value)
    assert msg == (f"cannot write checkpoint {tmp_path / 'step_2'}: No space left on device; "
                   "the previous checkpoint (step_1) is kept")
    assert _weight(tmp_path) == 1.0 and sorted(p.name for p in tmp_path.iterdir()) == ["latest", "step_1"]


def test_disk_full_prunes_old_checkpoints_then_retries(tmp_path, monkeypatch):
    for i in (1, 2, 3):
        save_checkpoint(tmp_path, _state(float(i), i), f"step_{i}", keep_last=3)
        time.sleep(0.01)
    save_checkpoint(tmp_path, _state(9.0, 9), "best", keep_last=3)
    save_checkpoint(tmp_path, _state(3.0, 3), "step_3", keep_last=3)  # latest -> step_3
    _fail_writes(monkeypatch, errno.ENOSPC, times=1)
    save_checkpoint(tmp_path, _state(4.0, 4), "step_4", keep_last=3)
    # old ones were freed before the retry; the newest valid one (step_3) and best survived
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best", "latest", "step_3", "step_4"]
    assert _weight(tmp_path) == 4.0


def test_read_only_output_is_one_line(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, _state(1.0, 1), "step_1")

    def ro(*a, **k):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(ckpt.tempfile, "mkdtemp", ro)
    with pytest.raises(CheckpointError, match=r"step_2: Read-only file system; the previous checkpoint \(step_1\)"):
        save_checkpoint(tmp_path, _state(2.0, 2), "step_2")
    assert _weight(tmp_path) == 1.0


@pytest.fixture
def tmpfs(tmp_path):
    """A real 1 MB tmpfs (needs root and mount rights; skipped elsewhere)."""
    mnt = tmp_path / f"tmpfs-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root / no mount rights)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_real_full_disk_keeps_previous_checkpoint(tmpfs):
    big = paddle.nn.Linear(256, 256)  # ~260 KB per checkpoint: the 1 MB disk holds about three
    root = tmpfs / "checkpoints"
    for i in range(8):
        try:
            save_checkpoint(root, {"model": big.state_dict(), "global_step": i}, "best", keep_last=1)
        except CheckpointError as exc:
            assert "No space left on device" in str(exc) and "the previous checkpoint (best) is kept" in str(exc)
            break
        # fill the disk a bit more each round until a save fails
        (tmpfs / f"ballast{i}").write_bytes(b"\0" * 200_000) if i < 7 else None
    else:
        pytest.fail("the 1 MB tmpfs never filled up")
    state = load_checkpoint(root)  # the previous `best` is complete and readable
    assert state["model"]["weight"].shape == [256, 256]
    assert not [p for p in root.iterdir() if ".tmp-" in p.name]


def test_real_read_only_dir_keeps_previous_checkpoint(tmpfs):
    root = tmpfs / "checkpoints"
    save_checkpoint(root, _state(1.0, 1), "step_1")
    if subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], capture_output=True).returncode != 0:
        pytest.skip("cannot remount read-only")
    with pytest.raises(CheckpointError, match=r"step_2: Read-only file system; the previous checkpoint \(step_1\)"):
        save_checkpoint(root, _state(2.0, 2), "step_2")
    assert _weight(root) == 1.0


# ----------------------------------------------------------------------------- latest = newest state
def test_latest_is_newest_state_with_save_every_epochs_0(tmp_path):
    model = paddle.nn.Linear(2, 1)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    x = paddle.io.TensorDataset([paddle.randn([8, 2]), paddle.randn([8, 1])])
    loader = paddle.io.DataLoader(x, batch_size=4)
    scores = iter([0.9, 0.1, 0.2])  # best after epoch 1 only

    def step(m, b):
        return {"loss": paddle.nn.functional.mse_loss(m(b[0]), b[1])}

    t = Trainer(model, opt, step, loader, eval_fn=lambda m: {"acc": next(scores)}, output_dir=str(tmp_path),
                options=TrainerOptions(epochs=3, save_every_epochs=0, main_metric="acc"))
    t.fit()
    state = load_checkpoint(tmp_path / "checkpoints")
    assert state["global_step"] == 6 and state["epoch"] == 3  # not best's step 2
    assert load_checkpoint(tmp_path / "checkpoints" / "best")["global_step"] == 2


def test_resume_auto_logs_fresh_or_resumed(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="paddle_recipes.checkpoint.format"):
        assert resume_source("auto", tmp_path) is None
        save_checkpoint(tmp_path / "checkpoints", _state(1.0, 1), "step_1")
        assert resume_source("auto", tmp_path) == str(tmp_path / "checkpoints")
    text = caplog.text
    assert "no checkpoint in" in text and "starting fresh" in text and "resuming from" in text


# ----------------------------------------------------------------------------- lock
def test_output_lock_live_stale_and_reentrant(tmp_path, caplog):
    lock_file = tmp_path / ".lock"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock_file.write_text(f"{sleeper.pid} {socket.gethostname()}\n")
        with pytest.raises(CheckpointError, match=f"in use by pid {sleeper.pid}"):
            OutputLock(tmp_path).acquire()
    finally:
        sleeper.kill()
        sleeper.wait()
    with caplog.at_level(logging.WARNING):
        lock = OutputLock(tmp_path).acquire()  # the pid is dead now: taken over
    assert "taking over stale lock" in caplog.text
    assert lock_file.read_text().split()[0] == str(os.getpid())
    OutputLock(tmp_path).acquire()  # re-entrant in one process
    lock.release()
    assert not lock_file.exists()


def test_two_runs_cannot_share_an_output_dir(tmp_path):
    script = ("import sys, time\n"
              "from paddle_recipes.checkpoint.rundir import OutputLock\n"
              "OutputLock(sys.argv[1]).acquire(); print('locked', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              env=_clean_env(), cwd=REPO_ROOT)
    try:
        assert holder.stdout.readline().strip() == "locked"
        model = paddle.nn.Linear(2, 1)
        opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
        loader = paddle.io.DataLoader(paddle.io.TensorDataset([paddle.randn([4, 2])]), batch_size=4)
        t = Trainer(model, opt, lambda m, b: {"loss": m(b[0]).mean()}, loader, output_dir=str(tmp_path))
        with pytest.raises(CheckpointError, match=f"is in use by pid {holder.pid}"):
            t.fit()
        assert not (tmp_path / "checkpoints").exists()
    finally:
        holder.kill()
        holder.wait()


# ----------------------------------------------------------------------------- compatibility
def test_incompatible_checkpoint_names_the_keys(tmp_path):
    cfg_old = {"Architecture": {"Head": {"name": "CTCHead", "mid_channels": 0}}, "Global": {"epochs": 1}}
    cfg_new = {"Architecture": {"Head": {"name": "CTCHead", "mid_channels": 64}}, "Global": {"epochs": 9}}
    save_checkpoint(tmp_path, {"model": paddle.nn.Linear(4, 10).state_dict(), "config": cfg_old}, "step_1")
    state = load_checkpoint(tmp_path)
    with pytest.raises(CheckpointError) as err:
        check_compatible(state, paddle.nn.Linear(4, 12).state_dict(), cfg_new)
    msg = str(err.value)
    assert "Architecture.Head.mid_channels: 0 in checkpoint, 64 now" in msg
    assert "weight [4, 10] vs [4, 12] now" in msg and "Global" not in msg
    check_compatible(state, paddle.nn.Linear(4, 10).state_dict(), cfg_old)  # same model: fine
