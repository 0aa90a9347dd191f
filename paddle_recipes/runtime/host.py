"""A model output as a float32 numpy array on the host, without a copy when the tensor already is one.

    probs = host_float32(model(x))      # CPU float32 dense tensor: a read-only view of its memory (DLPack)

``Tensor.numpy()`` always copies: on a [128, 40, 6625] rec output that is 136 MB written to fresh pages per
batch, as much CPU as the CTC decode itself. A view holds a reference to the tensor, so the memory stays valid.
Anything else (GPU, float16 / bfloat16, a numpy array) goes through ``astype("float32").numpy()`` / np.asarray.
"""
from __future__ import annotations

import numpy as np
import paddle


def host_float32(t) -> np.ndarray:
    if not isinstance(t, paddle.Tensor):
        return np.asarray(t, dtype=np.float32)
    if t.dtype == paddle.float32 and t.place.is_cpu_place() and t.is_dense():
        try:
            view = np.from_dlpack(t)
        except (TypeError, RuntimeError, BufferError):  # a paddle without DLPack export of this tensor
            return t.numpy()
        view.flags.writeable = False  # the caller must not write into the model's output
        return view
    return t.astype("float32").numpy()
