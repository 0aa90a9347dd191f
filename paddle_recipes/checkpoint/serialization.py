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
global. Sizes are bounded by the file's own size, since every byte a weights file's values hold is in
the file: the allowed globals that allocate (``bytearray``, ``numpy.ndarray``, ``_reconstruct``,
``scalar``, ``_codecs.encode``, the container types) are charged what they would allocate before they
run, and the distinct arrays of the result may not hold more bytes than the file before they become
tensors (arrays sharing one memoized buffer would each be copied). Either is ``WeightsFileError``, one
line, nothing allocated: ``bytearray(6 GiB)`` in a 37-byte file is a memory bomb, not weights. Only
regular files are read (a FIFO or ``/dev/zero`` is refused without opening it).

The loaded object is then post-processed like ``paddle.load``: large-tensor slices
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
import stat
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


class _WithLegacyState(dict):
    """An allowlist that also admits paddle's GeneratorState (_legacy_state_globals), looked up, and paddle
    imported, only when a pickle names a paddle global: a plain pickle (a state.pkl of today, an inference
    model's .pdiparams.info read by recipes.preflight before paddle's import) never imports paddle."""

    def __missing__(self, key):
        if str(key[0]).split(".")[0] == "paddle":
            return _legacy_state_globals()[key]  # KeyError (refused) for any other paddle global
        raise KeyError(key)


_CONTAINERS = (tuple, list, set, frozenset, dict, collections.OrderedDict)


def _nbytes(shape, dtype) -> int:
    """Bytes of an array of `shape` (int or ints) and `dtype`, in python ints (no overflow); ValueError if odd."""
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(d, int) and d >= 0 for d in dims):
        raise ValueError(f"an array shape of {len(dims)} dimensions that are not all sizes")
    n = np.dtype(dtype).itemsize
    for d in dims:
        n *= d
    return n


class _SizedNdarray:
    """What the name numpy.ndarray resolves to while a file is read: the subtype argument of _reconstruct (the one
    form numpy's own pickles use), or, called, an array charged to the file's budget first."""

    def __init__(self, charge):
        self.charge = charge

    def __call__(self, shape, dtype=float, buffer=None, *args):
        if buffer is None:
            self.charge(_nbytes(shape, dtype), "numpy.ndarray")
        return np.ndarray(shape, dtype, buffer, *args)


def _sized_globals(allowed: Mapping, charge) -> dict:
    """`allowed` with each global that allocates charged to `charge(nbytes, what)` before it runs."""
    ndarray = _SizedNdarray(charge)

    def sized_bytearray(src=b"", *args):
        if not isinstance(src, (int, bytes, str)):
            raise _RefusedCall("builtins.bytearray (other than of a size, bytes or a string)")
        charge(src if isinstance(src, int) else len(src), "bytearray")
        return bytearray(src, *args)

    def reconstruct(subtype, shape, dtype):
        if subtype is not ndarray:
            raise _RefusedCall("numpy _reconstruct (of anything but numpy.ndarray)")
        charge(_nbytes(shape, dtype), "numpy _reconstruct")
        return _np_multiarray._reconstruct(np.ndarray, shape, dtype)

    def scalar(dtype, *args):
        charge(np.dtype(dtype).itemsize, "numpy scalar")
        return _np_multiarray.scalar(dtype, *args)

    def encode(obj, encoding="latin1"):
        charge(len(obj) if isinstance(obj, str) else 0, "_codecs.encode")
        return _latin1_encode(obj, encoding)

    def container(kind):
        def make(items=()):
            if not isinstance(items, _CONTAINERS):  # e.g. tuple(ndarray): a numpy scalar object per element
                raise _RefusedCall(f"builtins.{kind.__name__} (other than of a list, tuple, set or dict)")
            charge(8 * len(items), f"builtins.{kind.__name__}")  # a pointer per element
            return kind(items)
        return make

    sized = {bytearray: sized_bytearray, np.ndarray: ndarray, _np_multiarray._reconstruct: reconstruct,
             _np_multiarray.scalar: scalar, _latin1_encode: encode,
             **{kind: container(kind) for kind in (tuple, list, set, frozenset, dict)}}
    out = {key: sized.get(fn, fn) for key, fn in allowed.items()}
    return type(allowed)(out) if isinstance(allowed, dict) else out  # a dict subclass keeps its __missing__


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, f, source: str, allowed: Mapping, size: int):
        super().__init__(f, encoding="latin1")
        self.source, self.size, self.left = source, size, size
        self.allowed = _sized_globals(allowed, self.charge)

    def charge(self, nbytes: int, what: str) -> None:
        """Refuse (one line) before allocating more bytes in all than the file holds."""
        nbytes = max(0, nbytes)
        if nbytes > self.left:
            raise WeightsFileError(f"refusing to load {self.source}: {what} asks for {nbytes:,} bytes, more than the "
                                   f"file's {self.size:,} bytes can hold: a memory bomb, not a weights file")
        self.left -= nbytes

    def find_class(self, module, name):
        try:
            return self.allowed[(module, name)]
        except KeyError:
            raise _refusal(self.source, f"{module}.{name}") from None

    def persistent_load(self, pid):
        raise UnsafeWeightsError(f"refusing to load {self.source}: it holds a persistent id ({str(pid)[:40]!r}), "
                                 "which paddle weights files never use")


