"""Import a PaddleOCR / PaddleX inference model (``inference.{pdmodel|json}`` + ``.pdiparams`` [+ ``.info``]) as
trainable weights of the model our config builds.

    report = import_inference_model(model, "ch_PP-OCRv4_rec_infer", deploy)   # deploy(m) -> (net, input_spec)

How tensors are matched, never by a silent order guess:

1. Our model is copied, its rep blocks fused (the deploy form PaddleOCR exports: ``reparam_conv`` ...), and the
   copy exported to a temporary PIR program (``deploy`` gives the exported net and its input spec, as the
   recipe's export does), traced as plain Python first (no dy2static AST conversion: several times faster, the
   same parameter-using ops); should that trace fail or not match, the fully converted program decides. Each parameter of both programs gets a place (inference_files.ParamUse): the role of
   each op using it (conv filter, BN mean / variance / scale / bias, added, multiplied, matmul, layer-norm
   scale / bias: the same in a legacy and a PIR program) and a digest of the parameter-using ops upstream and
   downstream. The files' tensors and ours must meet one to one at equal places ("structure"); several tensors
   at one place are told apart by shape, else by the .info, else it is an error. Shapes must then agree.
2. With ``.pdiparams.info`` the file's own structured names (PaddleOCR's released PP-OCRv4 names its rep
   blocks' affine parameters ``w``/``b``/``activation.*``: translated to ours) must name the same tensor as
   the structure does; a disagreement is an error (a ``.info`` that lies).
3. Every tensor is accounted for: imported; un-fused (the branches of a fused block, see nn/reparam.py);
   re-initialised (the class layer, when the dictionary size differs, as ``Global.pretrained_model``);
   or fresh (training-only parts that inference files do not hold, such as MultiHead's NRTR/GTC branch or
   DB's ``thresh`` branch: exactly the tensors of our model that our own exported program does not use).

Errors are ``InferenceFormatError``, one line naming the file, the tensor and the op.
"""
from __future__ import annotations

import contextlib
import logging
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import paddle

from ..nn.reparam import fused_copy
from ..config import bounded_repr, bounded_text
from .inference_files import (InferenceFormatError, Program, find_inference_files, folder_model_name,
                              read_params_info, read_pdiparams, read_program)
from ..export import export_model
from ..runtime.distributed import unwrap

_LOG = logging.getLogger("paddle_recipes.weights.pretrained")

# PaddleOCR's released PP-OCRv4 PPLCNetV3 names (its first, MobileOne-style implementation) -> our names
NAME_ALIASES = ((re.compile(r"\.activation\.(scale|bias)$"), r".act.lab.\1"),
                (re.compile(r"\.(dw_conv|pw_conv)\.w$"), r".\1.lab.scale"),
                (re.compile(r"\.(dw_conv|pw_conv)\.b$"), r".\1.lab.bias"))
Deploy = Callable[[paddle.nn.Layer], Tuple[paddle.nn.Layer, list]]


@dataclass
class ImportReport:
    """What import_inference_model did; names are our state_dict keys."""
    source: str
    format: str
    how: str
    loaded: List[str] = field(default_factory=list)
    unfused_blocks: List[str] = field(default_factory=list)
    unfused: List[str] = field(default_factory=list)
    reinitialized: Dict[str, Tuple[list, list]] = field(default_factory=dict)
    fresh: List[str] = field(default_factory=list)
    classes: Tuple[int, int] | None = None  # (file, model)
    dictionary: str = ""  # what the model's classes are (the recipe's dict file), for the log line

    missing: List[str] = field(default_factory=list)  # LoadReport compatibility: always empty
    skipped: Dict[str, Tuple[list, list]] = field(default_factory=dict)
    unexpected: List[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.loaded) + len(self.unfused) + len(self.reinitialized) + len(self.fresh)

    @property
    def kept_init(self) -> List[str]:
        """The model's tensors that kept their initial values (fresh, re-initialised)."""
        return [*self.fresh, *self.reinitialized]

    def summary(self) -> str:
        cls = (f"; classes {self.classes[0]} in the file, {self.classes[1]} in the model"
               + (f" ({self.dictionary})" if self.dictionary else "")
               + (f" (dictionary changed: class layer re-initialised: {', '.join(self.reinitialized)})"
                  if self.reinitialized else "")) if self.classes else ""
        return (f"pretrained {self.source}: PaddleOCR inference model ({self.format}, matched {self.how}): "
                f"imported {len(self.loaded)} tensors, un-fused {len(self.unfused_blocks)} rep blocks "
                f"({len(self.unfused)} branch tensors), fresh {len(self.fresh)} (not in inference files: "
                f"{_groups(self.fresh)}){cls}; {self.total} tensors in all")

