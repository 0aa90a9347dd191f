"""ERNIE recipe phases that are task glue: labelled subsets, the INT8 (PTQ) phase, the summary line."""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
import paddle

from ...checkpoint.serialization import load_weights_file
from .ptq import quantize_ptq
from . import int8 as int8_pack
from .multitask import IGNORE_INDEX, evaluate_tasks, make_batch, predict
from .synth_tasks import build_arrays, make_task_specs
from .vocab import load_tokenizer
from ...assets import resolve_path

logger = logging.getLogger("ernie_multitask")


def labeled_subset(arrays: dict, n: int, mask_rest: bool) -> dict:
    """First n examples per task (mask_rest=False) or all examples with labels after n masked out."""
    out = {}
    for t, a in arrays.items():
        if not mask_rest:
            out[t] = {k: v[:n] for k, v in a.items()}
        else:
            labels = a["labels"].copy()
            labels[n:] = IGNORE_INDEX
            out[t] = {**a, "labels": labels}
    return out


def quant_phase(cfg, student, build_student, train_arrays, eval_arrays, kinds, specs) -> dict:
    """PTQ the student, write the int8 pack, reload it into a fresh structure, measure."""
    out_dir = Path(cfg.Global.output_dir) / "quant"
    out_dir.mkdir(parents=True, exist_ok=True)
    student.eval()
    fp32_path = out_dir / "student_fp32.pdparams"
    paddle.save(student.state_dict(), str(fp32_path))
    k = cfg.Quant.calib_batches_per_task
    calib = [make_batch(train_arrays[s.name], np.arange(i * 32, (i + 1) * 32) % len(train_arrays[s.name]["labels"]),
                        s.name) for i in range(k) for s in specs]

    def fwd(m, b):
        return m(b["input_ids"], b["token_type_ids"], task=b["task"])

    qmodel = quantize_ptq(student, calib, forward_fn=fwd)
    pack_path = out_dir / "student_int8.npz"
    info = int8_pack.save_int8(qmodel, pack_path, cfg.Quant.min_elems)
    # The deployed INT8 model is what the file holds: rebuild the structure, load the pack.
    fresh = build_student()
    fresh.eval()
    structure = quantize_ptq(fresh, calib[: len(specs)], forward_fn=fwd)
    int8_model = int8_pack.load_int8(structure, pack_path)
    fp32_m = evaluate_tasks(student, eval_arrays, kinds, cfg.Quant.eval_batch_size)
    int8_m = evaluate_tasks(int8_model, eval_arrays, kinds, cfg.Quant.eval_batch_size)
    agree, total = 0, 0
    for s in specs:
        a = predict(student, eval_arrays[s.name], s.name, cfg.Quant.eval_batch_size)
        b = predict(int8_model, eval_arrays[s.name], s.name, cfg.Quant.eval_batch_size)
        valid = eval_arrays[s.name]["labels"] != IGNORE_INDEX  # token tasks: labelled tokens only
        agree += int((a == b)[valid].sum())
        total += int(valid.sum())
    fp32_bytes = fp32_path.stat().st_size
    res = {"fp32_file": str(fp32_path), "fp32_bytes": fp32_bytes, "int8_file": str(pack_path),
           "int8_bytes": info["bytes"], "size_ratio": info["bytes"] / fp32_bytes,
           "size_reduction_pct": 100.0 * (1 - info["bytes"] / fp32_bytes), "pack_counts": info["counts"],
           "prediction_agreement": agree / max(total, 1), "fp32_avg_score": fp32_m["avg_score"],
           "int8_avg_score": int8_m["avg_score"], "accuracy_delta": int8_m["avg_score"] - fp32_m["avg_score"],
           "int8_per_task": {k: v for k, v in int8_m.items() if k != "avg_score"}}
    logger.info("[quant] int8 %d B / fp32 %d B = %.3f (-%.1f%%), agreement %.4f, avg_score fp32 %.4f -> int8 %.4f",
                res["int8_bytes"], fp32_bytes, res["size_ratio"], res["size_reduction_pct"],
                res["prediction_agreement"], res["fp32_avg_score"], res["int8_avg_score"])
    return res


def summary_line(report: dict) -> str:
    parts = []
    for k in ("teacher", "student_alone", "distill"):
        if k in report:
            parts.append(f"{k} avg_score {report[k]['avg_score']:.4f}")
    if "quant" in report:
        q = report["quant"]
        parts.append(f"int8 size {q['size_ratio']:.3f}x fp32, agreement {q['prediction_agreement']:.4f}, "
                     f"acc delta {q['accuracy_delta']:+.4f}")
    return "; ".join(parts)


def load_phase_model(model, path, phase: str, needs: str):
    """`model` with the weights another phase saved at `path`; a missing file is a one-line error."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"phase '{phase}' needs phase '{needs}' first ({path} missing)")
    model.set_state_dict(load_weights_file(path))
    return model


def write_report(report: dict, out: Path, info) -> None:
    """Per-rank parameter checksums (DDP equality) and, on rank 0, report.json + the summary line."""
    sums = {k: report[k]["param_checksum"] for k in ("teacher", "student_alone", "distill") if k in report}
    report[f"rank{info.rank}_checksums"] = sums
    (out / f"checksums_rank{info.rank}.json").write_text(json.dumps(sums))
    if info.is_main:
        if "student_alone" in report and "distill" in report:
            report["distill_gain"] = report["distill"]["avg_score"] - report["student_alone"]["avg_score"]
        (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
        logger.info("summary: %s", summary_line(report))

def build_task_data(data_cfg, max_len: int):
    """(tokenizer, task specs, train arrays, eval arrays) of the synthetic tasks of a `Data:` section."""
    d, t0 = data_cfg, time.time()

    tok = load_tokenizer(resolve_path(d.vocab) if d.vocab else None)
    specs = make_task_specs(d.num_tasks, d.base_seed, d.train_size, d.eval_size)
    train_arrays, eval_arrays = build_arrays(specs, tok, "train", max_len), build_arrays(specs, tok, "eval", max_len)
    logger.info("built %d synthetic tasks (%d train / %d eval each) in %.1fs: %s", len(specs), d.train_size,
                d.eval_size, time.time() - t0, ", ".join(f"{s.name}({s.kind},{s.num_labels})" for s in specs))
    return tok, specs, train_arrays, eval_arrays


def student_sets(train_arrays: dict, n_labeled: int) -> tuple[dict, dict]:
    """(student-alone train set, distillation transfer set): with n_labeled > 0 the first keeps only the first
    n labelled examples per task, the second keeps every text with the labels after n masked."""
    if n_labeled <= 0:
        return train_arrays, train_arrays
    return labeled_subset(train_arrays, n_labeled, mask_rest=False), labeled_subset(train_arrays, n_labeled, mask_rest=True)
