"""Tests for paddle_recipes.data (loader, label files, lmdb) and the det albumentations adapter."""
from __future__ import annotations

import logging
import re
from collections import namedtuple

import numpy as np
import paddle
import pytest

from paddle_recipes.data import (LabelFileDataset, LabelFileError, LmdbDataset, LmdbFormatError, LoaderConfig,
                                 build_loader, read_label_file, write_lmdb)
from paddle_recipes.data import loader as D
from paddle_recipes.tasks.det_ppyoloe.augment import AlbumentationsAdapter, bbox_compose


# ------------------------------------------------------------------ label files
def test_read_label_file_bom_blank_spaces_and_first_split(tmp_path):
    f = tmp_path / "train.txt"
    f.write_bytes("\ufeffimgs/a.jpg\t你好 世界\r\n\n   \nimgs/b.jpg\tx\ty z\n".encode("utf-8"))
    recs = read_label_file(f)
    assert [r.image_path for r in recs] == ["imgs/a.jpg", "imgs/b.jpg"]
    assert recs[0].label == "你好 世界"          # spaces kept, CR stripped
    assert recs[1].label == "x\ty z"             # only the first tab splits
    assert recs[0].source == f"{f}:1" and recs[1].source == f"{f}:4"
    assert recs.skipped == []


def test_malformed_line_strict_names_file_and_line(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("a.jpg\tok\nno_delimiter_here\nc.jpg\tfine\n", encoding="utf-8")
    with pytest.raises(LabelFileError) as ei:
        read_label_file(f)
    assert f"{f}:2" in str(ei.value)
    f.write_text("a.jpg\tok\n\tlabel_without_path\n", encoding="utf-8")
    with pytest.raises(LabelFileError, match=r"bad\.txt:2.*empty image path"):
        read_label_file(f)


def test_non_strict_counts_and_warns(tmp_path):
    f = tmp_path / "mixed.txt"
    f.write_text("a.jpg\tA\nbroken\nb.jpg\tB\n\tnopath\nc.jpg\tC\n", encoding="utf-8")
    with pytest.warns(RuntimeWarning, match=r"mixed\.txt:2"):
        recs = read_label_file(f, strict=False)
    assert [r.label for r in recs] == ["A", "B", "C"]
    assert len(recs.skipped) == 2
    assert recs.skipped[0].startswith(f"{f}:2") and recs.skipped[1].startswith(f"{f}:4")


def test_missing_label_file_and_bad_utf8(tmp_path):
    with pytest.raises(LabelFileError, match="label file not found: .*nope.txt"):
        read_label_file(tmp_path / "nope.txt")
    f = tmp_path / "gbk.txt"
    f.write_bytes("a.jpg\tok\n".encode() + "b.jpg\t中文\n".encode("gbk"))
    with pytest.raises(LabelFileError, match=r"gbk\.txt:2.*UTF-8"):
        read_label_file(f)


def test_label_file_dataset_reads_images_and_names_missing(tmp_path):
    (tmp_path / "imgs").mkdir()
    (tmp_path / "imgs" / "a.jpg").write_bytes(b"\xff\xd8AAA")
    lf = tmp_path / "l.txt"
    lf.write_text("imgs/a.jpg\t甲\nimgs/missing.jpg\t乙\n", encoding="utf-8")
    ds = LabelFileDataset(lf, data_dir=tmp_path)
    assert len(ds) == 2 and ds[0] == (b"\xff\xd8AAA", "甲")
    with pytest.raises(FileNotFoundError, match=r"l\.txt:2"):
        ds[1]
    assert LabelFileDataset.read_label_file(lf)[1].label == "乙"


# ------------------------------------------------------------------ lmdb
def _arr(batch):
    """A batch of one numpy field comes back as a Tensor (or a 1-list on some versions)."""
    if isinstance(batch, (list, tuple)):
        (batch,) = batch
    return batch.numpy()


def _samples(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.bytes(int(rng.integers(1, 300))), f"标签 {i} ab") for i in range(n)]


def test_lmdb_round_trip_and_paddleocr_keys(tmp_path):
    import lmdb

    samples = _samples(7)
    out = tmp_path / "db"
    assert write_lmdb(out, iter(samples), map_size=1 << 20, commit_every=2) == 7
    assert not list(tmp_path.glob("*.tmp-*"))  # temp dir renamed away
    env = lmdb.open(str(out), readonly=True, lock=False)
    with env.begin() as txn:
        keys = sorted(k for k, _ in txn.cursor())
        assert txn.get(b"num-samples") == b"7"
        assert txn.get(b"image-000000001") == samples[0][0]
        assert txn.get(b"label-000000007").decode() == samples[6][1]
    env.close()
    expected = sorted([b"num-samples"] + [b"image-%09d" % i for i in range(1, 8)]
                      + [b"label-%09d" % i for i in range(1, 8)])
    assert keys == expected
    ds = LmdbDataset(out)
    assert len(ds) == 7
    assert [ds[i] for i in range(7)] == samples
    assert ds[-1] == samples[-1]
    with pytest.raises(IndexError):
        ds[7]