class ArchitectureMismatch(InferenceFormatError):
    """The files hold another network than the config builds (a tensor without a counterpart in ours)."""


def _groups(names: Sequence[str]) -> str:
    """'head.gtc_head (102), head.x (2)': names grouped by their first two components."""
    counts: Dict[str, int] = {}
    for n in names:
        key = ".".join(n.split(".")[:2])
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} ({v})" for k, v in counts.items()) or "none"


def _alias(name: str, known) -> str:
    if name in known:
        return name
    for pattern, repl in NAME_ALIASES:
        new = pattern.sub(repl, name)
        if new != name and new in known:
            return new
    return name


def _describe(program: Program, name: str) -> str:
    """'<name> [shape] (op <type> input <slot>, parameter-op depth <n>)', every part from the file bounded."""
    uses = program.uses.get(name, [])
    op = (f"op {bounded_text(uses[0].op, 40)} input {bounded_text(uses[0].slot, 40)}, parameter-op depth "
          f"{uses[0].level}") if uses else "unused"
    return f"{bounded_text(name)} {bounded_repr(list(program.params[name][0]))} ({op})"


def _wrapper_prefix(net: paddle.nn.Layer, fused: paddle.nn.Layer) -> str:
    """The key prefix the exported net (a wrapper, possibly a copy) puts before the fused model's keys ("det.")."""
    keys, own = list(net.state_dict()), set(fused.state_dict())
    for k in own:
        if keys and keys[0].endswith(k):
            prefix = keys[0][:len(keys[0]) - len(k)]
            if prefix.endswith(".") or not prefix:
                if all(key.startswith(prefix) and key[len(prefix):] in own for key in keys):
                    return prefix
    raise InferenceFormatError("the export form of the model (deploy) does not hold the model's own tensors")


@contextlib.contextmanager
def _plain_trace(net: paddle.nn.Layer):
    """While active, to_static traces the forward of every layer of ``net`` as plain Python (no AST conversion:
    several times faster; the parameter-using ops, all the matcher reads, are the same). Restores the functions' marks."""
    from paddle.jit.dy2static.utils import TransformOptions

    attr, mark = TransformOptions.TRANSFORM_OPTIONS_ATTR_NAME, TransformOptions().with_skip_transform_mode(
        TransformOptions.ToStaticMode.AST)
    saved = {}
    try:
        for layer in net.sublayers(include_self=True):
            fn = type(layer).forward
            if fn not in saved:
                old = getattr(fn, attr, None)
                setattr(fn, attr, mark)
                saved[fn] = old
        yield
    finally:
        for fn, old in saved.items():
            if old is None:
                delattr(fn, attr)
            else:
                setattr(fn, attr, old)

def _our_program(fused: paddle.nn.Layer, deploy: Deploy, plain: bool = True) -> Tuple[Program, Dict[str, str]]:
    """Our fused model exported to a temporary PIR program (compared by role with either format); returns it
    and {program name: our state_dict key}. ``plain``: trace without dy2static's AST conversion (_plain_trace)."""
    net, spec = deploy(fused)
    with tempfile.TemporaryDirectory(prefix="ppocr_import_") as tmp:
        with (_plain_trace(net) if plain else contextlib.nullcontext()):
            export_model(net, spec, Path(tmp) / "inference")
        program = read_program(find_inference_files(tmp))
    names = {t.name: k[len(prefix):] for prefix in [_wrapper_prefix(net, fused)] for k, t in net.state_dict().items()}
    unknown = [n for n in program.params if n not in names]
    if unknown:
        raise InferenceFormatError(f"our exported program holds tensors the model does not name: {unknown[:3]}")
    return program, names


