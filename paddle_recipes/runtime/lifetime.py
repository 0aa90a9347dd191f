"""Child processes that end when their parent does (Linux PR_SET_PDEATHSIG), on every path.

A watchdog thread that polls os.getppid() cannot run while the interpreter tears down or while another
thread holds the GIL in C code; a DataLoader worker blocked in a pipe read never polls at all. The kernel's
parent-death signal needs neither:

    set_parent_death_signal(signal.SIGKILL)             # in the child (e.g. a DataLoader worker_init_fn)
    subprocess.Popen(cmd, preexec_fn=die_with_parent)   # a launched child gets SIGTERM when we die

The signal is sent when the parent *thread* that forked the child exits, so spawn long-lived children from
a thread that outlives them (the main thread, or the thread that waits for them). No-op off Linux.
"""
from __future__ import annotations

import os
import signal

PR_SET_PDEATHSIG = 1


def _load_prctl():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None


_PRCTL = _load_prctl()  # resolved here, not in a forked child (no dlopen between fork and exec)


def set_parent_death_signal(signum: int = signal.SIGTERM, parent: int | None = None) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent dies. If the parent is already gone
    (``parent`` given and os.getppid() differs: we were re-parented before the call), send it now.
    Returns False when unsupported (not Linux)."""
    if _PRCTL is None or _PRCTL(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
        return False
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), signum)
    return True


def die_with_parent() -> None:
    """``preexec_fn`` for subprocess.Popen: the child (and what it execs) gets SIGTERM when this process dies."""
    set_parent_death_signal(signal.SIGTERM)
