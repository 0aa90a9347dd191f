"""Multi-scale batches for PP-OCRv4/v5 recognition training (PaddleOCR's ``MultiScaleSampler``).

Each batch has one input size (width, height) drawn from ``scales``; the batch size shrinks with
the image area so every batch holds about ``first_bs * w0 * h0`` pixels (``fix_bs: false``).
PaddleOCR's configs: ``scales [[320, 32], [320, 48], [320, 64]]``, ``first_bs`` 128/192,
``divided_factor [8, 16]`` (w, h rounded down to multiples), ``is_training: true``.

Differences from PaddleOCR, on purpose: the plan is a pure function of (seed, epoch), so runs are
reproducible and an exact mid-epoch resume only needs ``set_epoch(e)`` + ``skip_next(n)`` (like
``paddle_recipes.data.reproducible.ResumableBatchSampler``). Every epoch reshuffles the samples and
the batch order (PaddleOCR shuffles samples once at start-up). Like PaddleOCR, scales are
assigned to consecutive batches in a fixed cycle, so the count of batches per scale is the same
every epoch, and the last batch is topped up with samples from the start of the epoch's order.

``ratio_spans`` (PaddleOCR's ``ratio_list``): each epoch uses a fresh random ``round(n * ratio)`` of the
``n`` samples of every label file (PaddleOCR rebuilds its dataset with ``seed=epoch`` for that), drawn from
(seed, epoch, file); the epoch length is the same every epoch.

Batches are lists of keys ``(epoch, index, height, width)`` (``with_epoch=True``) or
``(index, height, width)``; ``MultiScaleDataset`` turns a key into a sample.
"""
from __future__ import annotations

import random
from typing import Iterator, List, Sequence, Tuple

import numpy as np
import paddle

from ...data.reproducible import sample_seed
from ...data import build_loader


