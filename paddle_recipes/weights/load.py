"""Weights for eval / predict / export: `load_weights` loads a weights file or checkpoint strictly (every tensor,
same shapes), `check_finite_weights` refuses inf/nan; each a one-line CheckpointError naming the file. Which
weights a recipe uses (Global.weights > checkpoints > pretrained_model > best > latest): Recipe.weights_source."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import paddle

from ..checkpoint.format import CheckpointError, weights_file_at
from ..checkpoint.finite import first_nonfinite
from ..checkpoint.serialization import load_weights_file, match_dtypes
from ..runtime.distributed import unwrap
from .dict_remap import ClassMap, remap_rows_logged


def check_finite_weights(state_dict: dict, source: str) -> None:
    """CheckpointError naming `source` and the first tensor holding inf/nan, if any (weights are never used then)."""
    bad = first_nonfinite(state_dict)
    if bad is not None:
        raise CheckpointError(f"{source}: tensor '{bad}' holds inf/nan: these weights cannot be evaluated, "
                              "predicted with or exported (a diverged run? use an earlier checkpoint)")


def load_weights(model: paddle.nn.Layer, path: str | os.PathLike, prefer_ema: bool = True, *,
                 classes: ClassMap | None = None, logger: logging.Logger | None = None) -> str:
    """Load weights into `model` from a weights file (.pdparams / .safetensors) or a checkpoint folder/root
    (checkpoint.weights_file_in: EMA weights when `prefer_ema`). Strict: every model tensor, same shapes
    (Recipe.load_for_inference also refuses inf/nan: check_finite_weights). ``classes``: the weights' and the
    model's characters: the class rows follow characters (dict_remap; characters the weights never saw: one
    warning line on `logger`). Returns the file loaded."""
    path = Path(path)
    file = weights_file_at(path, prefer_ema)
    weights, source = load_weights_file(file), str(file)
    if not isinstance(weights, dict):
        raise CheckpointError(f"{source} holds a {type(weights).__name__}, not a state_dict")
    target = unwrap(model)
    if classes is not None:
        weights = remap_rows_logged(weights, target, classes, logger or logging.getLogger(__name__), source,
                                    training=False)
    own = target.state_dict()
    missing = set(own) - set(weights)
    if missing:
        raise CheckpointError(f"{source} lacks weights for {sorted(missing)[:5]} (model/config mismatch?)")
    bad = [f"{k} {list(np.shape(weights[k]))}->{list(v.shape)}" for k, v in own.items()
           if list(np.shape(weights[k])) != list(v.shape)]
    if bad:  # paddle would only warn "Skip loading" and keep random values
        raise CheckpointError(f"{source}: shape mismatch for {', '.join(bad[:3])} ({len(bad)} in all; "
                              "another dictionary or architecture? use Global.pretrained_model to fine-tune)")
    target.set_state_dict(match_dtypes(weights, own, source))  # exact conversions only, else one line
    return source
