"""Time to 90% / 95% held-out accuracy on the default OCR task: PaddleOCR's recipe vs our speedup methods.

    python benchmarks/tta_ocr.py --rows baseline,dense,all --repeats 3 --budget-min 20 --parallel 2   # ~1.5 h
    python benchmarks/tta_ocr.py --repeats 3 --parallel 2 --budget-min 20   # every row, ~5 h (benchmarks/README.md)
    python benchmarks/tta_ocr.py --quick                        # tiny sizes: pipeline/schema only (tests)

Writes report.json (every eval point of every run, machine, peak, load), report.md, acc_vs_time.png,
acc_vs_steps.png, acc_vs_samples.png under --out (default benchmarks/results/<device>_tta_ocr[_quick]/).
Rows and analysis: benchmarks/harness/tta.py; one run: benchmarks/harness/tta_worker.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import cli  # noqa: E402
from benchmarks.harness import tta as T  # noqa: E402
from benchmarks.harness.report import machine_info  # noqa: E402
from benchmarks.harness.runner import loadavg  # noqa: E402
from paddle_recipes.runtime.lifetime import die_with_parent  # noqa: E402

DICT = str(REPO / "datasets/ocr_rec/ch_hanzi_100.txt")


def parse_args(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("--rows", default="", help="comma list of row names (default: all)")
    p.add_argument("--parallel", type=int, default=1, help="rows run at a time (each pinned to its own cores "
                   "with taskset when available); 1 = one after the other")
    p.add_argument("--epochs", type=int, default=10, help="epoch budget (and cosine horizon) of every row "
                   "(the default recipe's 10)")
    p.add_argument("--targets", default="0.9,0.95")
    p.add_argument("--stop-at", type=float, default=None, help="stop a run at this acc (default: highest target)")
    p.add_argument("--budget-min", type=float, default=0.0, help="stop a run after this much training time, minutes "
                   "(eval excluded; 0 = the --epochs budget); a row that misses a target in it gives a lower-bound ratio")
    p.add_argument("--eval-every-samples", type=int, default=6400)
    p.add_argument("--eval-n", type=int, default=1000, help="held-out lines per eval (0 = all)")
    p.add_argument("--data", default="datasets/cache/tta_ocr_100", help="synthetic set (generated when missing)")
    p.add_argument("--num-train", type=int, default=48000, help="training lines (the default recipe's 48 000)")
    p.add_argument("--num-val", type=int, default=1000)
    cli.add_run_options(p, repeats=3, timeout=7200.0, timeout_help="seconds per run",
                        threads_help="math threads per row process",
                        quick_help="tiny data and steps: checks the pipeline, figures meaningless")
    return p.parse_args(argv)


def _taskset(slot: int, threads: int) -> list[str]:
    if not hasattr(os, "sched_getaffinity") or subprocess.run(["which", "taskset"], capture_output=True).returncode:
        return []
    cores = sorted(os.sched_getaffinity(0))
    mine = cores[slot * threads:(slot + 1) * threads]
    return ["taskset", "-c", ",".join(map(str, mine))] if len(mine) == threads else []


def run_one(cmd: list[str], out: Path, log: Path, threads: int, timeout: float) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rec = {"command": " ".join(cmd), "loadavg_before": loadavg(), "log": str(log)}
    t = time.time()
    with open(log, "w") as f:
        try:
            rc = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                                preexec_fn=die_with_parent).returncode  # the run stops if we are killed
        except subprocess.TimeoutExpired:
            rc = "timeout"
    rec.update(returncode=rc, wall_s=round(time.time() - t, 1), loadavg_after=loadavg())
    rec["result"] = json.loads(out.read_text()) if rc == 0 and out.exists() else None
    return rec


def main(argv=None) -> int:
    args = parse_args(argv)
    q = args.quick
    targets = tuple(float(t) for t in args.targets.split(","))
    rows = T.suite_rows([r for r in args.rows.split(",") if r] or None)
    data = "datasets/cache/bench_tta_ocr_quick" if q else args.data
    n_train, n_val = (96, 16) if q else (args.num_train, args.num_val)
    repeats = 1 if q else max(1, args.repeats)
    epochs = 1 if q else args.epochs
    eval_every = 16 if q else args.eval_every_samples
    eval_n = 16 if q else args.eval_n
    stop_at = args.stop_at if args.stop_at is not None else max(targets)
    extra = ("--max-text-length", "8") + (("--batch", "8") if q else ())  # quick: batch 8 for every row
    name = "cpu_tta_ocr" + ("_quick" if q else "")
    out_dir, work = cli.run_dirs(args, name)
    out_dir.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    T.prepare_data(str(REPO / data), DICT, n_train, n_val, 2, 6 if not q else 4, 32)
    load = {"before": loadavg()}
    plan = [(rep, row) for rep in range(repeats) for row in rows]  # interleaved repeats
    jobs = []
    for i, (rep, row) in enumerate(plan):
        out = work / f"{row.name}_r{rep}.json"
        cmd = T.worker_command(row, str(REPO / data), out, epochs, eval_every, eval_n, stop_at, 42 + rep,
                               max_steps=4 if q else 0, extra=extra + ("--budget-min", str(args.budget_min)))
        jobs.append((row.name, out, cmd))
    runs: dict = {r.name: [] for r in rows}
    t0 = time.time()
    par = max(1, args.parallel)

    def job(i, slot):
        name_, out, cmd = jobs[i]
        pin = _taskset(slot, args.threads) if par > 1 else []
        rec = run_one(pin + cmd, out, out.with_suffix(".log"), args.threads, args.timeout)
        rec["slot"] = slot
        res = rec["result"] or {}
        last = (res.get("points") or [{}])[-1]
        print(f"[{i + 1}/{len(jobs)}] {name_}: rc {rec['returncode']}, {rec['wall_s']} s wall, "
              f"last acc {last.get('acc')} at step {last.get('step')}", flush=True)
        return name_, rec

    for name_, rec in T.run_on_slots(len(jobs), par, job):  # a run keeps its slot's cores until it ends
        runs[name_].append(rec)
    load["after"] = loadavg()
    load["total_seconds"] = round(time.time() - t0, 1)
    peaks = [r["result"]["peak_gflops"] for rs in runs.values() for r in rs if r.get("result")]
    peak = max(peaks) if peaks else None  # best fp32 matmul GFLOP/s measured in the row processes
    summary = [T.summarize_row(r, runs[r.name], targets, peak) for r in rows]
    T.add_ratios(summary, targets)
    rep = {"suite": "tta_ocr", "quick": q, "command": " ".join(["python"] + sys.argv), "machine": machine_info(),
           "data": f"{data} ({n_train} train / {n_val} val lines, 100-hanzi dict, 2-6 chars, [3,32,192])",
           "targets": list(targets), "repeats": repeats, "threads": args.threads, "parallel": par,
           "eval_every_samples": eval_every, "eval_n": eval_n, "epochs": epochs, "peak_gflops": peak, "peaks_per_run": peaks,
           "load": load, "rows": summary, "runs": runs, "work_dir": str(work)}
    (out_dir / "report.json").write_text(json.dumps(rep, indent=1, default=str))
    (out_dir / "report.md").write_text(T.to_markdown(rep))
    pngs = T.write_plots(rep, runs, out_dir)
    print((out_dir / "report.md").read_text())
    print(f"wrote {out_dir}/report.json, report.md, " + ", ".join(p.name for p in pngs))
    failed = [r["name"] for r in summary if r["failed"]]
    if failed:
        print(f"FAILED rows: {failed} (logs under {work})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