def scale_plan(scales: Sequence[Sequence[int]], first_bs: int, fix_bs: bool = False,
               divided_factor: Sequence[int] = (8, 16), is_training: bool = True) -> List[Tuple[int, int, int]]:
    """(width, height, batch_size) per scale, as PaddleOCR computes them. ``scales``: [[w, h], ...]."""
    if not scales or any(len(s) != 2 for s in scales):
        raise ValueError(f"scales must be a list of [width, height] pairs, got {scales!r}")
    w0, h0 = scales[0]
    if not is_training:
        return [(int(w0), int(h0), int(first_bs))]
    fw, fh = divided_factor
    base = w0 * h0 * first_bs
    plan = []
    for w, h in scales:
        w, h = int(w // fw * fw), int(h // fh * fh)
        if w <= 0 or h <= 0:
            raise ValueError(f"scale [{w}, {h}] rounds to zero with divided_factor {list(divided_factor)}")
        plan.append((w, h, int(first_bs) if fix_bs else int(max(1, base / (h * w)))))
    return plan


class MultiScaleBatchSampler(paddle.io.BatchSampler):
    """Deterministic, resumable multi-scale batch sampler.

    Args:
        num_samples: dataset length.
        scales, first_bs, fix_bs, divided_factor, is_training: as PaddleOCR's MultiScaleSampler.
        seed: base seed; the order of epoch e depends only on (seed, e).
        num_replicas, rank: data-parallel split (each rank gets num_samples // num_replicas samples).
        with_epoch: yield (epoch, index, h, w) keys (for per-sample seeding) instead of (index, h, w).
        ratio_spans: [(start, stop, ratio), ...] index spans of the label files and the fraction of each
            one an epoch uses (PaddleOCR's ratio_list); None = every sample every epoch.
    """

    def __init__(self, num_samples: int, scales=((320, 32), (320, 48), (320, 64)), first_bs: int = 128,
                 fix_bs: bool = False, divided_factor=(8, 16), is_training: bool = True, seed: int = 0,
                 num_replicas: int = 1, rank: int = 0, with_epoch: bool = True,
                 ratio_spans: Sequence[Tuple[int, int, float]] | None = None):
        self.ratio_spans = [(int(a), int(b), float(r)) for a, b, r in ratio_spans or []]
        if self.ratio_spans:
            num_samples = sum(round((b - a) * r) for a, b, r in self.ratio_spans)
        if num_samples < 1:
            raise ValueError("MultiScaleBatchSampler: the dataset is empty")
        self.plan = scale_plan(scales, first_bs, fix_bs, divided_factor, is_training)
        self.num_samples, self.is_training, self.seed = int(num_samples), is_training, int(seed)
        self.num_replicas, self.rank, self.with_epoch = int(num_replicas), int(rank), with_epoch
        self.per_replica = self.num_samples // self.num_replicas
        if self.per_replica < 1:
            raise ValueError(f"MultiScaleBatchSampler: {num_samples} samples for {num_replicas} replicas")
        # batch sizes + scale of each batch, in the fixed scale cycle (same for every epoch)
        self.schedule: List[Tuple[int, int, int]] = []
        covered = 0
        while covered < self.per_replica:
            for w, h, bs in self.plan:
                if covered >= self.per_replica:
                    break
                self.schedule.append((w, h, bs))
                covered += bs
        self.epoch = 0
        self._skip = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def skip_next(self, n_batches: int) -> None:
        """Skip ``n_batches`` at the start of the next iteration only (exact resume)."""
        self._skip = max(0, int(n_batches))

    def __len__(self) -> int:
        return len(self.schedule)

    def epoch_batches(self, epoch: int) -> List[List[tuple]]:
        """All batches of ``epoch`` for this rank, in yield order (without skipping)."""
        rng = random.Random(sample_seed(self.seed, epoch, -1))
        order = self.epoch_pool(epoch)
        if self.is_training:
            rng.shuffle(order)
        mine = order[self.rank: self.per_replica * self.num_replicas: self.num_replicas]
        batches, start = [], 0
        for w, h, bs in self.schedule:
            ids = mine[start: start + bs]
            if len(ids) < bs:  # top up the last batch from the start, as PaddleOCR does
                ids = ids + [mine[i % len(mine)] for i in range(bs - len(ids))]
            start += bs
            batches.append([(epoch, i, h, w) if self.with_epoch else (i, h, w) for i in ids])
        if self.is_training:
            rng.shuffle(batches)
        return batches

    def epoch_pool(self, epoch: int) -> List[int]:
        """Dataset indices epoch ``epoch`` draws from: all, or per label file a fresh ratio of its span."""
        if not self.ratio_spans:
            return list(range(self.num_samples))
        pool = []
        for i, (a, b, r) in enumerate(self.ratio_spans):
            pool += sorted(random.Random(sample_seed(self.seed, epoch, -2 - i)).sample(range(a, b), round((b - a) * r)))
        return pool

    def __iter__(self) -> Iterator[List[tuple]]:
        skip, self._skip = self._skip, 0
        yield from self.epoch_batches(self.epoch)[skip:]

class MultiScaleDataset(paddle.io.Dataset):
    """Turns multi-scale keys into samples: seeds python/numpy RNGs from (seed, epoch, index) like
    ``reproducible.SeededDataset``, then calls ``dataset.get_scaled(index, height, width)`` (the inner
    dataset resizes to that size)."""

    def __init__(self, dataset, seed: int = 0):
        self.dataset, self.seed = dataset, seed

    def __len__(self):
        return len(self.dataset)

    def __getattr__(self, name):
        if name in ("dataset", "seed"):
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def __getitem__(self, key):
        if len(key) == 4:
            epoch, index, h, w = key
            s = sample_seed(self.seed, epoch, index)
            random.seed(s)
            np.random.seed(s)
        else:
            index, h, w = key
        return self.dataset.get_scaled(int(index), int(h), int(w))

def build_multiscale_loader(dataset, sampler_cfg, loader_cfg, info, seed: int, collate_fn=None):
    """Train.sampler (config.SamplerConfig) -> paddle DataLoader over MultiScaleDataset(dataset) batched by
    a MultiScaleBatchSampler split over info's ranks. ``dataset`` needs ``get_scaled(index, h, w)``; its
    ``ratio_spans`` (if any) sample a fraction of each label file per epoch.
    The trainer's set_epoch / skip_next reach the sampler (exact mid-epoch resume)."""
    s = sampler_cfg
    sampler = MultiScaleBatchSampler(len(dataset), scales=s.scales, first_bs=s.first_bs, fix_bs=s.fix_bs,
                                     divided_factor=s.divided_factor, is_training=s.is_training, seed=seed,
                                     num_replicas=info.world_size, rank=info.rank,
                                     ratio_spans=getattr(dataset, "ratio_spans", None))
    return build_loader(MultiScaleDataset(dataset, seed), sampler, loader_cfg, collate_fn=collate_fn,
                        name="Train.loader")
