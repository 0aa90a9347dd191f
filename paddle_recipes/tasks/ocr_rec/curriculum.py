"""Short-line warm-start (a length curriculum, like DeepSpeech 2's SortaGrad for CTC; docs/cards/length_curriculum.md).

For the first ``warm_steps`` batches the sampler draws only lines with at most ``short_len``
characters; after that it draws from the whole set. Short lines have fewer possible CTC
alignments, so the model learns "which frames are which character" sooner and leaves the
all-blank plateau earlier. The image width stays the same (lines are padded), so a short-line
step costs the same as a normal one: the method is judged in steps to accuracy.

The recipe's key (config.CurriculumSamplerConfig)::

    Train:
      sampler: {name: LengthCurriculumSampler, warm_steps: 300, short_len: 3}   # batch: Train.loader

Alone, in your own loop::

    sampler = LengthCurriculumSampler(train_ds.label_lengths(), batch_size=64, warm_steps=300, short_len=3)
    loader = build_loader(train_ds, sampler, loader_cfg, collate_fn=collate)
    trainer = Trainer(..., callbacks=[CurriculumLogger(sampler)])   # checkpoints its phase, logs its end

DDP: pass num_replicas/rank: every rank draws the same global batch order and takes its slice.
Resume: ``skip_next(n)`` and the phase position (``state_dict``) make it exact with num_workers=0
(with workers, the saved position is ahead by the loader's prefetch depth).
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from ...train.trainer import Callback
from ...config import ConfigError
from ...data import build_loader

logger = logging.getLogger(__name__)


class LengthCurriculumSampler:
    """Batch sampler: short lines for ``warm_steps`` batches, then uniform shuffling over everything.

    lengths: label length per sample. batch_size: per process. warm_steps: batches (per process,
    counted over epochs) of the short phase; 0 disables. short_len: longest label of the short phase.
    An epoch is always ``len(lengths) // (batch_size * num_replicas)`` batches (drop_last).
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, warm_steps: int, short_len: int,
                 num_replicas: int = 1, rank: int = 0, seed: int = 0, shuffle: bool = True):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size, self.warm_steps, self.short_len = int(batch_size), int(warm_steps), int(short_len)
        self.num_replicas, self.rank, self.seed, self.shuffle = int(num_replicas), int(rank), int(seed), shuffle
        self.short_idx = np.nonzero(self.lengths <= self.short_len)[0]
        g = self.batch_size * self.num_replicas
        if len(self.lengths) < g:
            raise ValueError(f"{len(self.lengths)} samples is less than one global batch of {g}")
        if self.warm_steps and len(self.short_idx) < g:
            raise ValueError(f"only {len(self.short_idx)} samples have <= {self.short_len} chars: less than one "
                             f"global batch of {g}; raise short_len or set warm_steps=0")
        self.epoch = 0
        self.batches_drawn = 0   # batches yielded so far (all epochs)
        self._skip = 0

    def __len__(self) -> int:
        return len(self.lengths) // (self.batch_size * self.num_replicas)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def skip_next(self, n_batches: int) -> None:
        self._skip = max(0, int(n_batches))

    def _order(self, pool: np.ndarray, salt: int) -> np.ndarray:
        if not self.shuffle:
            return pool
        rng = np.random.default_rng([self.seed, self.epoch, salt])
        return pool[rng.permutation(len(pool))]

    def __iter__(self):
        g = self.batch_size * self.num_replicas
        full = self._order(np.arange(len(self.lengths)), 0)
        short = self._order(self.short_idx, 1)
        skip, self._skip = self._skip, 0
        pos = max(0, self.batches_drawn - skip)  # on resume, the skipped batches were already counted
        s_pos = 0
        for i in range(len(self)):
            if pos < self.warm_steps:
                if s_pos + g > len(short):
                    s_pos = 0
                chunk = short[s_pos:s_pos + g]
                s_pos += g
            else:
                chunk = full[i * g:(i + 1) * g]
            pos += 1
            if i < skip:
                continue
            self.batches_drawn = pos
            yield chunk[self.rank * self.batch_size:(self.rank + 1) * self.batch_size].tolist()

    def state_dict(self) -> dict:
        return {"batches_drawn": self.batches_drawn}

    def set_state_dict(self, state: dict) -> None:
        self.batches_drawn = int(state.get("batches_drawn", 0))

class CurriculumLogger(Callback):
    """Trainer hook: checkpoints the sampler's phase position and logs the end of the warm phase.

    The position is counted in batches the trainer consumed (epoch x batches per epoch + batch in epoch), not
    batches the sampler yielded: a DataLoader draws ahead of training (buffer reader, workers), so the resumed
    phase is exact whatever the prefetch depth."""

    def __init__(self, sampler: LengthCurriculumSampler):
        self.sampler = sampler
        self._trainer = None
        self._was_warm = None

    def consumed(self) -> int:
        t = self._trainer
        return self.sampler.batches_drawn if t is None else t.epoch * len(self.sampler) + t.batch_in_epoch

    def on_fit_start(self, trainer) -> None:
        self._trainer = trainer
        self._was_warm = self.consumed() < self.sampler.warm_steps
        logger.info("length curriculum: lines <= %d chars for the first %d batches (%d of %d samples)",
                    self.sampler.short_len, self.sampler.warm_steps, len(self.sampler.short_idx),
                    len(self.sampler.lengths))

    def on_step_end(self, trainer) -> None:
        warm = self.consumed() < self.sampler.warm_steps
        if self._was_warm and not warm:
            logger.info("length curriculum: warm phase over at step %d, all lengths from now on", trainer.global_step)
        self._was_warm = warm

    def state_dict(self) -> dict:
        return {"batches_drawn": self.consumed()}

    def set_state_dict(self, state: dict) -> None:
        self.sampler.set_state_dict(state)

def build_curriculum_loader(dataset, sampler_cfg, loader_cfg, info, seed: int, collate_fn=None):
    """Train.sampler {name: LengthCurriculumSampler} -> (paddle DataLoader over ``dataset``, [its CurriculumLogger]).

    ``dataset`` needs ``label_lengths()`` (characters per sample); batch size: loader_cfg.batch_size_per_card;
    the order depends on (seed, epoch) only."""
    try:
        sampler = LengthCurriculumSampler(dataset.label_lengths(), loader_cfg.batch_size_per_card,
                                          sampler_cfg.warm_steps, sampler_cfg.short_len, num_replicas=info.world_size,
                                          rank=info.rank, seed=seed)
    except ValueError as exc:  # a setting that does not fit this data set: one line naming the keys
        raise ConfigError(f"Train.sampler (LengthCurriculumSampler, short_len={sampler_cfg.short_len}, warm_steps="
                          f"{sampler_cfg.warm_steps}) with Train.loader.batch_size_per_card="
                          f"{loader_cfg.batch_size_per_card} on {info.world_size} process(es): {exc}") from None
    loader = build_loader(dataset, sampler, loader_cfg, collate_fn=collate_fn, name="Train.loader")
    return loader, [CurriculumLogger(sampler)]
