"""Fault-injection suite, part 1: data loading, config numbers, non-finite steps (issue 14).

Every test injects one fault and checks what the user sees (one clear error naming the file /
key, or a counted skip) and what is kept. The section "Failure behaviour" of docs/reliability.md names each test.
"""
from __future__ import annotations

import math
import re
import threading

import numpy as np
import paddle
import pytest

from conftest import hang_watchdog

from paddle_recipes.train.accumulate import GradAccumulator
from paddle_recipes.train.amp import Amp, AmpConfig
from paddle_recipes.checkpoint.format import load_checkpoint
from paddle_recipes.train.config import GlobalConfig
from paddle_recipes.config import ConfigError, from_dict, load_config
from paddle_recipes.data import DataError, LoaderConfig, build_loader
from paddle_recipes.train.ema import EmaConfig, ModelEMA
from paddle_recipes.train.optim import OptimizerConfig
from paddle_recipes.train.trainer import NonFiniteError, Trainer, TrainerOptions


@pytest.fixture(autouse=True)
def no_hang():
    """A regression to the old hang fails this test after 120 s instead of blocking the suite."""
    with hang_watchdog(120):
        yield


# ----------------------------------------------------------------------------- loader errors
class RaisingDataset:
    def __init__(self, bad=3, n=8):
        self.bad, self.n = bad, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"cannot decode /data/img_{i}.jpg")
        return np.full(3, i, np.float32)


@pytest.mark.parametrize("num_workers,buffer", [(0, True), (0, False), (1, True)])
def test_getitem_error_reaches_main_process(num_workers, buffer):
    ds = RaisingDataset()
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=2),
                          LoaderConfig(num_workers=num_workers, use_buffer_reader=buffer))
    seen = []
    with pytest.raises(DataError, match=r"sample 3: ValueError: cannot decode /data/img_3.jpg"):
        for batch in loader:
            seen.append(batch)
    assert len(seen) == 1  # the batch before the bad one was delivered


def test_collate_error_is_a_data_error():
    ds = RaisingDataset(bad=-1)

    def bad_collate(samples):
        raise KeyError("label")

    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=4), LoaderConfig(), collate_fn=bad_collate)
    with pytest.raises(DataError, match="collating a batch of 4: KeyError"):
        next(iter(loader))


def test_good_data_passes_unchanged():
    ds = RaisingDataset(bad=-1)
    ours = list(build_loader(ds, paddle.io.BatchSampler(ds, batch_size=4), LoaderConfig()))
    plain = list(paddle.io.DataLoader(ds, batch_sampler=paddle.io.BatchSampler(ds, batch_size=4), return_list=True))
    assert len(ours) == len(plain) == 2
    for a, b in zip(ours, plain):
        assert type(a) is type(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))



class OpenCvThreadsDataset(paddle.io.Dataset):
    """Each sample is cv2.getNumThreads() where it is loaded (in the worker with num_workers > 0)."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        import cv2

        return np.array([cv2.getNumThreads()], np.int64)


@pytest.fixture
def opencv_threads_4():
    """cv2 set to 4 threads for the test (a pool even on a 1-core box), the process's setting restored after."""
    import cv2

    before = cv2.getNumThreads()
    cv2.setNumThreads(4)
    yield cv2
    cv2.setNumThreads(before)


@pytest.mark.parametrize("workers,opencv_num_threads,main_after,in_worker", [(1, 0, 1, 1), (1, -1, 4, 4), (0, 0, 4, 4)])
def test_loader_workers_keep_out_of_the_opencv_thread_pool(opencv_threads_4, workers, opencv_num_threads, main_after,
                                                           in_worker):
    """OpenCV's pthreads pool is not fork-safe: a worker forked while a pool thread holds its lock hangs in its first
    parallel cv2 call (19 of 1500 forks under load, benchmarks/opencv_fork.py). With workers, build_loader makes
    OpenCV serial (LoaderConfig.opencv_num_threads=0) before they fork: the main process and the workers run cv2
    without the pool."""
    cv2 = opencv_threads_4
    ds = OpenCvThreadsDataset()
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=1),
                          LoaderConfig(num_workers=workers, opencv_num_threads=opencv_num_threads))
    assert cv2.getNumThreads() == main_after
    assert [int(b.numpy()[0, 0]) for b in loader] == [in_worker, in_worker]



