"""Load PaddleDetection PP-YOLOE / PP-YOLOE+ checkpoints (sizes s/m/l/x) into our ``PPYOLOE``.

The two networks are the same up to names. ``RENAME_RULES`` declares every difference as data
(regex on the ppdet name -> replacement, applied in order); two tensors need more than a rename:

- ``...conv2.alpha`` (PP-YOLOE+ RepVgg scale, ``y = conv3x3(x) + alpha * conv1x1(x)``) is folded
  into the 1x1 branch's BN: ``gamma *= alpha``, ``beta *= alpha`` (exact, BN is affine).
- ``yolo_head.proj_conv.weight`` is the fixed DFL projection ``0..reg_max``; it is checked to
  equal our ``head.proj`` buffer and dropped.

    report = load_ppdet_weights(model, "ppyoloe_plus_crn_s_80e_coco.pdparams")
    is_ppdet_checkpoint(path_or_state)   # routes ``Global.pretrained_model`` here
    save_ppdet_weights(model, "mine.pdparams")   # the way out: ppdet's names, loadable by ppdet

``EXPORT_RULES`` is the inverse table (ours -> ppdet), kept consistent with ``RENAME_RULES`` by a
round-trip test over every name.

A checkpoint for another class count loads with the class convs (``head.pred_cls.*``)
re-initialised, said in one log line (``num_classes_ok=False`` makes it an error). Every other
missing, unexpected or mis-shaped tensor is a ``CheckpointError`` naming the file.
"""
from __future__ import annotations

import logging
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import paddle

from paddle_recipes.checkpoint.format import CheckpointError
from paddle_recipes.weights.pretrained import resolve_weights_file
from paddle_recipes.checkpoint.serialization import UnsafeWeightsError, load_weights_file

from .neck import SPP
from .model import SIZES
from paddle_recipes.runtime.distributed import unwrap

_log = logging.getLogger("paddle_recipes.det")

ALPHA_SUFFIX = ".conv2.alpha"
PROJ_KEY = "yolo_head.proj_conv.weight"
CLASS_HEAD_PATTERN = re.compile(r"^head\.pred_cls\.\d+\.(weight|bias)$")
_HEAD_LEVELS = 3  # ppdet lists head levels deep -> shallow (strides 32/16/8), we shallow -> deep
_PAN_LEVELS = 2   # PAN stages/routes: ppdet indexes them from the deep end, we from the shallow end


@dataclass(frozen=True)
class RenameRule:
    """One systematic name difference: ``re.sub(pattern, replace, name, count=1)``.

    ``replace`` is a template string or ``fn(match, spp_index) -> str``; ``spp_index`` is the
    position of the SPP block inside our deepest FPN stage (depends on the size's depth).
    """
    pattern: str
    replace: str | Callable
    why: str


def _stem(m, _):
    return f"backbone.stem.{int(m[1]) - 1}."


def _repvgg(m, _):
    return f".{m[1]}.{m[2]}.conv2.{'conv3' if m[3] == '1' else 'conv1'}."


def _pan(m, _):
    return f"neck.pan_{m[1]}.{_PAN_LEVELS - 1 - int(m[2])}."


def _spp_stage_block(m, spp_index):
    j = m[1]
    if j == "spp":
        return f"neck.fpn_stages.0.blocks.{spp_index}."
    j = int(j)
    return f"neck.fpn_stages.0.blocks.{j if j < spp_index else j + 1}."


def _head(m, _):
    return f"head.{m[1]}.{_HEAD_LEVELS - 1 - int(m[2])}."


RENAME_RULES: tuple[RenameRule, ...] = (
    RenameRule(r"^backbone\.stem\.conv([123])\.", _stem,
               "large stem: named conv1..conv3 vs Sequential 0..2"),
    RenameRule(r"\.(blocks|convs)\.(\d+)\.conv2\.conv([12])\.", _repvgg,
               "RepVgg branches: ppdet conv1 = 3x3, conv2 = 1x1; ours conv3 = 3x3, conv1 = 1x1"),
    RenameRule(r"^neck\.(fpn_stages|pan_stages)\.(\d+)\.0\.", r"neck.\1.\2.",
               "ppdet wraps each CSP stage in a Sequential (stage_num = 1): drop the extra index"),
    RenameRule(r"^neck\.fpn_stages\.0\.convs\.(\d+|spp)\.", _spp_stage_block,
               "deepest FPN stage: ppdet names the SPP 'spp' among convs 0..n-1; ours is one Sequential"),
    RenameRule(r"\.convs\.", ".blocks.", "CSP stage block list: convs vs blocks"),
    RenameRule(r"^neck\.pan_(stages|routes)\.(\d+)\.", _pan,
               "PAN stages/routes indexed from the deep end (ppdet) vs the shallow end (ours)"),
    RenameRule(r"^yolo_head\.(stem_cls|stem_reg|pred_cls|pred_reg)\.(\d+)\.", _head,
               "head levels listed 32/16/8 (ppdet) vs 8/16/32 (ours)"),
    RenameRule(r"^yolo_head\.", "head.", "head attribute: yolo_head vs head"),
)


