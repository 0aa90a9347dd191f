"""Rows follow characters: re-index a model's class layers from the dict its weights were trained with to the dict the
run names, never by position.

    classes = ClassMap(weights_chars, run_chars, source="inference.yml")
    weights, report = remap_class_rows(weights, model, classes)   # numpy / paddle tensors by state_dict key
    log.info(report.line())                                       # kept / new / dropped

The model says which state_dict prefixes hold class rows and how many non-character rows come first
(``model.class_row_offsets()``: the CTC blank = 1; the NRTR/GTC vocabulary's <blank> <unk> <s> </s> = 4); rows
after the characters (NRTR's padding row) are kept as they are. The class axis of a tensor is found from its layer:
``nn.Linear`` weight [in, classes] -> axis 1, ``nn.Embedding`` weight [classes, dim] -> axis 0, a bias -> axis 0.

- a character of both dicts: its row is moved to the run's position (same characters in another order -> the same
  outputs, permuted: the same texts);
- a character only the run's dict has ("new"): its row starts at the mean of the known characters' rows, a bias
  NEW_ROW_MARGIN below their mean, so its logit stays below the best known class for every input: the released
  texts are unchanged until training teaches it;
- a character only the weights' dict has ("dropped"): its row is dropped.
A weights dict of one character fewer than the class layer holds was trained with ``use_space_char``: " " is
appended, as PaddleOCR's CTCLabelDecode does. Errors (ClassMapError, one line): the two dicts share no
character; the weights' class layer does not have the rows their dict says (another dict than the one named).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np
import paddle

from ..checkpoint.format import STATE_FILE, CheckpointError, is_latest_pointer, resolve_checkpoint
from ..checkpoint.serialization import load_plain

NEW_ROW_MARGIN = 1.0  # logits: a new character's bias starts this far below the known characters' mean bias


class ClassMapError(CheckpointError):
    """The weights' dict and the run's dict cannot be matched (one line, names both)."""


@dataclass
class RemapReport:
    """What remap_class_rows did: characters kept (moved or not), new, dropped; the tensors rewritten."""
    kept: int = 0
    new: List[str] = field(default_factory=list)
    dropped: List[str] = field(default_factory=list)
    moved: int = 0  # kept characters whose row index changed
    tensors: List[str] = field(default_factory=list)
    source: str = ""

    @property
    def identity(self) -> bool:
        return not (self.new or self.dropped or self.moved)

    def line(self) -> str:
        new = f" ({''.join(self.new[:20])}{'...' if len(self.new) > 20 else ''})" if self.new else ""
        return (f"class rows follow characters (weights' dict: {self.source}): kept {self.kept} ({self.moved} moved), "
                f"new {len(self.new)}{new}, dropped {len(self.dropped)}; {len(self.tensors)} tensors re-indexed")

    def unseen_line(self) -> str:
        """For eval / predict / export: the characters the weights never saw."""
        return (f"{len(self.new)} characters of the dict were never trained (absent from the weights' dict "
                f"{self.source}): their rows start below every known class, so they are never read")


@dataclass(frozen=True)
class ClassMap:
    """The weights' characters (row order) and the run's characters (row order), without the non-character rows."""
    source_chars: Tuple[str, ...]
    target_chars: Tuple[str, ...]
    source: str = "the weights' dict"

    def __post_init__(self):
        shared = set(self.source_chars) & set(self.target_chars) - {" "}  # a space alone says nothing
        if not shared:
            raise ClassMapError(f"the dict named for this run shares no character with the weights' dict "
                                f"({self.source}, {len(self.source_chars)} characters): another model's dict?")

    def with_space(self) -> "ClassMap":
        """The weights' characters plus " " (they were trained with use_space_char)."""
        return ClassMap((*self.source_chars, " "), self.target_chars, self.source)

    def rows(self) -> np.ndarray:
        """For each run character, its row among the weights' characters, or -1 (new)."""
        where = {c: i for i, c in enumerate(self.source_chars)}
        return np.array([where.get(c, -1) for c in self.target_chars], dtype=np.int64)


def class_axis(model: paddle.nn.Layer, key: str, ndim: int) -> int:
    """The class axis of state_dict entry `key`: 0 for a bias or an embedding table, 1 for a Linear weight."""
    if ndim == 1:
        return 0
    layer = dict(model.named_sublayers()).get(key.rsplit(".", 1)[0])
    if isinstance(layer, paddle.nn.Embedding):
        return 0
    if isinstance(layer, paddle.nn.Linear) and ndim == 2:
        return 1
    raise ClassMapError(f"{key}: cannot tell its class axis (a {type(layer).__name__} of rank {ndim})")


def _as_numpy(value) -> np.ndarray:
    return value.numpy() if isinstance(value, paddle.Tensor) else np.asarray(value)


