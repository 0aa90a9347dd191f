"""Measure the seeds' speedups on this machine, in one invocation, and write the report.

    python benchmarks/run.py --suite ocr                 # OCR recipe ablation (~5 min on 2 CPU cores)
    python benchmarks/run.py --suite all                 # ocr + tta + throughput + ddp (< 20 min on 2 cores)
    python benchmarks/run.py --suite ddp,throughput --steps 20 --warmup 5
    python benchmarks/run.py --suite all --quick         # tiny sizes: checks the harness, figures meaningless

Every row runs in a fresh process (DDP rows under paddle.distributed.launch) with pinned threads.
Output (``--out``, default benchmarks/results/<device>_<suites>/): report.json (every raw figure, machine,
versions, load), report.md, speedups.png, ips_over_steps.png, loss_vs_time.png. Per-row logs go to
``--work-dir`` (default output/bench/<timestamp>/).
"""
from __future__ import annotations

import fnmatch
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import cli  # noqa: E402
from benchmarks.harness import plots, report, rows as R  # noqa: E402
from benchmarks.harness.runner import Progress, Settings, loadavg, prepare_ocr_data, run_row  # noqa: E402

QUICK_OCR = ("Global.image_shape=[3,32,64]", "Architecture.Backbone.scale=0.25", "Architecture.Neck.hidden_size=16",
             "Synthetic.root=datasets/cache/bench_ocr_quick", "Synthetic.num_train=64", "Synthetic.num_val=8",
             "Synthetic.max_len=4", "Synthetic.workers=1", "Eval.loader.batch_size_per_card=8")
QUICK_TTA = ("Global.image_shape=[3,32,64]", "Synthetic.root=datasets/cache/bench_tta_quick",
             "Synthetic.num_train=32", "Synthetic.num_val=8", "Synthetic.workers=1",
             "Eval.loader.batch_size_per_card=8")
QUICK_WORKER = ("--batch", "2", "--size", "64", "--rounds", "2")


