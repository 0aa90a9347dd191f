"""Optimizer + LR schedule from config (PaddleOCR's `Optimizer:` section, typed).

    opt_cfg = OptimizerConfig(name="adamw", lr=1e-3, weight_decay=0.05, schedule="cosine", warmup_steps=100)
    optimizer, lr_scheduler = build_optimizer(opt_cfg, model.parameters(), total_steps=epochs * steps_per_epoch)

Schedules step once per optimizer step (the Trainer does it), so gradient accumulation does not
stretch them: pass total_steps = optimizer steps, not micro-batches.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import paddle

from ..config import ConfigError, check_name
from ..config import check_number

OPTIMIZERS = ("adamw", "adam", "sgd", "momentum")
SCHEDULES = ("constant", "cosine", "linear", "step", "piecewise")


@dataclass
class OptimizerConfig:
    """name: adamw | adam | sgd | momentum. lr: peak learning rate. weight_decay: decoupled for adamw,
    L2 for the others. beta1/beta2: Adam betas. momentum: for momentum/sgd-nesterov.
    grad_clip_norm: global-norm clip (0 = off). schedule: constant | cosine | linear | step.
    warmup_steps: linear warmup from 0 over this many optimizer steps. warmup_epochs: the same length in
    epochs (float, 0 = off; set one of the two): warmup_steps = round(warmup_epochs * steps_per_epoch),
    resolved by training.build_training (see resolve_warmup). min_lr: floor of cosine/linear.
    step_size/gamma: for "step" (decay every step_size optimizer steps).
    piecewise: lr * lr_factors[i] from milestone i on (ppdet's PiecewiseDecay); milestones in optimizer steps
    counted from the start of training (warmup included), or milestone_epochs in epochs (set one of the two;
    resolved like warmup_epochs); len(lr_factors) == number of milestones.
    """

    name: str = "adamw"
    lr: float = 1e-3
    weight_decay: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    momentum: float = 0.9
    grad_clip_norm: float = 0.0
    schedule: str = "cosine"
    warmup_steps: int = 0
    warmup_epochs: float = 0.0
    min_lr: float = 0.0
    step_size: int = 1000
    gamma: float = 0.1
    milestones: list[int] = dataclasses.field(default_factory=list)
    milestone_epochs: list[float] = dataclasses.field(default_factory=list)
    lr_factors: list[float] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        check_name("Optimizer.name", self.name, OPTIMIZERS)
        check_name("Optimizer.schedule", self.schedule, SCHEDULES)
        check_number("Optimizer.lr", self.lr, low=0, low_open=True)
        if self.lr > 10:
            raise ConfigError(f"Optimizer.lr={self.lr!r} is absurdly large (> 10); training would diverge")
        for key in ("weight_decay", "momentum", "grad_clip_norm", "min_lr"):
            check_number(f"Optimizer.{key}", getattr(self, key), low=0)
        for key in ("beta1", "beta2"):
            check_number(f"Optimizer.{key}", getattr(self, key), low=0, high=1, high_open=True)
        check_number("Optimizer.warmup_steps", self.warmup_steps, low=0)
        check_number("Optimizer.warmup_epochs", self.warmup_epochs, low=0)
        check_number("Optimizer.step_size", self.step_size, low=1)
        check_number("Optimizer.gamma", self.gamma, low=0, low_open=True)
        if self.milestones and self.milestone_epochs:
            raise ConfigError("Optimizer.milestones (steps) and Optimizer.milestone_epochs are the same setting: set one")
        n = len(self.milestones or self.milestone_epochs)
        if self.schedule == "piecewise" and (not n or n != len(self.lr_factors)):
            raise ConfigError(f"Optimizer.schedule piecewise needs milestones (or milestone_epochs) and as many "
                              f"lr_factors: got {n} milestones, {len(self.lr_factors)} lr_factors")
        if self.warmup_steps and self.warmup_epochs:
            raise ConfigError(f"Optimizer.warmup_steps ({self.warmup_steps}) and Optimizer.warmup_epochs "
                              f"({self.warmup_epochs}) are the same setting: set one")

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
