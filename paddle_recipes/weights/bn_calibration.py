"""Calibrate an imported inference model's un-fused BNs on training images before the first step
(``Global.calibrate_bn_batches``).

A PaddleOCR inference model is un-fused into the training form (nn/reparam.py): each fused conv goes into one
branch whose BN is a pass-through in eval mode (running mean 0, var 1). In train mode that BN normalises by batch
statistics instead, so the first steps would train a network that computes something else than the released
model (the official PP-OCRv4 rec: CTC loss ~90, accuracy 0 at step 5). ``calibrate_at_start`` sets those BNs'
running statistics from the first training images (reparam.calibrate_unfused_bn, eval-mode function kept).

- The images are the dataset's, in an order of their own (a permutation seeded by ``seed``), read with the
  global random states (python, numpy, paddle) saved, seeded from ``seed`` + rank (the augmentation draws of
  these reads: the calibration is the same in every run of a seed), and restored: the run's data order and
  augmentation draws are the same with calibration on or off.
- With several processes, each reads its own shard rank::world_size of that order and the statistics are
  summed over ranks (one all-reduce), so that every rank ends with the same BN statistics.
"""
from __future__ import annotations

import copy
import logging
import random
from typing import Callable, Iterator, Optional

import numpy as np
import paddle

from ..nn.reparam import calibrate_unfused_bn, passthrough_bns

logger = logging.getLogger(__name__)


def batch_images(batch):
    """The image tensor of a collated batch: batch["image"] (dict) or batch[0] (sequence)."""
    return batch["image"] if isinstance(batch, dict) else batch[0]


@paddle.no_grad()
def train_eval_gap(model: paddle.nn.Layer, images) -> float:
    """max |train-mode - eval-mode| / max |eval-mode| of the last un-fused BN's output (where the gaps of all
    before it have added up) on `images`; `model` is left as it was (train mode runs on a copy)."""
    name = passthrough_bns(model)[-1][0]
    x = paddle.to_tensor(np.asarray(images, "float32")) if not isinstance(images, paddle.Tensor) else images
    net = getattr(model, "backbone", model)  # the un-fused BNs sit in the backbone / neck; heads may need targets
    prefix = "backbone." if net is not model else ""

    def output_of(m, train: bool) -> np.ndarray:
        got = []
        layer = dict(m.named_sublayers())[name[len(prefix):]]
        handle = layer.register_forward_post_hook(lambda _l, _i, out: got.append(out.numpy()))
        m.train() if train else m.eval()
        try:
            m(x)
        finally:
            handle.remove()
        return got[0]

    was_training = net.training
    ev = output_of(net, False)
    if was_training:
        net.train()
    tr = output_of(copy.deepcopy(net), True)
    return float(np.abs(tr - ev).max() / max(float(np.abs(ev).max()), 1e-12))


def _image_batches(dataset, collate: Optional[Callable], indices, batch_size: int) -> Iterator:
    for start in range(0, len(indices), batch_size):
        samples = [dataset[int(i)] for i in indices[start:start + batch_size]]
        images = batch_images(collate(samples) if collate else paddle.io.dataloader.collate.default_collate_fn(samples))
        if len(images):
            yield images


def calibrate_at_start(model: paddle.nn.Layer, dataset, *, num_batches: int, batch_size: int,
                       collate: Optional[Callable] = None, seed: int = 0, rank: int = 0, world_size: int = 1,
                       reduce: Optional[Callable[[np.ndarray], np.ndarray]] = None,
                       log: logging.Logger | None = None) -> Optional[dict]:
    """Calibrate `model`'s un-fused pass-through BNs on `num_batches` batches of `batch_size` images per rank
    (see the module docstring). Returns {"bns", "images", "gap_before", "gap_after"} (images summed over
    ranks; gaps as train_eval_gap on this rank's first batch), or None when nothing was done (num_batches 0
    or no un-fused BN: not an imported inference model)."""
    bns = passthrough_bns(model)
    if num_batches <= 0 or not bns:
        return None
    order = np.random.RandomState(seed).permutation(len(dataset))
    mine = order[rank::world_size][:num_batches * batch_size]
    states = random.getstate(), np.random.get_state(), paddle.get_rng_state()
    try:
        random.seed(seed + rank)  # the augmentation draws of the calibration reads, the same every run
        np.random.seed((seed + rank) % 2 ** 32)
        paddle.seed(seed + rank)
        batches = _image_batches(dataset, collate, mine, batch_size)
        first = next(batches, None)
        gap_before = train_eval_gap(model, first[:8]) if first is not None else float("nan")
        seen = [0]

        def counted():
            for b in ([first] if first is not None else []):
                seen[0] += len(b)
                yield b
            for b in batches:
                seen[0] += len(b)
                yield b

        calibrate_unfused_bn(model, counted(), reduce=reduce)
        gap_after = train_eval_gap(model, first[:8]) if first is not None else float("nan")
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        paddle.set_rng_state(states[2])
    images = int(reduce(np.array([float(seen[0])]))[0]) if reduce is not None else seen[0]
    (log or logger).info("calibrated %d un-fused BNs of the imported inference model on %d training images "
                         "(Global.calibrate_bn_batches=%d x %d per process); train-vs-eval gap of the backbone output "
                         "%.3f -> %.3f of scale", len(bns), images, num_batches, batch_size, gap_before, gap_after)
    return {"bns": len(bns), "images": images, "gap_before": gap_before, "gap_after": gap_after}