def _by_place(program: Program) -> Dict[tuple, List[str]]:
    """{place: names}; a place is where the program uses a tensor: the (node, role) of each use."""
    places: Dict[tuple, List[str]] = {}
    for name in program.use_order():
        places.setdefault(tuple((u.node, u.role) for u in program.uses[name]), []).append(name)
    return places


def _align(theirs: Program, ours: Program, our_names: Dict[str, str], info: Dict[str, str] | None,
           source: str) -> Dict[str, str]:
    """{their program name: our key}: tensors at the same place of both programs (see inference_files.ParamUse);
    several at one place are told apart by shape, else by the .info names, else it is an error."""
    mine, mapping = _by_place(ours), {}
    for place, names in _by_place(theirs).items():
        candidates = mine.pop(place, [])
        if len(candidates) != len(names):
            raise ArchitectureMismatch(
                f"{source}: {_describe(theirs, names[0])} has no counterpart in the network the config builds "
                f"({len(names)} such tensors in the file, {len(candidates)} in ours): not the same architecture")
        if len(names) == 1:
            mapping[names[0]] = our_names[candidates[0]]
            continue
        for name in names:
            same = [c for c in candidates if ours.params[c][0] == theirs.params[name][0]]
            if len(same) != 1 and info is not None:
                same = [c for c in candidates if our_names[c] == info.get(name)]
            if len(same) != 1:
                raise InferenceFormatError(
                    f"{source}: {_describe(theirs, name)} could be any of {len(candidates)} tensors of ours "
                    f"({', '.join(our_names[c] for c in candidates[:3])}); without a .pdiparams.info it cannot be "
                    "told apart")
            mapping[name] = our_names[same[0]]
            candidates.remove(same[0])
    if mine:
        left = next(iter(mine.values()))[0]
        raise InferenceFormatError(f"{source}: our {our_names[left]} ({_describe(ours, left).split('(', 1)[1]} has "
                                   "no counterpart in the file: not the network the config builds")
    return mapping


def _match(theirs: Program, ours: Program, our_names: Dict[str, str], said_names: Dict[str, str] | None,
           files) -> Tuple[Dict[str, str], str]:
    """({their name: our key}, how): _align, then the .info's names checked against it."""
    by_structure = _align(theirs, ours, our_names, said_names, str(files.model))
    if said_names is None:
        return by_structure, "by program structure (no .info)"
    for name, key in by_structure.items():
        said = said_names[name]
        if said != key:
            raise InferenceFormatError(
                f"{files.info}: names {bounded_text(name)} {bounded_repr(said)}, but the program uses it as our {key} "
                f"({_describe(theirs, name)}): the .info does not belong to these files")
    return by_structure, "by .info names, checked against the program structure"