def test_main_process_loader_thread_has_left_the_os_when_the_epoch_ends():
    """Paddle's per-thread memory statistics take a process-wide lock when a thread that used paddle memory exits,
    after Python's join() returns. A DataLoader worker forked right then inherits the lock held, and its queue
    feeder (putting the batch into shared memory) blocks forever: the intermittent CI hang of
    test_det_augment_and_sizes_resume_exactly[1] (a 0-worker loader, then a 1-worker one; seen with py-spy:
    pthread_rwlock_wrlock in paddle::memory::Stat::Update under _reduce_lodtensor). At the end of an epoch of a
    main-process loader, its reader thread is gone from /proc/self/task before the loop ends (without the wait: 10
    of 50 epochs left it there)."""
    import os
    import threading

    ds = RaisingDataset(bad=-1, n=64)  # 32 batches: more than paddle's queue holds, its thread lives to see
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=2), LoaderConfig(num_workers=0))
    left = []
    for _ in range(50):
        before, new = {t.native_id for t in threading.enumerate()}, set()
        for _batch in loader:
            new |= {t.native_id for t in threading.enumerate() if t.native_id not in before}
        assert new, "the loader ran no reader thread"
        left += [tid for tid in new if os.path.exists(f"/proc/self/task/{tid}")]
    assert left == []


# ----------------------------------------------------------------------------- stuck loader workers
class SleepingDataset(paddle.io.Dataset):
    """(x, y) pairs; from index `stuck` on, __getitem__ sleeps `sleep_s` (in the worker): a worker that never
    delivers, as one blocked in paddle's shared-memory hand-off (_share_filename) does."""

    def __init__(self, stuck=4, sleep_s=60.0, n=8):
        self.stuck, self.sleep_s, self.n = stuck, sleep_s, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import time

        if i >= self.stuck:
            time.sleep(self.sleep_s)
        return np.full(4, i, np.float32), np.full(1, i, np.float32)


def _timeout_line(key: str, seconds: int) -> str:
    return (f"{key}: no batch from its 1 DataLoader worker in {seconds} s (a worker is stuck, or one batch takes "
            f"that long to load); raise {key}.timeout (seconds, 0 = wait forever) or try {key}.use_shared_memory=false")


def test_stuck_train_worker_is_one_line_and_exit_2_not_a_hang(tmp_path, capsys):
    """Paddle 3.3.1's own DataLoader timeout only re-polls while the worker lives: this waited 60 s (forever for a
    real deadlock). Now: after Train.loader.timeout seconds, one line naming the key, exit 2, the worker ended."""
    import multiprocessing
    import time

    from paddle_recipes.cli import exit_on_user_error
    from paddle_recipes.runtime.distributed import DistInfo
    from paddle_recipes.train.build import build_training
    from paddle_recipes.train.config import TrainingConfig

    cfg = from_dict(TrainingConfig, {
        "Global": {"output_dir": str(tmp_path), "epochs": 1, "eval_every_epochs": 0, "save_every_epochs": 0},
        "Optimizer": {"name": "sgd", "lr": 0.01, "schedule": "constant"},
        "Train": {"loader": {"batch_size_per_card": 4, "num_workers": 1, "timeout": 1, "shuffle": False}}})
    steps = []

    def step(model, batch):
        steps.append(1)
        return {"loss": paddle.nn.functional.mse_loss(model(batch[0]), batch[1])}

    before = {p.pid for p in multiprocessing.active_children()}
    run = build_training(cfg, paddle.nn.Linear(4, 1), SleepingDataset(stuck=4), step=step, info=DistInfo())
    t0 = time.monotonic()
    with pytest.raises(SystemExit) as exit_info:
        exit_on_user_error(run.fit, "rec")
    elapsed = time.monotonic() - t0
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"rec: error: {_timeout_line('Train.loader', 1)}"]
    assert steps == [1]  # the first batch (samples 0-3) trained; samples 4-7 never came
    assert elapsed < 30, elapsed  # 1 s timeout + worker start and stop; the stuck sample sleeps 60 s
    assert {p.pid for p in multiprocessing.active_children()} <= before  # the stuck worker was ended


