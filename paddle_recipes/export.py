"""Deployment blocks: jit export, Paddle Inference predictor (+TensorRT config), conv-BN folding.

    exp = export_model(model, [InputSpec([None, 3, 32, 320], "float32", "x")], "output/rec/inference")
    pred = create_predictor(exp.prefix, device="cpu", threads=2)
    (logits,) = predict(pred, {"x": batch})

    fused = fuse_conv_bn(model)                  # eval-mode copy, Conv+BN folded into Conv

INT8 post-training quantization lives with the task that uses it: paddle_recipes.tasks.ernie_multitask.ptq.

TensorRT (GPU builds only): ``create_predictor(prefix, device="gpu", use_trt=True,
trt=TrtConfig(precision="fp16", min_shapes=..., max_shapes=..., opt_shapes=...))``;
``trt_config_to_yaml(trt)`` writes the same settings for a deployment config file.
"""
from __future__ import annotations

import contextlib
import copy
import os
import statistics
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import paddle
from paddle import nn

__all__ = [
    "ExportConfig", "ExportedModel", "inference_files", "export_model", "create_predictor", "predict",
    "TrtConfig", "validate_trt", "trt_config_to_dict", "trt_config_to_yaml", "apply_trt",
    "find_conv_bn_pairs", "fuse_conv_bn", "measure_latency", "file_sizes",
]


# ----------------------------------------------------------------------------- export
@dataclass
class ExportedModel:
    prefix: str
    model_file: str     # <prefix>.json (PIR, paddle 3.x default) or <prefix>.pdmodel (legacy program)
    params_file: str    # <prefix>.pdiparams
    format: str         # "pir-json" | "pdmodel"

    def sizes(self) -> dict:
        return file_sizes(self.prefix)


@dataclass
class ExportConfig:
    """out_prefix: "" = output_dir/inference/model. parity_batch: samples compared dygraph vs Paddle Inference.
    safetensors: also write <export folder>/model.safetensors, the loaded (EMA) weights before any deploy
    fusion, in the safetensors format (no pickle; Global.weights / pretrained_model read it)."""
    out_prefix: str = ""
    parity_batch: int = 4
    safetensors: bool = False


def inference_files(prefix: str | os.PathLike) -> ExportedModel:
    """Locate the inference files written by ``paddle.jit.save`` for ``prefix``."""
    prefix = str(prefix)
    params = prefix + ".pdiparams"
    for ext, fmt in ((".json", "pir-json"), (".pdmodel", "pdmodel")):
        if os.path.isfile(prefix + ext):
            if not os.path.isfile(params):
                raise FileNotFoundError(f"found {prefix + ext} but not its weights {params}")
            return ExportedModel(prefix, prefix + ext, params, fmt)
    raise FileNotFoundError(f"no inference model at prefix {prefix!r}: expected {prefix}.json or "
                            f"{prefix}.pdmodel plus {params} (written by paddle.jit.save / export_model)")


def file_sizes(prefix: str | os.PathLike) -> dict:
    """Bytes of the model/params files of an exported prefix (``total_bytes`` = both)."""
    exp = inference_files(prefix)
    m, p = os.path.getsize(exp.model_file), os.path.getsize(exp.params_file)
    return {"model_bytes": m, "params_bytes": p, "total_bytes": m + p}


def export_model(model: nn.Layer, input_spec: Sequence, out_prefix: str | os.PathLike,
                 legacy_ir: bool = False) -> ExportedModel:
    """``paddle.jit.save`` the model in eval mode (its training flag is restored afterwards).

    input_spec: list of ``paddle.static.InputSpec`` (None dims = dynamic) or example tensors.
    legacy_ir: write the old ``.pdmodel`` program instead of paddle 3.x's PIR ``.json``
    (needed for PTQ-converted models, see tasks.nlp.ptq.save_quantized).
    """
    out_prefix = str(out_prefix)
    Path(out_prefix).parent.mkdir(parents=True, exist_ok=True)
    for ext in (".json", ".pdmodel", ".pdiparams", ".pdiparams.info"):
        if os.path.exists(out_prefix + ext):  # so detection below can't pick a stale file
            os.remove(out_prefix + ext)
    was_training = model.training
    model.eval()
    try:
        if legacy_ir:
            with paddle.pir_utils.DygraphOldIrGuard(), _old_ir_ops():
                paddle.jit.save(model, out_prefix, input_spec=list(input_spec))
        else:
            paddle.jit.save(model, out_prefix, input_spec=list(input_spec))
    finally:
        if was_training:
            model.train()
    return inference_files(out_prefix)


