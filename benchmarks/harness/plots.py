"""PNG figures of a report (matplotlib, Agg backend): speedups, ips over steps, loss vs wall time."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .published import LABEL  # noqa: E402


def _bars(rep: dict) -> list[tuple[str, float | None, float | None, str]]:
    """(label, measured ratio, published ratio, kind) for every comparable figure of the report."""
    out = []
    s = rep["suites"]
    for r in s.get("ocr", {}).get("rows", []):
        if r["role"] == "baseline" or r["measured_ratio"] is None:
            continue
        pub = (r.get("published") or {}).get("value")
        kind = "counted" if r["counted_as_speedup"] else ("cost" if r["role"] == "cost" else "not counted")
        out.append((f"ocr: {r['name']}", r["measured_ratio"], pub, kind))
    for name, sc in s.get("ddp", {}).get("scaling", {}).items():
        pub = s["ddp"]["published"]["value"] if sc["is_ddp"] else None
        out.append((f"ddp: {name}", sc["ips_ratio"], pub, "counted" if sc["is_ddp"] else "reference"))
    t = s.get("tta")
    if t and t.get("time_ratio"):
        out.append(("time-to-acc", t["time_ratio"], t["published"]["value"], "counted"))
    for e in s.get("throughput", {}).get("table", []):
        pub = e.get("published_imgs_per_s")
        if e.get("train_ratio"):
            out.append((f"{e['model']} train", e["train_ratio"], pub[1] / pub[0] if pub else None, "counted"))
        if e.get("fused_speedup"):
            out.append((f"{e['model']} fused infer", e["fused_speedup"],
                        s["throughput"]["published_fusion"]["value"], "counted"))
        if e.get("inference_speedup"):  # IR passes + oneDNN + no dygraph overhead: not fusion alone
            out.append((f"{e['model']} Paddle Inference", e["inference_speedup"], None, "reference"))
    return out


COLORS = {"counted": "tab:blue", "not counted": "lightgray", "cost": "tab:orange", "reference": "tab:green"}


def speedup_chart(rep: dict, path: Path) -> Path:
    bars = _bars(rep)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(bars) + 2), 4.5))
    xs = range(len(bars))
    w = 0.4
    for i, (label, meas, pub, kind) in enumerate(bars):
        ax.bar(i - w / 2, meas, w, color=COLORS[kind], edgecolor="black", label=f"measured ({kind})")
        if pub:
            ax.bar(i + w / 2, pub, w, color="white", edgecolor="tab:red", hatch="//", label=LABEL)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([b[0] for b in bars], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("speedup vs baseline (x)")
    dev = rep["machine"].get("device")
    ax.set_title(f"Measured on this machine ({dev}, {rep['machine'].get('logical_cpus')} CPUs) vs published (V100)",
                 fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def ips_chart(rep: dict, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    for suite in ("ocr", "ddp"):
        for r in rep["suites"].get(suite, {}).get("rows", []):
            ser = [p for p in r.get("series") or [] if p.get("ips")]
            if ser and not (suite == "ddp" and r["name"] in ("p1_t1",)):
                ax.plot([p["step"] for p in ser], [p["ips"] for p in ser], marker=".", lw=1,
                        label=f"{suite}: {r['name']}")
    ax.set_xlabel("optimizer step (warm-up steps included, excluded from the tables)")
    ax.set_ylabel("ips (samples/s, all processes)")
    ax.set_title("Throughput per step", fontsize=9)
    if ax.lines:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def loss_chart(rep: dict, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4))
    t = rep["suites"].get("tta")
    rows = t["rows"] if t else rep["suites"].get("ocr", {}).get("rows", [])
    ax2 = None
    for r in rows:
        ser = [p for p in r.get("series") or [] if p.get("loss") is not None]
        if ser:
            line, = ax.plot([p["t"] for p in ser], [p["loss"] for p in ser], lw=1, label=f"loss: {r['name']}")
            curve = (r.get("tta") or {}).get("curve") or []
            if curve:
                ax2 = ax2 or ax.twinx()
                ax2.plot([c["wall_s"] for c in curve], [c["value"] for c in curve], "--o", ms=3,
                         color=line.get_color(), label=f"eval {t['metric']}: {r['name']}")
    if ax2 is not None:
        ax2.axhline(t["target"], color="gray", lw=0.8, ls=":")
        ax2.set_ylabel(f"held-out {t['metric']} (target {t['target']})")
        ax2.legend(fontsize=7, loc="center right")
    ax.set_xlabel("wall time (s, evaluation included)")
    ax.set_ylabel("training loss")
    ax.set_title("Loss vs wall time" + (" (time-to-accuracy runs)" if t else ""), fontsize=9)
    if ax.lines:
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_all(rep: dict, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    return [speedup_chart(rep, out_dir / "speedups.png"), ips_chart(rep, out_dir / "ips_over_steps.png"),
            loss_chart(rep, out_dir / "loss_vs_time.png")]