def test_stuck_eval_worker_names_the_eval_key():
    from types import SimpleNamespace

    from paddle_recipes.data import LoaderTimeout
    from paddle_recipes.runtime.distributed import DistInfo
    from paddle_recipes.recipes.base import Recipe
    from paddle_recipes.train.config import EvalLoaderConfig

    cfg = SimpleNamespace(Eval=SimpleNamespace(loader=EvalLoaderConfig(batch_size_per_card=2, num_workers=1,
                                                                          timeout=1)))
    loader = Recipe(cfg, DistInfo()).eval_loader(SleepingDataset(stuck=0, n=4))
    with pytest.raises(LoaderTimeout) as err:
        next(iter(loader))
    assert str(err.value) == _timeout_line("Eval.loader", 1)
    assert isinstance(err.value, DataError)  # a user error: the CLI prints it in one line and exits 2


def test_loader_timeout_counts_only_the_wait_for_a_batch():
    """Samples that take 0.3 s and a training step of 3 s between batches, with timeout 2 s: no timeout, every
    batch arrives (the step between two waits is not a wait; 2 s leaves room for the worker's fork on a loaded
    2-core box, where 1 s was exceeded about once in ten runs)."""
    import time

    ds = SleepingDataset(stuck=0, sleep_s=0.3, n=3)
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=1), LoaderConfig(num_workers=1, timeout=2))
    seen = []
    for batch in loader:
        seen.append(int(batch[0].numpy()[0, 0]))
        time.sleep(3.0)
    assert seen == [0, 1, 2]


# ----------------------------------------------------------------------------- config numbers
from dataclasses import dataclass, field  # noqa: E402


@dataclass
class _Loader(LoaderConfig):
    batch_size_per_card: int = 4


@dataclass
class _Global(GlobalConfig):
    image_shape: list = field(default_factory=lambda: [3, 32, 128])


@dataclass
class _Schema:
    Global: _Global = field(default_factory=_Global)
    Optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    AMP: AmpConfig = field(default_factory=AmpConfig)
    EMA: EmaConfig = field(default_factory=EmaConfig)
    loader: _Loader = field(default_factory=_Loader)


@pytest.mark.parametrize("override,message", [
    ("Optimizer.lr=.nan", "Optimizer.lr must be a finite number"),
    ("Optimizer.lr=.inf", "Optimizer.lr must be a finite number"),
    ("Optimizer.lr=-1", "Optimizer.lr must be > 0"),
    ("Optimizer.lr=1e6", "absurdly large"),
    ("Optimizer.beta2=1.5", "Optimizer.beta2 must be < 1"),
    ("loader.batch_size_per_card=0", "loader: batch_size_per_card must be >= 1"),
    ("loader.batch_size_per_card=-1", "batch_size_per_card must be >= 1"),
    ("loader.num_workers=-1", "num_workers must be >= 0"),
    ("loader.opencv_num_threads=-2", "opencv_num_threads must be >= -1"),
    ("EMA.decay=2", "EMA.decay must be < 1"),
    ("EMA.decay=0", "EMA.decay must be > 0"),
    ("AMP.decr_ratio=2", "AMP.decr_ratio must be <= 1"),
    ("Global.epochs=-1", "Global.epochs must be >= 1"),
    ("Global.epochs=0", "Global.epochs must be >= 1"),
    ("Global.save_every_steps=-5", "Global.save_every_steps must be >= 0"),
    ("Global.output_dir=", "Global.output_dir is empty"),
    ("Global.device=gpuu", "Global.device 'gpuu' is not a device"),
    ("Global.image_shape=[3,32]", r"Global.image_shape must be \[C, H, W\]"),
    ("Global.image_shape=[3,0,100]", "H, W >= 1"),
])
def test_bad_config_numbers_are_one_line_errors(override, message):
    with pytest.raises(ConfigError, match=message) as err:
        load_config(None, [override], _Schema)
    assert "\n" not in str(err.value)


