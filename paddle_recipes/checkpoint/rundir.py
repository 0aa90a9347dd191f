"""The run-dir lock: one run per output dir (`OutputLock`, output_dir/.lock held with flock(2))."""
from __future__ import annotations

import logging
import os
import socket
from pathlib import Path

from .format import CheckpointError

LOCK_FILE = ".lock"
logger = logging.getLogger("paddle_recipes.checkpoint.format")  # one logger for the checkpoint area


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """An output dir held by one run: `dir/.lock`, held with flock(2) for the run's lifetime and holding
    "pid host" for the error message. Acquisition is atomic (the kernel lock, not the file's content,
    decides), and a run killed with -9 frees it (the kernel drops the flock): the next run takes it over
    with a warning. A lock naming a live pid on this host, or another host, is also refused (a run that
    does not flock, or NFS). Re-entrant within one process: the first acquirer owns it, release() of a
    nested acquire is a no-op.

        with OutputLock("output/rec"): ...   # or lock.acquire() / lock.release()
    """

    _held: dict[str, int] = {}  # resolved lock path -> fd, for this process

    def __init__(self, output_dir: str | os.PathLike):
        self.path = Path(output_dir) / LOCK_FILE
        self.held = False
        self._owns = False

    def _owner(self) -> tuple[int, str] | None:
        try:
            pid, _, host = self.path.read_text(encoding="utf-8").strip().partition(" ")
            return int(pid), host
        except (OSError, ValueError):
            return None

    def _busy(self, owner) -> CheckpointError:
        who = f"pid {owner[0]} on {owner[1]}" if owner else "another process"
        return CheckpointError(f"output dir {self.path.parent} is in use by {who} (lock {self.path}); use "
                               f"another Global.output_dir or stop that run")

    def acquire(self) -> "OutputLock":
        import fcntl

        me = (os.getpid(), socket.gethostname())
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CheckpointError(f"cannot create output dir {self.path.parent}: {exc.strerror or exc}") from None
        key = os.path.realpath(self.path)
        if key in OutputLock._held:
            self.held = True
            return self
        for _ in range(50):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            except OSError as exc:
                raise CheckpointError(f"cannot write lock {self.path}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise self._busy(self._owner()) from None
            except OSError as exc:
                os.close(fd)
                raise CheckpointError(f"cannot lock {self.path}: {exc.strerror or exc}") from None
            try:  # the holder unlinked it between our open and flock: lock the new file instead
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            owner = self._owner()
            if owner is not None and owner != me and (owner[1] != me[1] or _pid_alive(owner[0])):
                os.close(fd)
                raise self._busy(owner)
            if owner is not None and owner != me:
                logger.warning("taking over stale lock %s (pid %d is not running)", self.path, owner[0])
            try:
                os.ftruncate(fd, 0)
                os.write(fd, f"{me[0]} {me[1]}\n".encode())
            except OSError as exc:
                os.close(fd)
                raise CheckpointError(f"cannot write lock {self.path}: {exc.strerror or exc}") from None
            OutputLock._held[key] = fd
            self.held = self._owns = True
            return self
        raise CheckpointError(f"could not take the lock {self.path} (another run keeps taking it)")

    def release(self) -> None:
        if self._owns:
            fd = OutputLock._held.pop(os.path.realpath(self.path), None)
            if fd is not None:
                self.path.unlink(missing_ok=True)  # unlink while holding the flock, then drop it
                os.close(fd)
        self.held = self._owns = False

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()

