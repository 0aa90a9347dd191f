"""PaddleOCR-format train logs (both sides of a race write them): step and metric lines parsed, the log file of a run
found, and the per-run figures (s/step, ips, epoch time, eval curve) read from them."""
from __future__ import annotations

import re
import statistics
from datetime import datetime
from pathlib import Path


# ------------------------------------------------------------------ log parsing
_TS = re.compile(r"^\[(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d)\]")
_STEP = re.compile(r"epoch: \[(\d+)/(\d+)\], global_step: (\d+), (.*?)avg_reader_cost: ([0-9.e+-]+) s, "
                   r"avg_batch_cost: ([0-9.e+-]+) s, avg_samples: ([0-9.e+-]+), ips: ([0-9.e+-]+) samples/s")
_KV = re.compile(r"(\w+): ([-0-9.e+naif]+)")
_METRIC = re.compile(r"(cur|best) metric, (.*)$")


def _kv(text: str) -> dict:
    out = {}
    for k, v in _KV.findall(text):
        try:
            out[k] = float(v)
        except ValueError:
            continue
    return out


def _ts(line: str) -> float | None:
    m = _TS.match(line)
    return datetime.strptime(m.group(1), "%Y/%m/%d %H:%M:%S").timestamp() if m else None


def parse_train_log(text: str) -> dict:
    """Step lines, ``cur metric`` / ``best metric`` lines of a PaddleOCR-format train log.

    steps: [{step, epoch, epochs, loss, acc?, lr, reader_s, batch_s, samples, ips, train_s, t}] where
    train_s = cumulative training seconds (sum of avg_batch_cost x steps since the previous line; PaddleOCR's
    avg_batch_cost runs from one batch's end to the next, data loading included, eval excluded) and t = the
    line's timestamp (s). evals: [{acc, norm_edit_dis, ..., step, train_s, t}] at the last step line before
    them. best: the last ``best metric`` line."""
    steps, evals, best, train_s, prev = [], [], None, 0.0, 0
    for line in text.splitlines():
        m = _STEP.search(line)
        if m:
            ep, eps, step = int(m.group(1)), int(m.group(2)), int(m.group(3))
            kv = _kv(m.group(4))
            batch_s = float(m.group(6))
            train_s += batch_s * max(1, step - prev)
            prev = step
            steps.append({"step": step, "epoch": ep, "epochs": eps, "loss": kv.get("loss"), "acc": kv.get("acc"),
                          "ctc_loss": kv.get("CTCLoss"),
                          "lr": kv.get("lr"), "reader_s": float(m.group(5)), "batch_s": batch_s,
                          "samples": float(m.group(7)), "ips": float(m.group(8)), "train_s": round(train_s, 4),
                          "t": _ts(line)})
            continue
        m = _METRIC.search(line)
        if m:
            kv = _kv(m.group(2))
            if m.group(1) == "cur":
                evals.append({**kv, "step": prev, "train_s": round(train_s, 4), "t": _ts(line)})
            else:
                best = kv
    return {"steps": steps, "evals": evals, "best": best}


def find_train_log(run_dir: Path, launch_dir: Path, stdout: Path) -> tuple[Path | None, str]:
    """(file, text) of a run's PaddleOCR-format log: its save dir's train.log when that holds step lines, else
    rank 0's launch log (workerlog.0), else the captured stdout. PaddleOCR checkouts of mid-2025 write no
    train.log (their logger is built at import, before tools/program.py passes it the file); the same lines are
    on the console. (None, "") when none of them holds a step line."""
    for path in (run_dir / "train.log", launch_dir / "workerlog.0", stdout):
        if path.is_file():
            text = path.read_text(errors="replace")
            if _STEP.search(text):
                return path, text
    return None, ""


# ------------------------------------------------------------------ figures
def median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def wall_s_per_step(parsed: dict, warmup: int, min_steps: int = 20) -> float | None:
    """Seconds per step by the log's own timestamps (1 s resolution), over stretches of step lines after ``warmup``
    with no eval inside and at least ``min_steps`` steps: a check on each trainer's avg_batch_cost that also counts
    whatever a trainer does per step outside its own timer (logging, checks). None when no stretch is long enough."""
    eval_steps = {e["step"] for e in parsed["evals"]}
    dt = n = 0.0
    seg: list[dict] = []
    for s in [s for s in parsed["steps"] if s["step"] > warmup and s.get("t") is not None] + [None]:
        if s is None or (seg and (seg[-1]["step"] in eval_steps or s["step"] != seg[-1]["step"] + 1)):
            if len(seg) > min_steps:
                dt, n = dt + seg[-1]["t"] - seg[0]["t"], n + seg[-1]["step"] - seg[0]["step"]
            seg = []
        if s is not None:
            seg.append(s)
    return dt / n if n else None


