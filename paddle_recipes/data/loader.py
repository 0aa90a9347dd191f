"""The DataLoader block: ``build_loader`` (workers, persistent workers, shared memory with a /dev/shm check,
prefetching, buffer reader, worker seeding, a stuck-worker timeout) and the load-error guard that turns a
failing sample or collate into one DataError line in the main process.

    loader = build_loader(dataset, batch_sampler, LoaderConfig(num_workers=2), name="Train.loader")

Note: paddle.io.DataLoader has no ``pin_memory`` option (unlike torch). Host->device
copies are overlapped by ``use_buffer_reader=True`` (a background prefetch thread)
instead; there is nothing to pin.
"""
from __future__ import annotations

import gc
import logging
import mmap
import os
import random
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..config import ConfigError
from ..runtime.lifetime import set_parent_death_signal

__all__ = ["LoaderConfig", "build_loader", "set_opencv_threads", "shm_free_mb", "seed_worker", "DataError",
           "LoaderTimeout", "GuardedDataset", "GuardedCollate", "current_sample_key", "sample_name", "WorkerSlots", "keep_heap",
           "heap_frozen"]

SHM_PATH = "/dev/shm"
logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- loader
@dataclass
class LoaderConfig:
    """Options of ``paddle.io.DataLoader`` as used by the recipes.

    num_workers: worker processes (0 = load in the main process).
    persistent_workers: keep workers alive across epochs (only applied when num_workers > 0).
    use_shared_memory: pass batches from workers through /dev/shm (fast; needs enough shm).
    prefetch_factor: batches prefetched per worker.
    use_buffer_reader: background thread that prefetches the next batch (paddle's
        replacement for torch's pin_memory, which paddle does not have).
    timeout: seconds (default 300) the main process waits for the next batch from its workers; past that the
        run stops with one LoaderTimeout line naming the loader and this key (``Train.loader.timeout``,
        ``Eval.loader.timeout``) instead of hanging on a stuck worker (e.g. one blocked in paddle's shared-memory
        hand-off, ``_share_filename``). 0 = wait forever. Only the wait for a batch counts, not the training
        step between batches; with num_workers=0 nothing is timed. Enforced here: paddle 3.3.1's own
        DataLoader ``timeout`` is only its reader thread's poll interval (on expiry it polls again while the
        workers are alive), so it is not passed on.
    seed: base seed mixed into every worker's numpy/random seed (None = only paddle's
        per-iterator seed, itself drawn from the main process's numpy RNG).
    min_shm_mb: free /dev/shm (MB) required before shared memory is used with workers.
    opencv_num_threads: with num_workers > 0, ``cv2.setNumThreads`` of this process (its forked workers inherit
        it) when the loader is built. Default 0: OpenCV runs serially. Its pthreads pool is not fork-safe: a worker
        forked while a pool thread holds the pool's lock hangs forever in its first parallel OpenCV call (measured
        on a loaded 2-core box: 19 hangs in 1500 forks after the parent used cv2.warpAffine; 0 in 1500 with 0).
        -1 = leave OpenCV's setting alone. Nothing is done with num_workers=0 or without OpenCV.
    allocator_keep_mb: glibc's malloc keeps up to this many MB of freed heap in the loading processes (the workers,
        or this process with num_workers=0) and serves arrays up to 32 MB from it (``keep_heap``), instead of mapping
        fresh pages for every batch-sized array and returning them on free: the page faults of each new sample's
        maps and batch cost more CPU than the det transforms themselves on a loaded box (x1.8 samples per CPU second
        measured, benchmarks/results/data_path). 0 = glibc's defaults. Output unchanged; no effect off glibc.
        The setting is process-wide and lasts: a kept heap holds its high-water mark. So an eval loader with 0
        workers inside a training run (build_loader's keep_heap_here=False, Recipe.eval_loader) leaves the trainer's
        heap alone: kept, it raised the trainer's RSS by 8-11 % over its first ~20 epochs and held it there (the
        soak's "RSS growth", benchmarks/results/soak/rss_study).
    """

    num_workers: int = 0
    persistent_workers: bool = False
    use_shared_memory: bool = True
    prefetch_factor: int = 2
    use_buffer_reader: bool = True
    timeout: int = 300
    seed: int | None = 0
    min_shm_mb: int = 512
    opencv_num_threads: int = 0
    allocator_keep_mb: int = 1024

    def __post_init__(self):
        for name in ("num_workers", "timeout", "allocator_keep_mb"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.opencv_num_threads < -1:
            raise ConfigError(f"opencv_num_threads must be >= -1 (-1 = leave OpenCV alone), "
                              f"got {self.opencv_num_threads}")
        if self.prefetch_factor < 1:
            raise ConfigError(f"prefetch_factor must be >= 1, got {self.prefetch_factor}")
        for name in ("batch_size_per_card", "batch_size"):  # subclasses add a batch size
            value = getattr(self, name, None)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")

# ----------------------------------------------------------------------------- load errors
class DataError(RuntimeError):
    """Loading a sample or collating a batch failed; the message names the sample (and its file)."""


class LoaderTimeout(DataError):
    """No batch from the loader's workers within LoaderConfig.timeout seconds; the message names the key."""


ERROR_KEY = "__data_error__"


class _LoadFailure:
    """What GuardedDataset returns instead of raising: picklable, so it crosses worker processes."""

    def __init__(self, message: str):
        self.message = message

def _describe(exc: BaseException, where: str) -> str:
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    at = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{where}: {type(exc).__name__}: {exc}{at}"


_SAMPLE = threading.local()


def current_sample_key() -> tuple[int, int] | None:
    """(epoch, index) of the sample being loaded in this thread (set by GuardedDataset when the batch
    sampler yields epoch keys), else None. Augmentations and collate functions derive their random
    draws from it, so the data of a resumed run equals the uninterrupted run's, whatever the
    workers, prefetching or resume point."""
    return getattr(_SAMPLE, "key", None)


def _index_of(key):
    """The dataset index in a sampler key: an int, (epoch, index), (epoch, index, h, w) or (index, h, w)."""
    if isinstance(key, (tuple, list)):
        return int(key[0] if len(key) == 3 else key[1])
    return int(key)


def sample_name(dataset, key) -> str:
    """Where sample ``key`` comes from ("file:line", "lmdb:index"), through Subset-like wrappers (``.indices``),
    when the dataset (or one it wraps) has ``sample_name(index)``; "" when it has none or the lookup fails."""
    try:
        index, ds = _index_of(key), dataset
        for _ in range(8):
            if hasattr(ds, "sample_name"):
                return str(ds.sample_name(index))
            if hasattr(ds, "indices") and hasattr(ds, "dataset"):
                index, ds = int(ds.indices[index]), ds.dataset
            elif isinstance(ds, GuardedDataset):
                ds = ds.dataset
            else:
                return ""
    except Exception:  # noqa: BLE001 - a name is a courtesy: never a new failure
        return ""
    return ""


class WorkerSlots:
    """What each DataLoader worker is doing, readable by the main process after the worker died: one fixed-size
    text slot per worker in an anonymous shared mapping (``mmap(-1)``: inherited by the forked workers, needs no
    /dev/shm). A worker writes "loading <sample>" before a sample and "<sample> loaded" after it."""

    SIZE = 512

    def __init__(self, num_workers: int):
        self.n = int(num_workers)
        self.buf = mmap.mmap(-1, self.n * self.SIZE)

    def __getstate__(self):  # a spawned (not forked) worker cannot share the mapping: it records nothing
        return {"n": self.n, "buf": None}

    def write(self, worker: int, text: str) -> None:
        if self.buf is None or not 0 <= worker < self.n:
            return
        raw = text.encode("utf-8", "replace")[:self.SIZE - 1] + b"\0"
        self.buf[worker * self.SIZE: worker * self.SIZE + len(raw)] = raw

    def read(self, worker: int) -> str:
        if self.buf is None or not 0 <= worker < self.n:
            return ""
        raw = self.buf[worker * self.SIZE: (worker + 1) * self.SIZE]
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


_WORKER_ID: int | None = None  # this process's DataLoader worker id (set by seed_worker), None in the main process


class GuardedDataset:
    """Wraps a map-style dataset: an exception in ``__getitem__`` becomes a failure marker.

    Keys may be ``(epoch, index)`` (ResumableBatchSampler with_epoch): the key is published via
    current_sample_key(); the inner dataset gets the bare index when ``unwrap_keys``, else the key
    (for reproducible.SeededDataset).

    Paddle's DataLoader with ``num_workers=0`` waits forever when ``__getitem__`` raises (the
    error dies in its reader thread); with workers it may end as "Blocking queue is killed".
    The marker travels like a sample, GuardedCollate turns the batch into an error batch, and
    the loader (see build_loader) raises DataError in the main process.
    """

    def __init__(self, dataset, unwrap_keys: bool = False, slots: WorkerSlots | None = None):
        self.dataset = dataset
        self.unwrap_keys = unwrap_keys
        self.slots = slots

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name):  # stats, records, skipped, ... of the wrapped dataset
        if name == "dataset":
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def describe(self, key) -> str:
        """"sample <key>" and, when the dataset names it, " (<file:line>)"."""
        name = sample_name(self.dataset, key)
        return f"sample {key}" + (f" ({name})" if name else "")

    def __getitem__(self, idx):
        key = idx
        if isinstance(idx, (tuple, list)) and len(idx) == 2:  # (epoch, index); other key shapes pass through
            _SAMPLE.key = (int(idx[0]), int(idx[1]))
            if self.unwrap_keys:
                idx = int(idx[1])
        else:
            _SAMPLE.key = None
        slot = self.slots is not None and _WORKER_ID is not None
        if slot:
            self.slots.write(_WORKER_ID, "loading " + self.describe(key))
        try:
            out = self.dataset[idx]
        except Exception as exc:  # noqa: BLE001 - reported in the main process, not swallowed
            return _LoadFailure(_describe(exc, self.describe(key)))
        if slot:
            self.slots.write(_WORKER_ID, self.describe(key) + " loaded")
        return out

