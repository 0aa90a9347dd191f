"""Optimizer + LR schedule from config (PaddleOCR's `Optimizer:` section, typed).

    opt_cfg = OptimizerConfig(name="adamw", lr=1e-3, weight_decay=0.05, schedule="cosine", warmup_steps=100)
    optimizer, lr_scheduler = build_optimizer(opt_cfg, model.parameters(), total_steps=epochs * steps_per_epoch)

Schedules step once per optimizer step (the Trainer does it), so gradient accumulation does not
stretch them: pass total_steps = optimizer steps, not micro-batches.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import paddle

from .config import OptimizerConfig  # the schema: train.config, which imports no paddle



def resolve_warmup(cfg: OptimizerConfig, steps_per_epoch: int) -> OptimizerConfig:
    """A copy of `cfg` with warmup_epochs / milestone_epochs turned into optimizer steps (round(epochs *
    steps_per_epoch)); `cfg` itself when neither is set."""
    if not (cfg.warmup_epochs or cfg.milestone_epochs):
        return cfg
    to_steps = lambda e: int(round(e * steps_per_epoch))  # noqa: E731
    return dataclasses.replace(cfg, warmup_steps=to_steps(cfg.warmup_epochs) if cfg.warmup_epochs else cfg.warmup_steps,
                               warmup_epochs=0.0, milestones=cfg.milestones or [to_steps(e) for e in cfg.milestone_epochs],
                               milestone_epochs=[])

def build_lr_scheduler(cfg: OptimizerConfig, total_steps: int):
    """paddle LRScheduler for `total_steps` optimizer steps (warmup included)."""
    total_steps = max(1, int(total_steps))
    decay_steps = max(1, total_steps - cfg.warmup_steps)
    if cfg.schedule == "cosine":
        sched = paddle.optimizer.lr.CosineAnnealingDecay(cfg.lr, T_max=decay_steps, eta_min=cfg.min_lr)
    elif cfg.schedule == "linear":
        sched = paddle.optimizer.lr.PolynomialDecay(cfg.lr, decay_steps=decay_steps, end_lr=cfg.min_lr, power=1.0)
    elif cfg.schedule == "step":
        sched = paddle.optimizer.lr.StepDecay(cfg.lr, step_size=cfg.step_size, gamma=cfg.gamma)
    elif cfg.schedule == "piecewise":  # the warmup wrapper below starts this one warmup_steps late
        sched = paddle.optimizer.lr.PiecewiseDecay([max(0, m - cfg.warmup_steps) for m in cfg.milestones],
                                                   [cfg.lr] + [cfg.lr * f for f in cfg.lr_factors])
    else:
        sched = paddle.optimizer.lr.LambdaDecay(cfg.lr, lambda _: 1.0)
    if cfg.warmup_steps > 0:
        sched = paddle.optimizer.lr.LinearWarmup(sched, warmup_steps=cfg.warmup_steps, start_lr=0.0, end_lr=cfg.lr)
    return sched


def build_optimizer(cfg: OptimizerConfig, parameters, total_steps: int):
    """(optimizer, lr_scheduler). Norm/bias parameters get no weight decay under adamw.
    Optimizer.warmup_epochs must be resolved first (resolve_warmup)."""
    if cfg.warmup_epochs or cfg.milestone_epochs:
        raise ValueError("Optimizer.warmup_epochs / milestone_epochs are in epochs: resolve them with "
                         "resolve_warmup(cfg, steps_per_epoch)")
    sched = build_lr_scheduler(cfg, total_steps)
    params = [p for p in parameters if not p.stop_gradient]
    clip = paddle.nn.ClipGradByGlobalNorm(cfg.grad_clip_norm) if cfg.grad_clip_norm > 0 else None
    if cfg.name == "adamw":
        no_decay = {p.name for p in params if len(p.shape) <= 1}
        opt = paddle.optimizer.AdamW(learning_rate=sched, parameters=params, beta1=cfg.beta1, beta2=cfg.beta2,
                                     weight_decay=cfg.weight_decay, grad_clip=clip,
                                     apply_decay_param_fun=lambda name: name not in no_decay)
    elif cfg.name == "adam":
        opt = paddle.optimizer.Adam(learning_rate=sched, parameters=params, beta1=cfg.beta1, beta2=cfg.beta2,
                                    weight_decay=cfg.weight_decay or None, grad_clip=clip)
    elif cfg.name == "momentum":
        opt = paddle.optimizer.Momentum(learning_rate=sched, parameters=params, momentum=cfg.momentum,
                                        weight_decay=cfg.weight_decay or None, grad_clip=clip)
    else:
        opt = paddle.optimizer.SGD(learning_rate=sched, parameters=params, weight_decay=cfg.weight_decay or None,
                                   grad_clip=clip)
    return opt, sched


def param_list(optimizer) -> list:
    """The optimizer's parameters as one flat list (parameter groups flattened, in order)."""
    params = getattr(optimizer, "_parameter_list", None) or []
    flat = []
    for p in params:
        if isinstance(p, dict):
            flat.extend(p["params"])
        else:
            flat.append(p)
    return flat


def _rename_keys(state, mapping: dict) -> Any:
    """Rename dict keys that equal or start with `old_` for each old->new in mapping."""
    if not isinstance(state, dict):
        return state
    ordered = sorted(mapping, key=len, reverse=True)  # longest first: linear_1 vs linear_10
    out = {}
    for key, value in state.items():
        new_key = key
        if isinstance(key, str):
            for old in ordered:
                if key == old or key.startswith(old + "_"):
                    new_key = mapping[old] + key[len(old):]
                    break
        out[new_key] = _rename_keys(value, mapping) if isinstance(value, dict) else value
    return out


def portable_optimizer_state(optimizer) -> dict:
    """optimizer.state_dict() with parameter names replaced by positions (param_0, param_1, ...).

    Paddle keys optimizer state by auto-generated parameter names (linear_4.w_0), which differ
    between two processes that build the same model; positions do not.
    """
    names = [p.name for p in param_list(optimizer)]
    return _rename_keys(optimizer.state_dict(), {n: f"@param_{i}" for i, n in enumerate(names)})


def load_portable_optimizer_state(optimizer, state: dict) -> None:
    """Inverse of portable_optimizer_state for this optimizer's parameters."""
    names = [p.name for p in param_list(optimizer)]
    optimizer.set_state_dict(_rename_keys(state, {f"@param_{i}": n for i, n in enumerate(names)}))


class PortableOptimizer:
    """An optimizer as a checkpoint object: its state keyed by parameter position (portable_optimizer_state)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def state_dict(self) -> dict:
        return portable_optimizer_state(self.optimizer)

    def set_state_dict(self, state: dict) -> None:
        load_portable_optimizer_state(self.optimizer, state)
