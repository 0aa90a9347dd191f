"""Start a model from pretrained weights (PaddleOCR's ``Global.pretrained_model`` meaning).

``load_pretrained(model, path)`` loads every tensor whose name and shape match and accounts for
all others; nothing is skipped silently:

* ``path``: a ``.pdparams`` file, a PaddleOCR-style prefix (``.../best_accuracy`` ->
  ``best_accuracy.pdparams``), or one of our checkpoint folders / roots (``latest``), whose
  ``ema.pdparams`` (if present and ``prefer_ema``) or ``model.pdparams`` is read; or a PaddleOCR / PaddleX
  inference model (folder or prefix of ``inference.{json|pdmodel}`` + ``.pdiparams``), imported by
  formats.ppocr_import (rep blocks un-fused, training-only parts fresh) when the caller gives ``deploy``.
* Class-dependent output layers (``reinit_prefixes``; by default ``model.class_dependent_params()``)
  whose shape differs (another dictionary) keep the model's fresh initialisation: "re-initialised".
* Any other shape mismatch, a model tensor absent from the file ("missing") or a file tensor the
  model lacks ("unexpected") raises one-line ``CheckpointError`` naming the first keys and the
  count, unless ``allow_shape_mismatch`` (mismatches keep their init, "skipped") or
  ``strict=False`` (missing keep their init, unexpected are ignored) is given.

Logging: one INFO line with the counts, one INFO line listing re-initialised tensors (if any),
one WARNING line listing skipped/missing tensors (if any), full lists at DEBUG level; the same
lists are in the returned ``LoadReport``.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np
import paddle

from ..checkpoint.format import CheckpointError, weights_file_at
from ..checkpoint.serialization import UnsafeWeightsError, load_weights_file, match_dtypes
from ..formats.inference_files import InferenceFormatError, is_inference_model
from ..formats.ppocr_import import import_inference_model
from ..runtime.distributed import unwrap
from .dict_remap import ClassMap, remap_rows_logged

_LOG = logging.getLogger("paddle_recipes.weights.pretrained")


@dataclass
class LoadReport:
    """What ``load_pretrained`` did. Shapes are (file shape, model shape)."""

    source: str
    loaded: List[str] = field(default_factory=list)
    reinitialized: Dict[str, Tuple[list, list]] = field(default_factory=dict)
    skipped: Dict[str, Tuple[list, list]] = field(default_factory=dict)  # shape mismatch, opt-in
    missing: List[str] = field(default_factory=list)  # in the model, not in the file (strict=False)
    unexpected: List[str] = field(default_factory=list)  # in the file, not in the model (strict=False)

    @property
    def total(self) -> int:
        return len(self.loaded) + len(self.reinitialized) + len(self.skipped) + len(self.missing)

    @property
    def kept_init(self) -> List[str]:
        """The model's tensors that kept their initial values (re-initialised, skipped, missing)."""
        return [*self.reinitialized, *self.skipped, *self.missing]

    def summary(self) -> str:
        return (f"pretrained {self.source}: loaded {len(self.loaded)}/{self.total} tensors, "
                f"re-initialised {len(self.reinitialized)}, skipped {len(self.skipped)} (shape mismatch), "
                f"missing {len(self.missing)}, unexpected {len(self.unexpected)}")


def resolve_weights_file(path: str | os.PathLike, prefer_ema: bool = True, what: str = "pretrained weights") -> Path:
    """``x.pdparams`` / ``x.safetensors`` | prefix ``x`` (-> ``x.pdparams``, else ``x.safetensors``) | checkpoint
    folder/root -> the weights file. `what` names the weights in the not-found error."""
    p = Path(path)
    if p.is_file():  # a weights file, or a checkpoint root's `latest` file
        return weights_file_at(p, prefer_ema)
    with_suffix = Path(str(p) + ".pdparams")
    for candidate in (with_suffix, Path(str(p) + ".safetensors")):
        if candidate.is_file():
            return candidate
    if p.is_dir():
        return weights_file_at(p, prefer_ema)
    raise CheckpointError(f"{what} not found: {p} (tried {p} and {with_suffix})")


def import_inference(model: paddle.nn.Layer, path: str | os.PathLike, deploy, *, for_training: bool = True,
                     dictionary: str = "", logger: logging.Logger | None = None, classes: ClassMap | None = None):
    """When `path` is a PaddleOCR / PaddleX inference model (a folder or prefix with inference.{json|pdmodel} +
    .pdiparams), load it into `model` with formats.ppocr_import and return its report; else None.
    ``deploy(model) -> (exported net, input spec)`` is the recipe's export form. ``for_training``: a class layer of
    another dictionary size is re-initialised (train) rather than an error (eval / predict / export).
    ``dictionary``: the model's label set, named in the log line. ``classes``: the weights' and the model's
    characters; the class rows follow characters (dict_remap).
    Raises CheckpointError (one line)."""
    if not is_inference_model(path):
        return None
    if deploy is None:
        raise CheckpointError(f"{path} is an inference model: this task cannot import one (no export form)")
    try:
        remap = None if classes is None else (
            lambda weights: remap_rows_logged(weights, unwrap(model), classes, logger or _LOG, str(path), for_training))
        return import_inference_model(model, path, deploy, reinit_prefixes=None if for_training else (),
                                      dictionary=dictionary, logger=logger, remap=remap)
    except InferenceFormatError as exc:
        raise CheckpointError(str(exc)) from None


def _names(items: Sequence[str], k: int = 5) -> str:
    head = ", ".join(items[:k])
    return f"{head}{', ...' if len(items) > k else ''} ({len(items)} in all)"


