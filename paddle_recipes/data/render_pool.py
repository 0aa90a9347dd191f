"""Fork pools for CPU rendering (synthetic lines and pages): ``fork_map(fn, jobs, workers)``.

Two hazards of forking a process that already used OpenCV and paddle, both handled here:
* OpenCV's thread pool: a child forked while the parent's pool threads wait on their condition variable
  inherits that state without the threads, and the child's first ``cv2.setNumThreads`` or parallel call
  blocks forever (seen: ``pthread_cond_destroy`` in a worker, the test run hung). The parent's OpenCV is
  switched to 1 thread before the fork (its pool torn down cleanly) and restored after the pool ends.
* paddle's signal handlers: ``terminate()`` SIGTERMs live workers and each prints a C++ "FatalError" dump;
  the pool is closed and joined instead, so workers exit on their own.
Results come back in job order (``Pool.map`` / ``starmap``), so output does not depend on ``workers``.
"""
from __future__ import annotations

import multiprocessing as mp
import os
from contextlib import contextmanager
from typing import Callable, Iterable, List

import cv2


@contextmanager
def single_threaded_cv2():
    """OpenCV at 1 thread inside the block, its previous thread count restored after."""
    before = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        yield
    finally:
        cv2.setNumThreads(before)


def fork_map(fn: Callable, jobs: Iterable, workers: int, initializer: Callable | None = None, initargs=(),
             chunksize: int = 1, star: bool = False) -> List:
    """``[fn(job) for job in jobs]`` (``fn(*job)`` with ``star``) in ``workers`` forked processes (spawned where
    fork does not exist), in job order."""
    ctx = mp.get_context("fork" if hasattr(os, "fork") else "spawn")
    with single_threaded_cv2(), ctx.Pool(workers, initializer=initializer, initargs=initargs) as pool:
        out = (pool.starmap if star else pool.map)(fn, list(jobs), chunksize=chunksize)
        pool.close()  # let the workers exit (terminate() would SIGTERM them: paddle prints a C++ dump)
        pool.join()
    return out
