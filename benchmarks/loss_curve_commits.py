"""Same seed, same loss curve? Train the default rec and det recipes briefly at two commits and compare the per-step
losses they log.

    python benchmarks/loss_curve_commits.py 53365d6 6abe2e2 --out /tmp/lc/round4
    python benchmarks/loss_curve_commits.py 6abe2e2 main --fixed-data --out /tmp/lc/gen

Each commit is unpacked with ``git archive`` into OUT/tree-<sha> (the repository's own files, nothing of this work
tree) and runs ``recipes/ocr_rec.py`` / ``recipes/ocr_det.py`` with its default config, one process, ``nice -n 19``,
cut down by ``-o`` keys both commits know: Global.max_steps / log_every / output_dir, a small Synthetic split
(rec: 16 lines a step, det: 8 pages a step = one epoch; Synthetic.seed as configured). ``--fixed-data`` also trains
both commits on the first commit's rendered split read as PaddleOCR label files (Train/Eval.dataset.data_dir +
label_file_list), so a change of the generator drops out. Writes OUT/report.json and prints one line per run pair:
steps compared, steps equal as logged (6 decimals), the first step that differs, the largest difference.
Measures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = re.compile(r"global_step: (\d+), .*?\bloss: ([-+0-9.eE]+|nan|inf)")
PER_STEP = {"rec": 16, "det": 8}  # the default configs' batch_size_per_card: one epoch of max_steps steps


def unpack(commit: str, out: str) -> tuple[str, str]:
    """(full sha, directory) of `commit` unpacked with git archive under `out` (reused when present)."""
    sha = subprocess.check_output(["git", "-C", REPO, "rev-parse", commit], text=True).strip()
    tree = os.path.join(out, f"tree-{sha[:10]}")
    if not os.path.isdir(tree):
        os.makedirs(tree + ".part", exist_ok=True)
        archive = subprocess.Popen(["git", "-C", REPO, "archive", sha], stdout=subprocess.PIPE)
        subprocess.check_call(["tar", "-x", "-C", tree + ".part"], stdin=archive.stdout)
        if archive.wait() != 0:
            raise SystemExit(f"git archive {commit} failed")
        os.rename(tree + ".part", tree)
    return sha, tree


def overrides(recipe: str, steps: int, run_dir: str, data: str | None) -> list[str]:
    """The -o keys of a short default run: `data` = a rendered split to read as label files (None: render)."""
    n = steps * PER_STEP[recipe]
    keys = [f"Global.max_steps={steps}", "Global.log_every=1", f"Global.output_dir={run_dir}/output",
            f"Synthetic.root={run_dir}/synth", f"Synthetic.num_train={n}"]
    if recipe == "rec":
        keys += ["Synthetic.num_val=32", "Synthetic.num_heldout=32", "Global.use_visualdl=false"]
    else:
        keys += ["Synthetic.num_val=8", "Synthetic.num_heldout=8", "Global.epochs=1"]
    if data is not None:
        keys += [f"Train.dataset.data_dir={data}/train", f"Train.dataset.label_file_list=[{data}/train/label.txt]",
                 f"Eval.dataset.data_dir={data}/val", f"Eval.dataset.label_file_list=[{data}/val/label.txt]"]
    return keys


def train(tree: str, recipe: str, steps: int, run_dir: str, data: str | None) -> dict:
    """Run one short default training in `tree`; its per-step losses (as logged), CPU seconds, wall seconds."""
    os.makedirs(run_dir, exist_ok=True)
    cmd = ["nice", "-n", "19", sys.executable, f"recipes/ocr_{recipe}.py", "-o",
           *overrides(recipe, steps, run_dir, data)]
    env = dict(os.environ, PYTHONPATH=tree)
    t0, c0 = time.time(), os.times()
    with open(os.path.join(run_dir, "console.log"), "w") as log:
        rc = subprocess.call(cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
    c1 = os.times()
    with open(os.path.join(run_dir, "console.log")) as f:
        losses = {int(s): v for s, v in STEP.findall(f.read())}
    return {"cmd": " ".join(cmd), "cwd": tree, "rc": rc, "losses": losses, "wall_s": round(time.time() - t0, 1),
            "cpu_s": round(c1.children_user + c1.children_system - c0.children_user - c0.children_system, 1)}


def compare(a: dict, b: dict) -> dict:
    """Steps logged by both, how many equal as logged, the first that differs and the largest difference."""
    steps = sorted(set(a["losses"]) & set(b["losses"]))
    diff = [s for s in steps if a["losses"][s] != b["losses"][s]]
    worst = max((abs(float(a["losses"][s]) - float(b["losses"][s])) for s in steps), default=0.0)
    return {"steps": len(steps), "equal": len(steps) - len(diff), "first_diff": diff[0] if diff else None,
            "max_abs_diff": worst, "rc": [a["rc"], b["rc"]]}


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--recipes", nargs="+", default=["rec", "det"], choices=["rec", "det"])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--fixed-data", action="store_true", help="also train both on a's rendered split as label files")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    report = {"cpu": cpu, "nproc": os.cpu_count(), "load_start": load(), "steps": args.steps, "runs": {}, "pairs": {}}
    trees = {name: unpack(c, args.out) for name, c in (("a", args.a), ("b", args.b))}
    report["commits"] = {name: {"given": c, "sha": trees[name][0]} for name, c in (("a", args.a), ("b", args.b))}
    for recipe in args.recipes:
        modes = [("synthetic", None)]
        if args.fixed_data:
            modes.append(("fixed", os.path.join(args.out, f"a-{recipe}-synthetic", "synth")))
        for mode, data in modes:
            runs = {}
            for name in ("a", "b"):  # a first: its synthetic split is the fixed data
                key = f"{name}-{recipe}-{mode}"
                runs[name] = report["runs"][key] = train(trees[name][1], recipe, args.steps,
                                                         os.path.join(args.out, key), data)
                print(f"{key}: rc {runs[name]['rc']}, {len(runs[name]['losses'])} steps logged, "
                      f"{runs[name]['cpu_s']} CPU s, {runs[name]['wall_s']} s wall, load {load()}", flush=True)
            pair = report["pairs"][f"{recipe}-{mode}"] = compare(runs["a"], runs["b"])
            print(f"{recipe} {mode}: {pair['equal']}/{pair['steps']} steps equal as logged, first differing step "
                  f"{pair['first_diff']}, max |diff| {pair['max_abs_diff']:.6g}", flush=True)
    report["load_end"] = load()
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
