"""Fine-tune a released model in its released form (``Global.finetune_released: auto | true | false``).

A PaddleOCR / PaddleX inference model holds the deploy network only: each rep block fused into one conv, and no
training-only branch (PP-OCRv4/v5 rec's NRTR "GTC" branch). With the switch off, the importer trains the full training
form (rep blocks un-fused, BNs calibrated, a fresh GTC branch); on, training keeps the released form:

- every rep block is fused (``nn.reparam.fuse_blocks``, in train mode; each fused conv keeps its branches'
  learning-rate multiplier, nn.reparam.fused_param_attrs): no pass-through BN to calibrate, and a step costs about a third (measured on the
  PP-OCRv4 mobile rec: 11.7 s un-fused -> 3.9 s fused, batch 16, 48x320, 1 core);
- the branches the files do not hold are removed (``model.drop_training_branches()``; the rec MultiHead: CTC loss
  only, and the CTC neck's ``use_guide`` off so that the CTC loss trains the backbone rather than a random decoder).

``auto`` = on exactly when the init weights (Global.pretrained_model / Global.weights) are an inference model, or a
checkpoint of such a run. Checkpoints of such a run hold that form (``<block>.<fused conv>.bias`` keys, no GTC keys):
``form_of_keys`` + ``to_form`` build it from a weights file's keys, for eval / predict / export, init weights and
resume. Every function works on a plain ``paddle.nn.Layer``; weights.policy.StartingWeights wires them
(docs/cards/finetune_released.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Tuple

import paddle

from ..config import ConfigError
from ..nn.reparam import fuse_blocks, rep_block_states

AUTO = "auto"


@dataclass
class Form:
    """How a network (or a weights file) differs from the full training form: the rep blocks held fused and the
    training-only branches absent. ``released``: either is non-empty."""
    fused: List[str] = field(default_factory=list)
    dropped: List[str] = field(default_factory=list)

    @property
    def released(self) -> bool:
        return bool(self.fused or self.dropped)

    def describe(self) -> str:
        parts = [f"{len(self.fused)} rep blocks fused"] if self.fused else []
        if self.dropped:
            parts.append(f"no {', '.join(self.dropped)}")
        return ", ".join(parts) or "the training form"


def training_branches(model: paddle.nn.Layer) -> List[str]:
    """Sub-layer names of the branches only training runs that `model` still has (model.training_branches())."""
    return list(model.training_branches()) if hasattr(model, "training_branches") else []


def form_from(blocks: Iterable[Tuple[str, str, bool]], branches: Iterable[str], keys: Iterable[str]) -> Form:
    """The form of a weights file with state_dict ``keys`` for a network with rep ``blocks`` (nn.reparam.
    rep_block_states: name, fused conv name, is_fused) and training ``branches``: the blocks the keys hold fused (a
    ``<block>.<fused conv>.bias`` key; blocks already fused in the network are not counted) and the branches the keys
    have nothing under."""
    keys = set(keys)
    fused = [n for n, conv, done in blocks if not done and f"{n}.{conv}.bias" in keys]
    dropped = [b for b in branches if not any(k.startswith(b + ".") for k in keys)]
    return Form(fused, dropped)


def form_of_keys(model: paddle.nn.Layer, keys: Iterable[str]) -> Form:
    """form_from for `model`: the form a weights file with state_dict ``keys`` holds for it."""
    return form_from(rep_block_states(model), training_branches(model), keys)


def drop_training_branches(model: paddle.nn.Layer) -> List[str]:
    """Remove the model's training-only branches (model.drop_training_branches(), when it has any); returns their
    names."""
    return list(model.drop_training_branches()) if training_branches(model) else []


def to_form(model: paddle.nn.Layer, form: Form) -> Form:
    """Bring `model` (training form) to `form` (e.g. form_of_keys of a checkpoint); returns what it changed."""
    return Form(fuse_blocks(model, form.fused) if form.fused else [],
                drop_training_branches(model) if form.dropped else [])


def to_released_form(model: paddle.nn.Layer) -> Form:
    """Every rep block fused, every training-only branch removed (the form an inference model holds)."""
    return Form(fuse_blocks(model), drop_training_branches(model))


def check_setting(value) -> None:
    """Global.finetune_released must be true, false or auto (ConfigError naming the key)."""
    if value not in (True, False, AUTO):
        raise ConfigError(f"Global.finetune_released: {value!r} is not one of auto, true, false")


def decide(setting, *, init: str = "", init_is_inference: bool = False, init_form: Optional[Form] = None,
           resume: str = "", resume_form: Optional[Form] = None) -> Tuple[bool, str, bool]:
    """(train the released form?, why, whether Global.finetune_released=false could turn it off) from
    Global.finetune_released and what the init / resume weights hold.

    Resuming: the checkpoint's form decides (a setting of true / false that contradicts it is a ConfigError).
    Init weights in the released form (a checkpoint of such a run) cannot be trained un-fused: on (false is an
    error). Otherwise: true / false as set; auto = on when the init weights are an inference model."""
    check_setting(setting)
    if resume_form is not None:
        on = resume_form.released
        if setting != AUTO and setting != on:
            raise ConfigError(f"Global.finetune_released={str(setting).lower()}, but the checkpoint to resume "
                              f"({resume}) holds {'the released form' if on else 'the training form'} "
                              f"({resume_form.describe()}): resume with Global.finetune_released=auto")
        return on, f"the checkpoint resumed ({resume}) holds {resume_form.describe()}", False
    if init_form is not None and init_form.released:
        if setting is False:
            raise ConfigError(f"Global.finetune_released=false, but the init weights {init} hold the released form "
                              f"({init_form.describe()}), which cannot be trained un-fused: use "
                              "Global.finetune_released=auto")
        return True, f"the init weights {init} hold {init_form.describe()}", False
    if setting != AUTO:
        return bool(setting), "as set", True
    if init_is_inference:
        return True, f"the init weights {init} are an inference model", True
    return False, "the init weights are not an inference model", True


def log_line(form: Form, setting, why: str, switchable: bool = True) -> str:
    """The one line a run logs when it trains the released form."""
    did = [f"{len(form.fused)} rep blocks fused (trained as one conv each; no un-fused BN to calibrate, "
           "Global.calibrate_bn_batches unused)"] if form.fused else []
    if form.dropped:
        did.append(f"{', '.join(form.dropped)} not run nor trained (CTC loss only, the CTC neck's use_guide off)")
    off = ("-o Global.finetune_released=false trains the full training form (un-fused, calibrated BNs, all "
           "branches)" if switchable else "the weights' form decides it")
    return (f"Global.finetune_released={str(setting).lower()} ({why}): training the released form: "
            f"{'; '.join(did) or 'nothing to change in this network'}; {off}")