def parse_args(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("--suite", default="ocr", help="ocr, tta, throughput, ddp, all, or a comma list")
    p.add_argument("--steps", type=int, default=None, help="timed optimizer steps of a batch-64 row (default 8)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up steps excluded from figures (default 2)")
    p.add_argument("--worker-steps", type=int, default=None, help="throughput rows: timed steps/iterations (default 4)")
    p.add_argument("--ddp-nproc", type=int, default=2, help="processes of the DDP rows")
    p.add_argument("--loader-workers", type=int, default=2, help="DataLoader workers of the loader rows "
                   "(the seeds use 8 on a GPU machine)")
    p.add_argument("--batch", type=int, default=64, help="OCR baseline batch per process (the seeds' 64)")
    p.add_argument("--ocr-config", default=str(REPO / "benchmarks/configs/ocr_rec_cpu.yml"))
    p.add_argument("--tta-config", default=str(REPO / "benchmarks/configs/ocr_rec_tta_cpu.yml"))
    p.add_argument("--tta-epochs", type=int, default=None, help="epoch budget of each time-to-accuracy run")
    p.add_argument("--tta-metric", default="acc", help="held-out metric of the time-to-accuracy target")
    p.add_argument("--tta-target", type=float, default=None)
    p.add_argument("--models", default=",".join(R.THROUGHPUT_MODELS), help="throughput models")
    p.add_argument("--rows", default="", help="only rows matching these suite/name globs (comma list)")
    p.add_argument("-o", "--opt", nargs="+", action="extend", default=[],
                   help="extra recipe overrides for OCR/DDP rows, e.g. Global.device=gpu")
    cli.add_run_options(p, repeats=1, timeout=900.0, timeout_help="seconds per row",
                        threads_help="CPU threads per process of every row (except the labelled '1 process x N "
                                     "threads' DDP reference row)",
                        quick_help="tiny sizes and steps (tests); figures are meaningless",
                        repeats_help="run every throughput row this many times, in interleaved order (row1..rowN, "
                                     "row1..rowN); the repeat with the median ips is reported and all repeats' ips "
                                     "are kept (time-to-accuracy runs once)")
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args(argv)


def select_rows(args) -> dict[str, list]:
    suites = R.SUITES if args.suite == "all" else tuple(s.strip() for s in args.suite.split(",") if s.strip())
    bad = [s for s in suites if s not in R.SUITES]
    if bad:
        raise SystemExit(f"unknown suite(s) {bad}; choose from {list(R.SUITES)} or all")
    batch = 8 if args.quick else args.batch
    table = {"ocr": R.ocr_rows(args.ddp_nproc, batch, args.threads, args.loader_workers),
             "tta": R.tta_rows(args.ddp_nproc, 8 if args.quick else 32),
             "throughput": R.throughput_rows(tuple(m for m in args.models.split(",") if m)),
             "ddp": R.ddp_rows(args.ddp_nproc, batch)}
    pats = [p.strip() for p in args.rows.split(",") if p.strip()]
    out = {}
    for s in suites:
        rows = [r for r in table[s] if not pats or any(fnmatch.fnmatch(f"{r.suite}/{r.name}", p) for p in pats)]
        if rows:
            out[s] = rows
    if not out:
        raise SystemExit(f"no rows match --suite {args.suite} --rows {args.rows}")
    return out


def make_settings(args) -> Settings:
    q = args.quick
    return Settings(
        steps=args.steps or (2 if q else 8), warmup=args.warmup if args.warmup is not None else (1 if q else 2),
        worker_steps=args.worker_steps or (2 if q else 4), worker_warmup=1,
        ocr_config=args.ocr_config, tta_config=args.tta_config,
        extra_overrides=(QUICK_OCR if q else ()) + tuple(args.opt),
        tta_overrides=QUICK_TTA if q else (),
        worker_args=QUICK_WORKER if q else (),
        tta_epochs=args.tta_epochs or (1 if q else 14),
        tta_metric=args.tta_metric,
        tta_target=args.tta_target if args.tta_target is not None else (0.0 if q else 0.5),
        timeout=args.timeout, show_progress=not args.no_progress)


def _ips(row, rec, settings) -> float | None:
    """ips of one run (train rows: timed window; inference rows: unfused ips), None if it failed."""
    raw = rec.get("raw")
    if not raw:
        return None
    if "history" in raw:
        from benchmarks.harness.metrics import HistoryError, window_figures

        warm = settings.worker_warmup if row.kind == "worker" else row.steps_for(settings.steps, settings.warmup)[0]
        try:
            return window_figures(raw["history"], warm, raw.get("world_size", row.nproc))["ips"]
        except HistoryError:
            return None
    return (raw.get("unfused") or {}).get("ips")


def pick_median(row, recs: list, settings) -> dict:
    """The run with the median ips among the repeats of a row; all repeats' ips are kept in it."""
    if len(recs) == 1:
        return recs[0]
    scored = sorted(((_ips(row, r, settings), i) for i, r in enumerate(recs)), key=lambda t: (t[0] is None, t[0] or 0))
    ok = [t for t in scored if t[0] is not None]
    chosen = recs[ok[(len(ok) - 1) // 2][1]] if ok else recs[0]
    chosen = dict(chosen)
    chosen["repeats_ips"] = [_ips(row, r, settings) for r in recs]
    chosen["repeats_loadavg"] = [r.get("loadavg_before") for r in recs]
    return chosen


def main(argv=None) -> int:
    args = parse_args(argv)
    chosen = select_rows(args)
    settings = make_settings(args)
    machine = report.machine_info()
    name = f"{machine.get('device', 'cpu')}_{'_'.join(chosen)}" + ("_quick" if args.quick else "")
    out_dir, work = cli.run_dirs(args, name)
    # unique measurements (rows shared between suites run once)
    unique: dict = {}
    for rows in chosen.values():
        for r in rows:
            unique.setdefault(r.key(settings.steps, settings.warmup) + (r.suite == "tta",), r)
    load = {"before": loadavg()}
    t_start = time.time()
    if any(r.kind == "recipe" and r.suite != "tta" for r in unique.values()):
        prepare_ocr_data(settings, settings.ocr_config, settings.extra_overrides, work / "prepare_ocr.log")
    if "tta" in chosen:
        prepare_ocr_data(settings, settings.tta_config, settings.tta_overrides, work / "prepare_tta.log")
    plan = [(key, row, rep) for rep in range(max(1, args.repeats)) for key, row in unique.items()
            if rep == 0 or row.suite != "tta"]
    progress = Progress(len(plan), enabled=settings.show_progress)
    runs: dict = {}
    for i, (key, row, rep) in enumerate(plan, 1):
        w, t = row.steps_for(settings.steps, settings.warmup)
        expected = None if row.suite == "tta" else (w + t if row.kind == "recipe" else None)
        tag = f"{row.suite}_{row.name.replace('/', '_')}" + (f"_r{rep}" if args.repeats > 1 else "")
        runs.setdefault(key, []).append(run_row(row, settings, work / tag, progress, i, expected))
    records = {key: pick_median(unique[key], recs, settings) for key, recs in runs.items()}
    load["after"] = loadavg()
    load["total_seconds"] = round(time.time() - t_start, 1)
    recs_for = lambda rows: {r: records[r.key(settings.steps, settings.warmup) + (r.suite == "tta",)] for r in rows}  # noqa: E731
    builders = {"ocr": report.ocr_suite, "tta": report.tta_suite, "throughput": report.throughput_suite,
                "ddp": report.ddp_suite}
    results = {s: builders[s](rows, recs_for(rows), settings) for s, rows in chosen.items()}
    rep = report.build_report(results, machine, settings, [Path(sys.executable).name] + sys.argv, load)
    rep["work_dir"] = str(work)
    j, md = report.write(rep, out_dir)
    pngs = plots.write_all(rep, out_dir)
    print(md.read_text())
    print(f"wrote {j}, {md}, " + ", ".join(str(p) for p in pngs) + f" in {load['total_seconds']:.0f} s")
    failed = [f"{r['suite']}/{r['name']}" for s in results.values() for r in s["rows"] if r.get("error")]
    if failed:
        print(f"FAILED rows: {failed} (logs under {work})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