def in_old_ir_static() -> bool:
    """True while tracing a legacy (.pdmodel) program: neither dygraph nor PIR."""
    return not (paddle.in_dynamic_mode() or paddle.framework.in_pir_mode())


def append_old_ir_op(op_type: str, inputs: dict, outputs: dict, attrs: dict | None = None) -> dict:
    """Append ``op_type`` to the legacy program being traced; ``outputs`` = {slot: dtype}; returns {slot: Variable}."""
    from paddle.base.layer_helper import LayerHelper

    helper = LayerHelper(op_type)
    outs = {k: helper.create_variable_for_type_inference(dtype=v) for k, v in outputs.items()}
    helper.append_op(type=op_type, inputs=inputs, outputs=outs, attrs=attrs or {})
    return outs


# paddle 3.3 binds these straight to the PIR ``_C_ops`` (no legacy branch), so they reject a legacy program's
# Variables ("must be Value, but got Variable"); _old_ir_ops appends the legacy op of the same kernel instead.
_OLD_IR_UNARY = ("sigmoid", "exp", "tanh", "sqrt", "rsqrt", "abs", "log", "floor", "ceil", "cos", "sin")
_OLD_IR_BINARY = {"multiply": "elementwise_mul", "maximum": "elementwise_max", "minimum": "elementwise_min"}


def _old_ir_replacements() -> tuple[dict, dict]:
    """({name: legacy version} for paddle.<name> / Tensor.<name>, the same for F.<name>) of the PIR-only functions;
    a version returns NotImplemented for arguments it does not handle (paddle's own function then runs)."""
    def make_unary(op_type):
        def op(x, name=None):
            return append_old_ir_op(op_type, {"X": x}, {"Out": x.dtype})["Out"]
        return op

    def make_binary(op_type):
        def op(x, y, name=None):
            if not isinstance(y, paddle.base.framework.Variable):  # python scalars: paddle's own path
                return NotImplemented
            return append_old_ir_op(op_type, {"X": x, "Y": y}, {"Out": x.dtype}, {"axis": -1})["Out"]
        return op

    def matmul(x, y, transpose_x=False, transpose_y=False, name=None):
        return append_old_ir_op("matmul_v2", {"X": x, "Y": y}, {"Out": x.dtype},
                                {"trans_x": transpose_x, "trans_y": transpose_y})["Out"]

    def reduce_sum(x, axis=None, dtype=None, keepdim=False, name=None):
        if dtype is not None:
            return NotImplemented
        dims = [] if axis is None else [axis] if isinstance(axis, int) else list(axis)
        return append_old_ir_op("reduce_sum", {"X": x}, {"Out": x.dtype},
                                {"dim": dims, "keep_dim": keepdim, "reduce_all": not dims})["Out"]

    def gelu(x, approximate=False, name=None):
        return append_old_ir_op("gelu", {"X": x}, {"Out": x.dtype}, {"approximate": bool(approximate)})["Out"]

    def argmax(x, axis=None, keepdim=False, dtype="int64", name=None):
        out_dtype = paddle.base.framework.convert_np_dtype_to_dtype_(dtype)
        return append_old_ir_op("arg_max", {"X": x}, {"Out": out_dtype},
                                {"axis": -1 if axis is None else axis, "keepdims": keepdim,
                                 "flatten": axis is None, "dtype": out_dtype})["Out"]

    ops = {n: make_unary(n) for n in _OLD_IR_UNARY}
    ops.update({n: make_binary(t) for n, t in _OLD_IR_BINARY.items()})
    ops.update(matmul=matmul, sum=reduce_sum, argmax=argmax)
    return ops, {"gelu": gelu, "sigmoid": ops["sigmoid"], "tanh": ops["tanh"]}


