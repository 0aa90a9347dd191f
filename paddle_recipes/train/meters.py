"""Step timing in PaddleOCR's log format, peak memory, and a tiny scalar writer.

    timer = StepTimer(total_steps=len(loader) * epochs, window=20)
    for batch in loader:            # time spent here until reader_done() = reader_cost
        timer.reader_done()
        ... forward / backward / step ...
        timer.batch_done(batch_size)  # time since the previous batch_done() = batch_cost
        if step % 10 == 0:
            print(timer.format_line(epoch, epochs, step, {"lr": lr, "loss": loss}))

All times are seconds. ``batch_cost`` includes ``reader_cost`` (as in PaddleOCR), so
``reader_fraction = reader_cost / batch_cost`` is the share of time spent waiting for data.
Averages are over the last ``window`` steps; ``summary()["total"]`` covers the whole run.
"""
from __future__ import annotations

import datetime
import json
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import Callable, Mapping

__all__ = ["StepTimer", "peak_memory_mb", "format_eta", "ScalarWriter"]


def peak_memory_mb() -> tuple[float, str]:
    """Peak memory in MB and what it measures.

    GPU: ``paddle.device.cuda.max_memory_reserved()`` (kind "cuda_max_reserved").
    CPU: the process's peak resident set size from ``resource.getrusage`` (kind
    "cpu_max_rss") -- host RAM of this process, not comparable with GPU numbers.
    """
    try:
        import paddle

        if paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0 \
                and "gpu" in str(paddle.get_device()):
            return paddle.device.cuda.max_memory_reserved() / 2**20, "cuda_max_reserved"
    except Exception:  # pragma: no cover - no paddle / no device
        pass
    try:
        import resource

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux, bytes on macOS
        return (rss / 2**20 if sys.platform == "darwin" else rss / 2**10), "cpu_max_rss"
    except ImportError:  # pragma: no cover - Windows
        return float("nan"), "unavailable"


def format_eta(seconds: float | None) -> str:
    """Seconds -> "H:MM:SS" (PaddleOCR style); None -> "unknown"."""
    if seconds is None:
        return "unknown"
    return str(datetime.timedelta(seconds=int(round(max(seconds, 0.0)))))


