"""SIGTERM / SIGINT end a recipe process in one line and exit 143 / 130, from the first instant after launch.

    python recipes/ocr_rec.py ...          # recipes/*.py, console scripts and `python -m paddle_recipes.recipes.x`
    run_entry("paddle_recipes.recipes.ocr_rec")   # all call this: handlers first, then the heavy imports

Paddle installs C++ handlers for SIGTERM (and more) while ``import paddle`` runs; its handler formats a
"FatalError: Termination signal" dump inside the signal handler (allocation, stream I/O: it can deadlock, issue 21).
So handlers are installed before anything imports paddle; SIGTERM / SIGINT are then held (blocked, not lost)
while the recipe module and paddle are imported, our handlers are installed again over paddle's, and only then are
the signals let through: a signal sent during the import ends the process in one line as soon as the import
returns (about a second at most). Standard library only: importing this module must not import paddle.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
from typing import Iterator, Optional, Sequence

__all__ = ["install", "hold", "held_signals", "run_entry", "started_as_module", "module_target"]

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _announce(reason: str) -> None:
    """Tell the other nodes why this rank leaves (peers.announce_leaving), when that module is in use already."""
    peers = sys.modules.get("paddle_recipes.runtime.peers")
    if peers is not None:
        peers.announce_leaving(reason)


def install(exit_code: int = 143) -> None:
    """Replace the SIGTERM handler (paddle's C++ one included) by one line and exit ``exit_code``; Ctrl-C (SIGINT)
    likewise: one line and exit 130, not a KeyboardInterrupt traceback. Main thread only (a no-op elsewhere).

    Python's own C handler only sets a flag; ours then runs between bytecodes and uses just os.write and
    os._exit (no buffered stream, no logging lock, no collective). A terminal's Ctrl-C also reaches the forked
    loader workers, which inherit the handler: they ignore it and end with this process (lifetime.py), so the
    one line comes from here."""
    if threading.current_thread() is not threading.main_thread():
        return
    launched, owner = "PADDLE_TRAINER_ID" in os.environ, os.getpid()
    who = f"rank {os.environ['PADDLE_TRAINER_ID']}" if launched else f"process {owner}"
    line = (f"{who}: stopped by SIGTERM" + (" (another rank failed, or the launcher is stopping)" if launched else "")
            + "\n").encode()

    def stop(signum, frame):
        try:
            os.write(2, line)
            _announce("it was stopped by SIGTERM")  # multi-node: tell rank 0 (bounded wait)
        finally:
            os._exit(exit_code)

    def interrupted(signum, frame):
        if os.getpid() != owner:  # a forked loader worker
            return
        try:
            os.write(2, f"{who}: stopped by Ctrl-C (SIGINT)\n".encode())
            _announce("it was stopped by Ctrl-C (SIGINT)")
        finally:
            os._exit(130)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, interrupted)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # signals held since start-up (hold) come through now


def hold() -> None:
    """Install our handlers, then hold SIGTERM / SIGINT (pthread_sigmask block: a signal sent meanwhile stays
    pending, it is not lost) until the next install() lets them through, after paddle's import replaced the
    handlers. Threads started meanwhile inherit the block, so a pending signal reaches the main thread. Main
    thread only (a no-op elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        install()
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """hold() while the body runs (it may import paddle), then install() again over paddle's handlers and let the
    held signals through; on an exception the signals are let through too."""
    hold()
    try:
        yield
    finally:
        install()


def module_target() -> str:
    """The module ``python -m <module>`` runs ("" when not started so)."""
    orig = getattr(sys, "orig_argv", [])
    return next((orig[i + 1] for i, a in enumerate(orig[:-1]) if a == "-m"), "")


def started_as_module(package: str) -> bool:
    """True while ``python -m <package>.<x>`` is locating its module (sys.argv[0] is "-m" then, and the parent
    packages are being imported): the moment to hold() before the module's own imports run."""
    return sys.argv[:1] == ["-m"] and module_target().startswith(package + ".")


def run_entry(module: str, argv: Optional[Sequence[str]] = None, preflight: Optional[str] = None) -> None:
    """The entry of a recipe program: handlers first, then ``preflight``'s ``check(module, argv)`` (a module that
    imports no paddle, so the signals need no holding: checks that can fail fast, e.g.
    paddle_recipes.recipes.preflight; it exits 2 in one line on a bad input), then ``module`` imported with the
    signals held, then its ``cli(argv)`` (None: sys.argv[1:])."""
    if preflight is not None:
        install()  # our handlers, the signals let through: the pre-flight imports no paddle
        importlib.import_module(preflight).check(module, None if argv is None else list(argv))
    with held_signals():
        cli = importlib.import_module(module).cli
    cli(None if argv is None else list(argv))
