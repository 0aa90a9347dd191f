"""Generalisation to pages and fonts the project never drew (issue 54): det, the OCR system and rec, scored on
pages and lines of a plain independent renderer (benchmarks/indep_render.py: PIL only, Debian fonts no training run
uses), per font, orientation, line length and text height; rec also on the project's own generator in those fonts.
Trains nothing: point it at any trained det / rec models (their configs, weights and -o overrides).

    python benchmarks/generalisation.py --name baseline                       # the README recipes' output dirs
    # OTHER = the folder of another checkout's runs:
    python benchmarks/generalisation.py --name gen_v2 \\
        --det-config recipes/configs/ocr_det.yml --det-weights OTHER/output/ocr_det/checkpoints/best \\
        --sys-rec-config recipes/configs/ocr_rec_pages.yml --sys-rec-weights OTHER/output/ocr_rec_pages/checkpoints/best \\
        --rec-config recipes/configs/ocr_rec.yml --rec-weights OTHER/output/ocr_rec/checkpoints/best
    python benchmarks/generalisation.py --skip rec ...                        # det + system only (or --skip det,system)

Defaults: --det-config recipes/configs/ocr_det.yml, --sys-rec-config recipes/configs/ocr_rec_pages.yml (the system's
recognizer, recipes/configs/ocr_system.yml), --rec-config recipes/configs/ocr_rec.yml; empty weights = the config's
output_dir/checkpoints (best, else latest), as the recipes' eval modes. --det-opt / --sys-rec-opt / --rec-opt: the -o
keys each run was trained with. A weights path relative to the current folder is fine.

Data (rendered once into --data, default output/generalisation/data, reused when the render settings match):
200 pages of 480 x 480 (~1000 lines, 15 % vertical, 2-12 characters, 14-40 px, +-15 degrees), 1400 horizontal rec
lines (2-6 characters, the rec default's length) and 400 vertical ones from the independent renderer, and 1400 lines of
the project's generator (tasks/ocr_rec/synth.LineRenderer, the rec config's Synthetic settings) in the same held-out
fonts. Det runs at the pages' own size (--limit-side-len 480, limit_type max: no resize) unless told otherwise.

Scores: det P / R / hmean (PaddleOCR's DetMetric) and recall per bucket; the system (det -> crops -> the system's rec,
recipes/ocr_system.py's pipeline) per bucket: % of lines found (IoU >= 0.5) and read exactly, 1 - NED; rec line
accuracy per font on each renderer (the rec recipe's own eval: its resize, its CTC decode). Vertical rec lines are
turned 90 degrees counter-clockwise first, as the system turns tall crops. Writes --out/report.json and report.md
(default benchmarks/results/generalisation/<name>/); measures, asserts nothing.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Sequence
from unittest import mock

import cv2
import numpy as np
import paddle
import PIL
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import indep_render  # noqa: E402
from harness.cli import parser  # noqa: E402
from paddle_recipes.config import load_config  # noqa: E402
from paddle_recipes.recipes.ocr_rec import OcrRec  # noqa: E402
from paddle_recipes.recipes.ocr_system import OcrSystem  # noqa: E402
from paddle_recipes.runtime.distributed import DistInfo  # noqa: E402
from paddle_recipes.tasks.ocr_det.metrics import DetMetric  # noqa: E402
from paddle_recipes.tasks.ocr_rec import synth  # noqa: E402
from paddle_recipes.tasks.ocr_rec.fonts import FontSpec  # noqa: E402
from paddle_recipes.tasks.ocr_rec.metrics import edit_distance  # noqa: E402
from paddle_recipes.tasks.ocr_rec.recipe_data import evaluate_sets  # noqa: E402
from paddle_recipes.tasks.ocr_system.metric import match_lines  # noqa: E402
from shapely.geometry import Polygon  # noqa: E402

GOALS = {"det_hmean": 0.95, "det_recall_vertical": 0.90, "det_recall_small": 0.92, "system_exact": 0.85,
         "rec_font_acc": 0.90, "rec_font_floor": 0.85}
LENGTHS = ((2, 4), (5, 8), (9, 12))
HEIGHTS = ((0, 19), (20, 29), (30, 99))  # text height = the em size in px; "< 20 px" is the goal's bucket


# ------------------------------------------------------------------------------------------------------ buckets
def buckets(meta: dict) -> List[str]:
    """The buckets a GT line counts in: font, orientation, length, text height."""
    n, px = len(meta["text"]), meta["size"]
    length = next(f"len {a}-{b}" for a, b in LENGTHS if a <= n <= b) if n <= LENGTHS[-1][1] else f"len {n}"
    height = next((f"height < {b + 1} px" if a == 0 else f"height {a}-{b} px" if b < 99 else f"height >= {a} px")
                  for a, b in HEIGHTS if a <= px <= b)
    return [f"font {meta['font']}", "vertical" if meta["vertical"] else "horizontal", length, height]


def det_matches(gts: Sequence, dets: Sequence, iou: float = 0.5) -> set:
    """GT indices matched by PaddleOCR's DetectionIoUEvaluator rule (greedy in (gt, det) order, IoU > iou, one to one;
    no don't-care GT here): the same count as metrics.DetMetric."""
    gp = [Polygon(g) for g in gts]
    dp = [Polygon(d) for d in dets]
    dp_ok = [i for i, p in enumerate(dp) if p.is_valid]
    used_d, out = set(), set()
    for g, gpol in enumerate(gp):
        if not gpol.is_valid:
            continue
        for d in dp_ok:
            if d in used_d:
                continue
            if dp[d].intersection(gpol).area / dp[d].union(gpol).area > iou:
                used_d.add(d), out.add(g)
                break
    return out


