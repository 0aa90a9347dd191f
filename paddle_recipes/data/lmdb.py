"""LMDB sets in PaddleOCR's layout: ``num-samples``, ``image-%09d`` (encoded bytes), ``label-%09d`` (UTF-8),
1-based. Truncated files are one clear error, never a SIGBUS; environments open lazily per process.

    write_lmdb("out/lmdb", [(jpeg_bytes, "你好"), ...])
    LmdbDataset("out/lmdb")[0] -> (jpeg_bytes, "你好")
"""
from __future__ import annotations

import bisect
import os
import shutil
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

__all__ = ["LmdbFormatError", "LmdbLabelError", "write_lmdb", "LmdbDataset"]

class LmdbFormatError(ValueError):
    """An LMDB directory is missing, truncated or not in PaddleOCR's layout."""


class LmdbLabelError(LmdbFormatError):
    """One LMDB label is not valid UTF-8 (the message names the lmdb and key index)."""


def _check_sample(i: int, sample) -> tuple[bytes, str]:
    try:
        img, label = sample
    except (TypeError, ValueError):
        raise TypeError(f"write_lmdb sample #{i}: expected (image_bytes, label_str), got {type(sample).__name__}") from None
    if isinstance(img, (bytearray, memoryview)):
        img = bytes(img)
    if not isinstance(img, bytes):
        raise TypeError(f"write_lmdb sample #{i}: image must be bytes (encoded file), got {type(img).__name__}")
    if not isinstance(label, str):
        raise TypeError(f"write_lmdb sample #{i}: label must be str, got {type(label).__name__}")
    return img, label