@contextlib.contextmanager
def _old_ir_ops():
    """While a legacy program is traced, paddle.<op>, Tensor.<op> (``x.matmul(y)``) and F.<op> of the PIR-only
    functions above append the legacy ops instead (same kernels, same math). Restored on exit."""
    import paddle.nn.functional as F
    from paddle.base.framework import Variable

    tensor_ops, functional_ops = _old_ir_replacements()
    targets = [(mod, name, fn) for mod in (paddle, Variable) for name, fn in tensor_ops.items() if hasattr(mod, name)]
    targets += [(F, name, fn) for name, fn in functional_ops.items()]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in targets]

    def guarded(orig, fn):
        def op(*args, **kwargs):
            if in_old_ir_static():
                out = fn(*args, **kwargs)
                if out is not NotImplemented:
                    return out
            return orig(*args, **kwargs)
        return op

    try:
        for (mod, name, fn), (_, _, orig) in zip(targets, saved):
            setattr(mod, name, guarded(orig, fn))
        yield
    finally:
        for mod, name, orig in saved:
            setattr(mod, name, orig)


# ----------------------------------------------------------------------------- predictor
def create_predictor(prefix: str | os.PathLike, device: str = "cpu", use_trt: bool = False,
                     trt: "TrtConfig | None" = None, threads: int = 1, gpu_mem_mb: int = 256,
                     enable_mkldnn: bool | None = None, verbose: bool = False):
    """Paddle Inference predictor for an exported prefix.

    device: "cpu", "gpu" or "gpu:N". threads: CPU math threads. gpu_mem_mb: initial GPU pool (MB).
    use_trt: apply ``trt`` (default TrtConfig()) -- skipped with a warning on CPU.
    enable_mkldnn: None keeps paddle's default for the CPU.
    """
    import paddle.inference as pi

    exp = inference_files(prefix)
    config = pi.Config(exp.model_file, exp.params_file)
    dev = device.lower()
    if dev.startswith("gpu"):
        if not paddle.is_compiled_with_cuda():
            raise RuntimeError(f"device={device!r} but this paddle is a CPU build; use device='cpu' "
                               "or install paddlepaddle-gpu")
        config.enable_use_gpu(gpu_mem_mb, int(dev.split(":")[1]) if ":" in dev else 0)
    elif dev == "cpu":
        config.disable_gpu()
        config.set_cpu_math_library_num_threads(int(threads))
        if enable_mkldnn is True:
            config.enable_mkldnn()
        elif enable_mkldnn is False:
            config.disable_mkldnn()
    else:
        raise ValueError(f"device must be 'cpu', 'gpu' or 'gpu:N', got {device!r}")
    config.switch_ir_optim(True)
    if exp.format == "pdmodel":  # PIR programs do their own in-place planning; this pass breaks them in 3.3
        config.enable_memory_optim()
    if not verbose:
        config.disable_glog_info()
    if use_trt:
        apply_trt(config, trt or TrtConfig())
    return pi.create_predictor(config)


def predict(predictor, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] | np.ndarray) -> list[np.ndarray]:
    """Run the predictor; inputs by name (dict) or in ``get_input_names()`` order. Returns all outputs."""
    names = predictor.get_input_names()
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    if isinstance(inputs, Mapping):
        missing = [n for n in names if n not in inputs]
        extra = [k for k in inputs if k not in names]
        if missing or extra:
            raise ValueError(f"predictor inputs are {names}; missing {missing}, unexpected {extra}")
        arrays = [inputs[n] for n in names]
    else:
        arrays = list(inputs)
        if len(arrays) != len(names):
            raise ValueError(f"predictor expects {len(names)} inputs {names}, got {len(arrays)}")
    for name, arr in zip(names, arrays):
        h = predictor.get_input_handle(name)
        arr = np.ascontiguousarray(arr)
        h.reshape(list(arr.shape))
        h.copy_from_cpu(arr)
    predictor.run()
    return [predictor.get_output_handle(n).copy_to_cpu() for n in predictor.get_output_names()]


