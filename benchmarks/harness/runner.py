"""Run benchmark rows, each in a fresh process (group), with pinned threads and a progress display.

OCR/TTA/DDP rows run the real recipe (``recipes/ocr_rec.py``) with ``-o`` overrides, DDP rows through
``python -m paddle.distributed.launch --nproc_per_node N``. Throughput rows run ``worker.py``.
Threads per process are pinned through OMP_NUM_THREADS / MKL_NUM_THREADS (paddle's CPU kernels read
them) and recorded. The 1-minute load average is recorded before and after every row.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from paddle_recipes.runtime.lifetime import die_with_parent

from .rows import Row

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "ocr_rec.py"
WORKER = Path(__file__).resolve().parent / "worker.py"
CONFIGS = REPO / "benchmarks" / "configs"

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "FLAGS_paddle_num_threads")


@dataclass
class Settings:
    """What every row of one invocation shares.

    steps / warmup: timed and warm-up optimizer steps of a batch-64 row (others scale to equal samples).
    ocr_config / tta_config: recipe YAML files. extra_overrides: appended to every recipe row (quick mode).
    worker_args: appended to every worker row. tta_epochs / tta_metric / tta_target: time-to-accuracy.
    timeout: seconds per row before it is killed and reported as failed.
    """

    steps: int = 8
    warmup: int = 2
    ocr_config: str = str(CONFIGS / "ocr_rec_cpu.yml")
    tta_config: str = str(CONFIGS / "ocr_rec_tta_cpu.yml")
    extra_overrides: tuple = ()
    tta_overrides: tuple = ()
    worker_args: tuple = ()
    worker_steps: int = 4
    worker_warmup: int = 1
    tta_epochs: int = 14
    tta_metric: str = "acc"
    tta_target: float = 0.5
    timeout: float = 900.0
    python: str = sys.executable
    show_progress: bool = True
    extra: dict = field(default_factory=dict)


def row_env(threads: int) -> dict:
    """Clean environment (no outer launcher variables) with the thread count pinned."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PADDLE_TRAINER", "PADDLE_RANK", "PADDLE_LOCAL", "PADDLE_GLOBAL", "PADDLE_WORLD",
                                "PADDLE_CURRENT", "PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB"))}
    for k in THREAD_VARS:
        env[k] = str(threads)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("FLAGS_call_stack_level", "2")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def launch_prefix(python: str, nproc: int, log_dir: Path) -> list[str]:
    """`python`, or `python -m paddle.distributed.launch --nproc_per_node N --log_dir DIR` when nproc > 1."""
    if nproc <= 1:
        return [python]
    return [python, "-m", "paddle.distributed.launch", "--nproc_per_node", str(nproc), "--log_dir", str(log_dir)]


def _launch_prefix(settings: Settings, nproc: int, log_dir: Path) -> list[str]:
    return launch_prefix(settings.python, nproc, log_dir)


def recipe_overrides(row: Row, settings: Settings, out_dir: Path) -> list[str]:
    """-o pairs for a recipe row (order: harness defaults, row knobs, quick-mode extras)."""
    if row.suite == "tta":
        base = {"Global.output_dir": str(out_dir), "Global.epochs": str(settings.tta_epochs),
                "Global.log_every": "1", "Global.eval_every_epochs": "1", "Global.save_every_epochs": "0",
                "Global.use_visualdl": "true", "Global.vdl_dir": str(out_dir / "scalars")}
    else:
        warm, timed = row.steps_for(settings.steps, settings.warmup)
        base = {"Global.output_dir": str(out_dir), "Global.max_steps": str(warm + timed), "Global.epochs": "1000",
                "Global.log_every": "1", "Global.eval_every_epochs": "0", "Global.save_every_epochs": "0"}
    base.update(dict(row.overrides))
    for kv in (settings.tta_overrides if row.suite == "tta" else settings.extra_overrides):
        k, _, v = kv.partition("=")
        base[k] = v
    return [f"{k}={v}" for k, v in base.items()]


def build_command(row: Row, settings: Settings, row_dir: Path) -> list[str]:
    prefix = _launch_prefix(settings, row.nproc, row_dir / "launch")
    if row.kind == "recipe":
        config = settings.tta_config if row.suite == "tta" else settings.ocr_config
        return prefix + [str(RECIPE), "-c", config, "-o", *recipe_overrides(row, settings, row_dir / "out")]
    if row.kind == "worker":
        return prefix + [str(WORKER), *row.args, "--steps", str(settings.worker_steps), "--warmup",
                         str(settings.worker_warmup), "--threads", str(row.threads), "--out",
                         str(row_dir / "out" / "result.json"), *settings.worker_args]
    raise ValueError(f"row {row.suite}/{row.name}: unknown kind {row.kind!r}")


