"""Data blocks: DataLoader builder, PaddleOCR label files, LMDB datasets, albumentations adapter.

Each piece is usable alone:

    loader = build_loader(dataset, batch_sampler, LoaderConfig(num_workers=2))
    records = read_label_file("train.txt")              # [LabelRecord(image_path, label, "train.txt:3"), ...]
    write_lmdb("out/lmdb", [(jpeg_bytes, "你好"), ...])  # PaddleOCR keys, 1-based
    LmdbDataset("out/lmdb")[0] -> (jpeg_bytes, "你好")
    aug = AlbumentationsAdapter(A.Compose([...]), seed=0); aug(image)

Note: paddle.io.DataLoader has no ``pin_memory`` option (unlike torch). Host->device
copies are overlapped by ``use_buffer_reader=True`` (a background prefetch thread)
instead; there is nothing to pin.
"""
from __future__ import annotations

import bisect
import os
import random
import shutil
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

__all__ = [
    "LoaderConfig", "build_loader", "shm_free_mb", "seed_worker", "DataError", "GuardedDataset", "GuardedCollate",
    "current_sample_key",
    "LabelFileError", "LabelRecord", "LabelRecords", "read_label_file", "LabelFileDataset",
    "LmdbFormatError", "LmdbLabelError", "write_lmdb", "LmdbDataset", "image_pixels", "MAX_IMAGE_PIXELS",
    "AlbumentationsAdapter", "bbox_compose",
]