class GuardedCollate:
    """collate_fn wrapper: a batch with a failed sample (or a failing collate) -> an error batch.

    The error batch is ``{ERROR_KEY: uint8 array of the utf-8 message}``: it holds an array, so
    paddle's DataLoader does not drop it, and it crosses shared memory like any batch.
    """

    def __init__(self, collate_fn: Callable | None = None):
        self.collate_fn = collate_fn

    @staticmethod
    def error_batch(message: str) -> dict:
        return {ERROR_KEY: np.frombuffer(message.encode("utf-8", "replace"), dtype=np.uint8).copy()}

    def __call__(self, samples):
        failed = [s.message for s in samples if isinstance(s, _LoadFailure)]
        if failed:
            more = f" (+{len(failed) - 1} more in this batch)" if len(failed) > 1 else ""
            return self.error_batch(failed[0] + more)
        try:
            if self.collate_fn is not None:
                return self.collate_fn(samples)
            from paddle.io.dataloader.collate import default_collate_fn

            return default_collate_fn(samples)
        except Exception as exc:  # noqa: BLE001
            return self.error_batch(_describe(exc, f"collating a batch of {len(samples)}"))

def raise_if_error_batch(batch) -> None:
    """Raise DataError when ``batch`` is an error batch made by GuardedCollate."""
    if isinstance(batch, dict) and ERROR_KEY in batch:
        raw = batch[ERROR_KEY]
        raw = raw.numpy() if hasattr(raw, "numpy") else np.asarray(raw)
        raise DataError(bytes(np.asarray(raw, dtype=np.uint8).reshape(-1)).decode("utf-8", "replace"))

