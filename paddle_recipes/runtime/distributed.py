"""Data-parallel setup for `python -m paddle.distributed.launch` (1..N processes, 1..N nodes).

    info = setup(seed=42)                  # init_parallel_env when world_size > 1, device, per-rank seeds
    model = wrap_model(model, info)        # paddle.DataParallel when world_size > 1
    sampler = build_batch_sampler(ds, batch_size=8, info=info)   # data.reproducible: one shard per rank
    for epoch in range(epochs):
        sampler.set_epoch(epoch)

`batch_size` is per process, as in PaddleOCR/ppdet: the global batch is batch_size * world_size.
Works unchanged on CPU (GLOO) and GPU (NCCL).
"""
from __future__ import annotations

import hashlib
import logging
import os
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np
import paddle
import paddle.distributed as dist

from . import peers, stopping
from ..nn.layers import BN_TYPES
from .lifetime import set_parent_death_signal
from .device_defaults import env_threads, apply_threads, usable_cores
from ..config import ConfigError

logger = logging.getLogger(__name__)


@dataclass
class DistInfo:
    """Where this process sits in the job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str = "cpu"
    nnodes: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default

def seed_everything(seed: int) -> None:
    """Seed python, numpy and paddle."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    paddle.seed(seed)


def default_device(local_rank: int = 0) -> str:
    """gpu:<local_rank> when CUDA is compiled in and a GPU is visible, else cpu."""
    if paddle.is_compiled_with_cuda():
        try:
            if paddle.device.cuda.device_count() > 0:
                return f"gpu:{local_rank % paddle.device.cuda.device_count()}"
        except Exception:  # pragma: no cover
            pass
    return "cpu"


_WATCHDOG: threading.Thread | None = None


def start_parent_watchdog(interval_s: float = 1.0, exit_code: int = 143) -> threading.Thread:
    """Exit this process when its parent dies (the parent pid changes: we were re-parented).

    Killing `paddle.distributed.launch` (e.g. SIGKILL of its process group from a scheduler) would
    otherwise leave its workers training and writing checkpoints. A daemon thread polls
    os.getppid() every `interval_s` seconds; idempotent.
    """
    global _WATCHDOG
    if _WATCHDOG is not None and _WATCHDOG.is_alive():
        return _WATCHDOG
    parent = os.getppid()

    if _env_int("PADDLE_NNODES", 1) <= 1:  # the kernel's signal also reaches a rank the thread can't; on several
        set_parent_death_signal(signal.SIGTERM, parent)  # nodes the thread first tells the peers (peers.py) why

    def watch():
        while True:
            time.sleep(interval_s)
            if os.getppid() != parent:
                print(f"[rank process {os.getpid()}] parent process {parent} is gone (launcher killed): exiting",
                      file=sys.stderr, flush=True)
                peers.announce_leaving("its launcher is gone (killed?)")
                os._exit(exit_code)

    _WATCHDOG = threading.Thread(target=watch, name="parent-watchdog", daemon=True)
    _WATCHDOG.start()
    return _WATCHDOG