def test_lmdb_grows_map_size_and_refuses_overwrite(tmp_path):
    big = [(b"x" * 200_000, "big")] * 3  # 600 KB > 64 KB initial map
    write_lmdb(tmp_path / "db", big, map_size=1 << 16)
    assert LmdbDataset(tmp_path / "db")[2] == big[2]
    with pytest.raises(FileExistsError):
        write_lmdb(tmp_path / "db", big)
    write_lmdb(tmp_path / "db", big[:1], overwrite=True)
    assert len(LmdbDataset(tmp_path / "db")) == 1


def test_lmdb_bad_sample_leaves_no_output(tmp_path):
    with pytest.raises(TypeError, match="sample #1"):
        write_lmdb(tmp_path / "db", [(b"ok", "a"), ("not-bytes", "b")])
    assert not (tmp_path / "db").exists() and not list(tmp_path.iterdir())


def test_lmdb_concat_and_errors(tmp_path):
    import lmdb

    a, b = _samples(3, 1), _samples(4, 2)
    write_lmdb(tmp_path / "a", a)
    write_lmdb(tmp_path / "b", b)
    ds = LmdbDataset([tmp_path / "a", str(tmp_path / "b")])
    assert len(ds) == 7 and [ds[i] for i in range(7)] == a + b
    assert ds.locate(3) == (1, 1)
    with pytest.raises(LmdbFormatError, match="not found: .*missing"):
        LmdbDataset(tmp_path / "missing")
    env = lmdb.open(str(tmp_path / "nokey"), map_size=1 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"image-000000001", b"x")
    env.close()
    with pytest.raises(LmdbFormatError, match="num-samples"):
        LmdbDataset(tmp_path / "nokey")


class _LmdbLen(paddle.io.Dataset):
    def __init__(self, path):
        self.ds = LmdbDataset(path)

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        img, label = self.ds[i]
        return np.array([len(img), int(label.split()[1])], dtype=np.int64)


def test_lmdb_in_worker_processes(tmp_path):
    samples = _samples(8)
    write_lmdb(tmp_path / "db", samples)
    ds = _LmdbLen(tmp_path / "db")
    ds.ds[0]  # open in the parent first: workers must not reuse this handle
    bs = paddle.io.BatchSampler(ds, batch_size=4, shuffle=False)
    loader = build_loader(ds, bs, LoaderConfig(num_workers=2, use_shared_memory=False))
    got = np.concatenate([_arr(b) for b in loader])
    assert got.tolist() == [[len(s[0]), i] for i, s in enumerate(samples)]


# ------------------------------------------------------------------ loader
class _RandDS(paddle.io.Dataset):
    """Returns per-item random numbers drawn in the worker, plus the index."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        return np.array([i, np.random.randint(0, 1 << 30)], dtype=np.int64)


def _run_epochs(cfg, epochs=2):
    np.random.seed(123)
    ds = _RandDS()
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=4), cfg)
    return [np.concatenate([_arr(b) for b in loader]) for _ in range(epochs)], loader


def test_loader_two_persistent_workers_deterministic():
    cfg = LoaderConfig(num_workers=2, persistent_workers=True, seed=7)
    (e1, e2), loader = _run_epochs(cfg)
    assert loader._persistent_workers is True
    assert e1[:, 0].tolist() == list(range(16)) and e2[:, 0].tolist() == list(range(16))
    assert not np.array_equal(e1[:, 1], e2[:, 1])  # RNG advances across epochs
    (f1, f2), _ = _run_epochs(cfg)
    np.testing.assert_array_equal(e1, f1)
    np.testing.assert_array_equal(e2, f2)
    (g1, _), _ = _run_epochs(LoaderConfig(num_workers=2, persistent_workers=True, seed=8))
    assert not np.array_equal(e1[:, 1], g1[:, 1])  # base seed matters


class _WorkerMemory(paddle.io.Dataset):
    """Each sample: the worker's private memory (MB) after a garbage collection, and its gc freeze count."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        import gc

        gc.collect()
        with open("/proc/self/smaps_rollup") as f:
            private_kb = sum(int(line.split()[1]) for line in f if line.startswith(("Private_Dirty", "Private_Clean")))
        return np.array([private_kb / 1024, gc.get_freeze_count()], np.float32)