def result_path(row: Row, row_dir: Path) -> Path:
    return row_dir / "out" / ("summary.json" if row.kind == "recipe" else "result.json")


class Progress:
    """One status line per running row (rewritten in place on a terminal), plus a line per finished row."""

    def __init__(self, total: int, enabled: bool = True, stream=None):
        self.total, self.enabled = total, enabled
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_print = 0.0
        self._last_text = ""

    def update(self, i: int, name: str, step: int | None, steps: int | None, elapsed: float) -> None:
        if not self.enabled:
            return
        s = "starting" if step is None else (f"step {step}/{steps}" if steps else f"step {step}")
        text = f"[{i:>2}/{self.total}] {name:<28} {s:<14} {elapsed:6.0f}s"
        now = time.time()
        if self.tty:
            self.stream.write("\r" + text.ljust(len(self._last_text)))
            self.stream.flush()
        elif text != self._last_text and now - self._last_print >= 15:
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last_print = now
        self._last_text = text

    def done(self, i: int, name: str, msg: str) -> None:
        if not self.enabled:
            return
        prefix = "\r" if self.tty else ""
        self.stream.write(f"{prefix}[{i:>2}/{self.total}] {name:<28} {msg}".ljust(len(self._last_text)) + "\n")
        self.stream.flush()
        self._last_text = ""


_STEP_RE = re.compile(r"global_step: (\d+)")


def _last_step(paths: list[Path]) -> int | None:
    best = None
    for p in paths:
        try:
            with open(p, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - 4000))
                tail = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        found = _STEP_RE.findall(tail)
        if found:
            best = max(best or 0, int(found[-1]))
    return best


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on Unix
        return None


def run_row(row: Row, settings: Settings, row_dir: Path, progress: Progress | None = None, index: int = 1,
            expected_steps: int | None = None) -> dict:
    """Run one row to completion; returns the raw record (command, rc, timing, load, parsed JSON output)."""
    row_dir.mkdir(parents=True, exist_ok=True)
    cmd = build_command(row, settings, row_dir)
    log = row_dir / "stdout.log"
    watch = [log, row_dir / "out" / "train.log"]
    rec = {"command": cmd, "threads": row.threads, "nproc": row.nproc, "loadavg_before": loadavg()}
    t0 = time.time()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=REPO, env=row_env(row.threads), stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=die_with_parent)  # the launcher stops with us
        name = f"{row.suite}/{row.name}"
        while True:
            try:
                rc = proc.wait(timeout=2.0)
                break
            except subprocess.TimeoutExpired:
                elapsed = time.time() - t0
                if progress:
                    progress.update(index, name, _last_step(watch), expected_steps, elapsed)
                if elapsed > settings.timeout:
                    os.killpg(proc.pid, 15)  # the row's own process group (launcher + ranks)
                    proc.wait()
                    rc = -15
                    break
    rec.update(returncode=rc, elapsed_s=round(time.time() - t0, 2), loadavg_after=loadavg())
    out = result_path(row, row_dir)
    if rc == 0 and out.exists():
        rec["raw"] = json.loads(out.read_text())
        scal = row_dir / "out" / "scalars" / "scalars.jsonl"
        if scal.exists():
            rec["scalars"] = [json.loads(x) for x in scal.read_text().splitlines() if x.strip()]
    else:
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        for f in sorted((row_dir / "launch").glob("workerlog.*")) if (row_dir / "launch").exists() else []:
            tail += f"\n--- {f.name} ---\n" + f.read_text(errors="replace")[-2000:]
        rec["error"] = f"rc={rc}, no result file {out}" + ("" if rc else " (run finished)") + "\n" + tail
    if progress:
        progress.done(index, f"{row.suite}/{row.name}",
                      f"done in {rec['elapsed_s']:.0f}s" if "raw" in rec else f"FAILED rc={rc} (see {log})")
    return rec


