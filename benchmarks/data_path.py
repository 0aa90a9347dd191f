"""The Train data path side by side, no model (issue 55): PaddleOCR's ``ppocr.data`` (its checkout, run as is) and
ours, on the same label files and the same PP-OCRv5 mobile YAMLs, samples/s and samples per CPU second (= per core)
at num_workers 0, 1, 2; then the CPU cores each needs to feed one V100 at PaddleOCR's published training ips.

    python benchmarks/data_path.py --ppocr-src /work/ppocr_src --ppocr-python /work/ppocr_data_venv/bin/python \
        --out benchmarks/results/data_path [--workers 0 1 2] [--repeats 1] [--quick]

Data (made here, in --work-dir): rec = the 305 real photo crops of tests/fixtures/real_crops, label file repeated
x4; det = 20 photo-like pages of datasets/make_photo_pages.py (seed 0), label file repeated x8. Each row is a fresh
process; ppocr and ours alternate per (task, workers). The per-core figure is samples / CPU seconds of the process
and its loader workers over the timed window (robust to other load on the machine; wall figures are not).
Extra rows: PaddleOCR without RecConAug (ours does not apply it: the like-for-like rec row) and PaddleOCR det with
CopyPaste (its YAML as is; ours does not copy-paste). Measures, never asserts.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKER = REPO / "benchmarks/harness/data_path_worker.py"
REC_YAML = "configs/rec/PP-OCRv5/PP-OCRv5_mobile_rec.yml"
DET_YAML = "configs/det/PP-OCRv5/PP-OCRv5_mobile_det.yml"
DICT = "ppocr/utils/dict/ppocrv5_dict.txt"

# PaddleOCR's published single-V100 training speeds (test_tipc/docs/benchmark_train.md, "各模型单卡性能数据一览",
# 1x V100 16G, float32, "大数据集" column, samples/s). No PP-OCRv5 figure is published there: the nearest models.
PUBLISHED_V100_IPS = {
    "rec": [("PP-OCRv3_mobile_rec (distillation config)", 90.239), ("ch_PP-OCRv2_rec (distillation)", 109.248),
            ("ch_ppocr_mobile_v2.0_rec", 2083.311)],
    "det": [("ch_PP-OCRv3_det (CML distillation)", 8.622), ("ch_ppocr_mobile_v2.0_det", 53.836),
            ("det_mv3_db_v2.0", 61.802)],
}
PUBLISHED_SOURCE = ("PaddleOCR test_tipc/docs/benchmark_train.md, section 3 (1x Nvidia V100 16G), fork snapshot "
                    "phat-ktran/PaddleOCR e6614364; quoted as published, not measured here")


def make_data(work: Path) -> dict:
    rec = work / "rec"
    if not (rec / "label.txt").is_file():
        rec.mkdir(parents=True, exist_ok=True)
        src = REPO / "tests/fixtures/real_crops"
        if not (rec / "images").exists():
            (rec / "images").symlink_to(src / "images")
        lines = (src / "label.txt").read_text(encoding="utf-8")
        (rec / "label.txt").write_text(lines * 4, encoding="utf-8")
    det = work / "photo_pages"
    if not (det / "label.txt").is_file():
        subprocess.run([sys.executable, str(REPO / "datasets/make_photo_pages.py"), "--out", str(det), "--pages", "20",
                        "--seed", "0"], check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    x8 = det / "train_x8.txt"
    if not x8.is_file():
        x8.write_text((det / "label.txt").read_text(encoding="utf-8") * 8, encoding="utf-8")
    return {"rec": (str(rec), str(rec / "label.txt")), "det": (str(det), str(x8))}


def versions(python: str) -> dict:
    code = ("import json, numpy, cv2, paddle, sys; print(json.dumps({'python': sys.version.split()[0], "
            "'paddle': paddle.__version__, 'numpy': numpy.__version__, 'opencv': cv2.__version__}))")
    out = subprocess.run([python, "-W", "ignore", "-c", code], capture_output=True, text=True)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": out.stderr[-300:]}


def run_row(row: dict, a, data: dict) -> dict:
    d, labels = data[row["task"]]
    yaml_path = str(Path(a.ppocr_src) / (REC_YAML if row["task"] == "rec" else DET_YAML))
    argv = [a.ppocr_python if row["side"] == "ppocr" else sys.executable, "-W", "ignore", str(WORKER),
            "--side", row["side"], "--task", row["task"], "--yaml", yaml_path, "--workers", str(row["workers"]),
            "--data", d, "--labels", labels, "--batches", str(row["batches"]), "--ppocr-src", a.ppocr_src]
    if row["task"] == "rec":
        argv += ["--dict", str(Path(a.ppocr_src) / DICT)]
    if row.get("drop"):
        argv += ["--drop-op", *row["drop"]]
    if row.get("op_args"):
        argv += ["--op-arg", *row["op_args"]]
    load0 = os.getloadavg()[0]
    t = time.time()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=a.timeout, cwd=str(REPO),
                       env={**os.environ, "PYTHONPATH": str(REPO) if row["side"] == "ours" else ""})
    res = {"error": p.stderr[-800:]}
    for line in reversed(p.stdout.strip().splitlines()):
        if line.startswith("{"):
            res = json.loads(line)
            break
    res.update(row=row["name"], load_before=load0, load_after=os.getloadavg()[0], row_wall_s=time.time() - t,
               command=" ".join(argv))
    print(f"{row['name']:34s} {res.get('samples_per_cpu_s', float('nan')):8.1f} samples/CPU-s "
          f"{res.get('samples_per_s', float('nan')):7.1f} samples/s  load {load0:.1f}", flush=True)
    return res


def rows_for(a) -> list:
    rows = []
    b = {"rec": 2 if a.quick else a.rec_batches, "det": 2 if a.quick else a.det_batches}
    for task in a.tasks:
        for w in a.workers:
            for rep in range(a.repeats):
                drop = ["CopyPaste"] if task == "det" else []
                pair = [{"side": "ppocr", "drop": drop}, {"side": "ours"}]
                for r in (pair if rep % 2 == 0 else pair[::-1]):
                    rows.append({**r, "task": task, "workers": w, "rep": rep, "batches": b[task],
                                 "name": f"{task} w{w} {r['side']}" + (" (no CopyPaste)" if r.get("drop") else "")})
        if 0 in a.workers and not a.quick:
            extras = {"rec": [(["RecConAug"], [], "no RecConAug"), ([], ["RecAug.tia_prob=0"], "RecAug without TIA")],
                      "det": [([], [], "with CopyPaste, YAML as is")]}[task]
            for drop, op_args, what in extras:
                rows.append({"side": "ppocr", "task": task, "workers": 0, "rep": 0, "batches": b[task], "drop": drop,
                             "op_args": op_args, "name": f"{task} w0 ppocr ({what})", "extra": True})
    return rows


def summarize(results: list) -> dict:
    out = {}
    for task in ("rec", "det"):
        for w in sorted({r["workers"] for r in results if "workers" in r}):
            def mean(side, key):
                vals = [r[key] for r in results if r.get("task") == task and r.get("workers") == w
                        and r.get("side") == side and key in r and not r.get("extra_row")]
                return sum(vals) / len(vals) if vals else None
            p, o = mean("ppocr", "samples_per_cpu_s"), mean("ours", "samples_per_cpu_s")
            pw, ow = mean("ppocr", "samples_per_s"), mean("ours", "samples_per_s")
            if p and o:
                out[f"{task}_w{w}"] = {"ppocr_per_cpu_s": p, "ours_per_cpu_s": o, "ratio_per_core": o / p,
                                       "ppocr_per_s": pw, "ours_per_s": ow, "ratio_wall": ow / pw if pw else None}
    return out


def cores_table(summary: dict) -> list:
    rows = []
    for task, figures in PUBLISHED_V100_IPS.items():
        s = summary.get(f"{task}_w0")
        if not s:
            continue
        for model, ips in figures:
            rows.append({"task": task, "model": model, "published_ips": ips,
                         "cores_ppocr": ips / s["ppocr_per_cpu_s"], "cores_ours": ips / s["ours_per_cpu_s"],
                         "ours_over_ppocr": s["ppocr_per_cpu_s"] / s["ours_per_cpu_s"]})
    return rows


def write_md(out: Path, report: dict) -> None:
    L = [f"# Train data path, PaddleOCR's ppocr.data vs ours, no model ({report['date']})", "",
         f"CPU: {report['cpu']} ({report['n_cores']} cores, shared: load average per row in report.json). "
         f"Ours: {report['versions']['ours']}. PaddleOCR side: {report['versions']['ppocr']}, PaddleOCR "
         f"{report['ppocr_commit']}.", "",
         "Per core = samples / CPU seconds of the loader's process and its workers over the timed window (first "
         "batch excluded).", "",
         "| task | workers | PaddleOCR samples/CPU-s | ours samples/CPU-s | ours / PaddleOCR per core | PaddleOCR samples/s "
         "| ours samples/s | wall ratio |", "|---|---|---|---|---|---|---|---|"]
    for key, s in report["summary"].items():
        task, w = key.split("_w")
        L.append(f"| {task} | {w} | {s['ppocr_per_cpu_s']:.1f} | {s['ours_per_cpu_s']:.1f} | "
                 f"**x{s['ratio_per_core']:.2f}** | {s['ppocr_per_s']:.1f} | {s['ours_per_s']:.1f} | "
                 f"x{s['ratio_wall']:.2f} |")
    L += ["", "Every row:", "", "| row | samples | CPU s | wall s | samples/CPU-s | samples/s | load before/after |",
          "|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        if "samples" in r:
            L.append(f"| {r['row']} | {r['samples']} | {r['cpu_s']:.2f} | {r['wall_s']:.1f} | "
                     f"{r['samples_per_cpu_s']:.1f} | {r['samples_per_s']:.1f} | {r['load_before']:.1f} / "
                     f"{r['load_after']:.1f} |")
        else:
            L.append(f"| {r['row']} | failed: {r.get('error', '')[-120:]!r} | | | | | |")
    L += ["", "## CPU cores to feed one V100 (data path only, workers 0 figures)", "",
          f"PUBLISHED (not measured here): {PUBLISHED_SOURCE}.", "",
          "| task | model (published ips, samples/s) | cores PaddleOCR | cores ours | ours / PaddleOCR |",
          "|---|---|---|---|---|"]
    for c in report["cores"]:
        L.append(f"| {c['task']} | {c['model']} ({c['published_ips']}) | {c['cores_ppocr']:.2f} | "
                 f"{c['cores_ours']:.2f} | {c['ours_over_ppocr']:.2f} |")
    (out / "report.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ppocr-src", required=True, help="PaddleOCR checkout (imported as is)")
    p.add_argument("--ppocr-python", required=True, help="Python with PaddleOCR's data dependencies")
    p.add_argument("--out", default=str(REPO / "benchmarks/results/data_path"))
    p.add_argument("--work-dir", default="/tmp/data_path_bench")
    p.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--tasks", nargs="+", choices=("rec", "det"), default=["rec", "det"])
    p.add_argument("--rec-batches", type=int, default=8, help="timed batches per rec row (first_bs 128)")
    p.add_argument("--det-batches", type=int, default=12, help="timed batches per det row (8 pages each)")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--quick", action="store_true", help="2 batches a row, no extra rows: checks the harness")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    data = make_data(Path(a.work_dir))
    results = []
    for row in rows_for(a):
        res = run_row(row, a, data)
        res.update(side=row["side"], task=row["task"], workers=row["workers"], extra_row=bool(row.get("extra")))
        results.append(res)
    summary = summarize(results)
    cpu = next((ln.split(":", 1)[1].strip() for ln in subprocess.run(["lscpu"], capture_output=True, text=True)
                .stdout.splitlines() if ln.startswith("Model name")), platform.processor())
    commit = subprocess.run(["git", "-C", a.ppocr_src, "rev-parse", "HEAD"], capture_output=True, text=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu, "n_cores": os.cpu_count(),
              "versions": {"ours": versions(sys.executable), "ppocr": versions(a.ppocr_python)},
              "ppocr_commit": commit.stdout.strip() or "e6614364 (archive of the fork mirror's HEAD)",
              "summary": summary, "cores": cores_table(summary), "published_source": PUBLISHED_SOURCE,
              "rows": results, "command": " ".join(["python", *sys.argv])}
    (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    write_md(out, report)
    print((out / "report.md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
