"""INT8 post-training quantization (dygraph PTQ, ``paddle.quantization`` with AbsmaxObserver), as the ERNIE recipe's
quant phase uses it; int8.py packs the result into a small file.

    int8 = quantize_ptq(model, calib_batches)    # a converted copy; runs simulated INT8 in dygraph
    quant_size_report(int8)                      # fp32 vs int8-packed parameter bytes
    report = save_quantized(int8, input_spec, "output/nlp/int8")   # Paddle Inference (.pdmodel) + sizes
"""
from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import paddle
from paddle import nn

from ...export import export_model, file_sizes

__all__ = ["quantize_ptq", "quant_size_report", "save_quantized"]


def quantize_ptq(model: nn.Layer, calib_batches: Iterable, quant_bits: int = 8,
                 activation=None, weight=None,
                 layer_types: Sequence[type] | None = (nn.Conv2D, nn.Linear),
                 forward_fn: Callable[[nn.Layer, Any], Any] | None = None) -> nn.Layer:
    """Dynamic-graph post-training quantization; returns a converted copy (model is not modified).

    Observers default to ``AbsmaxObserver(quant_bits)`` (per-tensor) for the inputs and weights
    of ``layer_types`` (default Conv2D and Linear: the matmul-heavy layers). ``layer_types=None``
    uses paddle's global config, which also wraps the outputs of other layers (embeddings,
    norms, activations) and costs much more accuracy on transformers.
    ``calib_batches`` are fed as ``forward_fn(model, batch)`` -- by default ``model(batch)``,
    ``model(*batch)`` for a list/tuple or ``model(**batch)`` for a dict. The result runs in
    dygraph with quant/dequant ops (simulated INT8); export it with :func:`save_quantized`.
    """
    from paddle.quantization import PTQ, QuantConfig
    from paddle.quantization.observers import AbsmaxObserver

    act = activation or AbsmaxObserver(quant_bits=quant_bits)
    wgt = weight or AbsmaxObserver(quant_bits=quant_bits)
    if layer_types is None:
        qconfig = QuantConfig(activation=act, weight=wgt)
    else:
        qconfig = QuantConfig(activation=None, weight=None)
        qconfig.add_type_config(list(layer_types), activation=act, weight=wgt)
    ptq = PTQ(qconfig)
    was_training = model.training
    model.eval()
    try:
        observed = ptq.quantize(model, inplace=False)
    finally:
        if was_training:
            model.train()
    observed.eval()
    n = 0
    with paddle.no_grad():
        for batch in calib_batches:
            if forward_fn is not None:
                forward_fn(observed, batch)
            elif isinstance(batch, Mapping):
                observed(**batch)
            elif isinstance(batch, (list, tuple)):
                observed(*batch)
            else:
                observed(batch)
            n += 1
    if n == 0:
        raise ValueError("quantize_ptq: calib_batches is empty; give a few representative batches")
    converted = ptq.convert(observed, inplace=False)
    converted.eval()
    return converted


def quant_size_report(qmodel: nn.Layer) -> dict:
    """Parameter bytes of a :func:`quantize_ptq` model if stored fp32 vs. with its quantized
    weights packed as int8 (scales and other params stay fp32). No export needed."""
    quanted = {n[: -len("weight_quanter")] for n, _ in qmodel.named_sublayers() if n.endswith("weight_quanter")}
    q_elems, other = 0, 0
    for name, p in qmodel.named_parameters():
        numel = int(np.prod(p.shape)) if len(p.shape) else 1
        if name.endswith("weight") and name[: -len("weight")] in quanted:
            q_elems += numel
        else:
            other += numel
    return {"quantized_weight_elements": q_elems, "fp32_param_bytes": 4 * (q_elems + other),
            "int8_packed_bytes_estimate": q_elems + 4 * other}


def save_quantized(qmodel: nn.Layer, input_spec: Sequence, out_prefix: str | os.PathLike,
                   fp32_prefix: str | os.PathLike | None = None) -> dict:
    """Export a :func:`quantize_ptq` model for Paddle Inference and report sizes (bytes).

    Saved in the legacy ``.pdmodel`` format: in paddle 3.3 the PIR exporter cannot save the
    quant/dequant ops (dynamic batch dims fail, and the saved program does not run). Weights
    are stored as int8-valued float32 plus per-tensor scales (paddle's "ONNX style");
    TensorRT-int8 / oneDNN pick INT8 kernels at load time. ``int8_packed_bytes_estimate`` is
    the parameter size with those weights packed as int8 (see :func:`quant_size_report`).
    Models whose layers only trace under PIR (e.g. ``nn.MultiHeadAttention`` in paddle 3.3)
    raise RuntimeError; their dygraph int8 model still runs and can be evaluated.
    """
    try:
        exp = export_model(qmodel, input_spec, out_prefix, legacy_ir=True)
    except Exception as exc:
        raise RuntimeError(
            f"save_quantized: paddle {paddle.__version__} could not export this quantized model in the "
            f"legacy program format ({type(exc).__name__}: {str(exc).strip().splitlines()[-1][:300]}). "
            "The dygraph model from quantize_ptq still runs simulated INT8 (evaluate it directly), and "
            "quant_size_report(qmodel) gives the size figures.") from exc
    report = {"prefix": exp.prefix, "format": exp.format, **exp.sizes(), **quant_size_report(qmodel)}
    if fp32_prefix is not None:
        ref = file_sizes(fp32_prefix)
        report["fp32_total_bytes"] = ref["total_bytes"]
        report["fp32_params_bytes"] = ref["params_bytes"]
        report["packed_ratio_vs_fp32_params"] = report["int8_packed_bytes_estimate"] / max(ref["params_bytes"], 1)
    return report