class _BatchWatchdog:
    """One daemon thread per loader iteration: armed while the main process waits in next(); after ``seconds``
    of one wait it kills paddle's blocking queue, so that wait raises at once instead of blocking forever.
    Should the wait still not return (a paddle that no longer stops on that kill), it prints ``message`` and
    ends the process with exit 2 after ``grace_s`` more seconds: never a hang."""

    def __init__(self, it, seconds: float, message: str, grace_s: float = 30.0):
        self.it, self.seconds, self.message, self.grace_s = it, seconds, message, grace_s
        self.fired = False
        self.handled = threading.Event()
        self._cv = threading.Condition()
        self._deadline: float | None = None
        self._stopped = False
        threading.Thread(target=self._run, name="paddle-recipes-loader-watchdog", daemon=True).start()

    def arm(self) -> None:
        with self._cv:
            self._deadline = time.monotonic() + self.seconds
            self._cv.notify()

    def disarm(self) -> None:
        with self._cv:
            self._deadline = None

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()

    def _run(self) -> None:
        with self._cv:
            while not self._stopped:
                left = None if self._deadline is None else self._deadline - time.monotonic()
                if left is not None and left <= 0:
                    self.fired = True
                    break
                self._cv.wait(left)
        if not self.fired:
            return
        kill = getattr(self.it, "_exit_thread_unexpectedly", None)  # paddle: kill its blocking queue
        if kill is not None:
            kill()
        if not self.handled.wait(self.grace_s if kill is not None else 0):
            import sys

            print(f"error: {self.message}", file=sys.stderr, flush=True)
            os._exit(2)