SHM_PATH = "/dev/shm"


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
    timeout: seconds to wait for a worker batch (0 = forever).
    seed: base seed mixed into every worker's numpy/random seed (None = only paddle's
        per-iterator seed, itself drawn from the main process's numpy RNG).
    min_shm_mb: free /dev/shm (MB) required before shared memory is used with workers.
    """

    num_workers: int = 0
    persistent_workers: bool = False
    use_shared_memory: bool = True
    prefetch_factor: int = 2
    use_buffer_reader: bool = True
    timeout: int = 0
    seed: int | None = 0
    min_shm_mb: int = 512

    def __post_init__(self):
        from .config import ConfigError

        for name in ("num_workers", "timeout"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.prefetch_factor < 1:
            raise ConfigError(f"prefetch_factor must be >= 1, got {self.prefetch_factor}")
        for name in ("batch_size_per_card", "batch_size"):  # subclasses add a batch size
            value = getattr(self, name, None)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")


# ----------------------------------------------------------------------------- load errors
class DataError(RuntimeError):
    """Loading a sample or collating a batch failed; the message names the sample (and its file)."""


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

    def __init__(self, dataset, unwrap_keys: bool = False):
        self.dataset = dataset
        self.unwrap_keys = unwrap_keys

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name):  # stats, records, skipped, ... of the wrapped dataset
        if name == "dataset":
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __getitem__(self, idx):
        if isinstance(idx, (tuple, list)) and len(idx) == 2:  # (epoch, index); other key shapes pass through
            _SAMPLE.key = (int(idx[0]), int(idx[1]))
            if self.unwrap_keys:
                idx = int(idx[1])
        else:
            _SAMPLE.key = None
        try:
            return self.dataset[idx]
        except Exception as exc:  # noqa: BLE001 - reported in the main process, not swallowed
            return _LoadFailure(_describe(exc, f"sample {idx}"))


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


def _checked_loader_class():
    import paddle

    class CheckedDataLoader(paddle.io.DataLoader):
        """paddle.io.DataLoader that raises DataError (in the main process) for an error batch."""

        def __iter__(self):
            for batch in super().__iter__():
                raise_if_error_batch(batch)
                yield batch

    return CheckedDataLoader


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

    def __init__(self, base_seed: int | None = 0, user_fn: Callable[[int], None] | None = None):
        self.base_seed = base_seed
        self.user_fn = user_fn

    def __call__(self, worker_id: int) -> None:
        import paddle

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
                 worker_init_fn: Callable[[int], None] | None = None):
    """Build a ``paddle.io.DataLoader`` from a dataset and a batch sampler.

    Workers are seeded by :class:`seed_worker` (the user's ``worker_init_fn`` runs after).
    With a ResumableBatchSampler (distributed.build_batch_sampler) every sample's (epoch, index)
    is published to current_sample_key(), from which AlbumentationsAdapter and DetCollate draw
    their randomness: exact resume without checkpointing those RNG streams.
    An exception while loading a sample or collating a batch (main process or worker) is raised
    in the main process as one DataError naming the sample and the original message (which should
    name the file); datasets that can skip bad samples should do so themselves and count them.
    With workers, shared memory is disabled (with one warning) when /dev/shm has less than
    ``cfg.min_shm_mb`` free, instead of crashing later with a bus error.
    """
    import paddle

    cfg = cfg or LoaderConfig()
    if batch_sampler is None:
        raise ValueError("build_loader needs a batch_sampler (e.g. paddle.io.BatchSampler or "
                         "paddle_recipes.distributed.build_batch_sampler)")
    if cfg.num_workers < 0:
        raise ValueError(f"LoaderConfig.num_workers must be >= 0, got {cfg.num_workers}")
    use_shm = cfg.use_shared_memory
    if use_shm and cfg.num_workers > 0:
        free = shm_free_mb()
        if free is not None and free < cfg.min_shm_mb:
            warnings.warn(
                f"/dev/shm has only {free:.0f} MB free (< {cfg.min_shm_mb} MB needed); "
                "DataLoader falls back to use_shared_memory=False (slower worker->main copies). "
                "Fix: give the container more shared memory, e.g. `docker run --shm-size=8g ...` "
                "(or set Train.loader.num_workers=0 / lower LoaderConfig.min_shm_mb).",
                RuntimeWarning, stacklevel=2)
            use_shm = False
    workers = cfg.num_workers > 0
    unwrap = False
    from .reproducible import ResumableBatchSampler

    if isinstance(batch_sampler, ResumableBatchSampler) and not batch_sampler.with_epoch:
        batch_sampler.with_epoch = True  # publish (epoch, index) keys; the dataset still gets indices
        unwrap = True
    return _checked_loader_class()(
        GuardedDataset(dataset, unwrap_keys=unwrap),
        batch_sampler=batch_sampler,
        collate_fn=GuardedCollate(collate_fn),
        num_workers=cfg.num_workers,
        use_buffer_reader=cfg.use_buffer_reader,
        prefetch_factor=cfg.prefetch_factor,
        use_shared_memory=use_shm,
        timeout=cfg.timeout,
        worker_init_fn=seed_worker(cfg.seed, worker_init_fn) if workers else None,
        persistent_workers=bool(cfg.persistent_workers and workers),
        return_list=True,
    )


# ----------------------------------------------------------------------------- image size guard
IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")


def list_images(path: str | os.PathLike) -> list[str]:
    """An image file -> [it]; a folder -> its image files (IMAGE_EXTS, sorted). Missing path -> FileNotFoundError."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such image or folder: {p}")
    if p.is_dir():
        return sorted(str(f) for f in p.iterdir() if f.suffix.lower() in IMAGE_EXTS)
    return [str(p)]


MAX_IMAGE_PIXELS = 80_000_000  # default guard: ~8e7 pixels (e.g. 10000 x 8000), ~240 MB decoded as RGB


