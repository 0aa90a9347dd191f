"""Safe weight loading: what ``torch.load(weights_only=True)`` does, for paddle files.

``paddle.load`` (like ``pickle.load``) calls whatever a file's pickle names, so a downloaded
``.pdparams`` can run code on load. Every weights path of this package reads files through
``load_weights_file`` instead. It unpickles with an allowlist of exactly the globals that
``paddle.save`` (paddle 3.3.1, pickle protocols 2-4) writes for state_dicts, optimizer states and
nested dicts / lists of tensors, and that PaddleOCR / PaddleDetection checkpoints hold (they are
``paddle.save`` of state_dicts):

* numpy arrays, dtypes and scalars: ``numpy[._]core.multiarray._reconstruct`` / ``.scalar``,
  ``numpy[._]core.numeric._frombuffer`` (protocol 5), ``numpy.ndarray``, ``numpy.dtype``
  (``numpy.core`` from numpy 1.x files and ``numpy._core`` from numpy 2.x files, either way);
* ``collections.OrderedDict``; ``builtins`` / ``__builtin__`` ``tuple`` (paddle's ``reduce_varbase``
  writes a tensor as ``tuple((name, ndarray))``), ``list``, ``dict``, ``set``, ``frozenset``,
  ``complex``, ``bytearray``;
* ``_codecs.encode``, only as protocol 2 writes bytes (``encode(str, "latin1")``);
* ``builtins.eval``, only as paddle's ``reduce_DenseTensor`` writes a DenseTensor
  (``eval("data", {"data": ndarray})``): the expression is never evaluated, the array is returned.

Any other global (``posix.system``, ``builtins.exec``, a class with ``__reduce__``...) is refused
before it is resolved, so nothing runs: ``UnsafeWeightsError``, one line naming the file and the
global. The loaded object is then post-processed like ``paddle.load``: large-tensor slices
(``UnpackBigParamInfor@@``, protocol 2/3) are joined, the ``StructuredToParameterName@@`` table
names the tensors, and arrays become ``paddle.Tensor`` unless ``return_numpy``.

A file that starts with a safetensors header is read with ``safetensors.numpy`` (no pickle at all);
``save_safetensors`` writes one (a flat dict name -> tensor). ``load_plain`` / ``check_plain`` are
the same policy for our own ``state.pkl`` (plain python and numpy only, no tensor conversion).
"""
from __future__ import annotations

import collections
import json
import os
import pickle
import struct
from pathlib import Path
from typing import Any, Mapping

import numpy as np

try:  # numpy >= 2
    from numpy._core import multiarray as _np_multiarray
    from numpy._core import numeric as _np_numeric
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.core import multiarray as _np_multiarray
    from numpy.core import numeric as _np_numeric

NAME_TABLE = "StructuredToParameterName@@"
BIG_PARAM_INFO = "UnpackBigParamInfor@@"  # (sic) paddle's key for tensors split under protocol 2/3
BF16_META = "paddle_recipes.bfloat16"  # safetensors metadata: JSON list of keys stored as uint16 bfloat16


class WeightsFileError(ValueError):
    """A weights file cannot be read as one; the message is one line naming the file."""


class UnsafeWeightsError(WeightsFileError):
    """A weights file's pickle references a global a weights file never needs (it could run code)."""


class _RefusedCall(Exception):
    """An allowed global called with arguments other than the one form weights files use."""


def _latin1_encode(obj, encoding="latin1"):
    """Protocol 2's bytes: _codecs.encode(str, 'latin1'); nothing else."""
    if not isinstance(obj, str) or encoding.lower().replace("-", "") != "latin1":
        raise _RefusedCall("_codecs.encode (other than protocol 2's bytes form)")
    return obj.encode("latin1")


def _dense_tensor_eval(expr, env=None, *_):
    """paddle's reduce_DenseTensor writes eval('data', {'data': ndarray}): return the array, evaluate nothing."""
    if expr == "data" and isinstance(env, dict) and set(env) == {"data"} and isinstance(env["data"], np.ndarray):
        return env["data"]
    raise _RefusedCall("builtins.eval (other than paddle's DenseTensor form)")


_BUILTINS = {"tuple": tuple, "list": list, "dict": dict, "set": set, "frozenset": frozenset, "complex": complex,
             "bytearray": bytearray, "eval": _dense_tensor_eval}
WEIGHTS_GLOBALS: dict[tuple[str, str], Any] = {
    **{(mod, n): f for mod in ("builtins", "__builtin__") for n, f in _BUILTINS.items()},
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("_codecs", "encode"): _latin1_encode,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    **{(f"numpy.{core}.multiarray", n): getattr(_np_multiarray, n) for core in ("core", "_core")
       for n in ("_reconstruct", "scalar")},
    **{(f"numpy.{core}.numeric", "_frombuffer"): _np_numeric._frombuffer for core in ("core", "_core")},
}