READER_POLL_S = 0.05  # seconds between the checks of paddle's reader thread for its end (paddle's default: 5)


def _wait_thread_gone(thread: threading.Thread | None, join_s: float = 5.0, exit_s: float = 2.0) -> bool:
    """Wait until a finished iterator's reader thread has left the OS (True), at most ``join_s`` + ``exit_s`` s.

    Paddle's per-thread memory statistics take a process-wide lock when a thread that used paddle memory exits
    (after Python's ``join()`` returns: thread-local destructors). A DataLoader worker forked at that moment
    inherits the lock held and its first new thread that touches paddle memory (the queue feeder that puts the
    batch into shared memory) blocks forever (seen: a main-process loader's epoch ended and the next loader forked
    its worker at once, e.g. train with num_workers=0 then eval with workers). Waiting for the thread's
    /proc/self/task entry closes that race.
    """
    if thread is None or thread is threading.current_thread():
        return True
    thread.join(join_s)
    task = Path(f"/proc/self/task/{thread.native_id}") if thread.native_id is not None else None
    if thread.is_alive() or task is None or not Path("/proc/self/task").is_dir():
        return not thread.is_alive()
    end = time.monotonic() + exit_s
    while task.exists() and time.monotonic() < end:
        time.sleep(0.001)
    return not task.exists()


def _stop_workers(it) -> None:
    """End a paddle iterator's workers, the stuck one too. Paddle forgets their pids first
    (_try_shutdown_all), so its SIGCHLD handler does not report them as crashed."""
    shutdown = getattr(it, "_try_shutdown_all", None)
    if shutdown is not None:
        shutdown(0.5)
    for w in getattr(it, "_workers", []):
        if w.is_alive():
            w.terminate()
            w.join(5)
    # its reader thread notices the shutdown within READER_POLL_S; a loader forked before it has left the OS can
    # inherit paddle's memory lock held (_wait_thread_gone) and never deliver a batch
    _wait_thread_gone(getattr(it, "_thread", None))

def _worker_gone(w) -> str | None:
    """How a worker process ended ("SIGKILL", "exit code 3"), or None while it runs (or ended with 0)."""
    code = w.exitcode
    if code is None:
        try:
            with open(f"/proc/{w.pid}/stat") as f:  # reaped by paddle's own SIGCHLD handling, or a zombie
                gone = f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            gone = True
        return "an unknown cause" if gone else None
    if code == 0:
        return None
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def dead_workers(it, dataset) -> str:
    """One line naming each dead worker of paddle iterator ``it`` and the sample it was on (from the dataset's
    WorkerSlots), "" when every worker is alive (the error was something else)."""
    slots = getattr(dataset, "slots", None)
    out = []
    for i, w in enumerate(getattr(it, "_workers", None) or []):
        how = _worker_gone(w)
        if how is None:
            continue
        doing = slots.read(i) if slots is not None else ""
        if doing.startswith("loading "):
            what = f"while {doing}"
        elif doing:
            what = f"after its last sample, {doing} (in collate or passing the batch on)"
        else:
            what = "before its first sample"
        out.append(f"DataLoader worker {i} (pid {w.pid}) died of {how} {what}")
    if not out:
        return ""
    shm = " (a bus error: /dev/shm full? set use_shared_memory=false)" if "SIGBUS" in " ".join(out) else ""
    return "; ".join(out) + shm