def _regular_file_size(path: Path) -> int:
    """The size of `path` in bytes; WeightsFileError when it is missing or not a regular file (not opened then:
    a FIFO would block, /dev/zero never ends)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise WeightsFileError(f"weights file not found: {path}") from None
    except OSError as exc:
        raise WeightsFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO, device or socket"
        raise WeightsFileError(f"{path}: not a weights file ({kind}, not a regular file)")
    return st.st_size


def _refusal(source: str, what: str) -> UnsafeWeightsError:
    what = what if what.isprintable() else repr(what)  # names come from the file: keep the error one line
    return UnsafeWeightsError(
        f"refusing to load {source}: it references {what}, which a weights file never needs (unpickling it could "
        "run code); only numpy arrays, paddle tensors, dicts, lists, tuples, strings and numbers are loaded. "
        "Re-save the weights with paddle.save(model.state_dict(), ...) where you trust the file")


def _unpickle(path: Path, allowed: Mapping) -> Any:
    size = _regular_file_size(path)
    try:
        with open(path, "rb") as f:
            return _RestrictedUnpickler(f, str(path), allowed, size).load()
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


def _walk(obj, seen: set):
    """Every distinct object in a loaded structure, each once (shared references are not walked twice)."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _walk(v, seen)
    elif type(obj) in (list, tuple, set, frozenset):
        for v in obj:
            yield from _walk(v, seen)


def _contains(obj, pred) -> bool:
    return any(pred(o) for o in _walk(obj, set()))


def _check_array_bytes(obj, source: str, size: int) -> None:
    """The distinct arrays may not hold more bytes than the file: views of one memoized buffer would each become
    a tensor copy (a memory bomb), and no weights file stores data twice."""
    total = sum(o.nbytes for o in _walk(obj, set()) if isinstance(o, np.ndarray))
    if total > size:
        raise WeightsFileError(f"refusing to load {source}: its arrays hold {total:,} bytes, more than the file's "
                               f"{size:,} bytes (views of one buffer): a memory bomb, not a weights file")


def _convert(obj, pred, conv, memo: dict | None = None):
    """`obj` with every value for which pred() is true replaced by conv(value); a shared value is converted once."""
    memo = {} if memo is None else memo  # id -> (value, converted): the value is kept alive, so its id stays its own
    if id(obj) in memo:
        return memo[id(obj)][1]
    if pred(obj):
        out = conv(obj)
    elif isinstance(obj, dict):
        out = obj
        memo[id(obj)] = (obj, out)
        for k in list(obj):
            obj[k] = _convert(obj[k], pred, conv, memo)
    elif type(obj) in (list, tuple, set):
        out = type(obj)(_convert(v, pred, conv, memo) for v in obj)
    else:
        return obj
    memo[id(obj)] = (obj, out)
    return out


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
    size = _regular_file_size(path)
    if is_safetensors(path):
        return load_safetensors(path, return_numpy)
    try:
        obj = _unpickle(path, WEIGHTS_GLOBALS)
        _check_array_bytes(obj, str(path), size)
        return _as_paddle_result(obj, str(path), return_numpy)
    except RecursionError:  # a cyclic or absurdly deep structure: no weights file is either
        raise WeightsFileError(f"{path}: not a readable weights file (cyclic or too deeply nested)") from None