def _legacy_state_globals() -> dict:
    """Checkpoints written before state.pkl held only plain types pickled paddle's RNG state objects
    (GeneratorState: a seed, an offset and a generator state; restoring one only sets RNG state)."""
    import paddle

    cls = type(paddle.get_rng_state()[0])
    return {(cls.__module__, cls.__name__): cls}  # paddle.base.libpaddle.GeneratorState


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, f, source: str, allowed: Mapping):
        super().__init__(f, encoding="latin1")
        self.source, self.allowed = source, allowed

    def find_class(self, module, name):
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise _refusal(self.source, f"{module}.{name}") from None

    def persistent_load(self, pid):
        raise UnsafeWeightsError(f"refusing to load {self.source}: it holds a persistent id ({str(pid)[:40]!r}), "
                                 "which paddle weights files never use")


def _refusal(source: str, what: str) -> UnsafeWeightsError:
    what = what if what.isprintable() else repr(what)  # names come from the file: keep the error one line
    return UnsafeWeightsError(
        f"refusing to load {source}: it references {what}, which a weights file never needs (unpickling it could "
        "run code); only numpy arrays, paddle tensors, dicts, lists, tuples, strings and numbers are loaded. "
        "Re-save the weights with paddle.save(model.state_dict(), ...) where you trust the file")


def _unpickle(path: Path, allowed: Mapping) -> Any:
    try:
        with open(path, "rb") as f:
            return _RestrictedUnpickler(f, str(path), allowed).load()
    except WeightsFileError:
        raise
    except _RefusedCall as exc:
        raise _refusal(str(path), str(exc)) from None
    except FileNotFoundError:
        raise WeightsFileError(f"weights file not found: {path}") from None
    except MemoryError:
        raise WeightsFileError(f"{path}: not a readable weights file (MemoryError while unpickling)") from None
    except Exception as exc:  # truncated, not a pickle, a refused argument of an allowed global
        msg = " ".join(str(exc).split())[:200]
        raise WeightsFileError(f"{path}: not a readable weights file ({type(exc).__name__}: {msg})") from None


def is_safetensors(path: str | os.PathLike) -> bool:
    """True when the file starts with a safetensors header (8-byte little-endian length, then a JSON object)."""
    try:
        with open(path, "rb") as f:
            head = f.read(9)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return False
    if len(head) < 9 or head[8:9] != b"{":
        return False
    (n,) = struct.unpack("<Q", head[:8])
    return 0 < n <= size - 8


def _join_big_params(obj: dict, source: str) -> dict:
    """paddle's _pack_loaded_dict: tensors split into KEY@@.i slices under protocol 2/3 are joined."""
    info = obj.pop(BIG_PARAM_INFO, None)
    if info is None:
        return obj
    try:
        for key, part in info.items():
            slices = [obj.pop(s) for s in part["slices"]]
            obj[key] = np.concatenate(slices).reshape(part["OriginShape"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise WeightsFileError(f"{source}: malformed {BIG_PARAM_INFO} table ({type(exc).__name__}: {exc})") from None
    return obj


def _is_named_array(obj) -> bool:  # paddle 2.1+ pickles a tensor as (name, ndarray)
    return type(obj) is tuple and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray)


def _contains(obj, pred) -> bool:
    if pred(obj):
        return True
    if isinstance(obj, dict):
        return any(_contains(v, pred) for v in obj.values())
    if type(obj) in (list, tuple):
        return any(_contains(v, pred) for v in obj)
    return False


def _convert(obj, pred, conv):
    if pred(obj):
        return conv(obj)
    if isinstance(obj, dict):
        for k in list(obj):
            obj[k] = _convert(obj[k], pred, conv)
        return obj
    if type(obj) in (list, tuple, set):
        return type(obj)(_convert(v, pred, conv) for v in obj)
    return obj


def _to_tensor(arr: np.ndarray, name: str | None = None):
    import paddle

    t = paddle.to_tensor(arr)
    if name:
        t.name = name
    return t


def _as_paddle_result(obj, source: str, return_numpy: bool):
    """paddle.load's post-processing of an unpickled object (see the module docstring)."""
    if isinstance(obj, dict):
        obj = _join_big_params(obj, source)
        if NAME_TABLE in obj:
            table = obj.pop(NAME_TABLE)
            if not isinstance(table, dict):
                raise WeightsFileError(f"{source}: {NAME_TABLE} is a {type(table).__name__}, not a dict")
            if not return_numpy:
                for key, name in table.items():
                    if isinstance(obj.get(key), np.ndarray):
                        obj[key] = _to_tensor(obj[key], name if isinstance(name, str) else None)
            return obj
    if _contains(obj, _is_named_array):
        return _convert(obj, _is_named_array, (lambda t: t[1]) if return_numpy else (lambda t: _to_tensor(t[1], t[0])))
    if return_numpy:
        return obj
    return _convert(obj, lambda o: isinstance(o, np.ndarray), _to_tensor)


def load_weights_file(path: str | os.PathLike, return_numpy: bool = False) -> Any:
    """What ``paddle.load(path, return_numpy=...)`` returns for a weights file, without running any code
    the file names. ``.safetensors`` content is recognised by its header. Raises UnsafeWeightsError
    (refused) or WeightsFileError (missing, truncated, not a weights file), one line naming the file."""
    path = Path(path)
    if is_safetensors(path):
        return load_safetensors(path, return_numpy)
    try:
        return _as_paddle_result(_unpickle(path, WEIGHTS_GLOBALS), str(path), return_numpy)
    except RecursionError:  # a cyclic or absurdly deep structure: no weights file is either
        raise WeightsFileError(f"{path}: not a readable weights file (cyclic or too deeply nested)") from None


def load_plain(path: str | os.PathLike) -> Any:
    """A pickle of plain python / numpy values (our state.pkl) under the same allowlist; no tensor
    conversion. Also admits paddle's RNG GeneratorState of checkpoints written by earlier versions."""
    return _unpickle(Path(path), {**WEIGHTS_GLOBALS, **_legacy_state_globals()})


_PLAIN_ATOMS = (type(None), bool, int, float, complex, str, bytes, bytearray)


def check_plain(obj, where: str = "state") -> None:
    """Raise TypeError naming the first value of `obj` that load_plain would refuse (anything but None, bool,
    numbers, str, bytes, non-object numpy arrays / scalars / dtypes, and dict / list / tuple / set of those)."""
    if isinstance(obj, _PLAIN_ATOMS) or isinstance(obj, np.dtype):
        return
    if type(obj) is np.ndarray or isinstance(obj, np.generic):
        if obj.dtype.kind == "O":
            raise TypeError(f"{where} is a numpy {type(obj).__name__} of dtype object: not a plain value")
        return
    if type(obj) in (dict, collections.OrderedDict):
        for k, v in obj.items():
            check_plain(k, f"{where} key {k!r}")
            check_plain(v, f"{where}.{k}")
        return
    if type(obj) in (list, tuple, set, frozenset):
        for i, v in enumerate(obj):
            check_plain(v, f"{where}[{i}]")
        return
    raise TypeError(f"{where} is a {type(obj).__module__}.{type(obj).__qualname__}: not a plain value "
                    "(checkpoint state holds only python / numpy values)")


def dump_plain(obj, f, where: str = "state") -> None:
    """check_plain(obj), then pickle it to the open binary file `f` (highest protocol)."""
    check_plain(obj, where)
    pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)


