"""Optimizer + LR schedule from config (PaddleOCR's `Optimizer:` section, typed).

    opt_cfg = OptimizerConfig(name="adamw", lr=1e-3, weight_decay=0.05, schedule="cosine", warmup_steps=100)
    optimizer, lr_scheduler = build_optimizer(opt_cfg, model.parameters(), total_steps=epochs * steps_per_epoch)

Schedules step once per optimizer step (the Trainer does it), so gradient accumulation does not
stretch them: pass total_steps = optimizer steps, not micro-batches.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import paddle

from .config import ConfigError, check_name

OPTIMIZERS = ("adamw", "adam", "sgd", "momentum")
SCHEDULES = ("constant", "cosine", "linear", "step")


@dataclass
class OptimizerConfig:
    """name: adamw | adam | sgd | momentum. lr: peak learning rate. weight_decay: decoupled for adamw,
    L2 for the others. beta1/beta2: Adam betas. momentum: for momentum/sgd-nesterov.
    grad_clip_norm: global-norm clip (0 = off). schedule: constant | cosine | linear | step.
    warmup_steps: linear warmup from 0 over this many optimizer steps. warmup_epochs: the same length in
    epochs (float, 0 = off; set one of the two): warmup_steps = round(warmup_epochs * steps_per_epoch),
    resolved by training.build_training (see resolve_warmup). min_lr: floor of cosine/linear.
    step_size/gamma: for "step" (decay every step_size optimizer steps).
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

    def __post_init__(self):
        check_name("Optimizer.name", self.name, OPTIMIZERS)
        check_name("Optimizer.schedule", self.schedule, SCHEDULES)
        if self.lr <= 0:
            raise ValueError("Optimizer.lr must be > 0")
        if self.warmup_steps < 0 or self.warmup_epochs < 0:
            raise ConfigError(f"Optimizer.warmup_steps/warmup_epochs must be >= 0, got {self.warmup_steps} / "
                              f"{self.warmup_epochs}")
        if self.warmup_steps and self.warmup_epochs:
            raise ConfigError(f"Optimizer.warmup_steps ({self.warmup_steps}) and Optimizer.warmup_epochs "
                              f"({self.warmup_epochs}) are the same setting: set one")


def resolve_warmup(cfg: OptimizerConfig, steps_per_epoch: int) -> OptimizerConfig:
    """A copy of `cfg` with warmup_epochs turned into warmup_steps = round(warmup_epochs * steps_per_epoch)
    (optimizer steps per epoch); `cfg` itself when warmup_epochs is 0."""
    if not cfg.warmup_epochs:
        return cfg
    return dataclasses.replace(cfg, warmup_steps=int(round(cfg.warmup_epochs * steps_per_epoch)), warmup_epochs=0.0)


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
    else:
        sched = paddle.optimizer.lr.LambdaDecay(cfg.lr, lambda _: 1.0)
    if cfg.warmup_steps > 0:
        sched = paddle.optimizer.lr.LinearWarmup(sched, warmup_steps=cfg.warmup_steps, start_lr=0.0, end_lr=cfg.lr)
    return sched


def build_optimizer(cfg: OptimizerConfig, parameters, total_steps: int):
    """(optimizer, lr_scheduler). Norm/bias parameters get no weight decay under adamw.
    Optimizer.warmup_epochs must be resolved first (resolve_warmup)."""
    if cfg.warmup_epochs:
        raise ValueError("Optimizer.warmup_epochs is in epochs: resolve it with resolve_warmup(cfg, steps_per_epoch)")
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