def _to_ppdet_spp_block(m, spp_index):
    j = int(m[1])
    k = "spp" if j == spp_index else (j if j < spp_index else j - 1)
    return f"neck.fpn_stages.0.convs.{k}."


EXPORT_RULES: tuple[RenameRule, ...] = (
    RenameRule(r"^head\.(stem_cls|stem_reg|pred_cls|pred_reg)\.(\d+)\.",
               lambda m, _: f"yolo_head.{m[1]}.{_HEAD_LEVELS - 1 - int(m[2])}.", "head level order"),
    RenameRule(r"^head\.", "yolo_head.", "head attribute"),
    RenameRule(r"^neck\.pan_(stages|routes)\.(\d+)\.", _pan, "PAN order (its own inverse)"),
    RenameRule(r"^neck\.fpn_stages\.0\.blocks\.(\d+)\.", _to_ppdet_spp_block, "SPP inside the deepest FPN stage"),
    RenameRule(r"^neck\.(fpn_stages|pan_stages)\.(\d+)\.blocks\.", r"neck.\1.\2.convs.", "blocks vs convs (neck)"),
    RenameRule(r"^neck\.(fpn_stages|pan_stages)\.(\d+)\.", r"neck.\1.\2.0.", "stage_num wrapper index"),
    RenameRule(r"\.(blocks|convs)\.(\d+)\.conv2\.conv([13])\.",
               lambda m, _: f".{m[1]}.{m[2]}.conv2.{'conv1' if m[3] == '3' else 'conv2'}.", "RepVgg branches"),
    RenameRule(r"^backbone\.stem\.([012])\.", lambda m, _: f"backbone.stem.conv{int(m[1]) + 1}.", "stem"),
)


def _apply(rules, name: str, spp_index: int) -> str:
    for rule in rules:
        repl = rule.replace
        if callable(repl):
            name = re.sub(rule.pattern, lambda m, f=repl: f(m, spp_index), name, count=1)
        else:
            name = re.sub(rule.pattern, repl, name, count=1)
    return name


def ppdet_name(name: str, spp_index: int) -> str:
    """ppdet's parameter name for our ``name`` (``EXPORT_RULES``; inverse of :func:`map_name`)."""
    return _apply(EXPORT_RULES, name, spp_index)


def map_name(name: str, spp_index: int) -> str:
    """Our parameter name for ppdet's ``name`` (all rules applied in order)."""
    return _apply(RENAME_RULES, name, spp_index)


def spp_index_of(model) -> int:
    """Position of the SPP block in the model's deepest FPN stage."""
    for i, layer in enumerate(model.neck.fpn_stages[0].blocks):
        if isinstance(layer, SPP):
            return i
    raise ValueError("model has no SPP block in neck.fpn_stages[0]; not a PP-YOLOE of this package")


def is_ppdet_checkpoint(source: str | os.PathLike | Mapping) -> bool:
    """True for a ppdet PP-YOLOE(+) state dict (by its names), given a state dict or a path/prefix.

    A path that is not a ``.pdparams`` file (e.g. a checkpoint folder of this package) gives False.
    """
    if not isinstance(source, Mapping):
        p = Path(source)
        if not (p.is_file() or Path(str(p) + ".pdparams").is_file()):
            return False
    state = source if isinstance(source, Mapping) else _read_state(source)
    keys = set(state)
    return any(k.startswith("yolo_head.") for k in keys) and any(k.startswith("backbone.stem.conv1.") for k in keys)


def _read_state(path: str | os.PathLike) -> dict:
    p = resolve_weights_file(path)
    try:
        state = load_weights_file(p, return_numpy=True)
    except UnsafeWeightsError:
        raise
    except Exception as exc:  # corrupt / not a paddle file
        raise CheckpointError(f"{p}: cannot read as a paddle state dict ({type(exc).__name__}: {exc})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{p}: expected a dict of tensors, got {type(state).__name__}")
    return state