def run_figures(parsed: dict, warmup: int, nproc: int, steps_per_epoch: int | None, completed: bool = False,
                metric: str = "acc") -> dict:
    """Per-run figures from a parsed log (print_batch_step 1): s/step (median of the step lines after ``warmup``
    steps), ips (all processes = nproc x their samples / their seconds; multi-scale batches vary in size),
    epoch time (measured: train_s of the last step line of epoch 1, when the log has epoch 2 or the run
    ``completed``; projected: steps per epoch, measured when known else ``steps_per_epoch``, x s/step),
    final / best eval value, curve (train_s, acc). `metric`: the ``cur metric`` key the race is on (rec "acc",
    det "hmean"); the figures keep the name acc for it (final_acc, best_acc, curve's acc)."""
    steps = parsed["steps"]
    timed = [s for s in steps if s["step"] > warmup] or steps[-1:]
    s_step = median([s["batch_s"] for s in timed])
    per_proc = median([s["samples"] for s in timed])
    busy = sum(s["batch_s"] for s in timed)
    ips = nproc * sum(s["samples"] for s in timed) / busy if busy else None
    ep1 = [s for s in steps if s["epoch"] == 1]
    full_ep1 = bool(ep1) and (any(s["epoch"] > 1 for s in steps) or completed)
    steps_per_epoch = ep1[-1]["step"] if full_ep1 else steps_per_epoch
    evals = parsed["evals"]
    t0 = steps[0].get("t") if steps else None
    curve = [{"train_s": e["train_s"], "step": e["step"], "acc": e.get(metric),
              "wall_s": e["t"] - t0 if e.get("t") is not None and t0 is not None else None, "t": e.get("t")}
             for e in evals]
    return {"steps": steps[-1]["step"] if steps else 0, "steps_per_epoch": steps_per_epoch, "timed_steps": len(timed), "s_per_step": s_step,
            "samples_per_step_per_proc": per_proc, "ips": ips, "wall_s_per_step": wall_s_per_step(parsed, warmup),
            "epoch_s_measured": ep1[-1]["train_s"] if full_ep1 else None,
            "epoch_s_projected": s_step * steps_per_epoch if s_step and steps_per_epoch else None,
            "train_s": steps[-1]["train_s"] if steps else None,
            "final_acc": curve[-1]["acc"] if curve else None,
            "best_acc": max((c["acc"] for c in curve if c["acc"] is not None), default=None),
            "losses": [s["loss"] for s in steps], "first_ctc_loss": steps[0].get("ctc_loss") if steps else None,
            "curve": curve}


def add_process_clock(figures: dict, started: float | None, cpu_samples: list) -> dict:
    """Give each curve point of run_figures the process's own clocks at that eval: "proc_wall_s" = seconds since the
    launch (`started`, unix time; startup, evals and saves included) and "cpu_s" = CPU seconds of the run's process
    group then (runner.run_proc's `cpu_samples` [[unix time, cpu s], ...], linearly interpolated, 0 at the launch;
    None past the last sample). Also figures["proc_wall_s"] / ["cpu_s"]: the run's totals (last sample)."""
    pts = [[started, 0.0]] + [list(x) for x in cpu_samples] if started is not None else [list(x) for x in cpu_samples]

    def cpu_at(t):
        for (t1, c1), (t2, c2) in zip(pts, pts[1:]):
            if t1 <= t <= t2:
                return c1 + (c2 - c1) * ((t - t1) / (t2 - t1) if t2 > t1 else 1.0)
        return None

    for c in figures.get("curve") or []:
        t = c.get("t")
        c["proc_wall_s"] = round(t - started, 1) if t is not None and started is not None else None
        cpu = cpu_at(t) if t is not None else None
        c["cpu_s"] = round(cpu, 2) if cpu is not None else None
    figures["cpu_s"] = pts[-1][1] if len(pts) > 1 else None
    figures["proc_wall_s"] = round(pts[-1][0] - started, 1) if len(pts) > 1 and started is not None else None
    return figures