# ------------------------------------------------------------------ safetensors (numpy backend)
def _as_numpy(value) -> tuple[np.ndarray, bool]:
    """(array, is_bfloat16) of a paddle Tensor or array-like; bfloat16 is carried as its uint16 bits."""
    import paddle

    if isinstance(value, paddle.Tensor):
        return np.ascontiguousarray(value.numpy()), value.dtype == paddle.bfloat16
    return np.ascontiguousarray(np.asarray(value)), False


def save_safetensors(state: Mapping, path: str | os.PathLike, metadata: Mapping[str, str] | None = None) -> Path:
    """Write a flat {name: Tensor | ndarray} dict as a safetensors file (safetensors.numpy); bfloat16
    tensors are stored as their uint16 bits and named in the metadata, so load_safetensors restores them.
    Raises TypeError for a nested value (safetensors holds tensors only). Returns the path."""
    from safetensors.numpy import save_file

    arrays, bf16 = {}, []
    for key, value in state.items():
        if isinstance(value, Mapping) or isinstance(value, (str, bytes)):
            raise TypeError(f"safetensors holds a flat name -> tensor dict; {key!r} is a {type(value).__name__}")
        arrays[str(key)], is_bf16 = _as_numpy(value)
        if is_bf16:
            bf16.append(str(key))
    meta = dict(metadata or {})
    if bf16:
        meta[BF16_META] = json.dumps(bf16)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(arrays, str(path), metadata=meta or None)
    return path


def load_safetensors(path: str | os.PathLike, return_numpy: bool = False) -> dict:
    """{name: paddle.Tensor} (or ndarray; keys sorted) of a safetensors file; bfloat16 entries come back as bfloat16
    tensors (as uint16 arrays with return_numpy, like paddle.load). Raises WeightsFileError (one line)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            meta = f.metadata() or {}
            arrays = {k: f.get_tensor(k) for k in f.keys()}
        bf16 = set(json.loads(meta.get(BF16_META, "[]")))
    except Exception as exc:
        msg = " ".join(str(exc).split())[:200]
        raise WeightsFileError(f"{path}: not a readable safetensors file ({type(exc).__name__}: {msg})") from None
    if return_numpy:
        return arrays
    import paddle

    out = {}
    for k, a in arrays.items():
        t = paddle.to_tensor(a)
        if k in bf16 and t.dtype != paddle.bfloat16:  # paddle.to_tensor already maps uint16 to bfloat16
            t = paddle.to_tensor(a.view(np.uint16)).astype("bfloat16")
        out[k] = t
    return out


__all__ = ["WeightsFileError", "UnsafeWeightsError", "WEIGHTS_GLOBALS", "load_weights_file", "load_plain",
           "check_plain", "dump_plain", "save_safetensors", "load_safetensors", "is_safetensors"]