def image_pixels(data: bytes | str | os.PathLike) -> int | None:
    """Width x height read from the image header (encoded bytes or a path), without decoding the
    pixels; None when the header is unreadable (the decoder will then report the file as corrupt)."""
    import io

    from PIL import Image

    try:
        src = io.BytesIO(data) if isinstance(data, (bytes, bytearray, memoryview)) else str(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PIL's DecompressionBombWarning: we decide here
            with Image.open(src) as im:  # lazy: reads only the header
                w, h = im.size
        return int(w) * int(h)
    except Image.DecompressionBombError:
        return 1 << 62  # beyond PIL's own hard limit: certainly too large
    except Exception:  # noqa: BLE001 - unknown/corrupt header: let the decoder decide
        return None


# ----------------------------------------------------------------------------- label files
class LabelFileError(ValueError):
    """A label file is missing, undecodable or has a malformed line (message names file:line)."""


class LabelRecord(NamedTuple):
    image_path: str  # as written in the file (relative to the data dir)
    label: str
    source: str      # "file:line" (1-based line)


class LabelRecords(list):
    """List of LabelRecord; ``skipped`` lists "file:line: reason" of skipped lines (non-strict)."""

    def __init__(self, items=(), skipped=None):
        super().__init__(items)
        self.skipped: list[str] = list(skipped or [])


_MAX_SKIP_WARNINGS = 20


def read_label_file(path: str | os.PathLike, delimiter: str = "\t", strict: bool = True) -> LabelRecords:
    """Read a PaddleOCR label file: one ``relative/path.jpg<delimiter>label`` per line.

    Splits on the first delimiter only, so labels may contain spaces (and further
    delimiters). A UTF-8 BOM, blank lines and CRLF endings are handled. A malformed line
    (no delimiter, empty path, empty label, invalid UTF-8) raises LabelFileError naming
    ``file:line`` when ``strict``; otherwise it is skipped, counted in ``.skipped`` and warned.
    """
    path = Path(path)
    if not path.is_file():
        raise LabelFileError(f"label file not found: {path}" +
                             (" (it is a directory)" if path.is_dir() else ""))
    raw = path.read_bytes()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    out = LabelRecords()
    for lineno, bline in enumerate(raw.split(b"\n"), start=1):
        src = f"{path}:{lineno}"
        try:
            line = bline.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as exc:
            problem = f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
        else:
            if not line.strip():
                continue
            img, sep, label = line.partition(delimiter)
            if not sep:
                problem = f"no {delimiter!r} delimiter between image path and label: {line[:80]!r}"
            elif not img.strip():
                problem = f"empty image path: {line[:80]!r}"
            elif not label:
                problem = f"empty label for {img!r}"
            else:
                out.append(LabelRecord(img.strip(), label, src))
                continue
        if strict:
            raise LabelFileError(f"{src}: malformed label line: {problem}")
        out.skipped.append(f"{src}: {problem}")
        if len(out.skipped) <= _MAX_SKIP_WARNINGS:
            warnings.warn(f"skipping malformed label line {src}: {problem}", RuntimeWarning, stacklevel=2)
    if len(out.skipped) > _MAX_SKIP_WARNINGS:
        warnings.warn(f"{path}: skipped {len(out.skipped)} malformed lines in total "
                      f"(only the first {_MAX_SKIP_WARNINGS} were shown)", RuntimeWarning, stacklevel=2)
    return out


class LabelFileDataset:
    """Images on disk listed by one or more PaddleOCR label files.

    ``ds[i] -> (image_bytes, label)`` (same as LmdbDataset); ``ds.records[i].source`` says
    where a sample came from. A missing image raises FileNotFoundError naming file:line.
    """

    read_label_file = staticmethod(read_label_file)

    def __init__(self, label_files: str | os.PathLike | Sequence[str | os.PathLike],
                 data_dir: str | os.PathLike = ".", delimiter: str = "\t", strict: bool = True):
        if isinstance(label_files, (str, os.PathLike)):
            label_files = [label_files]
        self.data_dir = Path(data_dir)
        self.records: list[LabelRecord] = []
        self.skipped: list[str] = []
        for f in label_files:
            recs = read_label_file(f, delimiter=delimiter, strict=strict)
            self.records.extend(recs)
            self.skipped.extend(recs.skipped)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, idx: int) -> tuple[bytes, str]:
        rec = self.records[idx]
        img = self.data_dir / rec.image_path
        try:
            return img.read_bytes(), rec.label
        except FileNotFoundError:
            raise FileNotFoundError(f"image {img} listed at {rec.source} does not exist") from None


# ----------------------------------------------------------------------------- lmdb
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
        import lmdb

        return lmdb.open(str(path), readonly=True, lock=False, readahead=False, meminit=False,
                         max_readers=64)

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
        finally:
            env.close()
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


