"""ERNIE 3.0-style multi-task training -> knowledge distillation -> INT8 (PTQ) export.

    python recipes/ernie_multitask.py -c recipes/configs/ernie_multitask.yml
    python -m paddle.distributed.launch --nproc_per_node 2 recipes/ernie_multitask.py \
        -c recipes/configs/ernie_multitask_16tasks.yml -o Train.epochs=2

Phases (Global.phases, in order):
  teacher  - shared ERNIE encoder + one head per task, trained on all labelled train data;
  student  - the smaller student trained alone (baseline, same init/data/steps as "distill");
  distill  - the same student init trained with the teacher (paddle_recipes.distill);
  quant    - PTQ (export.quantize_ptq, AbsmaxObserver) of the distilled student, saved as an
             int8 weight pack; size ratio, fp32/int8 agreement and accuracy delta are measured.
Data.student_labeled = N > 0: the student phases see labels for only the first N train examples
per task; "distill" still sees every train text (unlabelled transfer set, KD term only).
Everything is random-init on the embedded synthetic Chinese tasks: no download.
Outputs (rank 0): <output_dir>/{teacher,student,distill}/model.pdparams, quant/student_int8.npz,
report.json (all figures), config.yml.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # `python recipes/ernie_multitask.py` from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import paddle

from paddle_recipes import distributed as dist_utils
from paddle_recipes.accumulate import GradAccumulator
from paddle_recipes.amp import Amp, AmpConfig
from paddle_recipes.cli import exit_on_user_error, run_recipe
from paddle_recipes.config import to_dict
from paddle_recipes.distill import DistillCallback, DistillLoss, build_temperature, make_distill_step
from paddle_recipes.export import quantize_ptq
from paddle_recipes.meters import StepTimer
from paddle_recipes.trainer import Trainer
from paddle_recipes.tasks.nlp import int8 as int8_pack
from paddle_recipes.tasks.nlp.multitask import (IGNORE_INDEX, MultiTaskLoader, MultiTaskModel, TaskSampler, build_ernie,
                                                evaluate_tasks, make_batch, make_multitask_step, predict)
from paddle_recipes.tasks.nlp.synth_tasks import build_arrays, make_task_specs
from paddle_recipes.tasks.nlp.vocab import load_tokenizer

logger = logging.getLogger("ernie_multitask")
PHASES = ("teacher", "student", "distill", "quant")


# ----------------------------------------------------------------------------- config
@dataclass
class GlobalCfg:
    seed: int = 42
    output_dir: str = "output/ernie_multitask"
    device: str = ""                    # "" = GPU of this rank if any, else CPU
    phases: list[str] = field(default_factory=lambda: list(PHASES))
    log_every: int = 20                 # optimizer steps between log lines
    save_every_epochs: int = 1          # Trainer checkpoints (0 = none; the final model is always saved)


@dataclass
class EncoderCfg:
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 2
    intermediate_size: int = 0          # 0 = 4 * hidden_size
    dropout: float = 0.1


@dataclass
class ArchitectureCfg:
    teacher: EncoderCfg = field(default_factory=lambda: EncoderCfg(hidden_size=128, num_layers=4, num_heads=4))
    student: EncoderCfg = field(default_factory=lambda: EncoderCfg(hidden_size=64, num_layers=1, num_heads=2))
    max_len: int = 32                   # tokens incl. [CLS]/[SEP]


@dataclass
class DataCfg:
    num_tasks: int = 16                 # 1..16 synthetic tasks
    train_size: int = 2000              # examples per task
    eval_size: int = 400                # held-out examples per task
    base_seed: int = 0
    vocab: str = ""                     # "" = datasets/nlp/vocab.txt (built if missing)
    student_labeled: int = 0            # >0: student phases see labels of only this many examples per task


@dataclass
class SamplingCfg:
    strategy: str = "temperature"       # proportional | temperature | round_robin
    temperature: float = 2.0            # p_i ~ n_i^(1/T) for "temperature"


@dataclass
class TrainCfg:
    batch_size: int = 32                # per process
    epochs: int = 3
    steps_per_epoch: int = 200          # micro-batches per epoch (each one task)
    accumulate_steps: int = 1
    eval_every_epochs: int = 1
    loss_weights: dict[str, float] = field(default_factory=dict)  # {task name: weight}, default 1.0
    sampling: SamplingCfg = field(default_factory=SamplingCfg)
    amp: AmpConfig = field(default_factory=AmpConfig)


@dataclass
class OptimizerCfg:
    lr: float = 2e-3
    weight_decay: float = 0.01
    warmup_steps: int = 50              # optimizer steps of linear warmup, then cosine decay to 0


@dataclass
class TemperatureCfg:
    schedule: str = "cosine"            # constant | linear | cosine | entropy
    t: float = 4.0                      # constant
    t_start: float = 8.0                # linear / cosine
    t_end: float = 2.0
    t_min: float = 1.0                  # entropy
    t_max: float = 4.0


@dataclass
class DistillCfg:
    alpha: float = 0.7                  # KD weight; 1 - alpha on the hard loss
    temperature: TemperatureCfg = field(default_factory=TemperatureCfg)
    hidden_weight: float = 0.0          # needs equal teacher/student hidden sizes (no projection in DDP)
    attn_weight: float = 0.0
    teacher_path: str = ""              # when phase "teacher" is skipped; "" = <output_dir>/teacher/model.pdparams


@dataclass
class QuantCfg:
    calib_batches_per_task: int = 2
    min_elems: int = 1024               # smaller non-PTQ tensors stay fp32 in the pack
    eval_batch_size: int = 256


@dataclass
class RecipeConfig:
    Global: GlobalCfg = field(default_factory=GlobalCfg)
    Architecture: ArchitectureCfg = field(default_factory=ArchitectureCfg)
    Data: DataCfg = field(default_factory=DataCfg)
    Train: TrainCfg = field(default_factory=TrainCfg)
    Optimizer: OptimizerCfg = field(default_factory=OptimizerCfg)
    Distill: DistillCfg = field(default_factory=DistillCfg)
    Quant: QuantCfg = field(default_factory=QuantCfg)


def check_config(cfg: RecipeConfig) -> None:
    bad = [p for p in cfg.Global.phases if p not in PHASES]
    if bad:
        raise ValueError(f"Global.phases: unknown {bad}; choose from {list(PHASES)}")
    if cfg.Train.sampling.strategy not in TaskSampler.STRATEGIES:
        raise ValueError(f"Train.sampling.strategy '{cfg.Train.sampling.strategy}' not in {TaskSampler.STRATEGIES}")
    if cfg.Distill.hidden_weight > 0 and cfg.Architecture.teacher.hidden_size != cfg.Architecture.student.hidden_size:
        raise ValueError("Distill.hidden_weight > 0 needs Architecture.teacher.hidden_size == student.hidden_size")


# ----------------------------------------------------------------------------- building
def build_model(enc: EncoderCfg, specs, vocab_size: int, max_len: int, seed: int) -> MultiTaskModel:
    paddle.seed(seed)  # same seed -> identical init for "student" and "distill"
    encoder = build_ernie(vocab_size, enc.hidden_size, enc.num_layers, enc.num_heads,
                          enc.intermediate_size or None, max_len=max(64, max_len), dropout=enc.dropout)
    return MultiTaskModel(encoder, [(s.name, s.kind, s.num_labels) for s in specs], dropout=enc.dropout)


def n_params(model) -> int:
    return int(sum(int(np.prod(p.shape)) for p in model.parameters()))


def param_checksum(model) -> float:
    return float(sum(float(p.astype("float64").abs().sum()) for p in dist_utils.unwrap(model).parameters()))


def train_phase(name: str, cfg: RecipeConfig, model, train_arrays: dict, eval_arrays: dict, kinds: dict,
                info, step_fn, callbacks=()):
    """Train `model` with the Trainer (AMP, accumulation, DDP, eval per epoch); returns (model, metrics)."""
    out_dir = Path(cfg.Global.output_dir) / name
    tr, oc = cfg.Train, cfg.Optimizer
    total = max(1, tr.epochs * tr.steps_per_epoch // tr.accumulate_steps)
    sched = paddle.optimizer.lr.CosineAnnealingDecay(oc.lr, T_max=max(1, total - oc.warmup_steps))
    if oc.warmup_steps > 0:
        sched = paddle.optimizer.lr.LinearWarmup(sched, oc.warmup_steps, 0.0, oc.lr)
    decay = [p.name for n, p in model.named_parameters() if not any(k in n for k in ("bias", "norm"))]
    opt = paddle.optimizer.AdamW(sched, parameters=model.parameters(), weight_decay=oc.weight_decay,
                                 apply_decay_param_fun=lambda n: n in decay, grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0))
    amp = Amp(tr.amp)
    model, opt = amp.prepare(model, opt)
    model = dist_utils.wrap_model(model, info)
    sampler = TaskSampler({t: len(a["labels"]) for t, a in train_arrays.items()}, tr.sampling.strategy,
                          tr.sampling.temperature, seed=cfg.Global.seed)
    loader = MultiTaskLoader(train_arrays, tr.batch_size, sampler, tr.steps_per_epoch, info=info)
    if info.is_main:
        probs = sampler.probabilities()
        logger.info("[%s] task sampling %s: %s", name, tr.sampling.strategy,
                    ", ".join(f"{t}={p:.3f}" for t, p in probs.items()))

    def eval_fn(m):
        return evaluate_tasks(m, eval_arrays, kinds, cfg.Quant.eval_batch_size)

    trainer = Trainer(model, opt, step_fn, loader, lr_scheduler=sched, amp=amp,
                      accumulator=GradAccumulator(tr.accumulate_steps), callbacks=list(callbacks),
                      epochs=tr.epochs, log_every=cfg.Global.log_every, output_dir=str(out_dir),
                      eval_fn=eval_fn, eval_every_epochs=tr.eval_every_epochs,
                      save_every_epochs=cfg.Global.save_every_epochs, dist_info=info,
                      main_metric="avg_score", timer=StepTimer(total_steps=total), config=cfg,
                      batch_size_fn=lambda b: int(b["input_ids"].shape[0]))
    t0 = time.time()
    metrics = trainer.fit()
    if not metrics:
        metrics = trainer.evaluate()
    net = dist_utils.unwrap(model)
    if info.is_main:
        out_dir.mkdir(parents=True, exist_ok=True)
        paddle.save(net.state_dict(), str(out_dir / "model.pdparams"))
    metrics = dict(metrics)
    metrics["train_seconds"] = round(time.time() - t0, 2)
    metrics["param_checksum"] = param_checksum(net)
    logger.info("[%s] done in %.1fs: avg_score %.4f", name, metrics["train_seconds"], metrics["avg_score"])
    return net, metrics


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


def quant_phase(cfg: RecipeConfig, student, build_student, train_arrays, eval_arrays, kinds, specs) -> dict:
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


# ----------------------------------------------------------------------------- main
def train(cfg: RecipeConfig, info) -> dict:
    """Teacher -> student alone -> distilled student -> INT8, as listed in Global.phases."""
    out = Path(cfg.Global.output_dir)
    tok = load_tokenizer(cfg.Data.vocab or None)
    specs = make_task_specs(cfg.Data.num_tasks, cfg.Data.base_seed, cfg.Data.train_size, cfg.Data.eval_size)
    kinds = {s.name: s.kind for s in specs}
    t0 = time.time()
    train_arrays = build_arrays(specs, tok, "train", cfg.Architecture.max_len)
    eval_arrays = build_arrays(specs, tok, "eval", cfg.Architecture.max_len)
    logger.info("built %d synthetic tasks (%d train / %d eval each) in %.1fs: %s", len(specs), cfg.Data.train_size,
                cfg.Data.eval_size, time.time() - t0, ", ".join(f"{s.name}({s.kind},{s.num_labels})" for s in specs))
    unknown = sorted(set(cfg.Train.loss_weights) - set(kinds))
    if unknown:
        raise ValueError(f"Train.loss_weights: unknown tasks {unknown}; tasks are {sorted(kinds)}")

    vocab_size = len(tok)
    arch = cfg.Architecture
    report = {"config": to_dict(cfg), "world_size": info.world_size, "tasks": {s.name: s.kind for s in specs}}
    base_step = make_multitask_step(cfg.Train.loss_weights)
    n_lab = cfg.Data.student_labeled
    student_train = labeled_subset(train_arrays, n_lab, mask_rest=False) if n_lab > 0 else train_arrays
    transfer = labeled_subset(train_arrays, n_lab, mask_rest=True) if n_lab > 0 else train_arrays

    def build_student():
        return build_model(arch.student, specs, vocab_size, arch.max_len, cfg.Global.seed + 1)

    teacher = None
    if "teacher" in cfg.Global.phases:
        teacher = build_model(arch.teacher, specs, vocab_size, arch.max_len, cfg.Global.seed)
        report["teacher_params"] = n_params(teacher)
        teacher, report["teacher"] = train_phase("teacher", cfg, teacher, train_arrays, eval_arrays, kinds, info, base_step)
    if "student" in cfg.Global.phases:
        student = build_student()
        report["student_params"] = n_params(student)
        _, report["student_alone"] = train_phase("student", cfg, student, student_train, eval_arrays, kinds, info, base_step)
    distilled = None
    if "distill" in cfg.Global.phases:
        if teacher is None:
            path = Path(cfg.Distill.teacher_path) if cfg.Distill.teacher_path else out / "teacher" / "model.pdparams"
            if not path.is_file():
                raise FileNotFoundError(f"phase 'distill' needs a teacher: run phase 'teacher' first ({path} missing)")
            teacher = build_model(arch.teacher, specs, vocab_size, arch.max_len, cfg.Global.seed)
            teacher.set_state_dict(paddle.load(str(path)))
        dc = cfg.Distill
        tc = dc.temperature
        t_kwargs = {"constant": {"t": tc.t}, "linear": {"t_start": tc.t_start, "t_end": tc.t_end},
                    "cosine": {"t_start": tc.t_start, "t_end": tc.t_end},
                    "entropy": {"t_min": tc.t_min, "t_max": tc.t_max}}.get(tc.schedule, {})
        loss = DistillLoss(build_temperature(tc.schedule, **t_kwargs), alpha=dc.alpha,
                           hidden_weight=dc.hidden_weight, attn_weight=dc.attn_weight)
        with_feats = dc.hidden_weight > 0 or dc.attn_weight > 0
        feat_step = make_multitask_step(cfg.Train.loss_weights, with_hidden=dc.hidden_weight > 0,
                                        with_attentions=dc.attn_weight > 0) if with_feats else base_step
        total = max(1, cfg.Train.epochs * cfg.Train.steps_per_epoch // cfg.Train.accumulate_steps)
        dstep = make_distill_step(teacher, feat_step, loss, total_steps=total)
        student = build_student()
        report["student_params"] = n_params(student)
        distilled, report["distill"] = train_phase("distill", cfg, student, transfer, eval_arrays, kinds, info, dstep,
                                                   callbacks=[DistillCallback(dstep)])
        report["distill"]["temperature"] = repr(loss.temperature)
    if "quant" in cfg.Global.phases and info.is_main:
        if distilled is None:
            path = out / "distill" / "model.pdparams"
            if not path.is_file():
                raise FileNotFoundError(f"phase 'quant' needs a distilled student: run phase 'distill' first ({path} missing)")
            distilled = build_student()
            distilled.set_state_dict(paddle.load(str(path)))
        report["quant"] = quant_phase(cfg, distilled, build_student, train_arrays, eval_arrays, kinds, specs)
    dist_utils.barrier()
    report[f"rank{info.rank}_checksums"] = {k: report[k]["param_checksum"] for k in ("teacher", "student_alone", "distill")
                                            if k in report}
    with open(out / f"checksums_rank{info.rank}.json", "w") as f:
        json.dump(report[f"rank{info.rank}_checksums"], f)
    if info.is_main:
        if "student_alone" in report and "distill" in report:
            report["distill_gain"] = report["distill"]["avg_score"] - report["student_alone"]["avg_score"]
        with open(out / "report.json", "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, ensure_ascii=False)
        logger.info("summary: %s", summary_line(report))
    return report


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


def main(argv=None) -> dict:
    import paddlenlp.transformers  # noqa: F401  (imported before logging setup, which drops its root handler)

    return run_recipe("ernie_multitask", RecipeConfig, {"train": train}, argv=argv, check=check_config,
                      description=__doc__.splitlines()[0])


if __name__ == "__main__":
    exit_on_user_error(main, "ernie_multitask", extra_errors=(ValueError,))