def convert_ppdet_state(state: Mapping, spp_index: int, reg_max: int | None = None,
                        source: str = "<state>") -> tuple[dict, dict]:
    """ppdet names/values -> ours. Returns (our_state as numpy arrays, info).

    info: ``folded_alpha`` (count), ``dropped`` (names), ``renamed`` (count). ``reg_max`` given:
    ``proj_conv`` must equal 0..reg_max (else CheckpointError).
    """
    out, alphas, dropped = {}, {}, []
    for name, value in state.items():
        arr = np.asarray(value.numpy() if isinstance(value, paddle.Tensor) else value)
        if name == PROJ_KEY:
            proj = arr.reshape(-1)
            if reg_max is not None:
                want = np.linspace(0, reg_max, reg_max + 1, dtype=np.float32)
                if proj.shape != want.shape or np.abs(proj - want).max() > 1e-5:
                    raise CheckpointError(f"{source}: {PROJ_KEY} {proj.round(3).tolist()[:6]}... is not the DFL "
                                          f"projection 0..{reg_max} our head uses (Architecture.reg_max?)")
            dropped.append(name)
            continue
        if name.endswith(ALPHA_SUFFIX):
            alphas[map_name(name[: -len(".alpha")], spp_index)] = float(arr.reshape(-1)[0])
            continue
        out[map_name(name, spp_index)] = arr
    for block, alpha in alphas.items():  # block = our RepVggBlock prefix
        for leaf in ("weight", "bias"):
            key = f"{block}.conv1.bn.{leaf}"
            if key not in out:
                raise CheckpointError(f"{source}: alpha of {block} has no 1x1 branch BN {key} to fold into")
            out[key] = (out[key].astype(np.float64) * alpha).astype(out[key].dtype)
    return out, {"folded_alpha": len(alphas), "dropped": dropped, "renamed": len(out)}


@dataclass
class PpdetLoadReport:
    """What ``load_ppdet_weights`` did (``loaded``: tensors set from the checkpoint)."""
    source: str
    loaded: int
    folded_alpha: int
    dropped: list = field(default_factory=list)
    reinitialised: list = field(default_factory=list)
    checkpoint_classes: int = 0
    model_classes: int = 0

    @property
    def kept_init(self) -> list:
        """The model's tensors that kept their initial values (the re-initialised class head)."""
        return list(self.reinitialised)

    def line(self) -> str:
        return (f"ppdet weights {self.source}: {self.loaded} tensors loaded, {self.folded_alpha} RepVgg alpha folded, "
                f"{len(self.dropped)} dropped ({', '.join(self.dropped) or '-'})")

def _width_hint(state: Mapping) -> str:
    """'; checkpoint looks like size s (width 0.50)' from the stem's output channels (64 x width)."""
    w = state.get("backbone.stem.conv3.conv.weight")
    if w is None:
        return ""
    width = int(np.shape(w)[0]) / 64
    names = [k for k, v in SIZES.items() if abs(v.width_mult - width) < 1e-6]
    return f"; checkpoint looks like size {names[0] if names else '?'} (width {width:.2f})"


def _few(names, n=3) -> str:
    names = sorted(names)
    return ", ".join(names[:n]) + (" ..." if len(names) > n else "")


