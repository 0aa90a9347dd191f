"""Device-aware defaults: threads per process, DataLoader workers and AMP for the device a run is on.

    dd = choose_defaults(device="cpu", cores=usable_cores(), nproc=2)
    dd.threads_per_process, dd.num_workers, dd.amp, dd.amp_dtype   # 1, 0, False, None on a 2-core CPU
    for line in dd.reasons: logger.info(line)                      # why each value was chosen
    apply_threads(dd.threads_per_process)                           # OMP/MKL env + paddle's math library

Rules (measured in issue 13 on a 2-core CPU; GPU rules follow PaddleOCR/ppdet practice):
- CPU, threads: cores // processes-per-node (each process gets its own cores; oversubscription makes
  DDP slower: 1 process x 2 threads ran at x0.73 of 1 x 1 while 2 processes x 1 thread gave x1.33).
  An explicit OMP_NUM_THREADS is respected.
- CPU, workers: 0 (the loader share of the step was ~0%; a worker process competes for the same cores),
  unless cores are left over after the training threads: then one worker per spare core, up to 4.
- CPU, AMP: off (paddle runs fp32 on CPU whatever AMP says).
- GPU: AMP on (bfloat16 when supported, else float16 O1 with loss scaling); workers min(8, cores
  per process - 1); threads: 1-2 per process for host-side ops.
User values always win: pass them as ``user`` ({"threads": 4, "workers": 2, "amp": False}).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Mapping, Optional

logger = logging.getLogger(__name__)

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass
class DeviceDefaults:
    device: str
    threads_per_process: int
    num_workers: int
    amp: bool
    amp_dtype: Optional[str]
    amp_level: Optional[str]
    reasons: list = field(default_factory=list)

    def log(self, log: logging.Logger = logger) -> None:
        for r in self.reasons:
            log.info("device defaults: %s", r)


def usable_cores() -> int:
    """CPU cores this process may run on (affinity mask; cgroup quotas are not read)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover (non-Linux)
        return max(1, os.cpu_count() or 1)


def env_threads(env: Mapping[str, str]) -> Optional[int]:
    for k in THREAD_ENV:
        v = env.get(k)
        if v:
            try:
                return max(1, int(v))
            except ValueError:
                raise ValueError(f"{k}={v!r} is not an integer") from None
    return None


def choose_defaults(device: str, cores: int, nproc: int = 1, env: Optional[Mapping[str, str]] = None,
                    bf16_supported: bool = False, user: Optional[Mapping] = None) -> DeviceDefaults:
    """Pure function: the settings for ``nproc`` training processes per node on ``device`` with ``cores`` cores.

    device: "cpu" or "gpu"/"gpu:N". env: environment to read OMP_NUM_THREADS from (default os.environ).
    user: explicit values ({"threads", "workers", "amp"}) that override the rules (and are logged as such).
    """
    if cores < 1 or nproc < 1:
        raise ValueError(f"cores and nproc must be >= 1, got cores={cores}, nproc={nproc}")
    env = os.environ if env is None else env
    user = dict(user or {})
    gpu = str(device).startswith("gpu")
    reasons = []
    per_proc = max(1, cores // nproc)
    if nproc > cores:
        reasons.append(f"{nproc} processes on {cores} cores: oversubscribed, expect each step to slow down")

    env_t = env_threads(env)
    if "threads" in user:
        threads = int(user["threads"])
        reasons.append(f"threads {threads} per process: set by the user")
    elif env_t is not None:
        threads = env_t
        reasons.append(f"threads {threads} per process: OMP_NUM_THREADS/MKL_NUM_THREADS set in the environment")
    elif gpu:
        threads = min(2, per_proc)
        reasons.append(f"threads {threads} per process: GPU run, host threads only feed the device")
    else:
        threads = per_proc
        reasons.append(f"threads {threads} per process: {cores} cores // {nproc} processes "
                       "(no oversubscription between DDP ranks)")

    if "workers" in user:
        workers = int(user["workers"])
        reasons.append(f"workers {workers}: set by the user")
    elif gpu:
        workers = max(1, min(8, per_proc - 1))
        reasons.append(f"workers {workers}: GPU run, decode/augment in {workers} processes so the GPU does not wait")
    else:
        spare = cores - threads * nproc
        workers = max(0, min(4, spare // nproc))
        reasons.append(f"workers {workers}: CPU run, " + (
            "no spare cores (a worker would take cycles from training; the loader share was ~0%)"
            if workers == 0 else f"{spare} spare cores after the training threads"))

    if "amp" in user:
        amp = bool(user["amp"])
        reasons.append(f"AMP {'on' if amp else 'off'}: set by the user")
    else:
        amp = gpu
        reasons.append("AMP on: GPU" if gpu else "AMP off: paddle trains fp32 on CPU (AMP would be a no-op)")
    dtype = level = None
    if amp and gpu:
        dtype = "bfloat16" if bf16_supported else "float16"
        level = "O1"
        reasons.append(f"AMP {dtype} O1" + (" (no loss scaling needed)" if bf16_supported else
                                            " with dynamic loss scaling"))
    elif amp:
        reasons.append("AMP requested on CPU: no effect (paddle runs fp32)")
    return DeviceDefaults(str(device), threads, workers, amp, dtype, level, reasons)


def apply_threads(threads: int, env: Optional[dict] = None, override: bool = False) -> dict:
    """Set OMP/MKL thread env vars (when unset, or always with override) and paddle's math-library threads.

    Returns {var: value} of what was set. Call before heavy paddle work; OMP reads its env var at
    first use, paddle's ``core.set_num_threads`` applies at once.
    """
    env = os.environ if env is None else env
    changed = {}
    for k in THREAD_ENV:
        if override or not env.get(k):
            env[k] = str(int(threads))
            changed[k] = env[k]
    try:
        from paddle.base import core

        core.set_num_threads(int(threads))
    except (ImportError, AttributeError):  # pragma: no cover
        pass
    return changed