# ----------------------------------------------------------------------------- TensorRT
_PRECISIONS = {"fp32": "Float32", "fp16": "Half", "int8": "Int8"}


@dataclass
class TrtConfig:
    """TensorRT subgraph settings for Paddle Inference (GPU builds with TensorRT only).

    workspace_size: bytes TensorRT may use for tactics (default 1 GiB).
    max_batch_size: largest batch (static-shape engines).
    min_subgraph_size: smallest op count worth converting to a TRT engine.
    precision: "fp32" | "fp16" | "int8" (int8 needs a quantized model or use_calib_mode=True).
    use_static: serialize built engines next to the model (faster restarts).
    min_shapes / max_shapes / opt_shapes: per-input dynamic shapes, e.g.
        {"image": [1, 3, 608, 608]} / {"image": [8, 3, 1536, 1536]} / {"image": [4, 3, 1024, 1024]}.
    """

    workspace_size: int = 1 << 30
    max_batch_size: int = 8
    min_subgraph_size: int = 5
    precision: str = "fp32"
    use_static: bool = False
    use_calib_mode: bool = False
    min_shapes: dict = field(default_factory=dict)
    max_shapes: dict = field(default_factory=dict)
    opt_shapes: dict = field(default_factory=dict)


def validate_trt(trt: TrtConfig) -> None:
    """Raise ValueError with the offending input name when the TRT config is inconsistent."""
    if trt.precision not in _PRECISIONS:
        raise ValueError(f"TrtConfig.precision must be one of {list(_PRECISIONS)}, got {trt.precision!r}")
    for k in ("workspace_size", "max_batch_size", "min_subgraph_size"):
        if int(getattr(trt, k)) <= 0:
            raise ValueError(f"TrtConfig.{k} must be > 0, got {getattr(trt, k)}")
    names = set(trt.min_shapes) | set(trt.max_shapes) | set(trt.opt_shapes)
    for n in sorted(names):
        shapes = {}
        for which in ("min_shapes", "max_shapes", "opt_shapes"):
            d = getattr(trt, which)
            if n not in d:
                raise ValueError(f"TrtConfig: input {n!r} has no entry in {which} "
                                 "(min_shapes, max_shapes and opt_shapes need the same inputs)")
            shapes[which] = [int(v) for v in d[n]]
        lo, hi, opt = shapes["min_shapes"], shapes["max_shapes"], shapes["opt_shapes"]
        if not len(lo) == len(hi) == len(opt):
            raise ValueError(f"TrtConfig: input {n!r} shapes have different ranks: min {lo}, max {hi}, opt {opt}")
        if not all(a <= c <= b for a, b, c in zip(lo, hi, opt)):
            raise ValueError(f"TrtConfig: input {n!r} needs min <= opt <= max per dim: min {lo}, opt {opt}, max {hi}")


def trt_config_to_dict(trt: TrtConfig) -> dict:
    """The exact arguments ``apply_trt`` passes to paddle.inference.Config, as plain data."""
    validate_trt(trt)
    out = {"enable_tensorrt_engine": {
        "workspace_size": int(trt.workspace_size),
        "max_batch_size": int(trt.max_batch_size),
        "min_subgraph_size": int(trt.min_subgraph_size),
        "precision_mode": _PRECISIONS[trt.precision],
        "use_static": bool(trt.use_static),
        "use_calib_mode": bool(trt.use_calib_mode),
    }}
    if trt.min_shapes:
        out["set_trt_dynamic_shape_info"] = {
            "min_input_shape": {k: [int(x) for x in v] for k, v in trt.min_shapes.items()},
            "max_input_shape": {k: [int(x) for x in v] for k, v in trt.max_shapes.items()},
            "optim_input_shape": {k: [int(x) for x in v] for k, v in trt.opt_shapes.items()},
        }
    return out


