"""Gradient accumulation over k micro-batches, skipping DDP gradient sync off-boundary.

    acc = GradAccumulator(steps=4)
    for batch in loader:
        with acc.micro_step(model):          # model.no_sync() unless this micro-step ends a window
            loss = loss_fn(model(x), y)
            amp.backward(acc.scale(loss))    # loss / k
        if acc.is_boundary:
            amp.step(optimizer); optimizer.clear_grad(); lr_scheduler.step()   # per optimizer step

With mean-reduced losses and equal micro-batches, k micro-batches of size b give the same
gradient as one batch of k*b. Call `acc.flush()` at an epoch end to turn a partial window into a
boundary; its gradient is then rescaled by k/n so it is the mean over the n micro-batches seen.
"""
from __future__ import annotations

import contextlib

import paddle

from ..config import ConfigError
from .amp import grads_of


class GradAccumulator:
    """k-step gradient accumulation. steps=1 means a plain step every batch."""

    def __init__(self, steps: int = 1):
        if int(steps) < 1:
            raise ConfigError(f"accumulation steps (Train.accumulate_steps) must be >= 1, got {steps}")
        self.steps = int(steps)
        self.micro_index = 0          # micro-steps taken in the current window (after micro_step exits)
        self.is_boundary = False      # True right after the last micro-step of a window
        self.sync_skipped = 0         # how many micro-steps ran under no_sync (observable in tests)

    def _will_be_boundary(self) -> bool:
        return (self.micro_index + 1) % self.steps == 0

    def scale(self, loss):
        """loss / k (no-op for k=1)."""
        return loss / self.steps if self.steps > 1 else loss

    @contextlib.contextmanager
    def micro_step(self, model, sync: bool | None = None):
        """Run forward+backward of one micro-batch; under DataParallel skip all-reduce off-boundary.

        sync: force (True) or forbid (False) gradient sync for this micro-step; default decides by position.
        """
        boundary = self._will_be_boundary()
        do_sync = boundary if sync is None else sync
        ctx = contextlib.nullcontext()
        if not do_sync and isinstance(model, paddle.DataParallel):
            ctx = model.no_sync()
            self.sync_skipped += 1
        with ctx:
            yield
        self.micro_index = (self.micro_index + 1) % self.steps
        self.is_boundary = boundary

    def flush(self, optimizer=None) -> bool:
        """End a partial window (e.g. at epoch end). Returns True if there are pending micro-steps.

        The pending gradients were divided by k; they are multiplied by k/n so that the step uses the
        mean over the n micro-batches actually seen. Under DDP the last micro-step of a partial window
        did not all-reduce: call `micro_step(model, sync=True)` for it, or use `drop_last` windows.
        """
        pending = self.micro_index
        if pending == 0:
            return False
        if optimizer is not None and pending != self.steps:
            with paddle.no_grad():
                for g in grads_of(optimizer):
                    g.scale_(self.steps / pending)
        self.micro_index = 0
        self.is_boundary = True
        return True

    def state_dict(self) -> dict:
        return {"steps": self.steps, "micro_index": self.micro_index}

    def set_state_dict(self, state: dict) -> None:
        if int(state["steps"]) != self.steps:
            raise ValueError(f"checkpoint was accumulating {state['steps']} steps, this run uses {self.steps}")
        self.micro_index = int(state["micro_index"])
