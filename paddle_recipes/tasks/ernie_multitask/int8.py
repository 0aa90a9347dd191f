"""INT8 weight pack: a real int8 file for a paddle.quantization PTQ model (dygraph).

`ptq.quantize_ptq` (PTQ + QuantConfig(AbsmaxObserver)) returns a converted model whose
quantized Linear weights are int8-valued float32 tensors plus scales -- the file is still fp32
sized. This pack stores, per state-dict entry:
  - "int8-exact": float tensors whose values are all integers in [-127, 127] (the PTQ-quantized
    weights) -> int8, bit-exact;
  - "int8-rows": other float tensors with ndim >= 2 and >= `min_elems` elements (embedding tables,
    which PTQ does not quantize) -> int8 with one absmax scale per row (axis 0, stored float16),
    weight-only: dequantized to float32 at load;
  - everything else (biases, LayerNorm, quant scales, small tensors) -> float32 as is.
Format: one uncompressed .npz: one flat blob per storage dtype + a JSON index ("meta", zlib-compressed).
Compute after loading is the same dygraph quant/dequant simulation as the PTQ model; the
saving is on disk and in memory of the stored weights, not in kernel speed.

Nothing here is NLP-specific (candidate for paddle_recipes/export.py).
"""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import numpy as np
import paddle

FORMAT = "paddle_recipes.int8_pack/1"


def _is_int8_exact(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" and a.size > 0 and np.all(np.abs(a) <= 127) and np.array_equal(a, np.round(a))


def pack_state_dict(state: dict, min_elems: int = 1024) -> dict:
    """state_dict -> {npz key: array}; see the module doc for the three storage classes.

    Tensors of one storage dtype are concatenated into one flat blob ("blob:<dtype>") so the
    file has no per-tensor container overhead; "meta" (JSON) holds name, kind, dtype, shape, offset.
    """
    blobs: dict[str, list] = {}
    sizes: dict[str, int] = {}
    entries = []

    def put(arr: np.ndarray) -> tuple[str, int]:
        key = f"blob:{arr.dtype.str}"
        off = sizes.get(key, 0)
        blobs.setdefault(key, []).append(arr.ravel())
        sizes[key] = off + arr.size
        return key, off

    for name, t in state.items():
        a = t.numpy() if isinstance(t, paddle.Tensor) else np.asarray(t)
        entry = {"name": name, "dtype": str(a.dtype), "shape": list(a.shape)}
        if a.ndim >= 2 and _is_int8_exact(a):
            entry["kind"] = "int8-exact"
            entry["q"] = put(a.astype(np.int8))
        elif a.dtype.kind == "f" and a.ndim >= 2 and a.size >= min_elems:
            rows = a.reshape(a.shape[0], -1).astype(np.float32)
            scale = (np.abs(rows).max(axis=1) / 127.0).astype(np.float16)  # fp16 scale: 2 bytes/row
            scale[scale == 0] = 1.0
            entry["kind"] = "int8-rows"
            entry["q"] = put(np.clip(np.round(rows / scale[:, None].astype(np.float32)), -127, 127).astype(np.int8))
            entry["s"] = put(scale)
        else:
            entry["kind"] = "raw"
            entry["q"] = put(np.ascontiguousarray(a))
        entries.append(entry)
    out = {k: np.concatenate(v) for k, v in blobs.items()}
    meta = zlib.compress(json.dumps({"format": FORMAT, "entries": entries}).encode())
    out["meta"] = np.frombuffer(meta, dtype=np.uint8)
    return out


def _read_meta(raw: np.ndarray) -> dict:
    try:
        return json.loads(zlib.decompress(bytes(raw)).decode())
    except (zlib.error, ValueError) as exc:
        raise ValueError(f"corrupt int8 pack index: {exc}") from None


def _take(arrays, ref, count: int) -> np.ndarray:
    key, off = ref
    return arrays[key][off: off + count]


def unpack_state_dict(arrays) -> dict:
    """Inverse of pack_state_dict -> {name: numpy array} (int8-rows dequantized to float32)."""
    meta = _read_meta(arrays["meta"])
    if meta.get("format") != FORMAT:
        raise ValueError(f"not an int8 pack (format {meta.get('format')!r}, expected {FORMAT!r})")
    arrays = {k: arrays[k] for k in arrays.files} if hasattr(arrays, "files") else arrays
    state = {}
    for e in meta["entries"]:
        shape, n = tuple(e["shape"]), int(np.prod(e["shape"], dtype=np.int64))
        q = _take(arrays, e["q"], n)
        if e["kind"] == "int8-rows":
            s = _take(arrays, e["s"], shape[0])
            q = q.reshape(shape[0], -1).astype(np.float32) * s[:, None].astype(np.float32)
        state[e["name"]] = q.astype(e["dtype"]).reshape(shape)
    return state


def save_int8(model: paddle.nn.Layer, path: str | os.PathLike, min_elems: int = 1024) -> dict:
    """Write `model.state_dict()` as an int8 pack (.npz). Returns {"path", "bytes", "counts"}."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    packed = pack_state_dict(model.state_dict(), min_elems)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, **packed)
    os.replace(tmp, path)
    entries = _read_meta(packed["meta"])["entries"]
    counts = {k: sum(1 for e in entries if e["kind"] == k) for k in ("int8-exact", "int8-rows", "raw")}
    return {"path": str(path), "bytes": path.stat().st_size, "counts": counts}


def load_int8(model: paddle.nn.Layer, path: str | os.PathLike) -> paddle.nn.Layer:
    """Load an int8 pack into `model` (same structure as the saved one, e.g. a fresh quantize_ptq
    copy of the fp32 architecture). Missing or unexpected keys raise, naming the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"int8 pack not found: {path}")
    with np.load(path, allow_pickle=False) as arrays:  # never unpickle (object arrays are refused)
        state = unpack_state_dict(arrays)
    own = model.state_dict()
    missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or extra:
        raise ValueError(f"{path}: state mismatch; missing {missing[:5]}, unexpected {extra[:5]}")
    for name, t in own.items():
        if list(t.shape) != list(state[name].shape):
            raise ValueError(f"{path}: '{name}' has shape {list(state[name].shape)}, model expects {list(t.shape)}")
    model.set_state_dict({k: paddle.to_tensor(v) for k, v in state.items()})
    return model