def test_good_config_and_new_keys_load():
    cfg = load_config(None, ["Global.save_every_steps=50", "Global.max_nonfinite_steps=3", "Global.device=gpu:1"],
                      _Schema)
    assert (cfg.Global.save_every_steps, cfg.Global.max_nonfinite_steps, cfg.Global.device) == (50, 3, "gpu:1")
    assert GlobalConfig().max_nonfinite_steps == 20 and GlobalConfig().save_every_steps == 0


def test_empty_yaml_and_missing_global_are_errors(tmp_path):
    empty = tmp_path / "empty.yml"
    empty.write_text("# nothing\n")
    with pytest.raises(ConfigError, match="empty.yml: the config file is empty"):
        load_config(empty, [], _Schema)
    no_global = tmp_path / "ng.yml"
    no_global.write_text("Optimizer: {lr: 0.1}\n")
    with pytest.raises(ConfigError, match="ng.yml: no 'Global' section"):
        load_config(no_global, [], _Schema)


def test_accumulate_steps_zero_is_a_config_error():
    with pytest.raises(ConfigError, match="accumulate_steps"):
        GradAccumulator(0)


# ----------------------------------------------------------------------------- non-finite steps
class PoisonSet(paddle.io.Dataset):
    """Samples whose index is in `poison` are all-NaN (like an exploding batch)."""

    def __init__(self, n=16, poison=()):
        rng = np.random.default_rng(0)
        self.x = rng.normal(size=(n, 4)).astype("float32")
        self.y = rng.normal(size=(n, 1)).astype("float32")
        self.poison = set(poison)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i] * (np.float32("nan") if i in self.poison else np.float32(1))
        return x, self.y[i]


def _step(model, batch):
    x, y = batch
    return {"loss": paddle.nn.functional.mse_loss(model(x), y)}


def _trainer(tmp_path, ds, epochs=1, max_nonfinite=20, ema=True, accumulate=1):
    paddle.seed(0)
    model = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.BatchNorm1D(8), paddle.nn.Linear(8, 1))
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    loader = paddle.io.DataLoader(ds, batch_sampler=paddle.io.BatchSampler(ds, batch_size=4), num_workers=0)
    return Trainer(model, opt, _step, loader, amp=Amp(AmpConfig()), ema=ModelEMA(model, decay=0.5) if ema else None,
                   accumulator=GradAccumulator(accumulate), output_dir=str(tmp_path / "run"),
                   options=TrainerOptions(epochs=epochs, save_every_epochs=1, max_nonfinite_steps=max_nonfinite,
                                          log_every=100))


def _bn_stats(trainer):
    bn = trainer.model[1]
    return bn._mean.numpy().copy(), bn._variance.numpy().copy()


def test_skipped_step_leaves_bn_and_ema_untouched(tmp_path):
    # batches: [0..3] good, [4..7] NaN, [8..11] good, [12..15] good
    ds = PoisonSet(poison=range(4, 8))
    t = _trainer(tmp_path, ds)
    bn_seen, ema_seen = [], []

    class Spy:
        def on_step_end(self, trainer):
            bn_seen.append(_bn_stats(trainer))
            ema_seen.append({k: v.numpy().copy() for k, v in trainer.ema.shadow.items()})

    from paddle_recipes.train.trainer import Callback

    t.callbacks.append(type("S", (Callback,), {"on_step_end": Spy.on_step_end})())
    t.fit()
    assert t.skipped_steps == 1 and t.global_step == 4
    np.testing.assert_array_equal(bn_seen[0][0], bn_seen[1][0])  # step 2 skipped: BN stats restored
    np.testing.assert_array_equal(bn_seen[0][1], bn_seen[1][1])
    for k in ema_seen[0]:
        np.testing.assert_array_equal(ema_seen[0][k], ema_seen[1][k])  # EMA not updated on the skip
    state = load_checkpoint(tmp_path / "run" / "checkpoints")
    for part, weights in (("model", state["model"]), ("ema", state["ema"]["shadow"])):
        assert all(np.isfinite(v.numpy()).all() for v in weights.values()), part
    assert state["amp"]["skipped_steps"] == 1  # survives resume; summary.json reads trainer.skipped_steps