def _shape_list(mapping: Dict[str, Tuple[list, list]], k: int = 8) -> str:
    parts = [f"{n} {a}->{b}" for n, (a, b) in list(mapping.items())[:k]]
    return ", ".join(parts) + (", ..." if len(mapping) > k else "")


def load_pretrained(model: paddle.nn.Layer, path: str | os.PathLike, *,
                    reinit_prefixes: Sequence[str] | None = None, allow_shape_mismatch: bool = False,
                    strict: bool = True, prefer_ema: bool = True, source_prefix: str = "",
                    logger: logging.Logger | None = None, deploy=None, dictionary: str = "",
                    classes: ClassMap | None = None) -> LoadReport:
    """Load matching tensors of ``path`` into ``model``; see the module docstring. Returns a LoadReport.

    ``reinit_prefixes``: state_dict key prefixes allowed to differ in shape (None -> the model's
    ``class_dependent_params()`` if it has one, else none). ``source_prefix``: read only the file's
    tensors under this prefix, stripped (e.g. "Student." for a PaddleOCR distillation checkpoint).
    ``path`` may also be a PaddleOCR inference model when ``deploy`` is given (see import_inference; returns
    its ImportReport). ``classes``: the characters of the weights and of the model: the class rows follow
    characters (dict_remap; re-initialising them is then never needed). Raises CheckpointError (one line).
    """
    log = logger or _LOG
    imported = (import_inference(model, path, deploy, dictionary=dictionary, logger=log, classes=classes)
                if not source_prefix else None)
    if imported is not None:
        return imported
    target = unwrap(model)
    if reinit_prefixes is None:
        reinit_prefixes = tuple(target.class_dependent_params()) if hasattr(target, "class_dependent_params") else ()
    file = resolve_weights_file(path, prefer_ema)
    try:
        weights = load_weights_file(file)
    except UnsafeWeightsError:
        raise
    except Exception as exc:
        raise CheckpointError(f"cannot read pretrained weights {file}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(weights, dict):
        raise CheckpointError(f"{file} does not hold a state_dict (got {type(weights).__name__})")

    if source_prefix:
        weights = {k[len(source_prefix):]: v for k, v in weights.items() if k.startswith(source_prefix)}
        if not weights:
            raise CheckpointError(f"{file} has no tensors under the prefix {source_prefix!r}")
    if classes is not None:
        weights = remap_rows_logged(weights, target, classes, log, str(file))
    report = LoadReport(source=str(file) + (f" [{source_prefix}]" if source_prefix else ""))
    own = target.state_dict()
    mismatched: Dict[str, Tuple[list, list]] = {}
    to_load = {}
    for name, tensor in own.items():
        if name not in weights:
            report.missing.append(name)
            continue
        src_shape, dst_shape = list(np.shape(weights[name])), list(tensor.shape)
        if src_shape == dst_shape:
            to_load[name] = weights[name]
        elif any(name.startswith(p) for p in reinit_prefixes):
            report.reinitialized[name] = (src_shape, dst_shape)
        else:
            mismatched[name] = (src_shape, dst_shape)
    report.unexpected = [k for k in weights if k not in own]

    if mismatched and not allow_shape_mismatch:
        raise CheckpointError(f"{file}: shape mismatch for {_shape_list(mismatched, 3)} ({len(mismatched)} in all; "
                              "not a class-dependent output layer - wrong architecture? "
                              "allow_shape_mismatch keeps their initial values)")
    if strict and report.missing:
        tops = sorted({k.split(".", 1)[0] + "." for k in weights if "." in k} - {k.split(".", 1)[0] + "." for k in own})
        hint = (f"; the file's tensors sit under {tops} (a distillation checkpoint? use source_prefix)"
                if tops and not to_load else "")
        raise CheckpointError(f"{file} lacks {_names(report.missing)} (architecture/config mismatch? "
                              f"strict=False keeps their initial values){hint}")
    if strict and report.unexpected:
        raise CheckpointError(f"{file} holds tensors the model lacks: {_names(report.unexpected)} "
                              "(architecture/config mismatch? strict=False ignores them)")
    report.skipped = mismatched

    # Tensors left out on purpose get their own current values, so paddle finds every key and warns about
    # none (no warnings.catch_warnings here: entering it resets Python's once-per-location warning registry).
    kept = {k: v for k, v in own.items() if k not in to_load}
    to_load = match_dtypes(to_load, own, str(file))  # fp16 -> fp32 converted; a lossy change is one line
    refused_by_paddle, _ = target.set_state_dict({**kept, **to_load})
    refused_by_paddle = [k for k in refused_by_paddle if k in to_load]
    if refused_by_paddle:  # never report "loaded" for a tensor paddle refused
        raise CheckpointError(f"{file}: paddle skipped tensors while loading: {refused_by_paddle[0]} "
                              f"({len(refused_by_paddle)} in all)")
    report.loaded = list(to_load)

    log.info(report.summary())
    if report.reinitialized:
        log.info("re-initialised %d class-dependent tensors (dictionary size changed, file->model shape): %s",
                 len(report.reinitialized), _shape_list(report.reinitialized, 100))
    if report.skipped or report.missing or report.unexpected:
        log.warning("not loaded, kept initial values: skipped (shape) %s; missing %s; ignored unexpected %s",
                    _shape_list(report.skipped) or "-", _names(report.missing) if report.missing else "-",
                    _names(report.unexpected) if report.unexpected else "-")
    log.debug("loaded tensors: %s", ", ".join(report.loaded))
    log.debug("skipped tensors: %s", ", ".join(report.skipped))
    log.debug("missing tensors: %s", ", ".join(report.missing))
    log.debug("unexpected tensors: %s", ", ".join(report.unexpected))
    return report