def _checked_loader_class():
    import paddle

    class CheckedDataLoader(paddle.io.DataLoader):
        """paddle.io.DataLoader that raises DataError (in the main process) for an error batch and
        LoaderTimeout when one wait for a worker batch exceeds ``wait_timeout`` seconds (0 = no limit)."""

        name = "LoaderConfig"
        wait_timeout = 0

        def timeout_message(self) -> str:
            n = self.num_workers
            return (f"{self.name}: no batch from its {n} DataLoader worker{'s' if n > 1 else ''} in "
                    f"{self.wait_timeout} s (a worker is stuck, or one batch takes that long to load); raise "
                    f"{self.name}.timeout (seconds, 0 = wait forever) or try {self.name}.use_shared_memory=false")

        def __iter__(self):
            with heap_frozen(self.num_workers > 0):  # paddle forks the workers here
                it = super().__iter__()
            # the iterator's reader thread ends with the epoch (unless workers persist); its exit must not overlap
            # the next loader's fork
            reader_thread = None if getattr(self, "_persistent_workers", False) else getattr(it, "_thread", None)
            watch = None
            if self.wait_timeout > 0 and self.num_workers > 0:
                watch = _BatchWatchdog(it, self.wait_timeout, self.timeout_message())
            ended = False  # the epoch ran to its end
            try:
                while True:
                    if watch is not None:
                        watch.arm()
                    try:
                        batch = next(it)
                    except StopIteration:
                        ended = True
                        _wait_thread_gone(reader_thread)  # before the next loader can fork its workers
                        return
                    except Exception:
                        if watch is None or not watch.fired:
                            died = dead_workers(it, self.dataset)
                            if died:
                                raise DataError(f"{self.name}: {died}") from None
                            raise
                        raise LoaderTimeout(watch.message) from None
                    finally:
                        if watch is not None:
                            watch.disarm()
                    raise_if_error_batch(batch)
                    yield batch
            finally:
                if watch is not None:
                    watch.stop()
                # a dead worker, a timeout (also one that fired just as a batch came), an error batch, any other
                # error, or a caller that stopped early (max_steps): end the workers and their reader thread here
                if not ended and self.num_workers > 0:
                    _stop_workers(it)
                if watch is not None and watch.fired:
                    watch.handled.set()  # after the stop: the watchdog's hard exit is no longer needed

    return CheckedDataLoader


class heap_frozen:  # noqa: N801  (used like a function: ``with heap_frozen():``)
    """Keep the objects the main process holds out of its forked workers' garbage collection (``gc.freeze``
    before the fork, ``gc.unfreeze`` after it in the main process; on by default for a loader with workers).

    A worker's first collection otherwise visits every object of the parent's heap and so copies the whole heap
    page by page (copy-on-write): with a 3M-object heap (a large label list) 1.3-2.2 s per batch and that memory
    again in every worker; frozen, 0.05-0.09 s (AMD EPYC, 2 cores). The main process collects as before."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled and gc.get_freeze_count() == 0  # a caller's own gc.freeze() is left to the caller

    def __enter__(self):
        if self.enabled:
            gc.freeze()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            gc.unfreeze()


def set_opencv_threads(n: int) -> bool:
    """``cv2.setNumThreads(n)`` when OpenCV is installed (False otherwise). 0 keeps forked DataLoader workers out
    of OpenCV's thread pool, whose lock a fork can copy while it is held (LoaderConfig.opencv_num_threads)."""
    try:
        import cv2
    except ImportError:
        return False
    cv2.setNumThreads(int(n))
    return True


M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's mallopt parameters
MMAP_THRESHOLD_MAX = 32 << 20  # glibc's largest M_MMAP_THRESHOLD on 64-bit


def keep_heap(keep_mb: int) -> bool:
    """glibc malloc: serve allocations up to 32 MB from the heap and keep ``keep_mb`` MB of freed heap (no trim)
    instead of mmap/munmap per large array (LoaderConfig.allocator_keep_mb). True when applied; False for 0, or
    without glibc."""
    if keep_mb <= 0:
        return False
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX) == 1
        return ok and libc.mallopt(M_TRIM_THRESHOLD, int(keep_mb) << 20) == 1
    except (OSError, AttributeError):
        return False


def shm_free_mb(path: str | None = None) -> float | None:
    """Free space of /dev/shm (or ``path``) in MB, or None when it does not exist (non-Linux)."""
    path = path or SHM_PATH
    if not os.path.isdir(path):
        return None
    return shutil.disk_usage(path).free / (1024 * 1024)


class seed_worker:  # noqa: N801  (a picklable callable, used like a function)
    """worker_init_fn: seed numpy/random/paddle per worker, then call the user's init fn.

    seed = hash(paddle's per-iterator worker seed, base_seed, worker_id). paddle draws its
    per-iterator seed from the main process's numpy RNG, so seeding the main process makes
    workers deterministic, and non-persistent workers still get new seeds every epoch.
    """

    def __init__(self, base_seed: int | None = 0, user_fn: Callable[[int], None] | None = None, keep_mb: int = 0):
        self.base_seed = base_seed
        self.user_fn = user_fn
        self.keep_mb = keep_mb

    def __call__(self, worker_id: int) -> None:
        import paddle

        global _WORKER_ID
        _WORKER_ID = int(worker_id)
        set_parent_death_signal(signal.SIGKILL)  # a worker never outlives its process (blocked in a pipe read)
        keep_heap(self.keep_mb)
        info = paddle.io.get_worker_info()
        paddle_seed = int(info.seed) if info is not None else 0
        entropy = [paddle_seed & 0xFFFFFFFF, worker_id]
        if self.base_seed is not None:
            entropy.append(int(self.base_seed) & 0xFFFFFFFF)
        seed = int(np.random.SeedSequence(entropy).generate_state(1)[0])
        np.random.seed(seed)
        random.seed(seed)
        paddle.seed(seed)
        if self.user_fn is not None:
            self.user_fn(worker_id)

