"""A training run's starting weights, decided in one place.

    plan = StartingWeights(cfg.Global, load=recipe.load_pretrained, log=log).apply(model)
    run = build_training(cfg, model, ..., freeze_bn=plan.freeze_bn_stats)

StartingWeights reads the Global keys that decide where a model starts and in which form, and applies them, in
this order, before the optimizer is built:

1. the init weights: Global.pretrained_model or Global.weights (both set: one ConfigError line); "" = none;
2. the checkpoint to resume, if any (Global.checkpoints, else Global.resume): its form counts too;
3. Global.finetune_released (auto | true | false; weights/released.decide): train the released form (rep blocks
   fused, training-only branches removed, a step about x3 cheaper) or the training form;
4. the weights load (``load(model, path)``: the recipe's loader, with its dict remap and inference import) after
   the conversion when they hold the released form (an inference model), before it when they hold the training form;
   BatchNorms whose statistics the weights lack are marked fresh (freeze_bn.mark_fresh_bns);
5. Global.freeze_bn_stats auto resolves to "on exactly when the released form is trained" (StartPlan; the config
   is not rewritten).

The form a weights file holds (form_at) is read from its keys, never from its name.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Optional

import paddle

from ..checkpoint.resume import resume_source
from ..checkpoint.serialization import load_weights_file
from ..config import ConfigError
from ..formats.inference_files import is_inference_model
from ..nn.reparam import rep_block_states
from ..runtime.distributed import unwrap
from .freeze_bn import mark_fresh_bns
from .pretrained import resolve_weights_file
from .released import Form, decide, form_from, log_line, to_released_form, training_branches


def init_source(g) -> str:
    """Train mode's init weights: Global.pretrained_model or Global.weights ("" = none; both set: ConfigError)."""
    if g.pretrained_model and g.weights:
        raise ConfigError(f"Global.pretrained_model ({g.pretrained_model}) and Global.weights ({g.weights}) both "
                          "set init weights for training: set one (-o Global.pretrained_model=null)")
    return g.pretrained_model or g.weights


def form_at(model: paddle.nn.Layer, path: str, prefer_ema: bool = True) -> Optional[Form]:
    """The form the weights at `path` hold for `model` (released.form_from: fused rep blocks, absent training
    branches), or None when the file cannot be read (its loader then says why). A model with neither rep blocks
    nor training branches has only the training form: Form(), without reading the file."""
    net = unwrap(model)
    blocks, branches = rep_block_states(net), training_branches(net)
    if not blocks and not branches:
        return Form()
    try:
        file = resolve_weights_file(path, prefer_ema)
        weights = load_weights_file(file)
    except Exception:  # noqa: BLE001 - the loader that follows reports the file's fault in one line
        return None
    return form_from(blocks, branches, weights) if isinstance(weights, dict) else None


def require_init_weights(key: str, source: str, purpose: str) -> None:
    """One ConfigError line when Global.<key> is on without init weights (``source`` = init_source(g), "" = none):
    ``Global.<key> needs init weights <purpose>: set Global.pretrained_model``."""
    if not source:
        raise ConfigError(f"Global.{key} needs init weights {purpose}: set Global.pretrained_model")


@dataclass
class StartPlan:
    """What StartingWeights decided and did. source: the init weights ("" = none); released: the released form is
    trained; freeze_bn_stats: Global.freeze_bn_stats resolved (auto -> released); report: the loader's report."""
    source: str = ""
    released: bool = False
    freeze_bn_stats: bool = False
    report: Any = None


class StartingWeights:
    """Decides and applies a training run's starting weights (module docstring). ``load(model, path) -> report``
    loads init weights (its ``kept_init`` names the tensors left at their initial values)."""

    def __init__(self, g, *, load: Callable[[paddle.nn.Layer, str], Any], log: logging.Logger | None = None):
        self.g, self.load, self.log = g, load, log or logging.getLogger(__name__)

    def resume_source(self) -> str:
        """The checkpoint training continues from (Global.checkpoints, else Global.resume; "" = none)."""
        return self.g.checkpoints or resume_source(self.g.resume, self.g.output_dir, log=False) or ""

    def apply(self, model: paddle.nn.Layer) -> StartPlan:
        g = self.g
        net = unwrap(model)
        path = init_source(g)
        inference = bool(path) and is_inference_model(path)
        init_form = None if not path or inference else form_at(model, path, g.use_ema_weights)
        resume = self.resume_source()
        resume_form = form_at(model, resume, prefer_ema=False) if resume else None
        on, why, switchable = decide(g.finetune_released, init=path, init_is_inference=inference,
                                     init_form=init_form, resume=resume, resume_form=resume_form)
        # released-form weights (an inference model: imported as it is) load after the conversion, training-form
        # weights (e.g. PaddleOCR's best_accuracy) before it
        first = not path or inference or (init_form is not None and init_form.released)
        done = to_released_form(net) if on and first else Form()
        report = self.load(model, path) if path else None
        if report is not None:  # BNs whose statistics the weights lack are never frozen
            mark_fresh_bns(net, report.kept_init)
        if on and not first:
            done = to_released_form(net)
        if on:
            self.log.info(log_line(done, g.finetune_released, why, switchable))
        freeze = bool(on) if g.freeze_bn_stats == "auto" else bool(g.freeze_bn_stats)
        if g.freeze_bn_stats == "auto" and on:
            self.log.info("Global.freeze_bn_stats auto: on, the released model's BatchNorm statistics are kept "
                          "(-o Global.freeze_bn_stats=false to re-estimate them)")
        return StartPlan(source=path, released=bool(on), freeze_bn_stats=freeze, report=report)