def _remap_tensor(value: np.ndarray, axis: int, lead: int, trail: int, rows: np.ndarray, is_bias: bool) -> np.ndarray:
    moved = np.moveaxis(value, axis, 0)
    n_source = moved.shape[0] - lead - trail
    chars = moved[lead:lead + n_source]
    new_row = chars.mean(axis=0) - (NEW_ROW_MARGIN if is_bias else 0.0)
    body = np.where((rows >= 0).reshape(-1, *[1] * (moved.ndim - 1)), chars[np.maximum(rows, 0)],
                    new_row[None].astype(moved.dtype))
    out = np.concatenate([moved[:lead], body.astype(moved.dtype), moved[moved.shape[0] - trail:]], axis=0)
    return np.ascontiguousarray(np.moveaxis(out, 0, axis))


def remap_class_rows(weights: Mapping, model: paddle.nn.Layer, classes: ClassMap) -> Tuple[Dict, RemapReport]:
    """A copy of `weights` (state_dict key -> array) whose class rows follow `classes` for `model` (see the module
    docstring); entries outside the class layers are passed through. Raises ClassMapError (one line)."""
    offsets = model.class_row_offsets() if hasattr(model, "class_row_offsets") else {}
    own = model.state_dict()
    out = dict(weights)
    report = RemapReport(source=classes.source)
    n_target = len(classes.target_chars)
    for prefix, lead in offsets.items():
        for key in [k for k in own if k.startswith(prefix) and k in weights]:
            value = _as_numpy(weights[key])
            axis = class_axis(model, key, value.ndim)
            trail = own[key].shape[axis] - lead - n_target
            size = value.shape[axis]
            if size == lead + len(classes.source_chars) + trail + 1 and " " not in classes.source_chars:
                classes = classes.with_space()  # trained with use_space_char: " " is the last character row
                report.source = f"{classes.source} + ' ' (use_space_char)"
            if size != lead + len(classes.source_chars) + trail:
                raise ClassMapError(f"{key} holds {size} class rows, but the weights' dict ({classes.source}) has "
                                    f"{len(classes.source_chars)} characters (+{lead + trail} other rows): the "
                                    "weights were trained with another dict; name it with Global.pretrained_dict")
            rows = classes.rows()
            out[key] = _remap_tensor(value, axis, lead, trail, rows, is_bias=value.ndim == 1)
            report.tensors.append(key)
    if report.tensors:
        rows = classes.rows()
        report.kept = int((rows >= 0).sum())
        report.moved = int(((rows >= 0) & (rows != np.arange(len(rows)))).sum())
        report.new = [c for c, r in zip(classes.target_chars, rows) if r < 0]
        kept = set(classes.target_chars)
        report.dropped = [c for c in classes.source_chars if c not in kept]
    return out, report


def remap_rows_logged(weights: dict, model: paddle.nn.Layer, classes: ClassMap, log: logging.Logger, source: str,
                      training: bool = True) -> dict:
    """remap_class_rows, its one log line (training: kept / new / dropped; else how many characters the weights never
    saw, when any); a ClassMapError becomes a CheckpointError naming `source`."""
    try:
        weights, report = remap_class_rows(weights, model, classes)
    except ClassMapError as exc:
        raise CheckpointError(f"{source}: {exc}") from None
    if report.tensors and (training or not report.identity):
        log.info(report.line())
    if report.new and not training:
        log.warning(report.unseen_line())
    return weights


class ClassNames:
    """The characters of a model's class rows, one part of every checkpoint (state key CLASS_NAMES): init weights,
    eval, predict and export read them (checkpoint_class_names) so that the rows follow characters; resuming a run
    with another dict is refused (set_state_dict, one line)."""

    def __init__(self, chars: Sequence[str], source: str = ""):
        self.chars, self.source = list(chars), source

    def state_dict(self) -> dict:
        return {"chars": list(self.chars)}

    def set_state_dict(self, state: dict) -> None:
        saved = list(state.get("chars", []))
        if saved != self.chars:
            raise CheckpointError(f"the checkpoint's class rows are another dict ({len(saved)} characters) than this "
                                  f"run's {self.source} ({len(self.chars)}): a resumed run keeps its dict; to train on "
                                  "this dict, start from the checkpoint with Global.pretrained_model (rows follow "
                                  "characters)")


CLASS_NAMES = "class_names"


def checkpoint_class_names(path) -> List[str] | None:
    """The characters saved with one of our checkpoints (a folder, a root, `latest`, or a weights file inside a
    checkpoint folder), or None (not a checkpoint, or one written before class names were saved)."""
    path = Path(path)
    try:
        folder = path.parent if path.is_file() and not is_latest_pointer(path) else resolve_checkpoint(path)
        if not (folder / STATE_FILE).is_file():
            return None
        state = load_plain(folder / STATE_FILE)
    except Exception:  # noqa: BLE001 - not a readable checkpoint: its loader reports why in one line
        return None
    chars = state.get(CLASS_NAMES, {}).get("chars") if isinstance(state, dict) else None
    return list(chars) if isinstance(chars, list) and all(isinstance(c, str) for c in chars) else None
