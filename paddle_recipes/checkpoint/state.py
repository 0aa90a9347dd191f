"""What a checkpoint holds besides tensors, as checkpoint objects (state_dict / set_state_dict): the RNG
streams (`RNG`), an optimizer keyed by parameter position (`PortableOptimizer`), and `collect_state` /
`restore_state`, which ask each object of a run for its state and hand it back (Fabric-style)."""
from __future__ import annotations

import random
from typing import Any

import numpy as np
import paddle

from .format import CheckpointError
from ..train.optim import param_list


def rng_state() -> dict:
    """Python, numpy and paddle (CPU + CUDA) RNG states, as plain values (paddle's GeneratorStates as
    their __getstate__ tuples), so state.pkl needs no class to load."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "paddle": [g.__getstate__() for g in paddle.get_rng_state()]}
    if paddle.is_compiled_with_cuda() and paddle.device.get_device().startswith("gpu"):
        state["paddle_cuda"] = [g.__getstate__() for g in paddle.get_cuda_rng_state()]
    return state


def _generator_states(states: list) -> list:
    """paddle GeneratorStates from rng_state()'s tuples (objects of older checkpoints pass through)."""
    cls = type(paddle.get_rng_state()[0])
    out = []
    for s in states:
        if isinstance(s, (tuple, list)):
            g = cls.__new__(cls)
            g.__setstate__(tuple(s))
            s = g
        out.append(s)
    return out


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    paddle.set_rng_state(_generator_states(state["paddle"]))
    if "paddle_cuda" in state and paddle.is_compiled_with_cuda():
        paddle.set_cuda_rng_state(_generator_states(state["paddle_cuda"]))


class _RngStates:
    """The process's RNG streams as a checkpoint object (rng_state / set_rng_state)."""

    state_dict = staticmethod(rng_state)
    set_state_dict = staticmethod(set_rng_state)


RNG = _RngStates()


def collect_state(objects: dict) -> dict:
    """name -> object.state_dict() for objects that have one; other values (numbers, dicts) as they are."""
    return {k: v.state_dict() if hasattr(v, "state_dict") else v for k, v in objects.items()}


def restore_state(objects: dict, state: dict) -> None:
    """Hand each object its part of a loaded checkpoint `state` (set_state_dict). A part this run needs
    but the checkpoint lacks is a CheckpointError naming the checkpoint."""
    missing = [k for k in objects if state.get(k) is None]
    if missing:
        raise CheckpointError(f"{state.get('path', 'checkpoint')}: no {', '.join(missing)} state, but this run "
                              f"uses {'them' if len(missing) > 1 else 'it'}")
    for name, obj in objects.items():
        obj.set_state_dict(state[name])



def _rename_keys(state, mapping: dict) -> Any:
    """Rename dict keys that equal or start with `old_` for each old->new in mapping."""
    if not isinstance(state, dict):
        return state
    ordered = sorted(mapping, key=len, reverse=True)  # longest first: linear_1 vs linear_10
    out = {}
    for key, value in state.items():
        new_key = key
        if isinstance(key, str):
            for old in ordered:
                if key == old or key.startswith(old + "_"):
                    new_key = mapping[old] + key[len(old):]
                    break
        out[new_key] = _rename_keys(value, mapping) if isinstance(value, dict) else value
    return out


def portable_optimizer_state(optimizer) -> dict:
    """optimizer.state_dict() with parameter names replaced by positions (param_0, param_1, ...).

    Paddle keys optimizer state by auto-generated parameter names (linear_4.w_0), which differ
    between two processes that build the same model; positions do not.
    """
    names = [p.name for p in param_list(optimizer)]
    return _rename_keys(optimizer.state_dict(), {n: f"@param_{i}" for i, n in enumerate(names)})


def load_portable_optimizer_state(optimizer, state: dict) -> None:
    """Inverse of portable_optimizer_state for this optimizer's parameters."""
    names = [p.name for p in param_list(optimizer)]
    optimizer.set_state_dict(_rename_keys(state, {f"@param_{i}": n for i, n in enumerate(names)}))


class PortableOptimizer:
    """An optimizer as a checkpoint object: its state keyed by parameter position (portable_optimizer_state)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def state_dict(self) -> dict:
        return portable_optimizer_state(self.optimizer)

    def set_state_dict(self, state: dict) -> None:
        load_portable_optimizer_state(self.optimizer, state)