def trt_config_to_yaml(trt: TrtConfig, path: str | os.PathLike | None = None) -> str:
    """YAML text of :func:`trt_config_to_dict` (also written to ``path`` when given)."""
    import yaml

    text = ("# Paddle Inference TensorRT settings (paddle_recipes.export.TrtConfig)\n"
            + yaml.safe_dump({"TensorRT": asdict(trt), "paddle_inference_calls": trt_config_to_dict(trt)},
                             sort_keys=False, allow_unicode=True))
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    return text


def apply_trt(config, trt: TrtConfig) -> bool:
    """Enable TensorRT on a ``paddle.inference.Config`` (call after enable_use_gpu).

    Returns True when applied. On a CPU config, or a paddle built without TensorRT, it is
    skipped with a warning saying why (never a crash).
    """
    import paddle.inference as pi

    calls = trt_config_to_dict(trt)  # validates first, on every device
    if not config.use_gpu():
        warnings.warn("TensorRT skipped: this predictor runs on CPU (TensorRT needs device='gpu' and a "
                      "paddle-gpu build with TensorRT). Use trt_config_to_yaml() to ship the settings.",
                      RuntimeWarning, stacklevel=2)
        return False
    kw = dict(calls["enable_tensorrt_engine"])
    kw["precision_mode"] = getattr(pi.PrecisionType, kw["precision_mode"])
    try:
        config.enable_tensorrt_engine(**kw)
    except RuntimeError as exc:  # e.g. "please compile with TENSORRT first"
        warnings.warn(f"TensorRT skipped: paddle.inference refused it ({str(exc).splitlines()[0][:200]}); "
                      f"paddle.version.tensorrt() = {paddle.version.tensorrt()!r}", RuntimeWarning, stacklevel=2)
        return False
    if "set_trt_dynamic_shape_info" in calls:
        d = calls["set_trt_dynamic_shape_info"]
        config.set_trt_dynamic_shape_info(d["min_input_shape"], d["max_input_shape"], d["optim_input_shape"])
    return True


# ----------------------------------------------------------------------------- conv + BN folding
def _is_conv(layer) -> bool:
    from paddle.nn.layer.conv import _ConvNd

    return isinstance(layer, _ConvNd) and not getattr(layer, "_transposed", False)


def _is_bn(layer) -> bool:
    from paddle.nn.layer.norm import _BatchNormBase

    if isinstance(layer, _BatchNormBase):
        return True
    return isinstance(layer, nn.BatchNorm) and getattr(layer, "_act", None) is None


def _get(model: nn.Layer, path: str) -> nn.Layer:
    layer = model
    for part in path.split(".") if path else []:
        sub = layer._sub_layers.get(part)
        if sub is None:
            raise ValueError(f"fuse_conv_bn: no sublayer {path!r} in {type(model).__name__} (missing {part!r})")
        layer = sub
    return layer