def test_workers_do_not_copy_the_parents_heap_and_the_parent_still_collects():
    """A worker's collection used to visit the parent's 1M objects and so copy them (about 227 MB private per
    worker, 1.1 s per 4-batch epoch); frozen at the fork it stays a few MB, and the parent unfreezes at once."""
    import gc

    heap = [{"a": [i, str(i)], "b": (i,)} for i in range(1_000_000)]  # ~500 MB of Python objects
    ds = _WorkerMemory()
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=1), LoaderConfig(num_workers=1))
    rows = [np.asarray(batch).reshape(-1) for batch in loader]  # per batch: (private MB, freeze count)
    n_objects = len(heap)
    assert len(rows) == 2
    private_mb, freeze_count = max(r[0] for r in rows), min(r[1] for r in rows)
    assert private_mb < 60, private_mb  # not the ~227 MB copy
    assert freeze_count >= n_objects, freeze_count  # the parent's objects sit in the worker's permanent generation
    assert gc.get_freeze_count() == 0  # the parent collects its objects as before


def test_a_callers_own_gc_freeze_is_left_to_the_caller():
    import gc

    gc.freeze()
    try:
        ds = _WorkerMemory()
        assert len([b for b in build_loader(ds, paddle.io.BatchSampler(ds, batch_size=1), LoaderConfig(num_workers=1))]) == 2
        assert gc.get_freeze_count() > 0  # not unfrozen by the loader
    finally:
        gc.unfreeze()


def test_persistent_workers_ignored_without_workers():
    ds = _RandDS()
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=8),
                          LoaderConfig(num_workers=0, persistent_workers=True))
    assert loader._persistent_workers is False
    assert sum(_arr(b).shape[0] for b in loader) == 16


def test_shm_fallback_one_line_and_loads(monkeypatch, tmp_path, caplog):
    """A tiny /dev/shm (its detected free size patched to 64 MB): one log line, shared memory off, batches still
    come through the workers."""
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(D, "SHM_PATH", str(tmp_path))  # exists on any OS
    monkeypatch.setattr(D.shutil, "disk_usage", lambda p: Usage(64 << 20, 0, 64 << 20))
    ds = _RandDS()
    bs = paddle.io.BatchSampler(ds, batch_size=4)
    with caplog.at_level(logging.INFO, logger="paddle_recipes.data.loader"):
        loader = build_loader(ds, bs, LoaderConfig(num_workers=1, min_shm_mb=512), name="Train.loader")
    lines = [r.getMessage() for r in caplog.records if r.name == "paddle_recipes.data.loader"]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert re.search(r"Train.loader: /dev/shm has 64 MB free .*use_shared_memory=False.*--shm-size", lines[0])
    assert loader.use_shared_memory is False
    assert sum(_arr(b).shape[0] for b in loader) == 16
    # enough shm, or no workers: no line, shared memory kept as asked
    caplog.clear()
    monkeypatch.setattr(D.shutil, "disk_usage", lambda p: Usage(8 << 30, 0, 8 << 30))
    with caplog.at_level(logging.INFO, logger="paddle_recipes.data.loader"):
        assert build_loader(ds, bs, LoaderConfig(num_workers=1)).use_shared_memory is True
        monkeypatch.setattr(D.shutil, "disk_usage", lambda p: Usage(1, 0, 1))
        build_loader(ds, bs, LoaderConfig(num_workers=0))  # no workers: shm not checked
    assert not [r for r in caplog.records if r.name == "paddle_recipes.data.loader"]


# ------------------------------------------------------------------ albumentations
def _img(seed=0):
    return np.random.default_rng(seed).integers(0, 256, (32, 48, 3), dtype=np.uint8)


def test_albumentations_adapter_deterministic_with_seed():
    import albumentations as A

    def make():
        return A.Compose([A.HorizontalFlip(p=0.5), A.RandomBrightnessContrast(p=0.8)])

    img = _img()
    a, b = AlbumentationsAdapter(make(), seed=5), AlbumentationsAdapter(make(), seed=5)
    outs_a, outs_b = [a(img) for _ in range(6)], [b(img) for _ in range(6)]
    assert all(isinstance(o, np.ndarray) and o.shape == img.shape and o.dtype == np.uint8 for o in outs_a)
    assert all(np.array_equal(x, y) for x, y in zip(outs_a, outs_b))
    assert len({o.tobytes() for o in outs_a}) > 1  # it does augment
    with pytest.raises(TypeError, match="HWC uint8"):
        a(img.astype(np.float32))


