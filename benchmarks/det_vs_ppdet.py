"""Our PP-YOLOE recipe vs PaddleDetection's own trainer (paddledet 2.6.0), side by side on the same synthetic data.

    python benchmarks/det_vs_ppdet.py                 # full run: ips (s, 320 px) + 8-min same-budget mAP, 3 repeats
    python benchmarks/det_vs_ppdet.py --phases ips --repeats 5
    python benchmarks/det_vs_ppdet.py --phases map --budget-min 0 --map-epochs 10   # same epochs instead of same time
    python benchmarks/det_vs_ppdet.py --quick               # tiny steps/data: pipeline + schema check (the test)

What runs (every run a fresh process, OMP/MKL threads = --threads, pinned to one core with taskset when
available, repeats interleaved: ours, ppdet, ours, ppdet, ...):

(a) ips: each side trains ``--ips-warmup + --ips-steps`` steps of PP-YOLOE-``--ips-size`` at ``--ips-px`` px,
    batch ``--batch``, fp32; images/s over the steps after warm-up; ratio ours/ppdet per pair.
(b) same-budget mAP: each side trains PP-YOLOE-``--map-size`` from random init for ``--budget-min`` minutes of
    training (wall clock from fit start, data loading included; ``--budget-min 0``: exactly ``--map-epochs``
    epochs), cosine horizon ``--map-epochs``; seed 42 + repeat. Both EMA weight sets are then scored by ONE
    evaluator, ``benchmarks/harness/det_worker.py eval`` (our ``evaluate_detector``: same resize, normalisation,
    NMS, pycocotools mAP@.5 and mAP@.5:.95) on the same held-out images; ppdet's weights enter our model through
    ``load_ppdet_weights`` (an exact mapping, see tasks/det_ppyoloe/ppdet_weights.py).

Our side: ``paddle_recipes.recipes.det_ppyoloe`` with a YAML written from the Setup (harness/det_worker.py).
ppdet's side: ``ppdet.engine.Trainer`` on a ppdet-format YAML written from the same Setup
(harness/ppdet_driver.py); nothing of PaddleDetection's configs or scripts is copied, nothing is downloaded.
The data is our synthetic shapes set (``paddle_recipes.tasks.det_ppyoloe.synth``), already COCO json + PNG, written
under the work dir (default output/bench/, never committed) and read by both sides.

Requirements: ``pip install --no-deps paddledet==2.6.0`` plus pycocotools (both already in this environment,
with what ``import ppdet`` needs). Its optional tracker packages (lap, motmetrics, numba) are missing here and not
needed: ppdet prints a warning at import and the detection path works without them; nothing is stubbed.
ppdet yields int32 ``gt_class``; the driver registers a ``CastGtClassInt64`` batch transform (see its docstring).

Writes report.json (every raw figure: per-step times and losses, commands, machine, paddle/ppdet versions,
load before/after each run) and report.md under --out (default benchmarks/results/cpu_det_vs_ppdet[_quick]/).
Nothing here asserts a timing.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import cli  # noqa: E402
from benchmarks.harness import ppdet_det as H  # noqa: E402
from benchmarks.harness.report import machine_info  # noqa: E402
from benchmarks.harness.runner import loadavg  # noqa: E402

WORKER = REPO / "benchmarks" / "harness" / "det_worker.py"
DRIVER = REPO / "benchmarks" / "harness" / "ppdet_driver.py"

DIFFERENCES = [
    "Augmentation: ours = albumentations h-flip + brightness/contrast + HSV jitter + random affine (scale 0.75-1.25, "
    "translate 10%) with per-batch random size; ppdet = its RandomDistort (hue/saturation/contrast/brightness) + "
    "RandomFlip + BatchRandomResize over the same sizes. ppdet has no op equal to our affine, so its side trains "
    "without it (use --no-augment for identical, augmentation-free pipelines).",
    "Resize: both stretch to the square train size (ppdet keep_ratio false, random interpolation; ours cv2 linear); "
    "eval is ours for both (square resize to the eval size, ImageNet mean/std).",
    "Assigner: ppdet's PP-YOLOE starts with ATSS for static_assigner_epoch epochs; set to -1 here so both sides use "
    "the task-aligned assigner (topk 13, alpha 1, beta 6) from step 1, as our head does.",
    "Optimizer: same type, lr, cosine horizon, linear warmup from 0 and floor; AdamW: ours exempts norm/bias "
    "parameters from decoupled weight decay, ppdet's AdamW decays every parameter. ppdet's cosine is a per-step "
    "piecewise table of the same curve.",
    "EMA: both 'threshold' EMA (decay d_n = min(0.9998, (1+n)/(10+n)), BN statistics included). ppdet's accumulator "
    "starts at zero and ModelEMA.apply() divides by (1 - d_n**n) (about 1 after a few dozen steps); ours starts "
    "from the initial weights, no correction. Both ppdet figures are reported (applied = what ppdet evaluates and "
    "saves; raw = without the correction).",
    "Architecture: identical by construction and checked at every eval: ppdet's trained weights load strictly into "
    "our model (every tensor mapped with its shape, see 'loaded' in report.json); PP-YOLOE (not +), no RepVgg alpha, "
    "ImageNet mean/std on both sides, RGB.",
    "Step timing: ours = Trainer step end (after the EMA update); ppdet = on_step_end (before its EMA update; that "
    "update falls into the next interval). Both include data loading (0 workers on both sides) and a per-step loss "
    "sync (ours log_every 1, ppdet its TrainingStats).",
    "Budget: training seconds from fit start (model built, loader ready) to the step that crosses the budget; "
    "process start-up, data indexing and eval are excluded on both sides. Sampling order: each side's own "
    "shuffling (seeded 42 + repeat); ppdet drops the last partial batch.",
]


def parse_args(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("--phases", default="ips,map", help="comma list: ips, map")
    p.add_argument("--batch", type=int, default=4, help="images per step, both phases")
    p.add_argument("--ips-size", default="s")
    p.add_argument("--ips-px", type=int, default=320)
    p.add_argument("--ips-steps", type=int, default=30, help="timed steps after warm-up")
    p.add_argument("--ips-warmup", type=int, default=5)
    p.add_argument("--map-size", default="tiny")
    p.add_argument("--budget-min", type=float, default=8.0, help="training minutes per side (0 = --map-epochs)")
    p.add_argument("--map-epochs", type=int, default=10, help="cosine horizon in epochs, both sides (a side that gets "
                   "there before --budget-min stops there); with --budget-min 0 the budget itself")
    p.add_argument("--train-sizes", default="160,192,224", help="map phase random-resize sides")
    p.add_argument("--eval-size", type=int, default=192)
    p.add_argument("--optimizer", default="adamw", choices=("adamw", "momentum"))
    p.add_argument("--lr", type=float, default=0.002)
    p.add_argument("--warmup-steps", type=int, default=50)
    p.add_argument("--no-augment", action="store_true", help="no train augmentation on either side")
    p.add_argument("--num-train", type=int, default=800)
    p.add_argument("--num-val", type=int, default=100)
    p.add_argument("--image-px", type=int, default=256, help="synthetic image side")
    cli.add_run_options(p, repeats=3, timeout=3600.0, timeout_help="seconds per run process",
                        threads_help="OMP/MKL threads of every run process",
                        quick_help="tiny data and steps: checks the pipeline, figures meaningless")
    return p.parse_args(argv)


def _pin() -> list:
    """taskset to the last available core (one run at a time), when taskset exists."""
    if not hasattr(os, "sched_getaffinity") or shutil.which("taskset") is None:
        return []
    return ["taskset", "-c", str(sorted(os.sched_getaffinity(0))[-1])]


def run(cmd: list, log: Path, threads: int, timeout: float, pin: list) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full = pin + cmd
    rec = {"command": " ".join(map(str, full)), "log": str(log), "loadavg_before": loadavg()}
    t = time.time()
    with open(log, "w") as f:
        try:
            rc = subprocess.run(full, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, cwd=REPO).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    rec.update(returncode=rc, wall_s=round(time.time() - t, 1), loadavg_after=loadavg())
    return rec


def _read(path: Path):
    return json.loads(path.read_text()) if path.exists() else None


def versions() -> dict:
    out = {}
    for mod in ("paddle", "ppdet", "pycocotools"):
        try:
            from importlib.metadata import version
            out[mod] = version({"paddle": "paddlepaddle", "ppdet": "paddledet"}.get(mod, mod))
        except Exception as exc:  # noqa: BLE001 - reported, not fatal
            out[mod] = f"unavailable ({type(exc).__name__})"
    return out


class Bench:
    """Runs the sides (one fresh process each) and collects their records. data: paths of the COCO set."""

    def __init__(self, args, work: Path, data: dict, num_classes: int, num_train: int):
        self.args, self.work, self.data, self.num_classes, self.num_train = args, work, data, num_classes, num_train
        self.pin = _pin()

    def _train_ours(self, setup: H.Setup, name: str, max_steps: int = 0, budget_s: float = 0.0,
                    weights: str = "") -> tuple[dict, dict]:
        cfg = self.work / f"{name}.yml"
        cfg.write_text(yaml.safe_dump(H.ours_config(setup, self.data, str(self.work / name), max_steps)))
        return self._run_side(name, [str(WORKER), "train", "-c", str(cfg)], budget_s, weights)

    def _train_ppdet(self, setup: H.Setup, name: str, epochs: int, max_steps: int = 0, budget_s: float = 0.0,
                     weights: str = "") -> tuple[dict, dict]:
        cfg = self.work / f"{name}.yml"
        cfg.write_text(H.ppdet_config(setup, self.data, str(self.work / name), self.num_classes, epochs))
        head = [str(DRIVER), "-c", str(cfg), "--seed", str(setup.seed)]
        return self._run_side(name, head + (["--max-steps", str(max_steps)] if max_steps else []), budget_s, weights)

    def _run_side(self, name: str, head: list, budget_s: float, weights: str) -> tuple[dict, dict]:
        """Run `python head... --record <name>.json [--budget-s] [--weights-out]`; (process record, its record)."""
        record = self.work / f"{name}.json"
        cmd = [sys.executable, *head, "--record", str(record)]
        cmd += ["--budget-s", str(budget_s)] if budget_s else []
        cmd += ["--weights-out", weights] if weights else []
        rec = run(cmd, self.work / f"{name}.log", self.args.threads, self.args.timeout, self.pin)
        return rec, _read(record)

    def ips_phase(self, setup: H.Setup, repeats: int, warmup: int, steps: int) -> dict:
        n = warmup + steps
        per_epoch = max(1, self.num_train // setup.batch)
        epochs = math.ceil(n / per_epoch) + 1
        pairs = []
        for r in range(repeats):
            pair = {"repeat": r}
            for side in ("ours", "ppdet"):
                name = f"ips_{side}_r{r}"
                if side == "ours":
                    rec, res = self._train_ours(replace(setup, epochs=epochs), name, max_steps=n)
                else:
                    rec, res = self._train_ppdet(setup, name, epochs, max_steps=n)
                fig = H.ips_window(res["step_times_s"], warmup, steps, setup.batch) if res else {"ips": None}
                pair[side] = {**fig, "run": rec, "result": res}
                print(f"ips r{r} {side}: rc {rec['returncode']}, {fig.get('ips')} img/s, {rec['wall_s']} s wall, "
                      f"load {rec['loadavg_after']}", flush=True)
            a, b = pair["ours"]["ips"], pair["ppdet"]["ips"]
            pair["ratio"] = round(a / b, 4) if a and b else None
            pairs.append(pair)
        return {"warmup": warmup, "steps": steps, "pairs": pairs, "summary": H.summarize_ips(pairs)}

    def map_phase(self, setup: H.Setup, repeats: int, budget_s: float) -> dict:
        pairs = []
        for r in range(repeats):
            s = replace(setup, seed=42 + r)
            w_ours, w_pp = str(self.work / f"map_ours_r{r}.pdparams"), str(self.work / f"map_ppdet_r{r}.pdparams")
            rec_o, res_o = self._train_ours(s, f"map_ours_r{r}", budget_s=budget_s, weights=w_ours)
            print(f"map r{r} ours: rc {rec_o['returncode']}, {res_o and res_o['steps']} steps, "
                  f"{rec_o['wall_s']} s wall", flush=True)
            rec_p, res_p = self._train_ppdet(s, f"map_ppdet_r{r}", setup.epochs, budget_s=budget_s, weights=w_pp)
            print(f"map r{r} ppdet: rc {rec_p['returncode']}, {res_p and res_p['steps']} steps, "
                  f"{rec_p['wall_s']} s wall", flush=True)
            specs = []
            if res_o:
                specs.append(f"{w_ours}:ours:ours")
            if res_p:
                specs += [f"{w_pp}:ppdet:ppdet", f"{res_p['weights_raw']}:ppdet:ppdet_raw_ema"]
            ev_rec, ev = {"returncode": None}, {}
            if specs:
                record = self.work / f"map_eval_r{r}.json"
                cmd = [sys.executable, str(WORKER), "eval", "--weights", *specs, "--size", s.size,
                       "--reg-max", str(s.reg_max), "--ann", self.data["val_ann"], "--image-dir",
                       self.data["val_images"], "--eval-size", str(s.eval_size), "--record", str(record)]
                ev_rec = run(cmd, self.work / f"map_eval_r{r}.log", self.args.threads, self.args.timeout, self.pin)
                ev = _read(record) or {}
            pair = {"seed": s.seed, "ours_train": {**(res_o or {"steps": None}), "run": rec_o},
                    "ppdet_train": {**(res_p or {"steps": None}), "run": rec_p}, "eval_run": ev_rec, **ev}
            print(f"map r{r}: mAP50 ours {ev.get('ours', {}).get('mAP50')}, ppdet {ev.get('ppdet', {}).get('mAP50')} "
                  f"(raw EMA {ev.get('ppdet_raw_ema', {}).get('mAP50')})", flush=True)
            pairs.append(pair)
        return {"budget_s": budget_s, "pairs": pairs, "summary": H.summarize_map(pairs)}


def main(argv=None) -> int:
    args = parse_args(argv)
    q = args.quick
    phases = [p for p in args.phases.split(",") if p]
    bad = set(phases) - {"ips", "map"}
    if bad:
        raise SystemExit(f"--phases: unknown {sorted(bad)}; choose from ips, map")
    name = "cpu_det_vs_ppdet" + ("_quick" if q else "")
    out_dir, work = cli.run_dirs(args, name)
    out_dir.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    load = {"before": loadavg()}
    t0 = time.time()

    from paddle_recipes.tasks.det_ppyoloe.coco import load_coco
    from paddle_recipes.tasks.det_ppyoloe.synth import ShapesSpec, make_shapes_dataset

    spec = (ShapesSpec(num_train=16, num_val=8, image_size=96, min_size=16, max_size=40, max_objects=3) if q else
            ShapesSpec(num_train=args.num_train, num_val=args.num_val, image_size=args.image_px))
    root = work / "data"
    make_shapes_dataset(root, spec)
    data = {"root": str(root), "train_ann": str(root / "annotations/instances_train.json"),
            "train_images": str(root / "images/train"), "val_ann": str(root / "annotations/instances_val.json"),
            "val_images": str(root / "images/val")}
    num_classes = load_coco(data["train_ann"], data["train_images"]).num_classes
    repeats = 1 if q else max(1, args.repeats)
    bench = Bench(args, work, data, num_classes, spec.num_train)
    base = H.Setup(batch=args.batch, optimizer=args.optimizer, lr=args.lr, warmup_steps=args.warmup_steps,
                   augment=not args.no_augment)
    setups, rep = {}, {}
    if "ips" in phases:
        st = replace(base, size="tiny" if q else args.ips_size, sizes=[64 if q else args.ips_px],
                     eval_size=64 if q else args.ips_px)
        setups["ips"] = H.setup_dict(st)
        w, n = (1, 2) if q else (args.ips_warmup, args.ips_steps)
        rep["ips"] = bench.ips_phase(st, repeats, w, n)
    if "map" in phases:
        sizes = [64, 96] if q else [int(x) for x in args.train_sizes.split(",")]
        st = replace(base, size=args.map_size if not q else "tiny", sizes=sizes,
                     eval_size=96 if q else args.eval_size, epochs=1 if q else args.map_epochs,
                     warmup_steps=2 if q else args.warmup_steps)
        setups["map"] = H.setup_dict(st)
        rep["map"] = bench.map_phase(st, repeats, 0.0 if q else args.budget_min * 60.0)
    load.update(after=loadavg(), total_seconds=round(time.time() - t0, 1))
    report = {"suite": "det_vs_ppdet", "quick": q, "command": " ".join(["python"] + sys.argv),
              "machine": machine_info(), "versions": versions(), "threads": args.threads, "taskset": bench.pin,
              "load": load, "data": {"desc": f"synthetic shapes (3 classes), {spec.num_train} train / {spec.num_val} "
                                             f"held-out images of {spec.image_size} px, written under {root}",
                                     "spec": vars(spec), "num_train": spec.num_train, "num_val": spec.num_val,
                                     "num_classes": num_classes},
              "setups": setups, "differences": DIFFERENCES, "work_dir": str(work), **rep}
    (out_dir / "report.json").write_text(json.dumps(report, indent=1, default=str))
    (out_dir / "report.md").write_text(H.to_markdown(report))
    print((out_dir / "report.md").read_text())
    print(f"wrote {out_dir}/report.json, report.md (runs and logs under {work})")
    runs = [p[s]["run"] for p in rep.get("ips", {}).get("pairs", []) for s in ("ours", "ppdet")]
    runs += [p[k]["run"] for p in rep.get("map", {}).get("pairs", []) for k in ("ours_train", "ppdet_train")]
    runs += [p["eval_run"] for p in rep.get("map", {}).get("pairs", [])]
    failed = [r["log"] for r in runs if r.get("returncode") != 0]
    if failed:
        print(f"FAILED runs (see logs): {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