def load_plain(path: str | os.PathLike) -> Any:
    """A pickle of plain python / numpy values (our state.pkl) under the same allowlist; no tensor
    conversion. Also admits paddle's RNG GeneratorState of checkpoints written by earlier versions."""
    return _unpickle(Path(path), _WithLegacyState(WEIGHTS_GLOBALS))


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


# ------------------------------------------------------------------ dtypes of loaded weights vs the model's
def _dtype_name(value) -> str | None:
    """'float32', 'bfloat16', ... of a paddle Tensor or numpy array; None for anything else."""
    dtype = getattr(value, "dtype", None)
    if isinstance(value, np.ndarray):
        return value.dtype.name
    return str(dtype).replace("paddle.", "") if dtype is not None and hasattr(value, "astype") else None


def _widens_exactly(src: str, dst: str) -> bool:
    """Every value of `src` is a value of `dst` (a float to a wider float, an int to a wider int of its kind)."""
    if src == "bfloat16":
        return dst in ("float32", "float64")
    try:
        a, b = np.dtype(src), np.dtype(dst)
    except TypeError:
        return False
    return a.kind == b.kind and a.kind in "fiu" and np.can_cast(a, b, "safe")


def match_dtypes(weights: Mapping, own: Mapping, source: str) -> dict:
    """`weights` ready for set_state_dict of a model whose state_dict is `own`: a tensor whose dtype differs from
    the model's is converted when that is exact (fp16 / bf16 -> fp32, fp32 -> fp64, int32 -> int64: every value
    kept), else WeightsFileError naming `source`, the tensor and both dtypes (fp64 -> fp32 rounds, int <-> float
    means another kind of file, e.g. quantized weights). paddle itself would stop with `AssertionError: Variable
    dtype not match`. Keys `own` lacks, and non-tensor values, pass unchanged."""
    out = dict(weights)
    for name in [k for k in own if k in weights]:  # the model's order: the first mismatch is named
        value = weights[name]
        src, dst = _dtype_name(value), _dtype_name(own[name])
        if src is None or dst is None or src == dst:
            continue
        if not _widens_exactly(src, dst):
            raise WeightsFileError(f"{source}: tensor {name!r} is {src} in the file but {dst} in the model; only "
                                   f"exact conversions are made (a float or int to a wider one of its kind): "
                                   f"convert the file to {dst} where that is what you mean")
        out[name] = value.astype(dst)
    return out


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
        bf16 = json.loads(meta.get(BF16_META, "[]"))
    except Exception as exc:
        msg = " ".join(str(exc).split())[:200]
        raise WeightsFileError(f"{path}: not a readable safetensors file ({type(exc).__name__}: {msg})") from None
    if not isinstance(bf16, list) or not all(isinstance(k, str) for k in bf16):
        raise WeightsFileError(f"{path}: metadata {BF16_META} is not a JSON list of tensor names")
    for k in bf16:  # bfloat16 travels as its uint16 bits (save_safetensors); anything else would be reinterpreted
        if k in arrays and arrays[k].dtype != np.uint16:
            raise WeightsFileError(f"{path}: tensor {k!r} is listed as bfloat16 in the metadata but stored as "
                                   f"{arrays[k].dtype} {list(arrays[k].shape)}, not as uint16 bits: not a file "
                                   "save_safetensors wrote")
    if return_numpy:
        return arrays
    import paddle

    return {k: paddle.to_tensor(a) for k, a in arrays.items()}  # paddle reads uint16 arrays as bfloat16 bits


__all__ = ["WeightsFileError", "UnsafeWeightsError", "WEIGHTS_GLOBALS", "load_weights_file", "load_plain", "match_dtypes",
           "check_plain", "dump_plain", "save_safetensors", "load_safetensors", "is_safetensors"]
