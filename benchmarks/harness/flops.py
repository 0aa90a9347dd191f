"""FLOPs per forward pass, counted with forward post-hooks (paddle.flops crashes on paddle 3.3.1), and the
matmul peak of this process: measurements the benchmarks report (tta_worker.py, step_cost.py).

    fl = count_flops(model, [1, 3, 32, 192])     # {"total": FLOPs per sample, "by_type": {...}, "by_layer": [...]}
    train_flops_per_sample = 3 * fl["total"]     # forward + backward ~ 3x forward (standard estimate)

    fl = count_flops(model, shape, train_args=(targets,))   # the TRAINING forward: model.train(), model(x, targets)

Counted (1 multiply-add = 2 FLOPs): Conv2D and Conv1D (any groups), Linear, LSTM/GRU/SimpleRNN (gate matmuls).
Not counted: BN, activations, pooling, elementwise, attention's q.k / p.v products (cheap in FLOPs, not in time:
see the profiler). Count the form a run trains: a rep block held un-fused runs every branch, fused one conv
(weights.released.to_released_form), and a training-only branch (PP-OCRv4/v5 rec's NRTR decoder) runs only in the
training forward.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
import paddle
import paddle.nn as nn


def _conv_flops(layer: nn.Conv2D, out: paddle.Tensor) -> float:
    w = layer.weight.shape  # [Cout, Cin/groups, kh, kw]
    b, cout, ho, wo = out.shape
    return 2.0 * b * cout * ho * wo * w[1] * w[2] * w[3]


def _conv1d_flops(layer: nn.Conv1D, out: paddle.Tensor) -> float:
    w = layer.weight.shape  # [Cout, Cin/groups, k]
    b, cout, length = out.shape
    return 2.0 * b * cout * length * w[1] * w[2]


def _linear_flops(layer: nn.Linear, inp: paddle.Tensor) -> float:
    rows = int(np.prod(inp.shape[:-1]))
    fin, fout = layer.weight.shape
    return 2.0 * rows * fin * fout


def _rnn_flops(layer, inp: paddle.Tensor) -> float:
    """Gate matmuls of every layer and direction: 2 * B * T * gates * H * (I + H)."""
    gates = {"LSTM": 4, "GRU": 3}.get(type(layer).__name__, 1)
    x = inp[0] if isinstance(inp, (list, tuple)) else inp
    b, t, i = x.shape if not getattr(layer, "time_major", False) else (x.shape[1], x.shape[0], x.shape[2])
    h = layer.hidden_size
    dirs = 2 if getattr(layer, "num_directions", 1) == 2 or getattr(layer, "direction", "") in ("bidirect", "bidirectional") else 1
    total, fin = 0.0, i
    for _ in range(layer.num_layers):
        total += dirs * 2.0 * b * t * gates * h * (fin + h)
        fin = h * dirs
    return total


def count_flops(model: paddle.nn.Layer, input_shape: Sequence[int], dtype: str = "float32",
                train_args: tuple | None = None) -> dict:
    """Forward FLOPs per sample for an input of ``input_shape`` ([B, C, H, W]; divided by B).

    Returns {"total": float, "by_type": {layer type: FLOPs}, "by_layer": [(name, type, FLOPs)]},
    all per sample. The model runs once under no_grad: in eval mode (BN statistics untouched), or, with
    `train_args`, in train mode as ``model(x, *train_args)`` (the training forward, with its training-only branches;
    BN running statistics of `model` move: count a model built for counting).
    """
    records: list = []
    hooks = []
    for name, layer in model.named_sublayers(include_self=True):
        if isinstance(layer, nn.Conv2D):
            fn = lambda l, i, o, n=name: records.append((n, "Conv2D-dw" if l._groups > 1 and l._groups == l._in_channels  # noqa: E731
                                                        else "Conv2D", _conv_flops(l, o)))
        elif isinstance(layer, nn.Conv1D):
            fn = lambda l, i, o, n=name: records.append((n, "Conv1D", _conv1d_flops(l, o)))  # noqa: E731
        elif isinstance(layer, nn.Linear):
            fn = lambda l, i, o, n=name: records.append((n, "Linear", _linear_flops(l, i[0])))  # noqa: E731
        elif isinstance(layer, (nn.LSTM, nn.GRU, nn.SimpleRNN)):
            fn = lambda l, i, o, n=name: records.append((n, type(l).__name__, _rnn_flops(l, i[0])))  # noqa: E731
        else:
            continue
        hooks.append(layer.register_forward_post_hook(fn))
    was_training = model.training
    model.train() if train_args is not None else model.eval()
    try:
        with paddle.no_grad():
            x = paddle.zeros(list(input_shape), dtype=dtype)
            model(x, *train_args) if train_args is not None else model(x)
    finally:
        for h in hooks:
            h.remove()
        model.train() if was_training else model.eval()
    b = float(input_shape[0])
    by_type: dict = defaultdict(float)
    for _, t, f in records:
        by_type[t] += f / b
    return {"total": sum(by_type.values()), "by_type": dict(by_type),
            "by_layer": [(n, t, f / b) for n, t, f in records]}


def matmul_peak_gflops(n: int = 512, repeats: int = 10, threads: int | None = None) -> float:
    """Measured fp32 matmul GFLOP/s of this process (best of ``repeats`` [n, n] x [n, n] products)."""
    import time

    if threads:
        paddle.set_num_threads(threads) if hasattr(paddle, "set_num_threads") else None
    a = paddle.randn([n, n])
    bm = paddle.randn([n, n])
    paddle.matmul(a, bm).numpy()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        paddle.matmul(a, bm).numpy()
        best = min(best, time.perf_counter() - t)
    return 2.0 * n ** 3 / best / 1e9