def write_lmdb(out_dir: str | os.PathLike, samples: Iterable[tuple[bytes, str]],
               map_size: int = 1 << 32, commit_every: int = 1000, overwrite: bool = False) -> int:
    """Write samples to an LMDB in PaddleOCR's layout; returns the number of samples.

    Keys: ``num-samples`` (ascii int), ``image-%09d`` (raw bytes), ``label-%09d`` (utf-8),
    indices 1-based. Written into ``<out_dir>.tmp-<pid>`` and renamed at the end, so a crash
    never leaves a half-written ``out_dir``. ``map_size`` (bytes) grows automatically when full.
    """
    import lmdb

    out_dir = Path(out_dir)
    if out_dir.exists():
        if not overwrite:
            raise FileExistsError(f"{out_dir} already exists (pass overwrite=True to replace it)")
    tmp = out_dir.with_name(f"{out_dir.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    env = lmdb.open(str(tmp), map_size=map_size, subdir=True, lock=True)
    n = 0
    pending: list[tuple[bytes, bytes]] = []

    def flush():
        nonlocal map_size
        while True:
            try:
                with env.begin(write=True) as txn:
                    for k, v in pending:
                        txn.put(k, v)
                break
            except lmdb.MapFullError:
                map_size *= 2
                env.set_mapsize(map_size)
        pending.clear()

    try:
        for sample in samples:
            img, label = _check_sample(n, sample)
            n += 1
            pending.append((b"image-%09d" % n, img))
            pending.append((b"label-%09d" % n, label.encode("utf-8")))
            if len(pending) >= 2 * commit_every:
                flush()
        pending.append((b"num-samples", str(n).encode()))
        flush()
        env.sync()
    except BaseException:
        env.close()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    env.close()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    os.replace(tmp, out_dir)
    return n


_LMDB_ENVS: dict = {}  # (pid, resolved path) -> ((inode, size, mtime) of data.mdb, the env LmdbDatasets share)


class LmdbDataset:
    """PaddleOCR-layout LMDB(s) as a map-style dataset: ``ds[i] -> (image_bytes, label)``.

    ``paths`` may be one directory or a list (concatenated in order). The LMDB environments
    are opened lazily in each process (checked by pid), so the dataset is fork-safe for
    DataLoader workers: a parent's open handle is never used in a child.
    """

    def __init__(self, paths: str | os.PathLike | Sequence[str | os.PathLike]):
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.paths = [Path(p) for p in paths]
        if not self.paths:
            raise LmdbFormatError("LmdbDataset needs at least one lmdb directory")
        self.sizes = [self._read_num_samples(p) for p in self.paths]
        self._cum = np.cumsum(self.sizes).tolist()
        self._envs: list | None = None
        self._pid: int | None = None

    @staticmethod
    def _open(path: Path):
        """This process's one read-only environment of `path`, shared by every LmdbDataset (lmdb opens a path
        once per process: Train and Eval on one LMDB, or two runs in one process, would fail otherwise)."""
        import lmdb

        pid = os.getpid()
        for key in [k for k in _LMDB_ENVS if k[0] != pid]:  # inherited through fork: unmap (see _envs_here)
            try:
                _LMDB_ENVS.pop(key)[1].close()
            except Exception:  # pragma: no cover - best effort
                pass
        key, st = (pid, str(Path(path).resolve())), (Path(path) / "data.mdb").stat()
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key in _LMDB_ENVS and _LMDB_ENVS[key][0] != stamp:  # the file was replaced: the old map is stale
            _LMDB_ENVS.pop(key)[1].close()
        if key not in _LMDB_ENVS:
            _LMDB_ENVS[key] = (stamp, lmdb.open(str(path), readonly=True, lock=False, readahead=False,
                                                meminit=False, max_readers=64))
        return _LMDB_ENVS[key][1]

    @classmethod
    def _read_num_samples(cls, path: Path) -> int:
        import lmdb

        if not (path / "data.mdb").is_file():
            raise LmdbFormatError(f"lmdb dataset not found: {path} (expected {path / 'data.mdb'})")
        try:
            env = cls._open(path)
        except lmdb.Error as exc:
            raise LmdbFormatError(f"cannot open lmdb {path}: {exc}") from None
        try:
            # A truncated data.mdb is mapped beyond its end: touching those pages is SIGBUS, not an
            # exception. The meta page says how many pages the file must have; check that first.
            need = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
            have = (path / "data.mdb").stat().st_size
            if have < need:
                raise LmdbFormatError(f"{path / 'data.mdb'} is truncated: {have} bytes, the lmdb needs {need} "
                                      f"(copy it again)")
            with env.begin() as txn:
                raw = txn.get(b"num-samples")
        except lmdb.Error as exc:
            raise LmdbFormatError(f"cannot read lmdb {path / 'data.mdb'}: {exc}") from None
        if raw is None:
            raise LmdbFormatError(f"{path}: key 'num-samples' is missing; not a PaddleOCR-style lmdb")
        try:
            return int(raw.decode())
        except ValueError:
            raise LmdbFormatError(f"{path}: 'num-samples' is not an integer: {raw[:20]!r}") from None

    def _envs_here(self):
        if self._envs is None or self._pid != os.getpid():
            if self._envs is not None:
                # Inherited through fork: never use the parent's handles. Closing them here
                # only unmaps this child's copy (readonly, lock=False), and clears py-lmdb's
                # per-process "already open" registry that fork also copied.
                for env in self._envs:
                    try:
                        env.close()
                    except Exception:  # pragma: no cover - best effort
                        pass
            self._envs = [self._open(p) for p in self.paths]
            self._pid = os.getpid()
        return self._envs

    def __len__(self) -> int:
        return self._cum[-1] if self._cum else 0

    def locate(self, idx: int) -> tuple[int, int]:
        """Global index -> (lmdb number, 1-based key index inside it)."""
        n = len(self)
        if idx < 0:
            idx += n
        if not 0 <= idx < n:
            raise IndexError(f"index {idx} out of range for LmdbDataset of {n} samples")
        part = bisect.bisect_right(self._cum, idx)
        start = self._cum[part - 1] if part else 0
        return part, idx - start + 1

    def __getitem__(self, idx: int) -> tuple[bytes, str]:
        part, key = self.locate(int(idx))
        with self._envs_here()[part].begin() as txn:
            img = txn.get(b"image-%09d" % key)
            label = txn.get(b"label-%09d" % key)
        if img is None or label is None:
            raise LmdbFormatError(f"{self.paths[part]}: missing key "
                                  f"{'image' if img is None else 'label'}-{key:09d}")
        try:
            return img, label.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LmdbLabelError(f"{self.paths[part]}:{key}: label-{key:09d} is not UTF-8 "
                                 f"({exc.reason} at byte {exc.start})") from None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_envs"], state["_pid"] = None, None
        return state