def prepare_ocr_data(settings: Settings, config: str, overrides: tuple, log: Path) -> None:
    """Build the recipe's synthetic data once, before any timed row, with the recipe's own code."""
    code = (
        "from paddle_recipes.recipes.ocr_rec import OcrRec, RecConfig\n"
        "from paddle_recipes.config import load_config\n"
        "from paddle_recipes.runtime.distributed import DistInfo\n"
        f"cfg = load_config({config!r}, {list(overrides)!r}, RecConfig)\n"
        "OcrRec(cfg, DistInfo()).build_dataset('train')\n"
        "print('data ready:', cfg.Synthetic.root)\n"
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh:
        proc = subprocess.run([settings.python, "-c", code], cwd=REPO, env=row_env(2), stdout=fh,
                              stderr=subprocess.STDOUT, timeout=settings.timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"preparing synthetic data for {config} failed; see {log}:\n"
                           + log.read_text(errors="replace")[-2000:])


def cores_prefix(nproc: int, threads: int, slot: int = 0) -> list[str]:
    """taskset prefix: nproc*threads available cores, counted from the last one; slot k skips the last k*n
    (side-by-side runs get disjoint cores). All cores if there are fewer."""
    if not hasattr(os, "sched_getaffinity") or shutil.which("taskset") is None:
        return []
    cores = sorted(os.sched_getaffinity(0))
    n = nproc * threads
    mine = cores[max(0, len(cores) - (slot + 1) * n):len(cores) - slot * n] or cores[-n:]
    return ["taskset", "-c", ",".join(map(str, mine))]


def run_recipe(script: str, args: list[str], log: Path, nproc: int, who: str) -> float:
    """Run the recipe `script` (a path under the repo) with `args` to the end, under paddle.distributed.launch when
    nproc > 1 (its logs in log.parent/launch), one math thread per process, console to `log`; returns wall seconds.
    A failed run exits with one line naming `who` and the log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    rec = run_proc(launch_prefix(sys.executable, nproc, log.parent / "launch") + [str(REPO / script)] + args, REPO, log,
                   threads=1, timeout=6 * 3600, budget_s=0)
    if rec["returncode"]:
        sys.exit(f"{who}: recipe failed (exit {rec['returncode']}), see {log}")
    return rec["wall_s"]


def group_cpu_s(pgid: int) -> float:
    """User + system CPU seconds of the live processes of process group `pgid`, with those of their children they
    have reaped (Linux /proc/<pid>/stat fields utime, stime, cutime, cstime; 0.0 where /proc is absent)."""
    total = 0
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = text[text.rindex(")") + 2:].split()  # fields[0] = state (field 3 of proc(5))
        if int(fields[2]) == pgid:  # field 5: pgrp
            total += sum(int(x) for x in fields[11:15])  # fields 14-17: utime stime cutime cstime
    return total / os.sysconf("SC_CLK_TCK")


def run_proc(cmd: list[str], cwd: Path, log: Path, threads: int, timeout: float, budget_s: float,
             sample_s: float = 2.0, cpu_budget_s: float = 0.0) -> dict:
    """Run in its own process group; SIGTERM to the group at the budget (recorded) or the timeout. Every `sample_s`
    seconds the group's CPU seconds are sampled (group_cpu_s): rec["cpu_samples"] = [[unix time, cpu s], ...],
    rec["cpu_s"] = the last sample (the CPU of the last `sample_s` seconds before the exit is not seen),
    rec["started"] = the unix time of the launch. `cpu_budget_s` (> 0): the group is also stopped (stopped "cpu
    budget") once a sample reaches that many CPU seconds: runs of equal CPU on a machine whose load varies."""
    env = row_env(threads)
    rec = {"command": " ".join(cmd), "cwd": str(cwd), "log": str(log), "budget_s": budget_s,
           "loadavg_before": loadavg()}
    t0 = time.time()
    limit = min(timeout, budget_s) if budget_s else timeout
    samples: list = []
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        stopped = None
        while True:
            try:
                rc = proc.wait(timeout=max(0.0, min(sample_s, t0 + limit - time.time())))
                break
            except subprocess.TimeoutExpired:
                samples.append([round(time.time(), 2), round(group_cpu_s(proc.pid), 2)])
                over_cpu = bool(cpu_budget_s) and samples[-1][1] >= cpu_budget_s
                if time.time() < t0 + limit and not over_cpu:
                    continue
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            stopped = ("cpu budget" if over_cpu else "budget" if budget_s and limit == budget_s and
                       time.time() >= t0 + limit else "timeout")
            rc = "timeout" if stopped == "timeout" else 0
            break
    rec.update(returncode=rc, stopped=stopped, wall_s=round(time.time() - t0, 1), loadavg_after=loadavg(),
               started=round(t0, 2), cpu_samples=samples, cpu_s=samples[-1][1] if samples else None)
    return rec


def scratch_copy(src: Path, dest: Path, how_to: str) -> dict:
    """Copy the checkout (no .git, no output); return what was copied and changed (nothing is changed).
    SystemExit(message + how_to: how to get a checkout) when src is not a PaddleOCR checkout."""
    for need in ("tools/train.py", "ppocr", "configs"):
        if not (src / need).exists():
            raise SystemExit(f"--ppocr-src {src}: no {need} (not a PaddleOCR checkout)\n\n{how_to}")
    if not dest.exists():
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".git", "output", "__pycache__", "*.pyc"))
    commit = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return {"src": str(src), "scratch": str(dest), "commit": commit or None, "changes": []}