@pytest.mark.parametrize("fmt", ["pascal_voc", "coco"])
def test_albumentations_adapter_bboxes(fmt):
    import albumentations as A

    img = _img(1)
    h, w = img.shape[:2]
    boxes = [[4, 6, 20, 16], [30, 2, 44, 30]] if fmt == "pascal_voc" else [[4, 6, 16, 10], [30, 2, 14, 28]]
    aug = AlbumentationsAdapter(bbox_compose([A.HorizontalFlip(p=1.0)], format=fmt, seed=0))
    out_img, out_boxes, out_labels = aug(img, boxes, [3, 9])
    np.testing.assert_array_equal(out_img, img[:, ::-1])
    assert out_labels.tolist() == [3, 9] and out_boxes.dtype == np.float32 and out_boxes.shape == (2, 4)
    if fmt == "pascal_voc":
        expected = [[w - 20, 6, w - 4, 16], [w - 44, 2, w - 30, 30]]
    else:
        expected = [[w - 4 - 16, 6, 16, 10], [w - 30 - 14, 2, 14, 28]]
    np.testing.assert_allclose(out_boxes, expected, atol=1e-3)
    assert aug(img).shape == img.shape  # image-only call on a bbox Compose
    with pytest.raises(ValueError, match="2 bboxes but 1 labels"):
        aug(img, boxes, [1])
    with pytest.raises(ValueError, match="no bbox_params"):
        AlbumentationsAdapter(A.Compose([A.HorizontalFlip(p=1.0)]))(img, boxes, [1, 2])


class _AugDS(paddle.io.Dataset):
    """Same image every index: any difference between items comes from the augmentation RNG."""

    def __init__(self, adapter):
        self.adapter, self.img = adapter, _img(2)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.adapter(self.img).astype(np.int64).sum(axis=(0, 1))


def _aug_run(seed_main):
    import albumentations as A

    np.random.seed(seed_main)
    adapter = AlbumentationsAdapter(A.Compose([A.RandomBrightnessContrast(p=1.0)]), seed=11)
    ds = _AugDS(adapter)
    loader = build_loader(ds, paddle.io.BatchSampler(ds, batch_size=1),
                          LoaderConfig(num_workers=2, use_shared_memory=False))
    return np.concatenate([_arr(b) for b in loader])


def test_albumentations_adapter_reseeds_per_worker():
    a, b = _aug_run(0), _aug_run(0)
    np.testing.assert_array_equal(a, b)  # reproducible across runs
    # batches alternate between worker 0 and 1; without per-worker reseeding, the two forked
    # copies of the Compose would produce identical pairs (0,1), (2,3), ...
    assert not all(np.array_equal(a[i], a[i + 1]) for i in range(0, 8, 2))


def test_loader_keeps_the_heap_in_the_loading_process(monkeypatch):
    """allocator_keep_mb: mallopt(M_MMAP_THRESHOLD 32 MB, M_TRIM_THRESHOLD keep) in the process that loads samples
    (this one with num_workers=0); 0 leaves glibc alone. The batches are the same either way."""
    calls = []
    monkeypatch.setattr(D, "keep_heap", lambda mb: calls.append(mb) or True)
    ds = paddle.io.TensorDataset([paddle.to_tensor(np.arange(16, dtype="float32").reshape(8, 2))])
    a = [_arr(b) for b in build_loader(ds, paddle.io.BatchSampler(ds, batch_size=4), LoaderConfig())]
    b = [_arr(b) for b in build_loader(ds, paddle.io.BatchSampler(ds, batch_size=4), LoaderConfig(allocator_keep_mb=0))]
    assert calls == [1024, 0] and len(a) == 2 and all(np.array_equal(x, y) for x, y in zip(a, b))
    assert D.keep_heap.__name__ == "<lambda>"
    monkeypatch.undo()
    assert D.keep_heap(0) is False
    import platform

    if platform.libc_ver()[0] == "glibc":
        assert D.keep_heap(64) is True
    with pytest.raises(Exception, match="allocator_keep_mb must be >= 0"):
        LoaderConfig(allocator_keep_mb=-1)


def test_an_eval_loader_in_a_training_run_leaves_the_trainers_heap_alone(monkeypatch):
    """keep_heap is process-wide and lasting: an Eval loader with 0 workers built by train() must not set it in the
    trainer (it held the heap's high-water mark: +8-11 % RSS in the soak, benchmarks/results/soak/rss_study); in an
    eval run it still does."""
    from types import SimpleNamespace

    from paddle_recipes.recipes.ocr_rec import OcrRec
    from paddle_recipes.tasks.ocr_rec.config import RecConfig

    calls = []
    monkeypatch.setattr(D, "keep_heap", lambda mb: calls.append(mb) or True)
    ds = paddle.io.TensorDataset([paddle.to_tensor(np.arange(16, dtype="float32").reshape(8, 2))])
    recipe = OcrRec(RecConfig(), SimpleNamespace(rank=0, world_size=1, is_main=True))
    recipe.collate = lambda split: None
    assert len(list(recipe.eval_loader(ds))) == 1 and calls == [1024]  # an eval run: this process loads, kept
    recipe.training = True  # what train() sets first
    assert len(list(recipe.eval_loader(ds))) == 1 and calls == [1024]
    build_loader(ds, paddle.io.BatchSampler(ds, batch_size=4), LoaderConfig(), keep_heap_here=False)
    assert calls == [1024]
