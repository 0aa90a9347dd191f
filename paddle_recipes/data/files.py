"""Reading a file whose size a user controls: regular files only, at most a given number of bytes.

    data = read_bounded(path, 16 << 20, InferenceFormatError, hint="raise it with $X")

Nothing is opened before ``os.stat`` says the path is a regular file (a FIFO would block, /dev/zero never ends), and
no more than ``max_bytes + 1`` bytes are read even should the file grow after the stat.
"""
from __future__ import annotations

import os
import stat


def file_kind(mode: int) -> str:
    """What a non-regular file is, from its st_mode: "FIFO", "character device", "block device", "socket", "folder"."""
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder")):
        if test(mode):
            return name
    return "special file"


def regular_file_size(path: str | os.PathLike, error: type, what: str = "file") -> int:
    """The size in bytes of regular file ``path``; ``error``: "<path>: not a regular file (a FIFO)", or
    "<what> not found: <path>" when missing."""
    try:
        st = os.stat(path)  # follows symlinks: a link to a FIFO is a FIFO here
    except FileNotFoundError:
        raise error(f"{what} not found: {path}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: not a regular file (a {file_kind(st.st_mode)})")
    return st.st_size


def _too_large(path, size: str, max_bytes: int, error: type, what: str, hint: str) -> Exception:
    article = "an" if what[:1].lower() in "aeiou" else "a"
    return error(f"{path}: {size} bytes: {article} {what} may have at most {max_bytes:,} bytes{f' ({hint})' if hint else ''}: "
                 "refused")


def check_size(path: str | os.PathLike, max_bytes: int, error: type, what: str = "file", hint: str = "") -> int:
    """From ``os.stat`` alone: the size of regular file ``path`` when at most ``max_bytes``; else ``error`` (one line
    naming it, and ``hint``, e.g. how to raise the cap)."""
    size = regular_file_size(path, error, what)
    if size > max_bytes:
        raise _too_large(path, f"{size:,}", max_bytes, error, what, hint)
    return size


def read_bounded(path: str | os.PathLike, max_bytes: int, error: type, what: str = "file", hint: str = "") -> bytes:
    """The bytes of regular file ``path`` of at most ``max_bytes`` bytes (check_size first: nothing is read from a
    larger file); else ``error`` with one line naming it."""
    check_size(path, max_bytes, error, what, hint)
    try:  # O_NONBLOCK: should the path have become a FIFO since the stat, open() does not wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise error(f"{path}: cannot read it ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{path}: not a regular file (a {file_kind(mode)})")
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:  # it grew since the stat
        raise _too_large(path, f"more than {max_bytes:,}", max_bytes, error, what, hint)
    return data
