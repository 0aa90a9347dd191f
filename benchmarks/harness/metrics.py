"""Turn a Trainer ``history`` (one row per optimizer step, StepTimer figures) into benchmark columns.

Each history row carries the cumulative ``total`` of StepTimer (micro-batch count, mean reader_cost,
mean batch_cost, mean samples, all since the start). The timed window is the difference between the
row of the last warm-up step and the last row, so warm-up steps never enter the figures
(timm benchmark style: warm-up, then timed iterations).
"""
from __future__ import annotations

import math

COLUMNS = ("ips", "ips_per_proc", "reader_cost", "batch_cost", "reader_fraction", "peak_mem_mb")


class HistoryError(ValueError):
    """The history is too short for the requested warm-up (message says what was found)."""


def _totals(row: dict) -> tuple[float, float, float, float]:
    t = row["total"]
    n = float(t["steps"])
    return n, t["reader_cost"] * n, t["batch_cost"] * n, t["avg_samples"] * n


def window_figures(history: list[dict], warmup: int, world_size: int = 1) -> dict:
    """Figures over the optimizer steps after ``warmup``.

    ips: samples/s of all processes (per-process ips x world_size; DDP ranks run in lockstep).
    reader_cost / batch_cost: seconds per micro-batch (PaddleOCR's avg_reader_cost/avg_batch_cost;
    batch_cost includes reader_cost). reader_fraction: share of time waiting for data.
    peak_mem_mb: process peak (rank 0; on CPU the main process RSS, DataLoader workers excluded).
    wall_ips: samples / wall-clock of the window (includes logging overhead).
    """
    rows = sorted((r for r in history if "total" in r), key=lambda r: r["global_step"])
    if len(rows) < 2:
        raise HistoryError(f"history has {len(rows)} timed rows; need at least 2")
    if rows[-1]["global_step"] <= warmup:
        raise HistoryError(f"history ends at step {rows[-1]['global_step']}, not after warm-up {warmup}")
    start = max((r for r in rows if r["global_step"] <= warmup), key=lambda r: r["global_step"], default=rows[0])
    end = rows[-1]
    n0, r0, b0, s0 = _totals(start)
    n1, r1, b1, s1 = _totals(end)
    micro, reader, batch, samples = n1 - n0, r1 - r0, b1 - b0, s1 - s0
    steps = end["global_step"] - start["global_step"]
    ips_proc = samples / batch if batch > 0 else float("nan")
    wall = end["time"] - start["time"]
    return {
        "warmup_steps": start["global_step"], "timed_steps": steps, "timed_micro_batches": int(micro),
        "timed_samples": samples * world_size, "timed_seconds": batch,
        "ips": ips_proc * world_size, "ips_per_proc": ips_proc,
        "reader_cost": reader / micro if micro else float("nan"),
        "batch_cost": batch / micro if micro else float("nan"),
        "step_time": batch / steps if steps else float("nan"),
        "reader_fraction": reader / batch if batch > 0 else float("nan"),
        "peak_mem_mb": end.get("max_mem_reserved_mb"), "mem_kind": end.get("mem_kind"),
        "wall_ips": samples * world_size / wall if wall > 0 else float("nan"),
    }


def step_series(history: list[dict], world_size: int = 1) -> list[dict]:
    """Per logged step: wall seconds since the first step started, loss, and that step's ips (all procs)."""
    rows = sorted((r for r in history if "time" in r), key=lambda r: r["global_step"])
    if not rows:
        return []
    first = rows[0]
    t0 = first["time"] - first.get("total", {}).get("time_s", 0.0)
    out = []
    for r in rows:
        out.append({"step": r["global_step"], "t": r["time"] - t0, "loss": _num(r.get("loss")),
                    "ips": _num(r.get("ips")) * world_size if r.get("ips") is not None else None,
                    "train_s": r.get("total", {}).get("time_s")})
    return out


def projected_epoch_minutes(ips: float, sizes: dict[str, int]) -> dict[str, float | None]:
    """Epoch time (minutes) of a dataset of each size at this throughput (samples/s, all processes)."""
    return {k: (n / ips / 60.0 if ips and ips > 0 and math.isfinite(ips) else None) for k, n in sizes.items()}


def time_to_target(history: list[dict], evals: list[dict], metric: str, target: float) -> dict:
    """Training time (seconds of train steps, eval excluded) until ``metric`` first reaches ``target``.

    evals: [{"step": global_step, "value": metric value, "time": wall time}] in step order.
    Returns reached (bool), step, train_seconds, wall_seconds (from the first step, eval included),
    best value seen, and the eval curve.
    """
    rows = sorted((r for r in history if "total" in r), key=lambda r: r["global_step"])
    by_step = {r["global_step"]: r for r in rows}
    t_start = rows[0]["time"] - rows[0]["total"]["time_s"] if rows else 0.0
    curve = []
    hit = None
    for e in sorted(evals, key=lambda e: e["step"]):
        r = by_step.get(e["step"])
        train_s = r["total"]["time_s"] if r else None
        curve.append({"step": e["step"], "value": e["value"], "train_s": train_s,
                      "wall_s": e["time"] - t_start if "time" in e else None})
        if hit is None and e["value"] >= target:
            hit = curve[-1]
    best = max((c["value"] for c in curve), default=None)
    return {"metric": metric, "target": target, "reached": hit is not None,
            "step": hit["step"] if hit else None, "train_seconds": hit["train_s"] if hit else None,
            "wall_seconds": hit["wall_s"] if hit else None, "best": best, "curve": curve}


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None