class StepTimer:
    """Measures reader_cost, batch_cost, ips, eta and the data-wait fraction per training step.

    total_steps: steps of the whole run (for eta); None -> eta "unknown".
    window: number of recent steps averaged for the logged figures.
    time_fn: clock in seconds (injectable for tests); memory_fn: () -> (MB, kind).
    The clock starts at construction; call ``start()`` to restart it (e.g. after eval),
    so that time spent outside the loop is not counted as reader_cost.
    """

    def __init__(self, total_steps: int | None = None, window: int = 20,
                 time_fn: Callable[[], float] = time.perf_counter,
                 memory_fn: Callable[[], tuple[float, str]] = peak_memory_mb):
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.total_steps = total_steps
        self.window = window
        self.time_fn = time_fn
        self.memory_fn = memory_fn
        self._recent: deque[tuple[float, float, float]] = deque(maxlen=window)  # reader, batch, samples
        self.steps = 0
        self.total_reader = 0.0
        self.total_batch = 0.0
        self.total_samples = 0.0
        self.start()

    def start(self) -> None:
        """(Re)start the clock for the next step."""
        self._t0 = self.time_fn()
        self._reader: float | None = None

    reader_start = start  # alias: "the wait for the next batch starts now"

    def reader_done(self) -> None:
        """Call right after the next batch arrived from the loader."""
        self._reader = self.time_fn() - self._t0

    def batch_done(self, num_samples: float) -> None:
        """Call after the optimizer step; ``num_samples`` = samples in this batch (this rank)."""
        now = self.time_fn()
        batch = now - self._t0
        reader = self._reader if self._reader is not None else 0.0
        self._recent.append((reader, batch, float(num_samples)))
        self.steps += 1
        self.total_reader += reader
        self.total_batch += batch
        self.total_samples += float(num_samples)
        self._t0 = now
        self._reader = None

    @staticmethod
    def _stats(reader: float, batch: float, samples: float, n: int) -> dict:
        return {
            "steps": n,
            "reader_cost": reader / n if n else 0.0,
            "batch_cost": batch / n if n else 0.0,
            "avg_samples": samples / n if n else 0.0,
            "ips": samples / batch if batch > 0 else 0.0,
            "reader_fraction": reader / batch if batch > 0 else 0.0,
        }

    def summary(self) -> dict:
        """Windowed figures (seconds, samples/s) plus ``total`` for the whole run and memory."""
        r = sum(x[0] for x in self._recent)
        b = sum(x[1] for x in self._recent)
        s = sum(x[2] for x in self._recent)
        out = self._stats(r, b, s, len(self._recent))
        eta_s = None
        if self.total_steps is not None:
            eta_s = max(self.total_steps - self.steps, 0) * out["batch_cost"]
        out["eta_seconds"] = eta_s
        out["eta"] = format_eta(eta_s)
        mem, kind = self.memory_fn()
        out["max_mem_reserved_mb"] = mem
        out["mem_kind"] = kind
        out["total"] = dict(self._stats(self.total_reader, self.total_batch, self.total_samples, self.steps),
                            time_s=self.total_batch)
        return out

    def format_line(self, epoch: int, epochs: int, global_step: int,
                    metrics: Mapping[str, object] | None = None) -> str:
        """One PaddleOCR-style log line, e.g.
        ``epoch: [1/10], global_step: 20, lr: 0.001000, loss: 1.234560, avg_reader_cost: 0.00123 s,
        avg_batch_cost: 0.10000 s, avg_samples: 64.0, ips: 640.00000 samples/s, eta: 0:01:00,
        max_mem_reserved: 123 MB`` (on CPU the last field is ``cpu_max_rss: N MB``).
        Float metrics print with 6 decimals, ``lr`` first; tensors are converted with float().
        """
        s = self.summary()
        parts = [f"epoch: [{epoch}/{epochs}]", f"global_step: {global_step}"]
        metrics = dict(metrics or {})
        items = ([("lr", metrics.pop("lr"))] if "lr" in metrics else []) + list(metrics.items())
        for k, v in items:
            parts.append(f"{k}: {_fmt_metric(v)}")
        parts += [f"avg_reader_cost: {s['reader_cost']:.5f} s",
                  f"avg_batch_cost: {s['batch_cost']:.5f} s",
                  f"avg_samples: {s['avg_samples']:.1f}",
                  f"ips: {s['ips']:.5f} samples/s"]
        if s["eta_seconds"] is not None:
            parts.append(f"eta: {s['eta']}")
        label = "max_mem_reserved" if s["mem_kind"] == "cuda_max_reserved" else s["mem_kind"]
        if s["mem_kind"] != "unavailable":
            parts.append(f"{label}: {s['max_mem_reserved_mb']:.0f} MB")
        return ", ".join(parts)


def _fmt_metric(v) -> str:
    if hasattr(v, "item") and not isinstance(v, (int, float)):
        v = v.item()  # paddle / numpy scalar
    if isinstance(v, bool) or isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.6f}"
    return str(v)


class ScalarWriter:
    """Scalar log: always a JSONL file (``<log_dir>/scalars.jsonl``, one
    ``{"tag", "step", "value", "time"}`` per line), plus VisualDL when importable.

    Use from the main rank only. Context manager; ``close()`` flushes both.
    """

    def __init__(self, log_dir: str | os.PathLike, use_visualdl: bool = True,
                 filename: str = "scalars.jsonl"):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.log_dir / filename
        self._fh = open(self.path, "a", encoding="utf-8")
        self.vdl = None
        if use_visualdl:
            try:
                from visualdl import LogWriter

                self.vdl = LogWriter(logdir=str(self.log_dir / "vdl"))
            except Exception:  # not installed (optional dependency) or broken install
                self.vdl = None

    def add_scalar(self, tag: str, value, step: int) -> None:
        value = float(value.item() if hasattr(value, "item") else value)
        self._fh.write(json.dumps({"tag": tag, "step": int(step), "value": value,
                                   "time": round(time.time(), 3)}) + "\n")
        if self.vdl is not None:
            self.vdl.add_scalar(tag=tag, value=value, step=int(step))

    def add_scalars(self, scalars: Mapping[str, object], step: int, prefix: str = "") -> None:
        for k, v in scalars.items():
            self.add_scalar(prefix + k, v, step)

    def flush(self) -> None:
        self._fh.flush()
        if self.vdl is not None:
            self.vdl.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()
        if self.vdl is not None:
            self.vdl.close()
            self.vdl = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @staticmethod
    def read(path: str | os.PathLike) -> list[dict]:
        """Read back a scalars.jsonl file."""
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
