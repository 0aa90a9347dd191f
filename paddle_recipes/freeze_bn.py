"""BatchNorm layers that run in eval mode during training (``Global.freeze_bn_stats``).

Each BN normalises by its running mean / variance and never updates them, while its scale and shift (gamma,
beta) still get gradients and learn. Useful when fine-tuning on little data or small batches, whose batch
statistics would replace statistics learned on far more data. A forward pre-hook sets the layer's ``training``
flag to False before every call, so it holds whatever ``model.train()`` / ``model.eval()`` the trainer calls.
"""
from __future__ import annotations

import paddle
from paddle.nn.layer.norm import _BatchNormBase

BN_TYPES = (_BatchNormBase, paddle.nn.BatchNorm)
FROZEN_FLAG = "_bn_stats_frozen"


def _eval_mode(layer, _inputs):
    layer.training = False


def freeze_bn_stats(model: paddle.nn.Layer) -> int:
    """Make every BatchNorm of `model` run in eval mode from now on (idempotent); returns how many there are."""
    bns = [m for m in model.sublayers(include_self=True) if isinstance(m, BN_TYPES)]
    for bn in bns:
        if not getattr(bn, FROZEN_FLAG, False):
            bn.register_forward_pre_hook(_eval_mode)
            setattr(bn, FROZEN_FLAG, True)
    return len(bns)
