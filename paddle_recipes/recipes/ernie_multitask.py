"""ERNIE 3.0-style multi-task training -> knowledge distillation -> INT8 (PTQ) export.

    python recipes/ernie_multitask.py -c recipes/configs/ernie_multitask.yml
    python -m paddle.distributed.launch --nproc_per_node 2 recipes/ernie_multitask.py \\
        -c recipes/configs/ernie_multitask_16tasks.yml -o Global.epochs=2

Phases (Global.phases, in order), each one `build_training(...).fit()` into <output_dir>/<phase>:
  teacher - shared ERNIE encoder + one head per task, trained on all labelled train data;
  student - the smaller student trained alone (baseline, same init/data/steps as "distill");
  distill - the same student init trained with the teacher (paddle_recipes.train.distill);
  quant   - PTQ of the distilled student into an int8 weight pack; size, agreement, accuracy delta.
Data.student_labeled = N > 0: the student phases see labels of only the first N train examples per task;
"distill" still sees every train text (unlabelled transfer set, KD term only). Random init, synthetic
Chinese tasks: no download. Outputs (rank 0): <phase>/model.pdparams, quant/student_int8.npz, report.json.
"""
from __future__ import annotations

import json
from pathlib import Path

import paddle
import paddlenlp.transformers  # noqa: F401  (before logging setup, which drops its root handler)

from paddle_recipes.runtime import distributed as dist_utils
from paddle_recipes.config import ConfigError, to_dict
from paddle_recipes.train.distill import DistillCallback, make_distill_step
from paddle_recipes.recipes.base import Recipe
from paddle_recipes.tasks.ernie_multitask.config import ErnieConfig, build_model
from paddle_recipes.tasks.ernie_multitask.multitask import (MultiTaskLoader, TaskSampler, evaluate_tasks,
                                                            make_multitask_step)
from paddle_recipes.tasks.ernie_multitask.phases import (build_task_data, load_phase_model, quant_phase, student_sets,
                                                         write_report)
from paddle_recipes.train.build import build_training, count_params

