"""What a checkpoint holds besides tensors, as checkpoint objects (state_dict / set_state_dict): the RNG
streams (`RNG`), and `collect_state` / `restore_state`, which ask each object of a run for its state and hand it back (Fabric-style)."""
from __future__ import annotations

import random

import numpy as np
import paddle

from .format import CheckpointError


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