def find_conv_bn_pairs(model: nn.Layer, pairs: Sequence[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """Dotted names of (conv, bn) pairs that :func:`fuse_conv_bn` will fold.

    Found three ways:
      1. ``nn.Sequential`` adjacency: a Conv1D/2D/3D directly followed by a BatchNorm.
      2. Declared by a layer class: ``conv_bn_pairs = (("conv", "bn"),)`` -- a promise that
         ``forward`` applies ``self.bn(self.conv(x))`` with nothing in between (and never uses
         ``self.conv`` or ``self.bn`` elsewhere). Model authors in this repo put it on their
         ConvBNLayer-style blocks.
      3. ``pairs``: explicit dotted names relative to ``model``, e.g. [("backbone.stem.conv", "backbone.stem.bn")].
    """
    found: list[tuple[str, str]] = []
    for prefix, layer in model.named_sublayers(include_self=True):
        dot = prefix + "." if prefix else ""
        if isinstance(layer, nn.Sequential):
            kids = list(layer.named_children())
            for (n1, a), (n2, b) in zip(kids, kids[1:]):
                if _is_conv(a) and _is_bn(b):
                    found.append((dot + n1, dot + n2))
        for c, b in getattr(type(layer), "conv_bn_pairs", ()) or ():
            found.append((dot + c, dot + b))
    found += [tuple(p) for p in (pairs or [])]
    out, seen = [], set()
    for c, b in found:
        if (c, b) in seen:
            continue
        seen.add((c, b))
        conv, bn = _get(model, c), _get(model, b)
        if not _is_conv(conv):
            raise ValueError(f"fuse_conv_bn: {c!r} is {type(conv).__name__}, not a (non-transposed) Conv")
        if not _is_bn(bn):
            raise ValueError(f"fuse_conv_bn: {b!r} is {type(bn).__name__}, not a BatchNorm without activation")
        if conv.weight.shape[0] != bn._mean.shape[0]:
            raise ValueError(f"fuse_conv_bn: {c!r} has {conv.weight.shape[0]} output channels but "
                             f"{b!r} normalizes {bn._mean.shape[0]}")
        out.append((c, b))
    return out


def folded_conv_bn(conv, bn) -> tuple[np.ndarray, np.ndarray]:
    """(weight, bias) of ``bn(conv(x))`` as one conv, in float64, from BN's running statistics (eval mode).
    A conv without bias and a BN without affine parameters count as bias 0 / gamma 1, beta 0."""
    w = conv.weight.numpy().astype(np.float64)
    mean = bn._mean.numpy().astype(np.float64)
    var = bn._variance.numpy().astype(np.float64)
    gamma = bn.weight.numpy().astype(np.float64) if bn.weight is not None else np.ones_like(mean)
    beta = bn.bias.numpy().astype(np.float64) if bn.bias is not None else np.zeros_like(mean)
    scale = gamma / np.sqrt(var + float(bn._epsilon))
    b = conv.bias.numpy().astype(np.float64) if conv.bias is not None else np.zeros_like(mean)
    return w * scale.reshape([-1] + [1] * (w.ndim - 1)), (b - mean) * scale + beta


def _fold(conv, bn) -> None:
    np_dtype = conv.weight.numpy().dtype
    w, b = folded_conv_bn(conv, bn)
    conv.weight.set_value(w.astype(np_dtype))
    if conv.bias is None:
        conv.bias = conv.create_parameter(shape=[w.shape[0]], dtype=conv.weight.dtype, is_bias=True)
    conv.bias.set_value(b.astype(np_dtype))


def fuse_conv_bn(model: nn.Layer, pairs: Sequence[tuple[str, str]] | None = None) -> nn.Layer:
    """Eval-mode deep copy of ``model`` with every conv-BN pair (see :func:`find_conv_bn_pairs`)
    folded into the conv (weight scaled per output channel, bias added) and the BN replaced by
    ``nn.Identity``. The input model is not modified. Valid for inference only (uses BN running stats).
    """
    found = find_conv_bn_pairs(model, pairs)
    fused = copy.deepcopy(model)
    fused.eval()
    with paddle.no_grad():
        for c, b in found:
            _fold(_get(fused, c), _get(fused, b))
            parent_path, _, name = b.rpartition(".")
            parent = _get(fused, parent_path)
            parent._sub_layers[name] = nn.Identity()
    return fused


def measure_latency(fn: Callable, *inputs, warmup: int = 3, iters: int = 20) -> dict:
    """Wall-clock latency of ``fn(*inputs)`` under no_grad, in milliseconds (device synchronized)."""
    def sync():
        if paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0:
            paddle.device.synchronize()

    times = []
    with paddle.no_grad():
        for i in range(warmup + iters):
            sync()
            t0 = time.perf_counter()
            fn(*inputs)
            sync()
            if i >= warmup:
                times.append((time.perf_counter() - t0) * 1000.0)
    times.sort()
    return {"mean_ms": statistics.fmean(times), "median_ms": statistics.median(times),
            "p90_ms": times[min(len(times) - 1, int(0.9 * len(times)))], "min_ms": times[0], "iters": iters}
