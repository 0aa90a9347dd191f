"""Fault-injection suite, part 2: checkpoints, output dir, LMDB, images, launcher (issue 14)."""
from __future__ import annotations

import errno
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid

import numpy as np
import paddle
import pytest

from conftest import REPO_ROOT, _clean_env
from paddle_recipes import checkpoint as ckpt
from paddle_recipes.checkpoint import (CheckpointError, NonFiniteStateError, OutputLock, check_compatible,
                                       clean_stale, load_checkpoint, resolve_checkpoint, resume_source,
                                       save_checkpoint)
from paddle_recipes.trainer import Trainer


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

    t = Trainer(model, opt, step, loader, epochs=3, save_every_epochs=0, eval_fn=lambda m: {"acc": next(scores)},
                main_metric="acc", output_dir=str(tmp_path))
    t.fit()
    state = load_checkpoint(tmp_path / "checkpoints")
    assert state["global_step"] == 6 and state["epoch"] == 3  # not best's step 2
    assert load_checkpoint(tmp_path / "checkpoints" / "best")["global_step"] == 2


def test_resume_auto_logs_fresh_or_resumed(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="paddle_recipes.checkpoint"):
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
              "from paddle_recipes.checkpoint import OutputLock\n"
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


# ----------------------------------------------------------------------------- LMDB / image guards
def test_truncated_lmdb_is_one_line_not_sigbus(tmp_path):
    code = ("import os, sys\n"
            "from paddle_recipes.data import write_lmdb, LmdbDataset, LmdbFormatError\n"
            "d = sys.argv[1]\n"
            "write_lmdb(d, [(os.urandom(5000), f'l{i}') for i in range(100)], map_size=1 << 22)\n"
            "f = os.path.join(d, 'data.mdb'); os.truncate(f, os.path.getsize(f) // 2)\n"
            "try:\n    ds = LmdbDataset(d); ds[len(ds) - 1]\n"
            "except LmdbFormatError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "lm")], capture_output=True, text=True,
                         env=_clean_env(), cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]  # rc 135 = SIGBUS
    assert f"ERR {tmp_path / 'lm' / 'data.mdb'} is truncated" in out.stdout


def _charset(tmp_path):
    from paddle_recipes.tasks.ocr.charset import CharDict

    f = tmp_path / "dict.txt"
    f.write_text("a\nb\nc\n", encoding="utf-8")
    return CharDict.from_file(str(f))


def _png(w, h):
    import cv2

    return cv2.imencode(".png", np.zeros((h, w, 3), np.uint8))[1].tobytes()


def test_non_utf8_lmdb_label_is_a_counted_skip(tmp_path):
    import lmdb

    from paddle_recipes.data import write_lmdb
    from paddle_recipes.tasks.ocr.dataset import DatasetConfig, RecDataset

    write_lmdb(tmp_path / "lm", [(_png(20, 10), "ab"), (_png(20, 10), "x"), (_png(20, 10), "ca")])
    env = lmdb.open(str(tmp_path / "lm"), map_size=1 << 24)
    with env.begin(write=True) as txn:
        txn.put(b"label-000000002", b"\xff\xfe")
    env.close()
    ds = RecDataset(DatasetConfig(format="lmdb", data_dir=str(tmp_path / "lm")), _charset(tmp_path), (3, 32, 64), 6)
    assert len(ds) == 2 and ds.stats.counts()["malformed_line"] == 1
    assert any(w.endswith("lm:2") for w in ds.stats.places["malformed_line"])


def test_oversized_image_is_a_counted_skip_before_decode(tmp_path, monkeypatch):
    from paddle_recipes.tasks.ocr import dataset as ocr_ds
    from paddle_recipes.tasks.ocr.dataset import DatasetConfig, RecDataset, collate

    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "small.png").write_bytes(_png(40, 16))
    (tmp_path / "img" / "huge.png").write_bytes(_png(400, 300))  # 120000 px > the 50000 limit below
    (tmp_path / "train.txt").write_text("small.png\tab\nhuge.png\tba\n", encoding="utf-8")
    decoded = []
    real = ocr_ds.decode_image
    monkeypatch.setattr(ocr_ds, "decode_image", lambda data: decoded.append(len(data)) or real(data))
    cfg = DatasetConfig(data_dir=str(tmp_path / "img"), label_file_list=[str(tmp_path / "train.txt")],
                        max_image_pixels=50_000)
    ds = RecDataset(cfg, _charset(tmp_path), (3, 32, 64), 6)
    batch = collate([ds[0], ds[1]])
    assert batch["text"] == ["ab"] and batch["skipped"] == [f"{tmp_path / 'train.txt'}:2\ttoo_large"]
    assert len(decoded) == 1  # the huge one was never decoded