class Buckets:
    """Per-bucket sums of per-line figures; every line counts once in each of its bucket families."""

    def __init__(self):
        self.sums: Dict[str, Dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def add(self, meta: dict, **vals: float) -> None:
        for b in ["all", *buckets(meta)]:
            self.sums[b]["n"] += 1
            for k, v in vals.items():
                self.sums[b][k] += v

    def table(self) -> Dict[str, Dict[str, float]]:
        out = {}
        for b, s in self.sums.items():
            n = s["n"]
            out[b] = {"n": int(n), **{k: round(v / n, 4) for k, v in s.items() if k != "n"}}
        return dict(sorted(out.items(), key=lambda kv: (kv[0] != "all", kv[0])))


# --------------------------------------------------------------------------------------------------------- data
def render_data(data: Path, pages: int, lines_per_font: int, vertical_lines: int, seed: int) -> Dict[str, Path]:
    """The independent renderer's pages and rec lines (reused when render.json says the same settings)."""
    fonts = indep_render.available_fonts()
    n_lines = lines_per_font * len(fonts)
    jobs = {"pages": (pages, dict(), indep_render.write_pages),
            "rec_h": (n_lines, dict(min_len=2, max_len=6, vertical_prob=0.0), indep_render.write_lines),
            "rec_v": (vertical_lines, dict(min_len=2, max_len=6, vertical_prob=1.0), indep_render.write_lines)}
    out = {}
    for name, (num, over, write) in jobs.items():
        d = data / name
        cfg = indep_render.RenderConfig(**over)
        key = {"num": num, "seed": seed, "config": json.loads(json.dumps(cfg.__dict__)),
               "fonts": [f.name for f in fonts]}
        stamp = d / "stamp.json"
        if not (stamp.is_file() and json.loads(stamp.read_text()) == key):
            t0 = time.time()
            write(d, num, cfg, seed)
            stamp.write_text(json.dumps(key))
            print(f"rendered {num} {name} in {time.time() - t0:.0f} s -> {d}", flush=True)
        out[name] = d
    return out


def turned(src: Path, dst: Path) -> Path:
    """A copy of a rec line folder with tall crops turned 90 degrees counter-clockwise (the system's rule)."""
    if (dst / "label.txt").is_file():
        return dst
    (dst / "imgs").mkdir(parents=True, exist_ok=True)
    for row in (src / "label.txt").read_text(encoding="utf-8").splitlines():
        rel = row.split("\t")[0]
        img = Image.open(src / rel)
        (img.transpose(Image.Transpose.ROTATE_90) if img.size[1] >= 1.5 * img.size[0] else img).save(dst / rel)
    for f in ("label.txt", "fonts.txt", "lines.jsonl"):
        (dst / f).write_text((src / f).read_text(encoding="utf-8"), encoding="utf-8")
    return dst


def ours_lines(dst: Path, rec_cfg, chars: Sequence[str], num: int) -> Path:
    """The project's generator (synth.LineRenderer with the rec config's Synthetic settings) in the held-out fonts:
    ``num`` lines, fonts drawn per line as its held-out split draws them."""
    fonts = indep_render.available_fonts()
    specs = [FontSpec(f.name, f.name, f.style, "eval", f.path, f.index) for f in fonts]
    s = rec_cfg.Synthetic
    gen = synth.SynthConfig(min_len=s.min_len, max_len=s.max_len, height=s.height, font_size=s.font_size, aug=s.aug,
                            jpeg_quality=s.jpeg_quality, seed=s.seed + 5400, char_freq=s.char_freq,
                            freq_mix=s.freq_mix, mixed_prob=s.mixed_prob, space_prob=s.space_prob)
    key = json.dumps({"num": num, "gen": gen.__dict__, "fonts": [f.name for f in fonts]}, default=str)
    if (dst / "stamp.json").is_file() and (dst / "stamp.json").read_text() == key:
        return dst
    (dst / "imgs").mkdir(parents=True, exist_ok=True)
    with mock.patch.object(synth, "fonts_for", lambda side, *a: list(specs)):
        renderer = synth.LineRenderer(gen, chars, "eval")
        rows = [synth.make_sample(gen, renderer, "heldout", i) for i in range(num)]
    labels, tags = [], []
    for i, (jpg, text, font) in enumerate(rows):
        rel = f"imgs/ours_{i:05d}.jpg"
        (dst / rel).write_bytes(jpg)
        labels.append(f"{rel}\t{text}")
        tags.append(font)
    (dst / "label.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")
    (dst / "fonts.txt").write_text("\n".join(tags) + "\n", encoding="utf-8")
    (dst / "stamp.json").write_text(key)
    return dst


# ------------------------------------------------------------------------------------------------------- scoring
def system_recipe(a) -> OcrSystem:
    opts = [f"Det.config={a.det_config}", f"Det.weights={a.det_weights}",
            "Det.opt=" + json.dumps([*a.det_opt, f"Eval.transform.limit_side_len={a.limit_side_len}",
                                     f"Eval.transform.limit_type={a.limit_type}"]),
            f"Rec.config={a.sys_rec_config}", f"Rec.weights={a.sys_rec_weights}",
            "Rec.opt=" + json.dumps(list(a.sys_rec_opt))]
    cfg = load_config(a.system_config, opts, OcrSystem.Config, translators=OcrSystem.config_translators)
    recipe = OcrSystem(cfg, DistInfo(0, 1, 0))
    recipe.check()
    return recipe


def score_pages(pages: Path, recipe: OcrSystem, with_system: bool) -> dict:
    """Det and (with_system) end-to-end figures, totals and per bucket."""
    metas = [json.loads(r) for r in (pages / "lines.jsonl").read_text(encoding="utf-8").splitlines() if r]
    by_page: Dict[str, List[dict]] = defaultdict(list)
    for m in metas:
        by_page[m["page"]].append(m)
    pipe = recipe.pipeline() if with_system else None
    detect = pipe.detect if with_system else recipe.detector()
    det_metric, det_b, sys_b = DetMetric(), Buckets(), Buckets()
    e2e = {"gt": 0, "pred": 0, "hits": 0, "matched": 0}
    t0 = time.time()
    for row in (pages / "Label.txt").read_text(encoding="utf-8").splitlines():
        rel, lab = row.split("\t")
        gts = json.loads(lab)
        lines = by_page[rel]
        img = cv2.imread(str(pages / rel), cv2.IMREAD_COLOR)
        boxes, _ = detect(img)
        boxes = [np.asarray(b, np.float32).reshape(-1, 2) for b in boxes]
        gpts = [g["points"] for g in gts]
        det_metric.update([[b.tolist() for b in boxes]], [gpts], [[False] * len(gts)])
        found = det_matches(gpts, [b.tolist() for b in boxes])
        for j, m in enumerate(lines):
            det_b.add(m, recall=float(j in found))
        if not with_system:
            continue
        preds = [(ln["points"], ln["transcription"]) for ln in pipe(img, boxes=boxes)]
        pairs = dict((j, i) for i, j in match_lines(preds, [(g["points"], g["transcription"]) for g in gts]))
        e2e["gt"] += len(gts)
        e2e["pred"] += len(preds)
        for j, m in enumerate(lines):
            text = preds[pairs[j]][1] if j in pairs else None
            ned = 1.0 - edit_distance(text, m["text"]) / max(len(text), len(m["text"]), 1) if text is not None else 0.0
            sys_b.add(m, found=float(text is not None), exact=float(text == m["text"]), one_minus_ned_all=ned)
            e2e["matched"] += text is not None
            e2e["hits"] += text == m["text"]
    out = {"det": {**{k: round(v, 4) for k, v in det_metric.get_metric().items()}, "buckets": det_b.table()},
           "sources": dict(recipe.sources), "seconds": round(time.time() - t0, 1)}
    if with_system:
        tab = sys_b.table()
        found = sys_b.sums["all"]["found"]
        out["system"] = {"exact": tab["all"]["exact"], "found": tab["all"]["found"],
                         "precision": round(e2e["hits"] / max(e2e["pred"], 1), 4),
                         "exact_among_found": round(e2e["hits"] / max(found, 1), 4),
                         "one_minus_ned_found": round(_ned_found(sys_b), 4),
                         **e2e, "buckets": tab}
    return out


def _ned_found(b: Buckets) -> float:
    s = b.sums["all"]
    return s["one_minus_ned_all"] / s["found"] if s["found"] else 0.0


def rec_recipe(config: str, weights: str, opts: Sequence[str]) -> OcrRec:
    o = [*opts, *([f"Global.weights={weights}"] if weights else [])]
    cfg = load_config(config, o, OcrRec.Config, translators=OcrRec.config_translators)
    recipe = OcrRec(cfg, DistInfo(0, 1, 0))
    recipe.check()
    return recipe


def score_rec(config: str, weights: str, opts: Sequence[str], sets: Dict[str, Path]) -> dict:
    """The rec recipe's eval on each label folder, per font."""
    out = {}
    model = None
    for name, d in sets.items():
        recipe = rec_recipe(config, weights, [*opts, "Eval.dataset.format=label_file", f"Eval.dataset.data_dir={d}",
                                              f"Eval.dataset.label_file_list=[{d / 'label.txt'}]"])
        if model is None:
            model, src = recipe.load_for_inference()
            out["weights"] = src
        ds = recipe.build_dataset("eval")
        ds.attach_tags((d / "fonts.txt").read_text(encoding="utf-8").split())
        r = evaluate_sets(model, {"": (recipe.eval_loader(ds), ds)}, recipe.charset, lambda v: v, show=False)
        per = r["val"]["per_tag"]
        out[name] = {"acc": round(r["acc"], 4), "one_minus_ned": round(r["norm_edit_dis"], 4),
                     "n": int(r["num_samples"]),
                     "per_font": {f: {"acc": round(v["acc"], 4), "one_minus_ned": round(v["norm_edit_dis"], 4),
                                      "n": int(v["n"])} for f, v in sorted(per.items())}}
        print(f"rec {name}: {json.dumps(out[name])}", flush=True)
    return out


# -------------------------------------------------------------------------------------------------------- report
def machine() -> dict:
    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in subprocess.run(["lscpu"], capture_output=True, text=True)
                   .stdout.splitlines() if ln.startswith("Model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "load_avg": [round(x, 2) for x in os.getloadavg()], "python": platform.python_version(),
            "paddle": paddle.__version__, "pillow": PIL.__version__, "opencv": cv2.__version__,
            "font_packages": indep_render.package_versions()}


def goal_rows(rep: dict) -> List[tuple]:
    rows = []
    det = rep.get("pages", {}).get("det")
    if det:
        b = det["buckets"]
        rows += [("det hmean", det["hmean"], GOALS["det_hmean"]),
                 ("det recall, vertical lines", b.get("vertical", {}).get("recall", 0.0), GOALS["det_recall_vertical"]),
                 ("det recall, text height < 20 px", b.get("height < 20 px", {}).get("recall", 0.0),
                  GOALS["det_recall_small"])]
    if "system" in rep.get("pages", {}):
        rows.append(("system: lines found and read exactly", rep["pages"]["system"]["exact"], GOALS["system_exact"]))
    rec = rep.get("rec")
    if rec:
        for name in ("ours", "indep"):
            if name in rec:
                worst = min(rec[name]["per_font"].items(), key=lambda kv: kv[1]["acc"])
                rows.append((f"rec, lowest font ({name} renderer: {worst[0]})", worst[1]["acc"], GOALS["rec_font_acc"]))
    return rows


def markdown(rep: dict) -> str:
    L = [f"# Generalisation report: {rep['name']}", "", "```bash", rep["command"], "```", "",
         f"Machine: {rep['machine']['cpu']}, load average before {rep['machine']['load_avg']} and after "
         f"{rep.get('load_after')}; paddle {rep['machine']['paddle']}, Pillow {rep['machine']['pillow']}, "
         f"OpenCV {rep['machine']['opencv']}. Held-out font packages (never used for training): "
         + ", ".join(f"`{k}` {v}" for k, v in rep["machine"]["font_packages"].items()) + ".", "",
         "Models: " + ", ".join(f"{k} `{v}`" for k, v in rep["models"].items()), "", "## Goals (issue 54)", "",
         "| figure | measured | goal | met |", "|---|---|---|---|"]
    for name, v, goal in goal_rows(rep):
        L.append(f"| {name} | {v:.3f} | >= {goal:.2f} | {'yes' if v >= goal else '**no**'} |")
    pg = rep.get("pages", {})
    if "det" in pg:
        d = pg["det"]
        L += ["", f"## Det on {rep['data']['pages']} independent pages", "",
              f"P {d['precision']:.3f}, R {d['recall']:.3f}, **hmean {d['hmean']:.3f}** (PaddleOCR's DetMetric, "
              f"IoU > 0.5); det at limit_side_len {rep['limit_side_len']} ({rep['limit_type']}).", ""]
        sysb = pg.get("system", {}).get("buckets", {})
        L += ["| bucket | lines | det recall | system: found | **read exactly** | 1 - NED (all lines) |",
              "|---|---|---|---|---|---|"]
        for b, row in d["buckets"].items():
            s = sysb.get(b, {})
            L.append(f"| {b} | {row['n']} | {row['recall']:.3f} | {s.get('found', float('nan')):.3f} | "
                     f"{s.get('exact', float('nan')):.3f} | {s.get('one_minus_ned_all', float('nan')):.3f} |")
        if "system" in pg:
            s = pg["system"]
            L += ["", f"System: {s['hits']} / {s['gt']} lines found and read exactly (**{s['exact']:.3f}**), "
                  f"precision {s['precision']:.3f}; of the lines found, {s['exact_among_found']:.3f} read exactly, "
                  f"1 - NED of found lines {s['one_minus_ned_found']:.3f}."]
    rec = rep.get("rec")
    if rec:
        sets = [k for k in ("ours", "indep", "indep_vertical") if k in rec]
        fonts = sorted({f for k in sets for f in rec[k]["per_font"]})
        L += ["", "## Rec per held-out font (line accuracy / 1 - NED)", "",
              "ours = the project's generator (synth.LineRenderer) in these fonts; indep = benchmarks/indep_render.py; "
              "indep_vertical = its vertical lines turned as the system turns tall crops (not a goal row).", "",
              "| font | " + " | ".join(sets) + " |", "|---|" + "---|" * len(sets)]
        for f in fonts:
            cells = []
            for k in sets:
                v = rec[k]["per_font"].get(f)
                cells.append(f"{v['acc']:.3f} / {v['one_minus_ned']:.3f} ({v['n']})" if v else "-")
            L.append(f"| {f} | " + " | ".join(cells) + " |")
        L.append("| all | " + " | ".join(f"**{rec[k]['acc']:.3f}** / {rec[k]['one_minus_ned']:.3f} ({rec[k]['n']})"
                                         for k in sets) + " |")
    L += ["", f"Wall time of the scoring: {rep['seconds']} s.", ""]
    return "\n".join(L)


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--name", default="run")
    p.add_argument("--out", default=None, help="report folder (default benchmarks/results/generalisation/<name>/)")
    p.add_argument("--data", default="output/generalisation/data")
    p.add_argument("--pages", type=int, default=200)
    p.add_argument("--lines-per-font", type=int, default=200)
    p.add_argument("--vertical-lines", type=int, default=400)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--system-config", default="recipes/configs/ocr_system.yml")
    p.add_argument("--det-config", default="recipes/configs/ocr_det.yml")
    p.add_argument("--det-weights", default="")
    p.add_argument("--det-opt", nargs="*", default=[])
    p.add_argument("--sys-rec-config", default="recipes/configs/ocr_rec_pages.yml")
    p.add_argument("--sys-rec-weights", default="")
    p.add_argument("--sys-rec-opt", nargs="*", default=[])
    p.add_argument("--rec-config", default="recipes/configs/ocr_rec.yml")
    p.add_argument("--rec-weights", default="")
    p.add_argument("--rec-opt", nargs="*", default=[])
    p.add_argument("--limit-side-len", type=int, default=480)
    p.add_argument("--limit-type", default="max")
    p.add_argument("--skip", default="", help="comma list of det, system, rec")
    a = p.parse_args(argv)
    skip = {s for s in a.skip.split(",") if s}
    bad = skip - {"det", "system", "rec"}
    if bad:
        p.error(f"--skip: unknown {sorted(bad)} (det, system, rec)")
    paddle.set_device("cpu")
    out = Path(a.out or REPO / "benchmarks" / "results" / "generalisation" / a.name)
    t0 = time.time()
    rep = {"name": a.name, "command": "python benchmarks/generalisation.py " + " ".join(sys.argv[1:] if argv is None
                                                                                        else argv),
           "machine": machine(), "limit_side_len": a.limit_side_len, "limit_type": a.limit_type,
           "goals": GOALS, "models": {}, "data": {"pages": a.pages, "lines_per_font": a.lines_per_font,
                                                 "vertical_lines": a.vertical_lines, "seed": a.seed}}
    data = render_data(Path(a.data), a.pages, a.lines_per_font, a.vertical_lines, a.seed)
    rep["data"]["dirs"] = {k: str(v) for k, v in data.items()}
    rep["data"]["lines_on_pages"] = sum(1 for r in (data["pages"] / "lines.jsonl").read_text().splitlines() if r)
    if not {"det", "system"} <= skip:
        recipe = system_recipe(a)
        rep["pages"] = score_pages(data["pages"], recipe, "system" not in skip)
        rep["models"].update(det=rep["pages"]["sources"].get("det_weights", ""),
                             sys_rec=rep["pages"]["sources"].get("rec_weights", ""))
        if "det" in skip:
            rep["pages"].pop("det")
        print("pages:", json.dumps({"det": {k: rep["pages"].get("det", {}).get(k) for k in ("precision", "recall", "hmean")},
                                    "system_exact": rep["pages"].get("system", {}).get("exact")}), flush=True)
    if "rec" not in skip:
        r0 = rec_recipe(a.rec_config, a.rec_weights, a.rec_opt)
        n = a.lines_per_font * len(indep_render.available_fonts())
        ours = ours_lines(Path(a.data) / "rec_ours", r0.cfg, r0.charset.chars, n)
        sets = {"ours": ours, "indep": data["rec_h"], "indep_vertical": turned(data["rec_v"], Path(a.data) / "rec_v_turned")}
        rep["rec"] = score_rec(a.rec_config, a.rec_weights, a.rec_opt, sets)
        rep["models"]["rec"] = rep["rec"].pop("weights")
    rep["seconds"] = round(time.time() - t0, 1)
    rep["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(rep, indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    (out / "report.md").write_text(markdown(rep), encoding="utf-8")
    print(markdown(rep))
    print(f"wrote {out / 'report.md'}")


if __name__ == "__main__":
    main()