def load_ppdet_weights(model, path: str | os.PathLike | Mapping, *, num_classes_ok: bool = True,
                       prior_prob: float = 0.01, logger: logging.Logger | None = None,
                       source: str | None = None) -> PpdetLoadReport:
    """Load a ppdet PP-YOLOE / PP-YOLOE+ checkpoint into ``model`` (our ``PPYOLOE``, any DDP wrap).

    path: ``x.pdparams``, its prefix ``x``, or an already loaded state dict (read a file once when
        routing: ``state = load_weights_file(f); if is_ppdet_checkpoint(state): load_ppdet_weights(m, state, source=f)``).
    source: the name used in messages for a state dict (default "<state dict>").
    num_classes_ok: a checkpoint with another class count loads with ``head.pred_cls.*``
        re-initialised (weight 0, bias for a ``prior_prob`` score) and one log line; False: error.
    Raises CheckpointError (one line: counts and the first names) for any other mismatch.
    """
    logger = logger or _log
    target = unwrap(model)
    if isinstance(path, Mapping):
        state, source = dict(path), source or "<state dict>"
    else:
        source = str(resolve_weights_file(path))
        state = _read_state(source)
    if not is_ppdet_checkpoint(state):
        raise CheckpointError(f"{source}: not a PaddleDetection PP-YOLOE checkpoint (no yolo_head.* / "
                              "backbone.stem.conv1.* names)")
    ours, info = convert_ppdet_state(state, spp_index_of(target), target.head.reg_max, source)
    want = {k: tuple(v.shape) for k, v in target.state_dict().items()}
    missing = set(want) - set(ours)
    unexpected = set(ours) - set(want)
    bad_shape = {k for k in set(want) & set(ours) if tuple(ours[k].shape) != want[k]}
    class_head = {k for k in bad_shape if CLASS_HEAD_PATTERN.match(k)}
    ckpt_classes = int(ours["head.pred_cls.0.bias"].shape[0]) if "head.pred_cls.0.bias" in ours else 0
    model_classes = int(target.num_classes)
    other_shape = bad_shape - class_head
    if class_head and not num_classes_ok:
        other_shape |= class_head
        class_head = set()
    if missing or unexpected or other_shape:
        parts = []
        if missing:
            parts.append(f"{len(missing)} missing ({_few(missing)})")
        if unexpected:
            parts.append(f"{len(unexpected)} unexpected ({_few(unexpected)})")
        if other_shape:
            k = sorted(other_shape)[0]
            parts.append(f"{len(other_shape)} shape mismatch(es) (first {k}: checkpoint "
                         f"{list(ours[k].shape)} vs model {list(want[k])})")
        raise CheckpointError(f"{source}: does not fit PP-YOLOE with {model_classes} classes, "
                              f"reg_max {target.head.reg_max}: " + "; ".join(parts) + _width_hint(state))
    to_set = {k: v for k, v in ours.items() if k not in class_head}
    own = target.state_dict()
    with paddle.no_grad():
        for k, v in to_set.items():
            own[k].set_value(v.astype(str(own[k].numpy().dtype)) if v.dtype != own[k].numpy().dtype else v)
        reinit = sorted(class_head)
        if reinit:
            bias = -math.log((1 - prior_prob) / prior_prob)
            for k in reinit:
                own[k].set_value(np.full(want[k], bias if k.endswith("bias") else 0.0, dtype="float32"))
    report = PpdetLoadReport(source, len(to_set), info["folded_alpha"], info["dropped"], reinit,
                             ckpt_classes, model_classes)
    logger.info(report.line())
    if reinit:
        logger.warning("class head re-initialised: checkpoint has %d classes, model %d (%s)",
                       ckpt_classes, model_classes, ", ".join(reinit))
    return report


def to_ppdet_state(model, family: str = "ppyoloe_plus") -> dict:
    """Our model's weights under ppdet's names (numpy arrays), ready for ppdet's ``set_state_dict``.

    family "ppyoloe_plus" adds ``alpha = 1`` to every backbone RepVgg block (ppdet's PP-YOLOE+
    backbone has that parameter; the scale already lives in our 1x1 BN); "ppyoloe" adds none.
    ``yolo_head.proj_conv.weight`` is written as ppdet expects (0..reg_max, [1, reg_max + 1, 1, 1]).
    Re-parameterised (fused) models cannot be exported: ppdet's training form has both branches.
    """
    if family not in ("ppyoloe_plus", "ppyoloe"):
        raise ValueError(f"family must be 'ppyoloe_plus' or 'ppyoloe', got {family!r}")
    target = unwrap(model)
    spp = spp_index_of(target)
    out = {}
    for name, value in target.state_dict().items():
        if ".fused." in name:
            raise ValueError(f"{name}: the model is re-parameterised; export the training-form weights")
        out[ppdet_name(name, spp)] = value.numpy()
        if family == "ppyoloe_plus" and re.match(r"^backbone\.stages\.\d+\.blocks\.\d+\.conv2\.conv3\.conv\.weight$",
                                                 name):
            out[ppdet_name(name, spp).rsplit(".conv1.conv.weight", 1)[0] + ".alpha"] = np.ones([1], np.float32)
    r = target.head.reg_max
    out[PROJ_KEY] = np.linspace(0, r, r + 1, dtype=np.float32).reshape(1, r + 1, 1, 1)
    return out


def save_ppdet_weights(model, path: str | os.PathLike, family: str = "ppyoloe_plus") -> str:
    """Write :func:`to_ppdet_state` to ``path`` (``.pdparams`` appended when missing); returns the path."""
    path = str(path) if str(path).endswith(".pdparams") else str(path) + ".pdparams"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    paddle.save({k: paddle.to_tensor(v) for k, v in to_ppdet_state(model, family).items()}, path)
    return path