def test_det_truncated_image_is_one_line_error(tmp_path):
    import json

    import cv2

    from paddle_recipes.data import DataError, LoaderConfig, build_loader
    from paddle_recipes.tasks.det.coco import CocoDetDataset, DetCollate, load_coco

    img = tmp_path / "img"
    img.mkdir()
    cv2.imwrite(str(img / "a.jpg"), np.zeros((64, 64, 3), np.uint8))
    good = (img / "a.jpg").read_bytes()
    (img / "b.jpg").write_bytes(good[: len(good) // 3])  # truncated
    (img / "c.jpg").write_bytes(b"not an image at all")
    images = [{"id": i + 1, "file_name": n, "width": 64, "height": 64} for i, n in enumerate(["a.jpg", "b.jpg", "c.jpg"])]
    images.append({"id": 1, "file_name": "a.jpg", "width": 64, "height": 64})  # duplicate id
    anns = [{"image_id": i, "category_id": 1, "bbox": [4, 4, 20, 20]} for i in (1, 2, 3)]  # no id, no area
    (tmp_path / "ann.json").write_text(json.dumps({"images": images, "annotations": anns,
                                                   "categories": [{"id": 1, "name": "x"}]}))
    idx = load_coco(tmp_path / "ann.json", img)
    assert idx.skipped()["duplicate_image_id"] == 1
    ds = CocoDetDataset(idx)
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=1), LoaderConfig(), collate_fn=DetCollate([64]))
    it = iter(loader)
    next(it)
    with pytest.raises(DataError, match=r"cannot decode image .*b\.jpg \(image id 2\)") as err:
        next(it)
    assert "\n" not in str(err.value)


def test_det_eval_scores_validated_annotations(tmp_path):
    from paddle_recipes.tasks.det.coco import CocoIndex
    from paddle_recipes.tasks.det.metrics import coco_evaluate, index_to_coco

    idx = CocoIndex("x.json", ".", cat_ids=[7], cat_names=["x"])
    idx.records = [{"im_id": 1, "file": "a.jpg", "width": 50, "height": 50,
                    "boxes": np.asarray([[0, 0, 10, 10]], np.float32), "classes": np.asarray([0])}]
    gt = index_to_coco(idx)
    assert gt["annotations"][0]["area"] == 100 and gt["annotations"][0]["id"] == 1
    perfect = {1: np.asarray([[0, 0.9, 0, 0, 10, 10]])}
    assert coco_evaluate(gt, perfect, idx.cat_ids, [1])["mAP"] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- launcher killed
@pytest.mark.slow
def test_killing_the_launcher_stops_its_workers(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text("import os, sys, time\n"
                      "from paddle_recipes import distributed as d\n"
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


# ----------------------------------------------------------------------------- det exact resume (recipe)
@pytest.mark.slow
@pytest.mark.parametrize("nproc", [1, 2])
def test_det_recipe_resume_mid_epoch_is_exact(tmp_path, nproc):
    """Augmentation on, random sizes [64, 96]: stop after 3 optimizer steps (mid-epoch; the end-of-fit
    checkpoint keeps the position), resume to 2 epochs == 2 uninterrupted epochs, bit for bit."""
    from conftest import run_launch

    recipe, smoke = REPO_ROOT / "recipes" / "det_ppyoloe.py", REPO_ROOT / "recipes" / "configs" / "det_ppyoloe_smoke.yml"
    common = ["-c", smoke, "-o", f"Synthetic.root={tmp_path / 'data'}", "Global.eval_every_epochs=0", "Global.epochs=2"]
    spe = 32 // (8 * nproc)  # 32 images, batch 8 per process

    def run(out, *extra):
        run_launch(recipe, [*common, f"Global.output_dir={tmp_path / out}", *extra], nproc=nproc,
                   log_dir=tmp_path / f"log_{out}_{len(extra)}")

    run("full")
    run("split", "Global.max_steps=3")
    first = load_checkpoint(tmp_path / "split" / "checkpoints")
    assert first["global_step"] == 3 and first["batch_in_epoch"] == 3 % spe > 0  # stopped mid-epoch
    run("split", "Global.resume=auto")
    a = load_checkpoint(tmp_path / "full" / "checkpoints")
    b = load_checkpoint(tmp_path / "split" / "checkpoints")
    assert a["global_step"] == b["global_step"] == 2 * spe
    for part, wa, wb in (("model", a["model"], b["model"]), ("ema", a["ema"]["shadow"], b["ema"]["shadow"])):
        for k in wa:
            np.testing.assert_array_equal(wa[k].numpy(), wb[k].numpy(), err_msg=f"{part}.{k}")


# ----------------------------------------------------------------------------- fully corrupt set, 2 ranks
@pytest.mark.slow
def test_ocr_fully_corrupt_set_two_ranks_fails_cleanly(tmp_path):
    """Every image unreadable, 2 GLOO ranks: both ranks run the same (zero-loss) steps, then the run
    stops with one DataError line and a non-zero exit; no gloo desync, no 'trained 0 steps, exit 0'."""
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
    assert "ocr_rec: error: epoch 1: every one of 2 batches was unreadable (0 samples trained)" in logs
    for bad in ("EnforceNotMet", "Blocking queue", "Traceback"):
        assert bad not in logs, bad
    assert not (tmp_path / "out" / "summary.json").exists()
