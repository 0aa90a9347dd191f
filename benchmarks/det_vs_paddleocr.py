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

Figures from both trainers' own step lines (avg_batch_cost, ips; harness/ppocr_rec.py's parser): s/step after
the warm-up steps, ips, the ratio ours/PaddleOCR per interleaved pair. Writes report.json (commands, parsed step
lines, load, machine, versions) and report.md under --out (default benchmarks/results/cpu_det_vs_paddleocr[_quick]/).
No timing is asserted anywhere.
"""
from __future__ import annotations

import json
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
    p.add_argument("--yamls", default="v5_mobile", help=f"comma list of {sorted(D.YAMLS)}")
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
    return p.parse_args(argv)


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
    drops, edits = drops + args.drop, edits + H.parse_set(args.set)
    derived = H.derive_yaml(original, edits, drops)  # KeyError naming the key: caught by main
    ypath = work / f"{yn}.yml"
    ypath.write_text(yaml.safe_dump(derived, allow_unicode=True, sort_keys=False))
    runs: dict = {r.name: [] for r in D.ROWS}
    batch = args.batch
    for rep in range(args.repeats):
        for row in D.ROWS:
            tag = f"{yn}_{row.name}_r{rep}"
            o = D.overrides(data, str(work / tag), 1, batch)
            cmd, kind = H.command(row, args.ppocr_python, sys.executable, str(ypath), o, work / f"{tag}_launch",
                                  42 + rep, False, args.ours_entry)
            rec = run_proc(cores_prefix(1, args.threads) + cmd, scratch if kind == "ppocr" else REPO,
                             work / f"{tag}.stdout", args.threads, args.timeout, 0)
            log = work / tag / "train.log"
            text = log.read_text(errors="replace") if log.exists() else ""
            parsed = H.parse_train_log(text)
            rec.update(parsed=parsed, data_errors=D.data_errors(text),
                       figures=H.run_figures(parsed, warmup, 1, n_steps, completed=rec["returncode"] == 0))
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
    rep = {"suite": "det_vs_paddleocr", "quick": q, "command": " ".join(["python"] + sys.argv), "machine": machine_info(),
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