def import_inference_model(model: paddle.nn.Layer, path, deploy: Deploy, *,
                           reinit_prefixes: Sequence[str] | None = None, dictionary: str = "",
                           logger: logging.Logger | None = None,
                           remap: Callable[[dict], dict] | None = None) -> ImportReport:
    """Load the inference model at `path` (folder or prefix) into `model` (training form); see the module
    docstring. ``reinit_prefixes``: class-dependent keys (None -> model.class_dependent_params()). ``dictionary``:
    the model's label set, named in the log line (e.g. "dict ppocr_keys_v1.txt"). ``remap``: applied to the file's
    tensors (by our keys) before they are loaded: the class rows follow characters (weights.dict_remap).
    Raises InferenceFormatError (one line)."""
    log = logger or _LOG
    target = unwrap(model)
    if reinit_prefixes is None:
        reinit_prefixes = tuple(target.class_dependent_params()) if hasattr(target, "class_dependent_params") else ()
    is_class = lambda key: any(key.startswith(p) for p in reinit_prefixes)  # noqa: E731
    files = find_inference_files(path)
    theirs = read_program(files)
    info = read_params_info(files.info)
    tensors = read_pdiparams(files.params, theirs.param_names,
                             {n: shape for n, (shape, _) in theirs.params.items()})

    fused, blocks = fused_copy(target)
    known = set(fused.state_dict())
    said_names = None if info is None else {n: _alias(info.get(n, "<absent>"), known) for n in theirs.params}
    try:  # the fast plain trace; should it fail or not match, dy2static's full conversion decides
        by_structure, how = _match(theirs, *_our_program(fused, deploy, plain=True), said_names, files)
    except Exception as exc:  # noqa: BLE001 - any failure of the fast path is re-judged by the full trace
        log.debug("plain trace of our program did not match (%s): converting with dy2static", exc)
        try:
            by_structure, how = _match(theirs, *_our_program(fused, deploy, plain=False), said_names, files)
        except ArchitectureMismatch as mismatch:
            named = folder_model_name(files.model.parent)
            if named:
                raise ArchitectureMismatch(f"{mismatch}; the folder's inference.yml names {named}: give that "
                                           "model's YAML with -c") from None
            raise

    fused_state: Dict[str, np.ndarray] = {by_structure[n]: tensors[n] for n in theirs.params}
    if remap is not None:
        fused_state = remap(fused_state)
    report = ImportReport(str(files.model.parent if files.model.stem == "inference" else files.model.with_suffix("")),
                          f"{files.format} {files.model.name}", how, dictionary=dictionary)
    own = target.state_dict()
    to_load = {}
    for key, value in fused_state.items():
        if key in own and list(own[key].shape) != list(value.shape):
            if not is_class(key):
                raise InferenceFormatError(f"{files.params}: {key} has shape {list(value.shape)}, the model "
                                           f"{list(own[key].shape)}")
            report.reinitialized[key] = (list(value.shape), list(own[key].shape))
        elif key in own:
            to_load[key] = value
    fused_convs, fused_layers = {}, dict(fused.named_sublayers())
    for block in blocks:
        conv = fused_layers[block].fused_conv_name
        w, b = fused_state.get(f"{block}.{conv}.weight"), fused_state.get(f"{block}.{conv}.bias")
        if w is None or b is None:
            raise InferenceFormatError(f"{files.params}: no fused weights for {block} (expected {block}.{conv}.*)")
        fused_convs[block] = (w, b)
        report.unfused += [k for k in own if k.startswith(block + ".") and k not in fused_state]
    report.unfused_blocks = list(blocks)
    stray = [k for k in fused_state if k not in own and not any(k.startswith(f"{b}.{fused_layers[b].fused_conv_name}.")
                                                                 for b in blocks)]
    if stray:
        raise InferenceFormatError(f"{files.params}: {stray[0]} has no place in the training form of the model")
    covered = set(to_load) | set(report.reinitialized) | set(report.unfused)
    report.fresh = [k for k in own if k not in covered]
    used = set(by_structure.values())
    bad_fresh = [k for k in report.fresh if k in used]
    if bad_fresh:
        raise InferenceFormatError(f"{files.params}: {bad_fresh[0]} is in the file but was not imported")
    kept = {k: v for k, v in own.items() if k not in to_load}
    refused, _ = target.set_state_dict({**kept, **{k: paddle.to_tensor(v) for k, v in to_load.items()}})
    if [k for k in refused if k in to_load]:
        raise InferenceFormatError(f"{files.params}: paddle refused {refused[0]} while loading")
    layers = dict(target.named_sublayers())
    for block, (w, b) in fused_convs.items():
        layers[block].load_fused(w, b)
    report.loaded = list(to_load)
    class_prefixes = tuple(target.class_dependent_params()) if hasattr(target, "class_dependent_params") else ()
    cls_keys = [k for p in class_prefixes[:1] for k in fused_state if k.startswith(p) and k.endswith("weight")]
    if cls_keys:
        report.classes = (int(fused_state[cls_keys[0]].shape[-1]), int(own[cls_keys[0]].shape[-1]))
    log.info(report.summary())
    return report
