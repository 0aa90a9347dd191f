"""Deterministic, resumable data order and augmentation, independent of workers and prefetching.

- `ResumableBatchSampler`: DistributedBatchSampler that can skip the first n batches of the next
  epoch (exact mid-epoch resume without loading skipped samples) and, with `with_epoch=True`,
  yields `(epoch, index)` keys instead of bare indices.
- `SeededDataset`: wraps a dataset; for key `(epoch, index)` it seeds python's `random`, numpy's
  global RNG and paddle's CPU generator from (seed, epoch, index) before calling the inner
  `__getitem__`. Augmentations then depend only on the sample and epoch, never on which worker
  loaded it, how far the loader prefetched, or whether the run was resumed.
"""
from __future__ import annotations

import random

import numpy as np
import paddle

from ..runtime.distributed import DistInfo


def sample_seed(base_seed: int, epoch: int, index: int) -> int:
    """A 32-bit seed for one sample in one epoch (SplitMix-style mixing, stable across runs)."""
    x = (int(base_seed) * 0x9E3779B97F4A7C15 + int(epoch) * 0xBF58476D1CE4E5B9 + int(index) * 0x94D049BB133111EB)
    x &= (1 << 64) - 1
    x ^= x >> 31
    x = (x * 0xD6E8FEB86659FD93) & ((1 << 64) - 1)
    x ^= x >> 32
    return int(x & 0xFFFFFFFF)


class ResumableBatchSampler(paddle.io.DistributedBatchSampler):
    """DistributedBatchSampler + `skip_next(n)` + optional `(epoch, index)` keys.

    The shuffle order depends only on the epoch (set_epoch), as in paddle.
    """

    def __init__(self, *args, with_epoch: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self._skip = 0
        self.with_epoch = with_epoch

    def skip_next(self, n_batches: int) -> None:
        """Skip `n_batches` at the start of the next iteration only."""
        self._skip = max(0, int(n_batches))

    def __iter__(self):
        skip, self._skip = self._skip, 0
        epoch = self.epoch
        for i, batch in enumerate(super().__iter__()):
            if i >= skip:
                yield [(epoch, int(j)) for j in batch] if self.with_epoch else batch


class SeededDataset(paddle.io.Dataset):
    """Per-sample seeding for `(epoch, index)` keys (plain int keys pass through unseeded)."""

    def __init__(self, dataset, seed: int = 0):
        self.dataset, self.seed = dataset, seed

    def __len__(self):
        return len(self.dataset)

    def __getattr__(self, name):  # expose the inner dataset's attributes (collate_fn, stats, ...)
        if name in ("dataset", "seed"):
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __getitem__(self, key):
        if isinstance(key, (tuple, list)):
            epoch, index = key
            s = sample_seed(self.seed, epoch, index)
            random.seed(s)
            np.random.seed(s)
            return self.dataset[int(index)]
        return self.dataset[key]


def build_batch_sampler(dataset, batch_size: int, info: DistInfo | None = None, shuffle: bool = True,
                        drop_last: bool = False, with_epoch: bool = False):
    """DistributedBatchSampler: each rank sees a disjoint 1/world_size shard; call set_epoch(epoch).

    On one process it still shuffles with the epoch as seed, so runs are reproducible and resumable.
    with_epoch: yield (epoch, index) keys for reproducible.SeededDataset (per-sample augmentation seeds).
    """
    info = info or DistInfo()
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return ResumableBatchSampler(dataset, batch_size=batch_size, num_replicas=info.world_size,
                                 rank=info.rank, shuffle=shuffle, drop_last=drop_last, with_epoch=with_epoch)