def test_skip_inside_accumulation_window_restores_window_start(tmp_path):
    ds = PoisonSet(poison=range(4, 8))  # 2nd micro-batch of the 1st window
    t = _trainer(tmp_path, ds, accumulate=2, ema=False)
    start = _bn_stats(t)
    bn_after = []
    from paddle_recipes.train.trainer import Callback

    t.callbacks.append(type("S", (Callback,), {"on_step_end": lambda self, tr: bn_after.append(_bn_stats(tr))})())
    t.fit()
    assert t.skipped_steps == 1
    np.testing.assert_array_equal(bn_after[0][0], start[0])


def test_persistent_nonfinite_stops_with_clear_error(tmp_path):
    ds = PoisonSet(poison=range(16))
    t = _trainer(tmp_path, ds, epochs=3, max_nonfinite=3)
    with pytest.raises(NonFiniteError, match="inf or nan for 3 optimizer steps in a row"):
        t.fit()
    assert not (tmp_path / "run" / "checkpoints" / "latest").exists()


def test_nan_weights_are_never_checkpointed(tmp_path):
    # skipping off: NaN reaches the weights in the last batch; the run stops before saving them
    ds = PoisonSet(poison=range(12, 16))
    t = _trainer(tmp_path, ds, epochs=2, ema=False)
    t.amp = Amp(AmpConfig(skip_nonfinite_steps=False))
    with pytest.raises(NonFiniteError, match="training diverged: model tensor '.*' holds inf/nan at global_step 4; "
                                             "no checkpoint was written"):
        t.fit()
    assert not (tmp_path / "run" / "checkpoints" / "latest").exists()