# ----------------------------------------------------------------------------- albumentations
def bbox_compose(transforms: list, format: str = "pascal_voc", seed: int | None = None,
                 min_visibility: float = 0.0, label_field: str = "labels"):
    """``A.Compose`` with bbox support (``format`` "pascal_voc" = x1,y1,x2,y2 px; "coco" = x,y,w,h px)."""
    import albumentations as A

    if format not in ("pascal_voc", "coco"):
        raise ValueError(f"bbox format must be 'pascal_voc' or 'coco', got {format!r}")
    return A.Compose(transforms, seed=seed,
                     bbox_params=A.BboxParams(format=format, label_fields=[label_field],
                                              min_visibility=min_visibility))


class AlbumentationsAdapter:
    """Wrap an albumentations ``Compose`` for numpy-in/numpy-out use in datasets.

    ``adapter(image)`` -> augmented image (HWC uint8 in, array out).
    ``adapter(image, bboxes, labels)`` -> (image, bboxes float32 (N, 4), labels array); the
    Compose must have ``bbox_params`` with one label field (see :func:`bbox_compose`).

    Determinism: with ``seed`` (or a Compose built with ``seed=``) the sequence of
    augmentations is reproducible. Inside a DataLoader worker, the seed is re-derived on the
    first call from (seed, paddle worker seed, worker id), so workers don't all draw the same
    augmentations (albumentations 2.x keeps its own RNG, ignoring np.random/random).
    """

    def __init__(self, transform, seed: int | None = None):
        self.transform = transform
        self.seed = seed if seed is not None else getattr(transform, "seed", None)
        if seed is not None:
            transform.set_random_seed(seed)
        self._seeded_pid = os.getpid()
        bp = getattr(transform, "processors", {}).get("bboxes")
        self.label_fields = list(bp.params.label_fields or []) if bp is not None else []
        self.has_bboxes = bp is not None

    def _maybe_reseed_worker(self) -> None:
        if self._seeded_pid == os.getpid() or self.seed is None:
            return
        self._seeded_pid = os.getpid()
        try:
            import paddle

            info = paddle.io.get_worker_info()
        except Exception:  # pragma: no cover - paddle always present in this repo
            info = None
        wid, wseed = (info.id, int(info.seed)) if info is not None else (os.getpid(), 0)
        s = int(np.random.SeedSequence([int(self.seed) & 0xFFFFFFFF, wseed & 0xFFFFFFFF, wid])
                .generate_state(1)[0])
        self.transform.set_random_seed(s)

    def __call__(self, image: np.ndarray, bboxes=None, labels=None):
        if not isinstance(image, np.ndarray) or image.ndim not in (2, 3) or image.dtype != np.uint8:
            desc = (f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray)
                    else type(image).__name__)
            raise TypeError(f"AlbumentationsAdapter expects an HWC uint8 numpy image, got {desc}")
        key = current_sample_key()
        if key is not None and self.seed is not None:  # per-sample stream: resumable, worker-independent
            from .reproducible import sample_seed

            self.transform.set_random_seed(sample_seed(int(self.seed), *key))
        else:
            self._maybe_reseed_worker()
        if bboxes is None:
            if self.has_bboxes:  # bbox-aware Compose still needs the fields
                kw = {"bboxes": np.zeros((0, 4), np.float32)}
                kw.update({f: [] for f in self.label_fields})
                return self.transform(image=image, **kw)["image"]
            return self.transform(image=image)["image"]
        if not self.has_bboxes:
            raise ValueError("bboxes given but the Compose has no bbox_params; build it with "
                             "paddle_recipes.data.bbox_compose(...) or A.Compose(..., bbox_params=...)")
        if len(self.label_fields) != 1:
            raise ValueError(f"bbox Compose must have exactly one label field, has {self.label_fields}")
        bboxes = np.asarray(bboxes, dtype=np.float32).reshape(-1, 4)
        labels = np.asarray(labels if labels is not None else np.zeros(len(bboxes), np.int64))
        if len(labels) != len(bboxes):
            raise ValueError(f"{len(bboxes)} bboxes but {len(labels)} labels")
        out = self.transform(image=image, bboxes=bboxes, **{self.label_fields[0]: labels})
        out_boxes = np.asarray(out["bboxes"], dtype=np.float32).reshape(-1, 4)
        out_labels = np.asarray(out[self.label_fields[0]], dtype=labels.dtype)
        return out["image"], out_boxes, out_labels
