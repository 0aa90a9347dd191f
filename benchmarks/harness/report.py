"""Assemble raw row records into the report: JSON (every raw figure) and a Markdown summary.

Rules applied here:
* speedups are ratios of figures measured in this invocation, on this machine, against the suite's
  baseline row; nothing measured elsewhere is mixed in;
* published (seed) figures sit in their own fields/columns, always labelled ``PUBLISHED``;
* a row whose only change is AMP is not counted as a speedup where AMP is not in effect (CPU):
  its ratio is kept as ``measured_ratio`` with the note "not in effect on CPU".
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

from . import metrics
from .published import EPOCH_SIZES, LABEL, PUBLISHED, published
from .rows import Row

SCHEMA_VERSION = 1
ROW_FIELDS = ("suite", "name", "label", "role", "nproc", "threads", "batch", "accum", "samples_per_step",
              "amp_requested", "amp_in_effect", "counted_as_speedup", "speedup", "measured_ratio", "note",
              "published", "command", "returncode", "elapsed_s", "loadavg_before", "loadavg_after", "figures")
TRAIN_COLUMNS = metrics.COLUMNS + ("projected_epoch_min", "speedup")
NOT_IN_EFFECT = "not in effect on CPU"


# ----------------------------------------------------------------------------- machine
def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine_info() -> dict:
    """Machine, OS, Python, paddle build and device, thread/core counts, git commit."""
    cpu_model = next((ln.split(":", 1)[1].strip() for ln in _read("/proc/cpuinfo").splitlines()
                      if ln.startswith("model name")), platform.processor())
    mem = next((int(ln.split()[1]) // 1024 for ln in _read("/proc/meminfo").splitlines()
                if ln.startswith("MemTotal")), None)
    info = {"platform": platform.platform(), "cpu_model": cpu_model, "logical_cpus": os.cpu_count(),
            "cpus_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "mem_total_mb": mem, "python": sys.version.split()[0]}
    try:
        import paddle

        from paddle_recipes.train.amp import amp_support

        gpus = paddle.device.cuda.device_count() if paddle.is_compiled_with_cuda() else 0
        ok, reason = amp_support("float16")
        info.update(paddle_version=paddle.__version__, paddle_commit=getattr(paddle.version, "commit", None),
                    compiled_with_cuda=paddle.is_compiled_with_cuda(), gpu_count=gpus,
                    device="gpu" if gpus else "cpu", amp_fp16_in_effect=bool(ok), amp_reason=reason,
                    cuda_version=paddle.version.cuda() if paddle.is_compiled_with_cuda() else None)
        if gpus:
            info["gpu_name"] = paddle.device.cuda.get_device_name(0)
    except Exception as e:  # pragma: no cover - broken install is reported, not fatal
        info["paddle_error"] = repr(e)
    try:  # metadata only: importing paddlenlp takes many seconds
        from importlib.metadata import version

        info["paddlenlp_version"] = version("paddlenlp")
    except Exception:
        info["paddlenlp_version"] = None
    try:
        repo = Path(__file__).resolve().parents[2]
        info["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                                            text=True).stdout.strip()
    except OSError:
        info["git_commit"] = None
    return info


# ----------------------------------------------------------------------------- rows
def _amp_in_effect(raw: dict) -> bool:
    if "amp_in_effect" in raw:
        return bool(raw["amp_in_effect"])
    desc = str(raw.get("amp", ""))
    return bool(desc) and "NOT in effect" not in desc and not desc.startswith("AMP off")


def base_row(row: Row, rec: dict) -> dict:
    raw = rec.get("raw") or {}
    out = {"suite": row.suite, "name": row.name, "label": row.label, "role": row.role, "kind": row.kind,
           "amp_only": row.amp_only,
           "nproc": row.nproc, "threads": row.threads, "batch": row.batch, "accum": row.accum,
           "samples_per_step": row.samples_per_step * row.nproc, "amp_requested": row.amp,
           "amp_in_effect": _amp_in_effect(raw) if row.amp and raw else False, "amp_describe": raw.get("amp"),
           "note": row.note, "published": published(row.published) if row.published else None,
           "command": " ".join(rec.get("command", [])), "returncode": rec.get("returncode"),
           "elapsed_s": rec.get("elapsed_s"), "loadavg_before": rec.get("loadavg_before"),
           "loadavg_after": rec.get("loadavg_after"), "error": rec.get("error"),
           "speedup": None, "measured_ratio": None, "counted_as_speedup": False, "figures": None,
           "repeats_ips": rec.get("repeats_ips"), "repeats_loadavg": rec.get("repeats_loadavg")}
    if row.amp and raw and not out["amp_in_effect"]:
        out["note"] = (out["note"] + "; " if out["note"] else "") + (
            f"AMP {NOT_IN_EFFECT} (paddle runs fp32)" if not row.amp_only else f"AMP {NOT_IN_EFFECT}")
    return out


def train_row(row: Row, rec: dict, warmup: int) -> dict:
    """A training-throughput row: window figures, per-step series, projected epoch times."""
    out = base_row(row, rec)
    raw = rec.get("raw")
    if not raw:
        return out
    world = int(raw.get("world_size", row.nproc))
    hist = raw.get("history", [])
    try:
        fig = metrics.window_figures(hist, warmup, world)
    except metrics.HistoryError as e:
        out["error"] = f"{e}"
        return out
    fig["projected_epoch_min"] = metrics.projected_epoch_minutes(fig["ips"], EPOCH_SIZES)
    fig["world_size"] = world
    out["figures"] = fig
    out["series"] = metrics.step_series(hist, world)
    for k in ("model", "params", "size"):
        if k in raw:
            out[k] = raw[k]
    return out


def apply_speedups(rows: list[dict]) -> None:
    """speedup = ips / baseline ips (same suite, same invocation); AMP-only rows without AMP are not counted."""
    base = next((r for r in rows if r["role"] == "baseline" and r["figures"]), None)
    for r in rows:
        if not r["figures"] or base is None:
            continue
        ratio = r["figures"]["ips"] / base["figures"]["ips"] if base["figures"]["ips"] else float("nan")
        r["measured_ratio"] = ratio
        if r["role"] == "baseline":
            r["speedup"], r["counted_as_speedup"] = 1.0, False
        elif r["role"] == "speedup" and not (r["amp_only"] and not r["amp_in_effect"]):
            r["speedup"], r["counted_as_speedup"] = ratio, True
        else:
            r["speedup"], r["counted_as_speedup"] = None, False


# ----------------------------------------------------------------------------- suites
def ocr_suite(rows: list[Row], recs: dict, settings) -> dict:
    out = [train_row(r, recs[r], r.steps_for(settings.steps, settings.warmup)[0]) for r in rows]
    apply_speedups(out)
    best = next((r for r in out if r["name"] == "all" and r["figures"]), None)
    base = next((r for r in out if r["role"] == "baseline" and r["figures"]), None)
    summary = {}
    if best and base:
        summary = {"baseline_epoch_min": base["figures"]["projected_epoch_min"],
                   "all_epoch_min": best["figures"]["projected_epoch_min"],
                   "measured_speedup_all": best["measured_ratio"],
                   "published": published("ocr_epoch")}
    return {"rows": out, "epoch_sizes": EPOCH_SIZES, "config": settings.ocr_config, "summary": summary,
            "steps": settings.steps, "warmup": settings.warmup}


def ddp_suite(rows: list[Row], recs: dict, settings) -> dict:
    out = [train_row(r, recs[r], r.steps_for(settings.steps, settings.warmup)[0]) for r in rows]
    apply_speedups(out)
    base = next((r for r in out if r["role"] == "baseline" and r["figures"]), None)
    scaling = {}
    for r in out:
        if r is base or not r["figures"] or base is None:
            continue
        ratio = r["figures"]["ips"] / base["figures"]["ips"]
        extra = r["nproc"] if r["nproc"] > 1 else r["threads"]
        scaling[r["name"]] = {"label": r["label"], "ips_ratio": ratio, "resources": extra,
                              "efficiency": ratio / extra, "is_ddp": r["nproc"] > 1}
    return {"rows": out, "scaling": scaling, "published": published("ddp_scaling"),
            "note": "fair DDP comparison: same threads per process; '1 process x N threads' is shown for reference"}


def tta_suite(rows: list[Row], recs: dict, settings) -> dict:
    out = []
    for r in rows:
        o = train_row(r, recs[r], 0)
        rec = recs[r]
        evals = [{"step": s["step"], "value": s["value"], "time": s["time"]} for s in rec.get("scalars", [])
                 if s["tag"] == f"eval/{settings.tta_metric}"]
        if rec.get("raw"):
            o["tta"] = metrics.time_to_target(rec["raw"].get("history", []), evals, settings.tta_metric,
                                              settings.tta_target)
        out.append(o)
    base = next((r for r in out if r["role"] == "baseline"), None)
    opt = next((r for r in out if r["role"] == "speedup"), None)
    ratio = None
    if base and opt and base.get("tta", {}).get("reached") and opt.get("tta", {}).get("reached"):
        ratio = base["tta"]["train_seconds"] / opt["tta"]["train_seconds"]
        opt["speedup"], opt["counted_as_speedup"], opt["measured_ratio"] = ratio, True, ratio
        base["speedup"] = 1.0
    return {"rows": out, "metric": settings.tta_metric, "target": settings.tta_target, "epochs": settings.tta_epochs,
            "config": settings.tta_config, "time_ratio": ratio,
            "note": ("train seconds = sum of step times (data wait included, evaluation excluded) until the "
                     "held-out metric first reaches the target; evaluated after every epoch"),
            "published": published("ocr_epoch")}


PUBLISHED_MODEL = {"resnet50": "ResNet50", "ernie_tiny": "BERT-base", "ppyoloe_tiny": "YOLOv3"}


def throughput_suite(rows: list[Row], recs: dict, settings) -> dict:
    out, table = [], []
    models = sorted({r.name.split("/")[0] for r in rows}, key=lambda m: list(PUBLISHED_MODEL).index(m)
                    if m in PUBLISHED_MODEL else 99)
    for m in models:
        mine = [r for r in rows if r.name.startswith(m + "/")]
        train_rows = [train_row(r, recs[r], settings.worker_warmup) for r in mine if "--mode" in r.args
                      and r.args[r.args.index("--mode") + 1] == "train"]
        apply_speedups(train_rows)
        out += train_rows
        entry = {"model": m, "published_model": PUBLISHED_MODEL.get(m),
                 "published_imgs_per_s": PUBLISHED["throughput"]["models"].get(PUBLISHED_MODEL.get(m))}
        for tr in train_rows:
            key = "train_base" if tr["role"] == "baseline" else "train_opt"
            entry[key + "_ips"] = tr["figures"]["ips"] if tr["figures"] else None
            entry.setdefault("description", tr.get("model"))
        if entry.get("train_base_ips") and entry.get("train_opt_ips"):
            entry["train_ratio"] = entry["train_opt_ips"] / entry["train_base_ips"]
        for r in mine:
            if r.args[r.args.index("--mode") + 1] != "infer":
                continue
            o = base_row(r, recs[r])
            raw = recs[r].get("raw") or {}
            if raw:
                o["figures"] = {"infer": raw}
                entry.update(infer_unfused_ips=raw.get("unfused", {}).get("ips"),
                             infer_fused_ips=raw.get("fused", {}).get("ips"),
                             fused_speedup=raw.get("fused_speedup"), conv_bn_pairs=raw.get("conv_bn_pairs"),
                             parity=raw.get("parity"), infer_batch=raw.get("batch"),
                             paddle_inference_ips=raw.get("paddle_inference", {}).get("ips"),
                             inference_speedup=raw.get("inference_speedup"),
                             inference_parity=raw.get("inference_parity"),
                             inference_error=raw.get("inference_error"), inference_note=raw.get("inference_note"))
                entry.setdefault("description", raw.get("model"))
                if raw.get("fused_speedup"):
                    o["speedup"] = o["measured_ratio"] = raw["fused_speedup"]
                    o["counted_as_speedup"] = True
                else:
                    o["note"] = "no conv-BN pairs in this model: fusion not applicable"
            out.append(o)
        table.append(entry)
    return {"rows": out, "table": table, "published": published("throughput"),
            "published_fusion": published("fusion"),
            "note": ("PUBLISHED figures compare two framework versions on a V100; ours compare the same "
                     "framework with/without our optimizations on this machine, at reduced input sizes")}


# ----------------------------------------------------------------------------- report
def build_report(results: dict, machine: dict, settings, argv: list[str], load: dict) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(argv),
        "machine": machine,
        "device": machine.get("device"),
        "threads_per_process_env": "OMP_NUM_THREADS/MKL_NUM_THREADS set per row (see rows[].threads)",
        "amp_in_effect_on_device": machine.get("amp_fp16_in_effect"),
        "settings": {k: v for k, v in vars(settings).items() if k not in ("python",)},
        "published_label": LABEL,
        "load": load,
        "suites": results,
    }


def _f(v, fmt="{:.2f}", none="n/a"):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return none
    return fmt.format(v)


def _load(r: dict) -> str:
    b, a = r.get("loadavg_before"), r.get("loadavg_after")
    return f"{b[0]:.1f} / {a[0]:.1f}" if b and a else "n/a"


def _pub(r: dict) -> str:
    p = r.get("published")
    return p["figure"] if p else ""


def to_markdown(rep: dict) -> str:
    m = rep["machine"]
    lines = [f"# paddle-recipes benchmark report ({rep['created']})", "",
             f"Command: `{rep['command']}`", "",
             f"Machine: {m.get('cpu_model')}, {m.get('logical_cpus')} logical CPUs, {m.get('mem_total_mb')} MB; "
             f"{m.get('platform')}; Python {m.get('python')}; paddle {m.get('paddle_version')} "
             f"(device **{m.get('device')}**, CUDA build: {m.get('compiled_with_cuda')}); "
             f"AMP fp16 in effect on this device: **{m.get('amp_fp16_in_effect')}**.", "",
             f"Load average (1/5/15 min) before: {rep['load'].get('before')}, after: {rep['load'].get('after')} "
             "(the machine was shared; per-row load is in the JSON).", "",
             f"Columns marked **{LABEL}** quote the seed texts (V100 GPUs); every other figure was measured "
             "in this run, on this machine.", ""]
    s = rep["suites"]
    if "ocr" in s:
        o = s["ocr"]
        sizes = list(o["epoch_sizes"])
        lines += ["## OCR recognition ablation (recipes/ocr_rec.py)", "",
                  f"Config `{os.path.relpath(o['config'])}`; {o['steps']} timed + {o['warmup']} warm-up steps of the "
                  f"baseline batch ({o['rows'][0]['batch']}) per process; other rows process the same samples per "
                  "process (batch 192 / accumulation rows take a third of the steps). ips counts all processes.", "",
                  "| row | procs x threads | batch x accum | ips (samples/s) | reader_cost (s) | batch_cost (s) | "
                  "data wait | peak mem (MB) | " + " | ".join(f"epoch {k} ({o['epoch_sizes'][k]}) min" for k in sizes)
                  + f" | speedup vs baseline | load 1-min before/after | {LABEL} |",
                  "|---|---|---|---|---|---|---|---|" + "---|" * len(sizes) + "---|---|---|"]
        for r in o["rows"]:
            f = r["figures"] or {}
            ep = f.get("projected_epoch_min") or {}
            sp = (_f(r["speedup"], "x{:.2f}") + (f" ({r['note']})" if r["note"] else "")) \
                if r["counted_as_speedup"] or r["role"] == "baseline" else (
                f"not counted (measured x{r['measured_ratio']:.2f}; {r['note']})" if r["measured_ratio"] else r["note"])
            if r["role"] == "cost" and r["measured_ratio"]:
                sp = f"cost: x{r['measured_ratio']:.2f}"
            if r.get("error") and not f:
                sp = "FAILED: " + r["error"].splitlines()[0]
            lines.append(f"| {r['label']} | {r['nproc']} x {r['threads']} | {r['batch']} x {r['accum']} | "
                         f"{_f(f.get('ips'), '{:.1f}')} | {_f(f.get('reader_cost'), '{:.4f}')} | "
                         f"{_f(f.get('batch_cost'), '{:.3f}')} | {_f(f.get('reader_fraction'), '{:.1%}')} | "
                         f"{_f(f.get('peak_mem_mb'), '{:.0f}')} | "
                         + " | ".join(_f(ep.get(k), '{:.1f}') for k in sizes) + f" | {sp} | {_load(r)} | {_pub(r)} |")
        reps = [r for r in o["rows"] if r.get("repeats_ips")]
        if reps:
            lines += ["", "Repeats (interleaved; the table shows the median run): " + "; ".join(
                f"{r['name']} " + "/".join(_f(v, "{:.1f}") for v in r["repeats_ips"]) for r in reps) + " samples/s."]
        if o.get("summary"):
            sm = o["summary"]
            k = sizes[0]
            lines += ["", f"Projected {k} epoch: baseline {_f(sm['baseline_epoch_min'].get(k), '{:.1f}')} min -> "
                      f"all together {_f(sm['all_epoch_min'].get(k), '{:.1f}')} min (measured x"
                      f"{_f(sm['measured_speedup_all'])}) on this machine; {LABEL}: 45 -> 18 min (x2.5) "
                      "on one V100 + 4-card DDP."]
        lines.append("")
    if "tta" in s:
        t = s["tta"]
        lines += ["## Time to accuracy", "",
                  f"Target: held-out `{t['metric']}` >= {t['target']} (config `{os.path.relpath(t['config'])}`, "
                  f"eval after each epoch, at most {t['epochs']} epochs). {t['note']}.", "",
                  "| run | procs x threads | reached | at step | train time (s) | wall time incl. eval (s) | "
                  "best | ratio |", "|---|---|---|---|---|---|---|---|"]
        for r in t["rows"]:
            tt = r.get("tta") or {}
            lines.append(f"| {r['label']} | {r['nproc']} x {r['threads']} | {tt.get('reached')} | "
                         f"{_f(tt.get('step'), '{}')} | {_f(tt.get('train_seconds'), '{:.1f}')} | "
                         f"{_f(tt.get('wall_seconds'), '{:.1f}')} | {_f(tt.get('best'), '{:.3f}')} | "
                         f"{_f(r.get('speedup'), 'x{:.2f}')} |" + (f" {r['note']}" if r.get("note") else ""))
        lines += ["", f"Time-to-accuracy ratio (baseline / optimized): **{_f(t['time_ratio'], 'x{:.2f}')}**; "
                  f"{LABEL}: 45 -> 18 min per epoch (x2.5).", ""]
    if "throughput" in s:
        t = s["throughput"]
        lines += ["## Throughput (seed 000 §2.1 style)", "", t["note"] + ".", "",
                  "| model | train ips base | train ips +AMP+workers | ratio | infer ips unfused | infer ips conv-BN "
                  "folded | folded/unfused | parity max abs diff (rel) | Paddle Inference ips (IR fusion) | "
                  f"PI/unfused | {LABEL} imgs/s |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for e in t["table"]:
            par = e.get("parity") or {}
            pub = e.get("published_imgs_per_s")
            lines.append(f"| {e['model']} | {_f(e.get('train_base_ips'), '{:.2f}')} | "
                         f"{_f(e.get('train_opt_ips'), '{:.2f}')} | {_f(e.get('train_ratio'), 'x{:.2f}')} | "
                         f"{_f(e.get('infer_unfused_ips'), '{:.1f}')} | {_f(e.get('infer_fused_ips'), '{:.1f}')} | "
                         f"{_f(e.get('fused_speedup'), 'x{:.2f}')} | "
                         f"{_f(par.get('max_abs_diff'), '{:.1e}')} ({_f(par.get('max_rel_diff'), '{:.1e}')}) | "
                         f"{_f(e.get('paddle_inference_ips'), '{:.1f}')} | {_f(e.get('inference_speedup'), 'x{:.2f}')} | "
                         + (f"{e['published_model']} {pub[0]} -> {pub[1]} (x{pub[1] / pub[0]:.2f})" if pub else "")
                         + " |")
        lines += ["", "Inference: batch " + ", ".join(f"{e['model']} {e.get('infer_batch')}" for e in t["table"])
                  + "; eval mode; BN statistics randomized before folding; the three variants are timed "
                  "alternately in one process. Paddle Inference runs the exported unfused model with its IR "
                  "passes (conv+BN(+activation) fusion, oneDNN on CPU), so its ratio includes more than fusion."]
        for e in t["table"]:
            if e.get("inference_error") or e.get("inference_note"):
                lines.append(f"- {e['model']}: Paddle Inference "
                             + (f"failed: {e['inference_error']}" if e.get("inference_error") else e["inference_note"]))
        lines += ["", "Models: " + "; ".join(f"{e['model']}: {e.get('description')}" for e in t["table"]) + ".",
                  f"{LABEL} fusion: {t['published_fusion']['figure']}.", ""]
    if "ddp" in s:
        d = s["ddp"]
        lines += ["## DDP scaling", "", d["note"] + ".", "",
                  "| run | ips (samples/s) | ratio vs 1 x 1 | efficiency | data wait | load 1-min before/after |",
                  "|---|---|---|---|---|---|"]
        for r in d["rows"]:
            f = r["figures"] or {}
            sc = d["scaling"].get(r["name"], {"ips_ratio": 1.0, "efficiency": 1.0} if r["role"] == "baseline" else {})
            lines.append(f"| {r['label']} | {_f(f.get('ips'), '{:.1f}')} | {_f(sc.get('ips_ratio'), 'x{:.2f}')} | "
                         f"{_f(sc.get('efficiency'), '{:.0%}')} | {_f(f.get('reader_fraction'), '{:.1%}')} | {_load(r)} |")
        reps = [r for r in d["rows"] if r.get("repeats_ips")]
        if reps:
            lines += ["", "Repeats (interleaved; the table shows the median run): " + "; ".join(
                f"{r['name']} " + "/".join(_f(v, "{:.1f}") for v in r["repeats_ips"]) for r in reps) + " samples/s."]
        lines += ["", f"{LABEL}: {d['published']['figure']}.", ""]
    lines += ["Figures: `speedups.png` (measured vs published), `ips_over_steps.png`, `loss_vs_time.png`.", ""]
    return "\n".join(lines)


def write(rep: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    j, md = out_dir / "report.json", out_dir / "report.md"
    j.write_text(json.dumps(rep, indent=1, ensure_ascii=False, default=float))
    md.write_text(to_markdown(rep))
    return j, md