# ----------------------------------------------------------------------------- unreadable batches
class AllBadSet(paddle.io.Dataset):
    """Like the OCR set: an unreadable sample is a ("skip", where, reason) record."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return ("skip", f"train.txt:{i + 1}", "corrupt_image")


def test_fully_corrupt_ocr_set_is_an_error_not_zero_steps(tmp_path):
    from paddle_recipes.data.skips import unpack_skipped
    from paddle_recipes.tasks.ocr_rec.dataset import collate

    ds = AllBadSet()
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=4), LoaderConfig(), collate_fn=collate)
    batches = list(loader)
    assert len(batches) == 2  # not dropped by paddle's DataLoader: ranks stay in step
    assert [w for w, _ in unpack_skipped(batches[0])] == ["train.txt:1", "train.txt:2", "train.txt:3", "train.txt:4"]

    model = paddle.nn.Linear(2, 2)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())

    def step(m, batch):  # the OCR recipe's all-skipped path: a zero loss that keeps DDP in step
        return {"loss": paddle.add_n([p.sum() * 0.0 for p in m.parameters()])}

    t = Trainer(model, opt, step, loader, batch_size_fn=lambda b: len(b["text"]))  # 1 epoch by default
    with pytest.raises(DataError, match="every one of 2 batches was unreadable"):
        t.fit()


def test_eval_on_zero_samples_is_an_error():
    from paddle_recipes.tasks.ocr_rec.metrics import RecMetric

    with pytest.raises(DataError, match="0 readable samples"):
        RecMetric.from_state({"correct": 0.0, "total": 0.0, "norm_ed_sum": 0.0})
    assert math.isclose(RecMetric.from_state({"correct": 1.0, "total": 2.0, "norm_ed_sum": 0.5})["acc"], 0.5)


# ----------------------------------------------------------------------------- exact det data resume
def _det_set(tmp_path, n=8):
    import json

    import cv2

    rng = np.random.default_rng(0)
    (tmp_path / "img").mkdir()
    images, anns = [], []
    for i in range(n):
        cv2.imwrite(str(tmp_path / "img" / f"{i}.png"), rng.integers(0, 255, (48 + 8 * i, 64, 3), dtype=np.uint8))
        images.append({"id": i + 1, "file_name": f"{i}.png", "width": 64, "height": 48 + 8 * i})
        anns.append({"id": i + 1, "image_id": i + 1, "category_id": 1, "bbox": [4, 4, 30, 20], "area": 600})
    (tmp_path / "ann.json").write_text(json.dumps({"images": images, "annotations": anns,
                                                   "categories": [{"id": 1, "name": "x"}]}))
    return tmp_path / "ann.json", tmp_path / "img"


@pytest.mark.parametrize("resume_workers", [0, 1])
def test_det_augment_and_sizes_resume_exactly(tmp_path, resume_workers):
    from paddle_recipes.data.reproducible import build_batch_sampler
    from paddle_recipes.tasks.det_ppyoloe.coco import CocoDetDataset, DetCollate, build_train_augment, load_coco

    ann, img = _det_set(tmp_path)
    index = load_coco(ann, img)

    def loader(workers):
        ds = CocoDetDataset(index, build_train_augment(seed=5))
        sampler = build_batch_sampler(ds, 2, shuffle=True, drop_last=True)
        return build_loader(ds, sampler, LoaderConfig(num_workers=workers),
                            collate_fn=DetCollate([64, 96, 128], seed=1)), sampler

    ld, sampler = loader(0)
    sampler.set_epoch(0)
    list(ld)  # the uninterrupted run goes through epoch 0 first: its RNG streams advance
    sampler.set_epoch(1)
    full = [(b["image"].numpy(), b["gt_bbox"].numpy()) for b in ld]
    assert len({f[0].shape[-1] for f in full}) > 1 or len(full) < 3  # sizes really vary

    ld2, sampler2 = loader(resume_workers)  # "resumed" after 2 batches of epoch 1, in a fresh process
    sampler2.set_epoch(1)
    sampler2.skip_next(2)
    resumed = [(b["image"].numpy(), b["gt_bbox"].numpy()) for b in ld2]
    assert len(resumed) == len(full) - 2
    for (ia, ba), (ib, bb) in zip(full[2:], resumed):
        np.testing.assert_array_equal(ia, ib)
        np.testing.assert_array_equal(ba, bb)


def test_output_dir_that_is_a_file_is_a_config_error(tmp_path):
    from paddle_recipes.cli import run_recipe

    f = tmp_path / "out"
    f.write_text("a file")
    with pytest.raises(ConfigError, match=f"Global.output_dir '{f}': cannot create the folder"):
        run_recipe("t", _Schema, {"train": lambda cfg, info: None}, argv=["-o", f"Global.output_dir={f}"])


@pytest.mark.parametrize("exc", [DataError("sample 3: ValueError: bad /x.jpg"),
                                 NonFiniteError("loss/gradients were inf or nan for 20 optimizer steps in a row")])
def test_new_errors_exit_2_with_one_line(exc, capsys):
    from paddle_recipes.cli import exit_on_user_error

    def main():
        raise exc

    with pytest.raises(SystemExit) as code:
        exit_on_user_error(main, "rec")
    assert code.value.code == 2
    assert capsys.readouterr().err == f"rec: error: {exc}\n"


def test_ocr_cli_bad_image_shape_exits_2_with_one_line(tmp_path):
    from conftest import REPO_ROOT, run_python

    proc = run_python([REPO_ROOT / "recipes" / "ocr_rec.py", "-c", REPO_ROOT / "recipes" / "configs" / "ocr_rec_smoke.yml",
                       "-o", "Global.image_shape=[3,32]", f"Global.output_dir={tmp_path}"], check=False, timeout=120)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ocr_rec: error:")]
    assert errors == ["ocr_rec: error: Global.image_shape must be [C, H, W] (3 integers), got [3, 32] "
                      f"(in {REPO_ROOT / 'recipes' / 'configs' / 'ocr_rec_smoke.yml'})"]


# ----------------------------------------------------------------------------- worker death names the sample
class _NamedDataset:
    """8 samples named "train.txt:<index + 1>"; sample ``bad`` kills its worker (``how="kill"``) or raises."""

    def __init__(self, bad=5, how="kill"):
        self.bad, self.how = bad, how

    def __len__(self):
        return 8

    def sample_name(self, i):
        return f"/data/train.txt:{i + 1}"

    def __getitem__(self, i):
        if i == self.bad:
            if self.how == "kill":
                import os
                import signal

                os.kill(os.getpid(), signal.SIGKILL)
            raise ValueError(f"cannot decode img_{i}.jpg")
        return np.full(3, i, np.float32)


def _reader_threads():
    return {t for t in threading.enumerate() if t.name.endswith("(_thread_loop)") and t.is_alive()}


@pytest.mark.parametrize("how", ["kill", "raise", None])
def test_a_loader_with_workers_leaves_no_reader_thread_behind(how):
    """After a worker's death or error (DataError), or a clean epoch, the iterator's reader thread is gone before
    the loop returns: a thread still exiting can hold paddle's memory lock when the next loader forks its worker,
    which then never delivers a batch (seen as a 60 s LoaderTimeout in the suite)."""
    before = _reader_threads()
    ds = _NamedDataset(bad=5 if how else 99, how=how or "raise")
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=2), LoaderConfig(num_workers=1, timeout=60),
                          name="Train.loader")
    if how:
        with pytest.raises(DataError):
            for _ in loader:
                pass
    else:
        assert sum(1 for _ in loader) == 4
    assert _reader_threads() <= before


@pytest.mark.parametrize("how,workers", [("kill", 1), ("raise", 1), ("raise", 0)])
def test_worker_death_or_error_names_the_sample(how, workers):
    ds = _NamedDataset(how=how)
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=2),
                          LoaderConfig(num_workers=workers, timeout=60), name="Train.loader")
    with pytest.raises(DataError) as err:
        for _ in loader:
            pass
    msg = str(err.value)
    assert "\n" not in msg and "/data/train.txt:6" in msg, msg
    if how == "kill":
        assert re.match(r"Train.loader: DataLoader worker 0 \(pid \d+\) died of SIGKILL while loading sample 5 "
                        r"\(/data/train.txt:6\)$", msg), msg
    else:
        assert "sample 5 (/data/train.txt:6): ValueError: cannot decode img_5.jpg" in msg, msg


def test_rec_and_det_datasets_name_their_samples(tmp_path):
    from paddle_recipes.data.loader import sample_name
    from paddle_recipes.tasks.ocr_det.dataset import DetDataset
    from paddle_recipes.tasks.ocr_rec.multiscale import MultiScaleDataset

    import cv2

    cv2.imwrite(str(tmp_path / "a.png"), np.full((40, 60, 3), 255, np.uint8))
    pts = '[{"transcription": "ab", "points": [[2, 2], [50, 2], [50, 30], [2, 30]]}]'
    (tmp_path / "l.txt").write_text(f"a.png\t{pts}\na.png\t{pts}\n", encoding="utf-8")
    det = DetDataset(tmp_path / "l.txt", tmp_path)
    assert sample_name(det, (0, 1)) == f"{tmp_path / 'l.txt'}:2"
    assert sample_name(paddle.io.Subset(det, [1, 0]), 0) == f"{tmp_path / 'l.txt'}:2"
    assert sample_name(MultiScaleDataset(det), (0, 1, 48, 320)) == f"{tmp_path / 'l.txt'}:2"
    assert sample_name(RaisingDataset(), 3) == ""