def set_cpu_threads_per_rank(local_world_size: int, env: dict | None = None, cores: int | None = None) -> int | None:
    """On CPU, give each of the node's ranks cores // local_world_size math threads, unless OMP_NUM_THREADS /
    MKL_NUM_THREADS is already set (then nothing changes). Returns the threads set, or None. Logged.

    Without it every rank's OpenMP pool sizes itself to all cores, and N ranks oversubscribe the CPU.
    """
    env = os.environ if env is None else env
    if env_threads(env) is not None:
        return None
    cores = cores or usable_cores()
    threads = max(1, cores // max(1, local_world_size))
    apply_threads(threads, env=env)
    logger.info("CPU threads per rank: %d (%d cores // %d ranks on this node; set OMP_NUM_THREADS to override)",
                threads, cores, local_world_size)
    return threads


def quiet_sigterm(exit_code: int = 143) -> None:
    """Replace paddle's C++ SIGTERM handler (main thread only) by one line and exit ``exit_code``; Ctrl-C (SIGINT)
    likewise: one line and exit 130 (stopping.install). Paddle's handler formats a "Termination signal" dump inside
    the signal handler and can hang (issue 21: 1 of 28 SIGTERMs under load)."""
    stopping.install(exit_code)


def exit_distributed_run(exit_code: int = 0) -> None:
    """End a multi-process run: wait for every rank, flush logs and stdio, then leave with os._exit.

    Interpreter teardown after a gloo/NCCL run can abort (SIGABRT, launcher exit 250) when the rank that
    hosts the rendezvous store is torn down before its peers; skipping the teardown avoids that race.
    Call it only once all outputs are written (it skips atexit handlers). No-op on one process."""
    if dist.get_world_size() <= 1:
        return
    barrier()
    peers.finish()
    exit_now(exit_code)


def _set_device(device: str) -> None:
    """paddle.set_device; a device this paddle build or machine lacks is a ConfigError naming Global.device."""
    if str(device).startswith("gpu") and not paddle.is_compiled_with_cuda():
        raise ConfigError(f"Global.device {device!r}: this paddle build has no CUDA (a CPU wheel); use "
                          "Global.device=cpu, or install paddlepaddle-gpu (README: GPU install)")
    try:
        paddle.set_device(device)
    except (ValueError, RuntimeError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"Global.device {device!r} cannot be used here: {reason}") from None

def setup(seed: int | None = 42, device: str | None = None, seed_per_rank: bool = True) -> DistInfo:
    """Initialise the process group (if launched with >1 process), pick the device, seed.

    seed: base seed; each rank uses seed + rank when seed_per_rank (different augmentation
    streams), model init is broadcast from rank 0 by DataParallel anyway. None: don't seed.
    device: "cpu", "gpu", "gpu:1"... default: this rank's GPU if any, else CPU.
    On CPU with >1 process, OMP/MKL threads per rank default to cores // local ranks (set_cpu_threads_per_rank).
    On more than one node, peers.start_peer_monitor watches the other nodes (timeout $PADDLE_RECIPES_PEER_TIMEOUT,
    default 20 s): a lost node ends every rank with one line and exit 3.
    """
    world = _env_int("PADDLE_TRAINERS_NUM", 1)
    local_rank = _env_int("PADDLE_LOCAL_RANK", _env_int("PADDLE_RANK_IN_NODE", 0))
    if "PADDLE_TRAINER_ID" in os.environ or world > 1:  # started by paddle.distributed.launch
        start_parent_watchdog()
        if threading.current_thread() is threading.main_thread():
            # a collective that loses its peer inside DataParallel's backward hook ends in std::terminate (C++,
            # uncatchable): its two "terminate called ... what(): <peer>" lines, then the default abort, rather
            # than paddle's SIGABRT handler and its C++ stack dump
            signal.signal(signal.SIGABRT, signal.SIG_DFL)
    quiet_sigterm()  # every recipe process: one line and exit 143, never paddle's (hang-prone) C++ dump
    if device is None:
        device = default_device(local_rank)
    elif device == "gpu":
        device = f"gpu:{local_rank}"
    _set_device(device)
    if world > 1 and str(device).startswith("cpu"):
        set_cpu_threads_per_rank(_env_int("PADDLE_LOCAL_SIZE", max(1, world // _env_int("PADDLE_NNODES", 1))))
    if world > 1 and not dist.is_initialized():
        dist.init_parallel_env()
    if world > 1 and _env_int("PADDLE_NNODES", 1) > 1:  # a lost node: one line within a bounded time (peers.py)
        peers.start_peer_monitor(dist.get_rank(), dist.get_world_size(), _env_int("PADDLE_LOCAL_SIZE", 1),
                                 os.environ.get("PADDLE_CURRENT_ENDPOINT", "127.0.0.1:0").rsplit(":", 1)[0],
                                 paddle.base.core.create_or_get_global_tcp_store())
    rank = dist.get_rank() if world > 1 else 0
    world = dist.get_world_size() if world > 1 else 1
    nnodes = _env_int("PADDLE_NNODES", 1)
    info = DistInfo(rank=rank, world_size=world, local_rank=local_rank, device=paddle.device.get_device(),
                    nnodes=nnodes)
    if seed is not None:
        seed_everything(seed + rank if seed_per_rank else seed)
    return info


def wrap_model(model: paddle.nn.Layer, info: DistInfo, find_unused_parameters: bool = False) -> paddle.nn.Layer:
    """paddle.DataParallel(model) when world_size > 1 (params are broadcast from rank 0), else model."""
    if info.world_size > 1 and not isinstance(model, paddle.DataParallel):
        return paddle.DataParallel(model, find_unused_parameters=find_unused_parameters)
    return model


def unwrap(model: paddle.nn.Layer) -> paddle.nn.Layer:
    """The user's Layer inside DataParallel (or the model itself)."""
    return model._layers if isinstance(model, paddle.DataParallel) else model


def bn_stat_names(model: paddle.nn.Layer) -> list[str]:
    """state_dict names of the BatchNorm running statistics (``_mean``, ``_variance``) of `model`, in layer order:
    BatchNorm1D/2D/3D and paddle.nn.BatchNorm (not a _BatchNormBase; PaddleOCR's DB head uses it)."""
    return [f"{name}.{stat}" for name, layer in unwrap(model).named_sublayers()
            if isinstance(layer, BN_TYPES) for stat in ("_mean", "_variance")]

def bn_stats(model: paddle.nn.Layer, names: list[str] | None = None) -> list:
    """The BatchNorm running-statistics tensors of `model` (the entries bn_stat_names names, or `names` when the
    caller has them), in layer order."""
    state = unwrap(model).state_dict()
    return [state[n] for n in (bn_stat_names(model) if names is None else names) if n in state]


@paddle.no_grad()
def average_over_ranks_(tensors: list) -> int:
    """DDP: replace each tensor by its mean over the ranks, in place (one all_reduce of them all). A collective:
    every rank calls it with the same tensors; a no-op on one process. Returns the tensors averaged."""
    if dist.get_world_size() <= 1 or not tensors:
        return 0
    flat = paddle.concat([t.astype("float32").reshape([-1]) for t in tensors])
    dist.all_reduce(flat)
    flat = flat / dist.get_world_size()
    start = 0
    for t in tensors:
        n = int(np.prod(t.shape))
        paddle.assign(flat[start:start + n].reshape(t.shape).astype(t.dtype), t)
        start += n
    return len(tensors)


def average_bn_stats(model: paddle.nn.Layer, ema=None) -> int:
    """DDP: replace every rank's BatchNorm running statistics (and their EMA shadows, `ema`) by their mean over the
    ranks, so that all ranks evaluate and save one and the same model. Without it each rank's statistics follow its
    own batches (DataParallel averages gradients only), a sharded eval scores a mix of them and the checkpoint holds
    rank 0's. A collective (average_over_ranks_). Returns the tensors averaged. The Trainer keeps bn_stats(model)
    once and averages them after every optimizer step."""
    if dist.get_world_size() <= 1:
        return 0
    names = bn_stat_names(model)
    shadow = ema.shadow if ema else {}
    return average_over_ranks_(bn_stats(model, names) + [shadow[n] for n in names if n in shadow])


class PeerError(RuntimeError):
    """Another rank of this run failed (raise_together), or a collective lost its peer; the message says which."""


def raise_together(fn, errors: tuple = (Exception,), what: str = "a step"):
    """Run ``fn()`` on every rank and agree on the outcome (one all-reduce): when it raised one of ``errors`` on
    any rank, every rank raises, the failing ones their own error and the others PeerError naming ``what``, so
    no rank goes on into a collective its peers never join. Returns fn()'s result. No collective on one process."""
    try:
        result, error = fn(), None
    except errors as exc:
        result, error = None, exc
    if dist.get_world_size() > 1:
        failed = int(all_reduce_sum(1.0 if error is not None else 0.0))
        if error is None and failed:
            raise PeerError(f"{what} failed on {failed} other rank(s); see their error line")
    if error is not None:
        raise error
    return result


_PEER_LOSS = ("gloo", "Connection reset by peer", "Connection closed by peer", "TIMEOUT self_rank", "NCCL error")


def is_peer_loss(exc: BaseException) -> bool:
    """A collective failed because a peer rank went away (its process ended), as gloo/NCCL report it."""
    return isinstance(exc, RuntimeError) and dist.get_world_size() > 1 and any(k in str(exc) for k in _PEER_LOSS)


def exit_now(exit_code: int) -> None:
    """Flush logs and stdio, then os._exit: a rank that stops early skips interpreter teardown, which can
    block in a DataLoader or gloo destructor once its peers are gone (it would outlive the launcher)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(exit_code)


def barrier() -> None:
    if dist.get_world_size() > 1:
        dist.barrier()

def all_reduce_sum(value):
    """Sum of a number/tensor over ranks (identity on one process)."""
    if dist.get_world_size() <= 1:
        return value
    is_tensor = isinstance(value, paddle.Tensor)
    t = value.clone() if is_tensor else paddle.to_tensor(float(value), dtype="float64")
    dist.all_reduce(t)
    return t if is_tensor else float(t.item())


def ranks_disagreeing(value: str) -> list[int]:
    """The ranks whose `value` differs from rank 0's (a collective: every rank calls it; [] on one process)."""
    if dist.get_world_size() <= 1:
        return []
    digest = int.from_bytes(hashlib.sha256(value.encode()).digest()[:7], "big")  # fits int64
    table = paddle.zeros([dist.get_world_size()], dtype="int64")
    table[dist.get_rank()] = digest
    dist.all_reduce(table)
    seen = table.numpy().tolist()
    return [r for r, d in enumerate(seen) if d != seen[0]]


class _StdoutHandler(logging.StreamHandler):
    """A StreamHandler that writes to whatever sys.stdout is when a record is emitted, so a recipe run again in one
    process (a notebook, a test under capture) never writes to a stream an earlier run's caller has closed."""

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ assigns it; the current sys.stdout is always used
        pass

def setup_logging(info: DistInfo | None = None, log_file: str | None = None, level=logging.INFO) -> logging.Logger:
    """Root logging: INFO on rank 0, WARNING on other ranks; optional file (rank 0 only)."""
    info = info or DistInfo()
    root = logging.getLogger()
    root.setLevel(level if info.is_main else logging.WARNING)
    fmt = logging.Formatter(f"[%(asctime)s] [rank {info.rank}] %(levelname)s %(name)s: %(message)s",
                            "%Y/%m/%d %H:%M:%S")
    for h in list(root.handlers):  # `import paddle` installs its own root handler: avoid every line twice
        if not getattr(h, "_paddle_recipes", False) and type(h) is logging.StreamHandler:
            root.removeHandler(h)
    if not any(getattr(h, "_paddle_recipes", False) for h in root.handlers):
        handler = _StdoutHandler()
        handler._paddle_recipes = True
        handler.setFormatter(fmt)
        root.addHandler(handler)
    if log_file and info.is_main:
        os.makedirs(os.path.dirname(os.path.abspath(log_file)), exist_ok=True)
        fh = logging.FileHandler(log_file, encoding="utf-8")
        fh._paddle_recipes = True
        fh.setFormatter(fmt)
        root.addHandler(fh)
    return root
