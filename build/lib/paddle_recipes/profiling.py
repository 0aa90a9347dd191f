"""Debug helpers: skip non-finite losses, profile a window of steps, free cached memory.

    guard = NanGuard(max_consecutive=5)
    prof = profiler_window(start_step=10, end_step=15, out_dir="output/prof")  # or enabled=False
    with prof:
        for step, batch in enumerate(loader):
            loss = ...
            if not guard.check(loss, step):   # NaN/Inf: skip this batch (counted, warned)
                optimizer.clear_grad()
                continue
            loss.backward(); optimizer.step(); optimizer.clear_grad()
            prof.step()
"""
from __future__ import annotations

import gc
import math
import os
import warnings
from pathlib import Path

__all__ = ["NonFiniteLossError", "NanGuard", "ProfilerWindow", "profiler_window", "empty_cache"]


class NonFiniteLossError(FloatingPointError):
    """Raised by NanGuard after too many consecutive non-finite losses."""


class NanGuard:
    """Skip-and-count batches whose loss is NaN/Inf; raise after ``max_consecutive`` in a row.

    ``check(loss, step)`` returns True when the loss is finite (train on), False when the
    step must be skipped. Reading a GPU tensor's value synchronizes the device once per
    call; call it on the logged steps only if that matters.
    """

    def __init__(self, max_consecutive: int = 5):
        if max_consecutive < 1:
            raise ValueError(f"max_consecutive must be >= 1, got {max_consecutive}")
        self.max_consecutive = max_consecutive
        self.skipped = 0       # total skipped steps
        self.consecutive = 0   # current run of non-finite losses
        self.last_bad_step: int | None = None

    @staticmethod
    def _value(loss) -> float:
        if hasattr(loss, "numpy"):
            loss = loss.numpy()
        if hasattr(loss, "size") and getattr(loss, "size", 1) != 1:
            import numpy as np

            arr = np.asarray(loss, dtype="float64")
            return float("nan") if not np.isfinite(arr).all() else float(arr.sum())
        return float(loss.item() if hasattr(loss, "item") else loss)

    def check(self, loss, step: int) -> bool:
        """True if ``loss`` (tensor, array or float) is finite; else count, warn and return False."""
        value = self._value(loss)
        if math.isfinite(value):
            self.consecutive = 0
            return True
        self.skipped += 1
        self.consecutive += 1
        self.last_bad_step = step
        if self.consecutive >= self.max_consecutive:
            raise NonFiniteLossError(
                f"loss is {value} for {self.consecutive} consecutive steps (last at step {step}); "
                "check the data (corrupt images/labels), lower the learning rate, or with AMP "
                "use a larger init_loss_scaling / the bf16 dtype")
        warnings.warn(f"non-finite loss ({value}) at step {step}: batch skipped "
                      f"({self.consecutive} in a row, {self.skipped} in total)", RuntimeWarning, stacklevel=2)
        return False

    def state_dict(self) -> dict:
        return {"skipped": self.skipped, "consecutive": self.consecutive}

    def set_state_dict(self, sd: dict) -> None:
        self.skipped, self.consecutive = int(sd["skipped"]), int(sd["consecutive"])


class ProfilerWindow:
    """``paddle.profiler`` active only for steps [start_step, end_step); no-op when disabled.

    Call ``step()`` once per training step. A chrome trace (open in chrome://tracing or
    Perfetto) is written to ``out_dir`` when the window closes; ``summary`` keeps the
    profiler's text table (set ``print_summary=True`` to also print it).
    """

    def __init__(self, start_step: int, end_step: int, out_dir: str | os.PathLike,
                 enabled: bool = True, print_summary: bool = False):
        if enabled and not 0 <= start_step < end_step:
            raise ValueError(f"profiler window needs 0 <= start_step < end_step, got [{start_step}, {end_step})")
        self.start_step, self.end_step = start_step, end_step
        self.out_dir = Path(out_dir)
        self.enabled = enabled
        self.print_summary = print_summary
        self._prof = None

    def start(self) -> "ProfilerWindow":
        if not self.enabled or self._prof is not None:
            return self
        import paddle
        import paddle.profiler as profiler

        targets = [profiler.ProfilerTarget.CPU]
        if paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0:
            targets.append(profiler.ProfilerTarget.GPU)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._prof = profiler.Profiler(targets=targets, scheduler=(self.start_step, self.end_step),
                                       on_trace_ready=profiler.export_chrome_tracing(str(self.out_dir)))
        self._prof.start()
        return self

    def step(self, num_samples: int | None = None) -> None:
        if self._prof is not None:
            self._prof.step(num_samples=num_samples)

    def stop(self) -> None:
        if self._prof is None:
            return
        self._prof.stop()
        if self.print_summary:
            self._prof.summary(op_detail=False, thread_sep=False, time_unit="ms")
        self._prof = None

    def traces(self) -> list[Path]:
        """Trace files written so far."""
        return sorted(self.out_dir.glob("*.json")) if self.out_dir.is_dir() else []

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def profiler_window(start_step: int, end_step: int, out_dir: str | os.PathLike,
                    enabled: bool = True, print_summary: bool = False) -> ProfilerWindow:
    """See :class:`ProfilerWindow`; use as a context manager."""
    return ProfilerWindow(start_step, end_step, out_dir, enabled=enabled, print_summary=print_summary)


def empty_cache() -> bool:
    """Run ``gc.collect()`` and, on GPU, ``paddle.device.cuda.empty_cache()`` (returns cached
    blocks to the driver; it does not free live tensors). Returns True when a GPU cache was emptied."""
    gc.collect()
    try:
        import paddle

        if paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0:
            paddle.device.cuda.empty_cache()
            return True
    except ImportError:  # pragma: no cover
        pass
    return False
