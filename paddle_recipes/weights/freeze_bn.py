"""BatchNorm layers that run in eval mode during training (``Global.freeze_bn_stats``).

Each BN normalises by its running mean / variance and never updates them, while its scale and shift (gamma,
beta) still get gradients and learn. Useful when fine-tuning on little data or small batches, whose batch
statistics would replace statistics learned on far more data. A forward pre-hook sets the layer's ``training``
flag to False before every call, so it holds whatever ``model.train()`` / ``model.eval()`` the trainer calls.
BNs flagged fresh (``mark_fresh_bns``: their statistics were not in the init weights, e.g. DB's thresh branch that
inference files lack) are left to estimate theirs: they have none worth keeping.
"""
from __future__ import annotations

from typing import Iterable, List, Tuple

import paddle

from ..nn.layers import BN_TYPES

FROZEN_FLAG = "_bn_stats_frozen"
FRESH_FLAG = "_bn_stats_fresh"


def _eval_mode(layer, _inputs):
    layer.training = False


def batch_norms(model: paddle.nn.Layer) -> List[Tuple[str, paddle.nn.Layer]]:
    """(name, layer) of every BatchNorm of `model`, itself included (name "")."""
    return [(n, m) for n, m in model.named_sublayers(include_self=True) if isinstance(m, BN_TYPES)]


def mark_fresh_bns(model: paddle.nn.Layer, kept_init: Iterable[str]) -> List[str]:
    """Flag the BNs whose running mean is among `kept_init` (state_dict keys the init weights did not provide);
    freeze_bn_stats leaves them training. Returns their names."""
    kept = set(kept_init)
    for n, bn in batch_norms(model):
        setattr(bn, FRESH_FLAG, (f"{n}._mean" if n else "_mean") in kept)
    return fresh_bns(model)


def fresh_bns(model: paddle.nn.Layer) -> List[str]:
    """Names of the BNs flagged fresh by mark_fresh_bns."""
    return [n for n, bn in batch_norms(model) if getattr(bn, FRESH_FLAG, False)]


def freeze_bn_stats(model: paddle.nn.Layer) -> int:
    """Make every BatchNorm of `model` not flagged fresh run in eval mode from now on (idempotent); returns how
    many are frozen."""
    bns = [m for _, m in batch_norms(model) if not getattr(m, FRESH_FLAG, False)]
    for bn in bns:
        if not getattr(bn, FROZEN_FLAG, False):
            bn.register_forward_pre_hook(_eval_mode)
            setattr(bn, FROZEN_FLAG, True)
    return len(bns)