class ErnieMultitask(Recipe):
    """ERNIE 3.0-style multi-task training, distillation and INT8"""
    name, Config, modes, main_metric = "ernie_multitask", ErnieConfig, ("train", "eval"), "avg_score"

    def check(self) -> None:
        a = self.cfg.Architecture
        if self.cfg.Distill.hidden_weight > 0 and a.teacher.hidden_size != a.student.hidden_size:
            raise ConfigError("Distill.hidden_weight > 0 needs Architecture.teacher.hidden_size == student.hidden_size")

    def phase(self, name: str, model, train_arrays: dict, step, callbacks=()):
        """Train one phase with build_training into <output_dir>/<name>; returns (model, metrics)."""
        tr = self.cfg.Train
        sampler = TaskSampler({t: len(a["labels"]) for t, a in train_arrays.items()}, tr.sampling.strategy,
                              tr.sampling.temperature, seed=self.cfg.Global.seed)
        self.log.info("[%s] task sampling %s: %s", name, tr.sampling.strategy,
                      ", ".join(f"{t}={p:.3f}" for t, p in sampler.probabilities().items()))
        out_dir = Path(self.cfg.Global.output_dir) / name
        run = build_training(self.cfg, model, step=step, info=self.info, eval_fn=self.evaluate_model,
                             loader=MultiTaskLoader(train_arrays, tr.batch_size, sampler, tr.steps_per_epoch, info=self.info),
                             callbacks=callbacks, main_metric=self.main_metric, output_dir=str(out_dir),
                             batch_size_fn=lambda b: int(b["input_ids"].shape[0]))
        summary = run.fit()
        net = dist_utils.unwrap(run.model)
        if self.info.is_main:
            paddle.save(net.state_dict(), str(out_dir / "model.pdparams"))
        metrics = dict(summary["final_eval"] or self.evaluate_model(net))
        metrics.update(train_seconds=summary["train_time_s"], param_checksum=float(
            sum(float(p.astype("float64").abs().sum()) for p in net.parameters())))
        self.log.info("[%s] done in %.1fs: avg_score %.4f", name, metrics["train_seconds"], metrics["avg_score"])
        return net, metrics

    def evaluate_model(self, model, loader=None) -> dict:
        return evaluate_tasks(dist_utils.unwrap(model), self.eval_arrays, self.kinds, self.cfg.Quant.eval_batch_size)

    def train(self) -> dict:
        """Teacher -> student alone -> distilled student -> INT8, as listed in Global.phases."""
        cfg, info, phases, g = self.cfg, self.info, self.cfg.Global.phases, self.cfg.Global
        if g.pretrained_model or g.weights or g.checkpoints or g.resume not in ("", "auto"):
            raise ConfigError("ernie_multitask trains several models: Global.pretrained_model/weights/checkpoints "
                              "are not supported in train mode and Global.resume can only be 'auto' (per phase)")
        out, arch, d = Path(cfg.Global.output_dir), cfg.Architecture, cfg.Data
        tok, specs, train_arrays, self.eval_arrays = build_task_data(d, arch.max_len)
        self.kinds = {s.name: s.kind for s in specs}
        if unknown := sorted(set(cfg.Train.loss_weights) - set(self.kinds)):
            raise ConfigError(f"Train.loss_weights: unknown tasks {unknown}; tasks are {sorted(self.kinds)}")
        report = {"config": to_dict(cfg), "world_size": info.world_size, "tasks": self.kinds}
        base_step = make_multitask_step(cfg.Train.loss_weights)
        student_train, transfer = student_sets(train_arrays, d.student_labeled)

        def build(enc, seed_offset):
            return build_model(enc, specs, len(tok), arch.max_len, cfg.Global.seed + seed_offset)

        teacher = distilled = None
        if "teacher" in phases:
            teacher = build(arch.teacher, 0)
            report["teacher_params"] = count_params(teacher)
            teacher, report["teacher"] = self.phase("teacher", teacher, train_arrays, base_step)
        if "student" in phases:
            report["student_params"] = count_params(student := build(arch.student, 1))
            _, report["student_alone"] = self.phase("student", student, student_train, base_step)
        if "distill" in phases:
            if teacher is None:
                teacher = load_phase_model(build(arch.teacher, 0), cfg.Distill.teacher_path or
                                           out / "teacher" / "model.pdparams", "distill", "teacher")
            dc, student = cfg.Distill, build(arch.student, 1)
            feat_step = make_multitask_step(cfg.Train.loss_weights, with_hidden=dc.hidden_weight > 0,
                                            with_attentions=dc.attn_weight > 0)
            dstep = make_distill_step(teacher, feat_step, dc.loss())  # DistillCallback: trainer's total_steps
            report["student_params"] = count_params(student)
            distilled, report["distill"] = self.phase("distill", student, transfer, dstep, [DistillCallback(dstep)])
            report["distill"]["temperature"] = repr(dstep.distill_loss.temperature)
        if "quant" in phases and info.is_main:
            if distilled is None:
                distilled = load_phase_model(build(arch.student, 1), out / "distill" / "model.pdparams", "quant", "distill")
            report["quant"] = quant_phase(cfg, distilled, lambda: build(arch.student, 1), train_arrays,
                                          self.eval_arrays, self.kinds, specs)
        dist_utils.barrier()
        write_report(report, out, info)
        return report

    def checkpoint_root(self) -> Path:  # eval's default weights: the distilled student's best, else latest
        return Path(self.cfg.Global.output_dir) / "distill" / "checkpoints"

    def build_model(self):  # eval mode: the student (Architecture.student), as distill trains it
        a = self.cfg.Architecture
        return build_model(a.student, self.specs, self.vocab_size, a.max_len, self.cfg.Global.seed + 1)

    def eval(self) -> dict:
        """The student on the eval tasks, with the weights of the one rule (docs/weights.md)."""
        tok, self.specs, _, self.eval_arrays = build_task_data(self.cfg.Data, self.cfg.Architecture.max_len)
        self.kinds, self.vocab_size = {s.name: s.kind for s in self.specs}, len(tok)
        model, src = self.load_for_inference()
        metrics = {**self.evaluate_model(model), "weights": src}
        if self.info.is_main:
            print(json.dumps(metrics, ensure_ascii=False))
        return metrics


main, cli = ErnieMultitask.main, ErnieMultitask.cli

if __name__ == "__main__":
    cli()