def build_loader(dataset, batch_sampler, cfg: LoaderConfig | None = None,
                 collate_fn: Callable | None = None,
                 worker_init_fn: Callable[[int], None] | None = None, name: str = "LoaderConfig",
                 keep_heap_here: bool = True):
    """Build a ``paddle.io.DataLoader`` from a dataset and a batch sampler.

    Workers are seeded by :class:`seed_worker` (the user's ``worker_init_fn`` runs after). ``keep_heap_here``
    False: with num_workers=0 this process's heap is not kept (LoaderConfig.allocator_keep_mb; workers keep theirs).
    With a ResumableBatchSampler (build_batch_sampler) every sample's (epoch, index)
    is published to current_sample_key(), from which AlbumentationsAdapter and DetCollate draw
    their randomness: exact resume without checkpointing those RNG streams.
    An exception while loading a sample or collating a batch (main process or worker) is raised
    in the main process as one DataError naming the sample and the original message (which should
    name the file); datasets that can skip bad samples should do so themselves and count them.
    With workers, shared memory is disabled (one log line) when /dev/shm has less than ``cfg.min_shm_mb`` free,
    instead of crashing later with a bus error; a worker that dies (killed, a crash in native code, a bus error) is
    one DataError naming the worker and the sample it was loading (WorkerSlots, the dataset's ``sample_name``). A wait of more than ``cfg.timeout``
    seconds for a worker batch raises LoaderTimeout: one line naming ``name`` (the loader's config key,
    e.g. "Train.loader", "Eval.loader") and ``<name>.timeout``; the workers are ended.
    """

    cfg = cfg or LoaderConfig()
    if batch_sampler is None:
        raise ValueError("build_loader needs a batch_sampler (e.g. paddle.io.BatchSampler or "
                         "paddle_recipes.data.reproducible.build_batch_sampler)")
    if cfg.num_workers < 0:
        raise ValueError(f"LoaderConfig.num_workers must be >= 0, got {cfg.num_workers}")
    use_shm = cfg.use_shared_memory
    if use_shm and cfg.num_workers > 0:
        free = shm_free_mb()
        if free is not None and free < cfg.min_shm_mb:
            logger.warning("%s: /dev/shm has %.0f MB free (< min_shm_mb %d): workers pass batches without it "
                           "(use_shared_memory=False, slower copies); for shared memory give the container more "
                           "(docker run --shm-size=8g)", name, free, cfg.min_shm_mb)
            use_shm = False
    workers = cfg.num_workers > 0
    if not workers and keep_heap_here:
        keep_heap(cfg.allocator_keep_mb)  # this process loads the samples
    if workers and cfg.opencv_num_threads >= 0:
        set_opencv_threads(cfg.opencv_num_threads)
    unwrap = False
    from .reproducible import ResumableBatchSampler  # in here: this module imports paddle only when it runs

    if isinstance(batch_sampler, ResumableBatchSampler) and not batch_sampler.with_epoch:
        batch_sampler.with_epoch = True  # publish (epoch, index) keys; the dataset still gets indices
        unwrap = True
    slots = WorkerSlots(cfg.num_workers) if workers else None
    loader = _checked_loader_class()(
        GuardedDataset(dataset, unwrap_keys=unwrap, slots=slots),
        batch_sampler=batch_sampler,
        collate_fn=GuardedCollate(collate_fn),
        num_workers=cfg.num_workers,
        use_buffer_reader=cfg.use_buffer_reader,
        prefetch_factor=cfg.prefetch_factor,
        use_shared_memory=use_shm,
        timeout=READER_POLL_S,  # paddle's timeout is only its reader thread's poll interval (LoaderConfig.timeout is
        # enforced by the loader): a short one lets that thread leave soon after an epoch, before the next fork
        worker_init_fn=seed_worker(cfg.seed, worker_init_fn, cfg.allocator_keep_mb) if workers else None,
        persistent_workers=bool(cfg.persistent_workers and workers),
        return_list=True,
    )
    loader.name, loader.wait_timeout = name, cfg.timeout
    return loader
