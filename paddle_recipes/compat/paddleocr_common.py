"""What every PaddleOCR YAML translator shares (rec: compat.paddleocr, det: compat.paddleocr_det): the Global,
Optimizer / lr and loader sections, the top-level sections, the extension keys, and the ``-c`` wrapper.

Facts of PaddleOCR that the shared mapping follows (its code, read, not copied):
- ``regularizer: {name: L2, factor: f}`` becomes the float ``weight_decay=f`` of paddle's optimizer:
  coupled L2 (added to the gradient) for Adam / Momentum, decoupled decay for AdamW (which decays every
  parameter unless ``one_dim_param_no_weight_decay`` / ``no_weight_decay_name``; AdamW without a
  regularizer decays with 0.01); ``clip_norm`` is ``ClipGradByNorm`` (per tensor), ``clip_norm_global``
  is ``ClipGradByGlobalNorm``;
- LR schedules step once per iteration; ``warmup_epoch`` = round(warmup_epoch * iterations per epoch)
  steps of linear warmup from 0, then the schedule restarts with its full-run length (``Cosine``:
  T_max = epochs * iterations per epoch); an ``lr`` without ``name`` is a constant (warmup ignored);
- eval runs when ``global_step > start and (global_step - start) % every == 0`` for
  ``eval_batch_step: [start, every]``; never per epoch;
- ``latest`` is saved every epoch, ``iter_epoch_N`` every ``save_epoch_step`` epochs;
- the top-level ``profiler_options`` is overwritten by tools/program.py's ``-p`` flag.

paddle-recipes extension keys (EXTENSION_KEYS): our speedups, written in the file or given with ``-o`` on top of a
PaddleOCR YAML, in PaddleOCR's own sections; PaddleOCR itself does not read them. They are listed with their values in
one log line, "paddle-recipes extensions: Architecture.Head.init_blank_prob=0.8, EMA.enable=True, ... (<source>)"
(``report.extensions``), and an unknown spelling is a ConfigError with the nearest valid key, as for PaddleOCR's keys.

Keys our schema does not have yet are written under the names listed in PROPOSED_KEYS; ``report.proposed``
names the ones a given file uses, and ``paddleocr_translator`` rejects such a file with a one-line error naming the
PaddleOCR key. Behaviours we only approximate are listed in ``report.approximated`` (one WARNING line), never silently.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from paddle_recipes.config import ConfigError, OverrideNote, suggest_name

from .translate import TranslationReport, Translator, canonical
from paddle_recipes.config import field_types
from paddle_recipes.nn.catalog import ARCH_KEYS



# Our schema keys the translator writes that RecConfig lacks today: path -> meaning (default).
PROPOSED_KEYS: Dict[str, str] = {
    "Optimizer.schedule=piecewise": "PaddleOCR Piecewise: Optimizer.values[i] from Optimizer.decay_epochs[i-1]",
    "Optimizer.decay_epochs": "piecewise boundaries, in epochs (default [])",
    "Optimizer.values": "piecewise learning rates (default [])",
    "Optimizer.step_size_epochs": "step schedule interval in epochs (default 0 = use step_size in steps)",
    "Optimizer.epsilon": "Adam/AdamW epsilon (default 1e-8)",
    "Optimizer.decay_1d_params": "adamw also decays 1-D parameters (norm scales, biases) (default false)",
    "Optimizer.no_weight_decay_name": "space-separated name fragments of parameters adamw does not decay",
    "Optimizer.clip_norm_per_tensor": "clip each gradient tensor to this L2 norm (ClipGradByNorm; 0 = off)",
}
# Keys of the recipe schema the translator writes (implemented): Global.pretrained_model, Global.eval_batch_step,
# Global.keep_every_epochs, Global.cal_metric_during_train, Predict.save_res_path, Export.model_name, Architecture.*
# (PaddleOCR class names + arguments), Loss.loss_config_list, Metric.*, Optimizer.warmup_epochs,
# {Train,Eval}.dataset.{aug,label_encoder,gtc_encode}, Train.sampler. PaddleOCR behaviours we only
# approximate are reported in TranslationReport.approximated (one warning line), never silently:
# RecConAug, Eval's free-width resize, the schedule restart after warmup.

# paddle-recipes extension keys of a PaddleOCR YAML (ours, not PaddleOCR's; one spelling per feature): key -> meaning.
EXTENSION_KEYS: Dict[str, str] = {
    "Architecture.Head.init_blank_prob": "CTC blank probability at init through the CTC output bias, in (0, 1) "
                                         "(CTCHead, or MultiHead's CTC branch; docs/cards/ctc_blank_bias.md)",
    "Optimizer.lr.warmup_steps": "linear warmup over this many optimizer steps; replaces lr.warmup_epoch "
                                 "(docs/cards/optim.md)",
    "Train.sampler.name: LengthCurriculumSampler": "the length curriculum (+ Train.sampler.warm_steps, short_len; "
                                                   "docs/cards/length_curriculum.md): replaces a MultiScaleSampler",
    "Global.cal_metric_during_train: N": "an integer N >= 2: the training accuracy every N steps "
                                         "(docs/cards/train_metric_every.md)",
    "Train.loader / Eval.loader: use_buffer_reader, timeout, seed, min_shm_mb, allocator_keep_mb": "our loader settings "
                                                                                "(data.loader.LoaderConfig)",
    "EMA, AMP, Synthetic, Predict, Export": "our sections, as in the recipe's own configs",
    "Global: seed, device, max_steps, keep_last, weights, use_ema_weights, vdl_dir, calibrate_bn_batches, "
    "fuse_for_inference, finetune_released, freeze_bn_stats, cpu_depthwise_kernel, cpu_affine_kernel, "
    "pretrained_dict":
        "our Global keys",
    "Global: distill_pretrained, distill_weight, distill_temperature (rec)": "learning without forgetting: the init "
        "weights' frozen copy as a CTC teacher (docs/cards/distill_pretrained.md)",
    "Global.finetune_merge (rec)": "WiSE-FT: checkpoints also hold the run's weights merged with its init weights, "
        "which eval / predict / export read (docs/cards/finetune_merge.md)",
    "Global: general_lines, general_lines_ratio (rec)": "synthetic general lines labelled by the init weights' own "
        "readings, mixed into the train data (docs/cards/general_lines.md)",
}
LOADER_EXTENSIONS = ("use_buffer_reader", "timeout", "seed", "min_shm_mb", "allocator_keep_mb")
CURRICULUM_KEYS = ("warm_steps", "short_len")
MULTISCALE_KEYS = ("scales", "first_bs", "fix_bs", "divided_factor", "is_training", "ratio_wh", "max_w")

PADDLEOCR_SECTIONS = ("Global", "Optimizer", "Architecture", "Loss", "PostProcess", "Metric", "Train", "Eval")
OUR_SECTIONS = ("AMP", "EMA", "Synthetic", "Predict", "Export")  # passed through as written
# Top-level keys PaddleOCR's YAMLs carry that its training never reads from the file: key -> why.
IGNORED_SECTIONS = {"profiler_options": "PaddleOCR overwrites it with its -p/--profiler_options flag (default off)"}
OUR_GLOBAL_KEYS = ("seed", "device", "max_steps", "keep_last", "weights", "use_ema_weights", "vdl_dir",
                   "fuse_for_inference", "calibrate_bn_batches", "finetune_released", "freeze_bn_stats",
                   "cpu_depthwise_kernel", "cpu_affine_kernel", "pretrained_dict")

# Global keys that mark a file as PaddleOCR's even beside our own keys (an -o override of ours on their file)...
_PADDLEOCR_ONLY_GLOBAL = ("epoch_num", "save_model_dir", "print_batch_step", "save_epoch_step", "use_gpu")
# ... and these, unless the Global also holds a key only ours has (both schemas take eval_batch_step and
# cal_metric_during_train).
_SIGNATURE_GLOBAL = (*_PADDLEOCR_ONLY_GLOBAL, "log_smooth_window", "eval_batch_step", "cal_metric_during_train")
# Global keys of our schema that PaddleOCR's never has: any one of them marks a file as ours.
_NATIVE_ONLY_GLOBAL = ("epochs", "output_dir", "log_every", "eval_every_epochs", "save_every_epochs")
OPTIMIZERS = {"Adam": "adam", "AdamW": "adamw", "Momentum": "momentum", "SGD": "sgd"}
LR_SCHEDULES = {"Cosine": "cosine", "Linear": "linear", "Step": "step", "Piecewise": "piecewise", "Const": "constant"}
DEVICE_SWITCHES = ("use_xpu", "use_npu", "use_mlu", "use_gcu", "use_tensorboard", "use_wandb")
AMP_KEYS = {"use_amp": "enable", "amp_level": "level", "scale_loss": "init_loss_scaling",
            "use_dynamic_loss_scaling": "use_dynamic_loss_scaling", "amp_dtype": "dtype",
            "amp_custom_black_list": "custom_black_list", "amp_custom_white_list": "custom_white_list"}

def is_paddleocr_config(data: Any) -> bool:
    """True when `data` (a loaded YAML) is a PaddleOCR config: it has a PostProcess or Metric section, an
    ``Optimizer.lr`` mapping, or a Global key only PaddleOCR uses (epoch_num, save_model_dir, ...). Without
    one of PaddleOCR's own Global keys, a Global with a key only our schema has (epochs, output_dir, ...) is
    ours (our det configs have PostProcess / Metric sections; eval_batch_step is a key of both)."""
    if not isinstance(data, dict):
        return False
    g = data.get("Global")
    if isinstance(g, dict) and not any(k in g for k in _PADDLEOCR_ONLY_GLOBAL) \
            and any(k in g for k in _NATIVE_ONLY_GLOBAL):
        return False
    if "PostProcess" in data or "Metric" in data:
        return True
    opt = data.get("Optimizer")
    if isinstance(opt, dict) and isinstance(opt.get("lr"), dict):
        return True
    return isinstance(g, dict) and any(k in g for k in _SIGNATURE_GLOBAL)



class PaddleOCRTranslator(Translator):
    """The sections every PaddleOCR YAML has; a task's translator adds preflight, architecture, loss, postprocess,
    metric, split and consistency (``run`` calls them in that order)."""

    proposed_keys = PROPOSED_KEYS

    def __init__(self, data: dict, source: str, overridden: Optional[Dict[str, str]] = None):
        super().__init__(source, overridden)
        self.src = data

    # ------------------------------------------------------------------ sections
    def run(self) -> Tuple[dict, TranslationReport]:
        self.preflight()
        allowed = PADDLEOCR_SECTIONS + OUR_SECTIONS + tuple(IGNORED_SECTIONS)
        for key in self.src:
            if key not in allowed:
                raise self.error(str(key), f"unknown top-level section{suggest_name(str(key), list(allowed))}")
            if key in IGNORED_SECTIONS:
                self.none(str(key), IGNORED_SECTIONS[key])
        g = self.check_keys(self.src.get("Global"), self._global_keys(), "Global")
        self.g = g
        self.global_()
        self.architecture()
        self.loss()
        self.postprocess()
        self.metric()
        self.optimizer()
        for split in ("Train", "Eval"):
            self.split(split)
        self.consistency()
        self.our_sections()
        return self.ours, self.report

    def our_sections(self) -> None:
        """Our own sections (AMP, EMA, ...) in the foreign file: passed through as written, listed as extensions."""
        for sec in OUR_SECTIONS:
            for k, v in (self.src.get(sec) or {}).items():
                self.ext(f"{sec}.{k}", copy.deepcopy(v), f"{sec}.{k}")

    def architecture_section(self, map_as_written: tuple = ("model_type", "algorithm")) -> dict:
        """The source's Architecture mapping with PaddleOCR's six keys checked; the keys in `map_as_written` that are
        present are mapped to ours unchanged."""
        a = self.check_keys(self.src.get("Architecture"), ARCH_KEYS, "Architecture")
        for k in map_as_written:
            if k in a:
                self.map(f"Architecture.{k}", a[k], f"Architecture.{k}")
        return a

    def split_sections(self, split: str) -> Tuple[dict, str, dict]:
        """(the split's mapping, "<split>.dataset", its dataset mapping) with PaddleOCR's label-file dataset keys
        checked; a missing split is one error line."""
        node = self.check_keys(self.src.get(split), ("dataset", "loader"), split)
        if not node:
            raise self.error(split, "is required")
        p = f"{split}.dataset"
        return node, p, self.check_keys(node.get("dataset"), ("name", "data_dir", "label_file_list", "ratio_list",
                                                              "transforms", "delimiter"), p)

    def no_distillation(self, a: dict, alone: str) -> None:
        """A PaddleOCR DistillationModel (Architecture.Models: Teacher/Student, ...) is one ConfigError naming its
        models' backbones; `alone` says how to train one of them instead."""
        if a.get("name") == "DistillationModel" or "Models" in a:
            models = ", ".join(f"{k}: {(v or {}).get('Backbone', {}).get('name', '?')}"
                               for k, v in (a.get("Models") or {}).items() if isinstance(v, dict))
            raise self.error("Architecture.name", f"{a.get('name', 'Models')!r}: PaddleOCR distillation models "
                             f"(Models {models}) are not built here; train one model alone ({alone})")

    def data_ops(self, ops: Any, path: str, options: tuple, what: str):
        """Yield (index, canonical name, op path, its args as written) of the list of one-key op mappings at `path`
        (``[{DecodeImage: {img_mode: BGR}}, ...]``); an empty or missing list, a malformed entry or an op outside
        `options` is a ConfigError naming the key."""
        if not isinstance(ops, list) or not ops:
            raise self.error(path, "is required (a list of data ops)")
        for i, item in enumerate(ops):
            if not isinstance(item, dict) or len(item) != 1:
                raise self.error(f"{path}[{i}]", "each op is a one-key mapping {OpName: args}")
            raw = next(iter(item))
            yield i, canonical(raw, options, f"{path}[{i}]", what, self.source), f"{path}[{i}].{raw}", item[raw]

    def preflight(self) -> None:
        """The model first: a network this version does not build is named before any key of the file."""

    def consistency(self) -> None:
        """Cross-section checks once every section is read (none by default)."""

    def _global_keys(self):
        return ("epoch_num", "save_model_dir", "print_batch_step", "eval_batch_step", "save_epoch_step",
                "cal_metric_during_train", "calc_epoch_interval", "log_smooth_window", "pretrained_model",
                "checkpoints", "save_inference_dir", "use_visualdl", "infer_img", "distributed", "debug",
                "use_gpu", "save_res_path", "d2s_train_image_shape", "to_static", "model_name", "use_sync_bn") \
            + DEVICE_SWITCHES + tuple(AMP_KEYS) + OUR_GLOBAL_KEYS

    def direct_global(self) -> Dict[str, str]:
        """Global key -> our key, mapped as written."""
        return {"epoch_num": "Global.epochs", "save_model_dir": "Global.output_dir",
                "print_batch_step": "Global.log_every", "use_visualdl": "Global.use_visualdl",
                "cal_metric_during_train": "Global.cal_metric_during_train"}

    def path_global(self) -> Dict[str, str]:
        """Global key -> our key, mapped with an empty YAML value (None) as ""."""
        return {"pretrained_model": "Global.pretrained_model", "checkpoints": "Global.checkpoints",
                "infer_img": "Predict.images", "save_res_path": "Predict.save_res_path"}

    def global_(self) -> None:
        self.global_training()
        self.global_devices()
        self.global_rest()

    def global_training(self) -> None:
        """The run's length, output, logging, evaluation and saving cadence, and our own Global keys."""
        g = self.g
        direct = self.direct_global()
        for k, dst in direct.items():
            if k in g:
                self.map(f"Global.{k}", g[k], dst)
        for k, dst in self.path_global().items():
            if k in g:  # an empty YAML value is None: "" in our typed config
                self.map(f"Global.{k}", "" if g[k] is None else g[k], dst)
        for k in OUR_GLOBAL_KEYS:
            if k in g:
                self.ext(f"Global.{k}", g[k], f"Global.{k}")
        cadence = g.get("cal_metric_during_train") if "cal_metric_during_train" in direct else None
        if isinstance(cadence, int) and not isinstance(cadence, bool) and cadence >= 2:  # PaddleOCR: any int = true
            self.report.extensions["Global.cal_metric_during_train"] = cadence
        if "log_smooth_window" in g:  # log lines only: values are averaged differently, training is the same
            self.approx("Global.log_smooth_window", "logged values average the print_batch_step window")
        if "calc_epoch_interval" in g:
            if int(g["calc_epoch_interval"]) < 1:
                raise self.error("Global.calc_epoch_interval", f"{g['calc_epoch_interval']!r}: must be >= 1")
            self.approx("Global.calc_epoch_interval",
                        "the training accuracy (cal_metric_during_train) is computed in every epoch")
        if "eval_batch_step" in g:
            v = g["eval_batch_step"]
            if v is None or v == []:  # off, as ours
                v = []
            elif isinstance(v, list) and len(v) >= 2:
                v = [int(v[0]), int(v[1])]
            elif isinstance(v, int) and not isinstance(v, bool):
                v = [0, v]
            else:
                raise self.error("Global.eval_batch_step", f"expected [start, every], an integer or [] (off), "
                                 f"got {v!r}")
            self.map("Global.eval_batch_step", v, "Global.eval_batch_step")
            self.derive("Global.eval_every_epochs", 0, "PaddleOCR evaluates by eval_batch_step only")
        if "save_epoch_step" in g:
            self.map("Global.save_epoch_step", g["save_epoch_step"], "Global.keep_every_epochs")
            self.derive("Global.save_every_epochs", 1, "PaddleOCR saves 'latest' every epoch")
        if "save_inference_dir" in g:
            if g["save_inference_dir"]:
                self.map("Global.save_inference_dir", str(Path(g["save_inference_dir"]) / "inference"),
                         "Export.out_prefix")
            else:
                self.none("Global.save_inference_dir", "empty: export goes to output_dir/inference")

    def global_devices(self) -> None:
        g = self.g
        if "use_gpu" in g:
            if g["use_gpu"]:
                self.none("Global.use_gpu", "the device is chosen automatically (GPU when paddle has CUDA)")
            else:
                self.map("Global.use_gpu", "cpu", "Global.device")
        for k in DEVICE_SWITCHES:
            if k in g:
                if g[k]:
                    raise self.error(f"Global.{k}", "is not supported here (set it to false or remove it)")
                self.none(f"Global.{k}", "false")

    def global_rest(self) -> None:
        """Switches of PaddleOCR's own code, and AMP."""
        g = self.g
        if "distributed" in g:
            self.none("Global.distributed", "the world size comes from the launcher (PaddleOCR overwrites it too)")
        if "debug" in g:
            self.none("Global.debug", "debug switch of PaddleOCR's own code")
        if "to_static" in g:  # static-graph training (static_train), as PaddleOCR's
            self.map("Global.to_static", g["to_static"] is True, "Global.to_static")  # PaddleOCR: `is True`
        if "use_sync_bn" in g:  # PaddleOCR's tools/train.py: SyncBatchNorm.convert_sync_batchnorm when true
            self.map("Global.use_sync_bn", bool(g["use_sync_bn"]), "Global.use_sync_bn")
        if "d2s_train_image_shape" in g:
            self.none("Global.d2s_train_image_shape", "Global.to_static traces one program per training batch shape "
                      "(paddle's to_static does so in PaddleOCR too: the spec only names the first)")
        if g.get("use_amp"):
            self.derive("AMP.level", "O2", "PaddleOCR's default amp_level")
            self.derive("AMP.init_loss_scaling", 1.0, "PaddleOCR's default scale_loss")
            self.derive("AMP.use_dynamic_loss_scaling", False, "PaddleOCR's default")
        for k, ours in AMP_KEYS.items():
            if k in g:
                self.ours.setdefault("AMP", {}).pop(ours, None)
                self.report.derived.pop(f"AMP.{ours}", None)
                self.map(f"Global.{k}", g[k], f"AMP.{ours}")

    def optimizer(self) -> None:
        o = self.check_keys(self.src.get("Optimizer"), ("name", "beta1", "beta2", "epsilon", "momentum", "lr",
                                                        "regularizer", "clip_norm", "clip_norm_global",
                                                        "no_weight_decay_name", "one_dim_param_no_weight_decay",
                                                        "multi_precision", "lazy_mode"), "Optimizer")
        if not o:
            raise self.error("Optimizer", "is required")
        name = OPTIMIZERS[canonical(o.get("name"), tuple(OPTIMIZERS), "Optimizer.name", "optimizer", self.source)]
        self.map("Optimizer.name", name, "Optimizer.name")
        for k in ("beta1", "beta2", "momentum", "epsilon"):
            if k in o:
                self.map(f"Optimizer.{k}", o[k], f"Optimizer.{k}")
        self._lr(o.get("lr"), "lr" in o)
        # weight decay: PaddleOCR passes the L2 factor as the float weight_decay of paddle's optimizer.
        decay = 0.01 if name == "adamw" else 0.0
        reg = o.get("regularizer")
        if reg is not None:
            self.check_keys(reg, ("name", "factor"), "Optimizer.regularizer")
            if str(reg.get("name")) not in ("L2", "L2Decay"):
                raise self.error("Optimizer.regularizer.name", f"{reg.get('name')!r}: only L2 is supported here")
            decay = float(reg.get("factor", 0.0))
            self.fixed("Optimizer.regularizer.name", "L2: coupled for adam/momentum/sgd, decoupled for adamw")
            self.report.mapped["Optimizer.regularizer.factor"] = "Optimizer.weight_decay"
        elif "regularizer" in o:
            self.none("Optimizer.regularizer", "null")
        self.put("Optimizer.weight_decay", decay)
        if reg is None:
            self.report.derived["Optimizer.weight_decay"] = "no regularizer: PaddleOCR's default for this optimizer"
        if name == "adamw" and decay > 0:
            one_dim_off = bool(o.get("one_dim_param_no_weight_decay", False))
            self.derive("Optimizer.decay_1d_params", not one_dim_off, "PaddleOCR's AdamW decays 1-D params unless "
                        "one_dim_param_no_weight_decay")
        for k in ("one_dim_param_no_weight_decay", "no_weight_decay_name"):
            if k in o and name != "adamw":
                self.none(f"Optimizer.{k}", f"only read by AdamW, not {name}")
        if "one_dim_param_no_weight_decay" in o and name == "adamw":
            self.report.mapped["Optimizer.one_dim_param_no_weight_decay"] = "Optimizer.decay_1d_params"
            self.put("Optimizer.decay_1d_params", not bool(o["one_dim_param_no_weight_decay"]))
        if "no_weight_decay_name" in o and name == "adamw":
            self.map("Optimizer.no_weight_decay_name", o["no_weight_decay_name"] or "", "Optimizer.no_weight_decay_name")
        if "clip_norm" in o:
            self.map("Optimizer.clip_norm", float(o["clip_norm"]), "Optimizer.clip_norm_per_tensor")
        if "clip_norm_global" in o:
            self.map("Optimizer.clip_norm_global", float(o["clip_norm_global"]), "Optimizer.grad_clip_norm")
        else:
            self.derive("Optimizer.grad_clip_norm", 0.0, "no global clip in the file")
        if "multi_precision" in o:
            self.none("Optimizer.multi_precision", "fp32 master weights follow AMP.master_weight")
        if "lazy_mode" in o:
            if o["lazy_mode"]:
                raise self.error("Optimizer.lazy_mode", "true is not supported here")
            self.none("Optimizer.lazy_mode", "false")

    def _lr(self, lr: Any, present: bool) -> None:
        self.derive("Optimizer.warmup_steps", 0, "PaddleOCR warms up only by lr.warmup_epoch")
        self.derive("Optimizer.min_lr", 0.0, "PaddleOCR's schedules decay to 0")
        if not present:
            raise self.error("Optimizer.lr", "is required")
        if not isinstance(lr, dict):  # a bare number is a constant in PaddleOCR too
            self.map("Optimizer.lr", lr, "Optimizer.lr")
            self.derive("Optimizer.schedule", "constant", "a bare learning rate")
            return
        allowed = ("name", "learning_rate", "warmup_epoch", "end_lr", "power", "step_size", "gamma",
                   "decay_epochs", "values", "warmup_steps")
        self.check_keys(lr, allowed, "Optimizer.lr")
        lr = dict(lr)
        steps = lr.pop("warmup_steps", None)
        if steps is not None:  # ours: warmup in optimizer steps, replacing PaddleOCR's warmup_epoch
            if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
                raise self.error("Optimizer.lr.warmup_steps", f"{steps!r}: expected an integer >= 0 (optimizer steps)")
            self.put("Optimizer.warmup_steps", steps, replace=True)
            self.report.derived.pop("Optimizer.warmup_steps", None)
            self.ext("Optimizer.lr.warmup_steps", steps, "Optimizer.warmup_steps")
            if "warmup_epoch" in lr:
                self.none("Optimizer.lr.warmup_epoch", "replaced by Optimizer.lr.warmup_steps (paddle-recipes "
                          "extension)")
                lr.pop("warmup_epoch")
        if "name" not in lr:  # PaddleOCR: lr = lr_config['learning_rate'], nothing else read
            self.map("Optimizer.lr.learning_rate", lr.get("learning_rate"), "Optimizer.lr")
            self.derive("Optimizer.schedule", "constant", "Optimizer.lr without a name")
            for k in lr:
                if k != "learning_rate":
                    self.none(f"Optimizer.lr.{k}", "PaddleOCR reads only learning_rate when lr has no name")
            return
        sched = LR_SCHEDULES[canonical(lr["name"], tuple(LR_SCHEDULES), "Optimizer.lr.name", "lr schedule", self.source)]
        self.map("Optimizer.lr.name", sched, "Optimizer.schedule")
        if sched == "piecewise":
            if "values" not in lr or "decay_epochs" not in lr:
                raise self.error("Optimizer.lr", "Piecewise needs decay_epochs and values")
            self.map("Optimizer.lr.values", list(lr["values"]), "Optimizer.values")
            self.map("Optimizer.lr.decay_epochs", list(lr["decay_epochs"]), "Optimizer.decay_epochs")
            self.put("Optimizer.lr", float(lr["values"][0]))
            self.report.proposed.append("Optimizer.schedule=piecewise")
            if "learning_rate" in lr:
                self.none("Optimizer.lr.learning_rate", "Piecewise takes its rates from values")
        elif "learning_rate" in lr:
            self.map("Optimizer.lr.learning_rate", lr["learning_rate"], "Optimizer.lr")
        else:
            raise self.error("Optimizer.lr.learning_rate", "is required")
        per_schedule = {"linear": ("end_lr", "power"), "step": ("step_size", "gamma"),
                        "piecewise": ("decay_epochs", "values")}
        for k in ("end_lr", "power", "step_size", "gamma", "decay_epochs", "values"):
            if k in lr and k not in per_schedule.get(sched, ()):
                self.none(f"Optimizer.lr.{k}", f"not read by {lr['name']}")
        if sched == "linear":
            if float(lr.get("power", 1.0)) != 1.0:
                raise self.error("Optimizer.lr.power", "only power 1.0 (linear decay) is supported here")
            if "power" in lr:
                self.fixed("Optimizer.lr.power", "1.0: linear schedule")
            if "end_lr" in lr:
                self.put("Optimizer.min_lr", float(lr["end_lr"]), replace=True)
                self.report.derived.pop("Optimizer.min_lr", None)
                self.report.mapped["Optimizer.lr.end_lr"] = "Optimizer.min_lr"
        if sched == "step":
            if "step_size" not in lr:
                raise self.error("Optimizer.lr.step_size", "is required by Step")
            self.map("Optimizer.lr.step_size", lr["step_size"], "Optimizer.step_size_epochs")
            if "gamma" in lr:
                self.map("Optimizer.lr.gamma", lr["gamma"], "Optimizer.gamma")
        warm = lr.get("warmup_epoch", 0) or 0
        if "warmup_epoch" in lr:
            self.map("Optimizer.lr.warmup_epoch", warm, "Optimizer.warmup_epochs")
        if warm and sched != "constant":
            self.approx("Optimizer.lr.warmup_epoch", "after warmup the schedule spans the remaining steps; "
                        "PaddleOCR restarts it with the full length")

    def loader(self, split: str, lo: Any, bs_from: Optional[str]) -> None:
        p = f"{split}.loader"
        lo = self.check_keys(lo, ("shuffle", "batch_size_per_card", "drop_last", "num_workers", "use_shared_memory",
                                  "persistent_workers", "prefetch_factor") + LOADER_EXTENSIONS, p)
        for k, v in lo.items():
            if k in LOADER_EXTENSIONS:
                self.ext(f"{p}.{k}", v, f"{p}.{k}")
                continue
            if split == "Eval" and k == "shuffle" and v:  # every sample is scored once: the order changes nothing
                self.none(f"{p}.{k}", "true: the metrics do not depend on the order (Eval reads in order here)")
                continue
            if k == "batch_size_per_card" and bs_from is not None:
                first = self.src["Train"]["sampler"]["first_bs"]
                if v != first:
                    self.none(f"{p}.{k}", f"MultiScaleSampler takes the batch size from first_bs ({first})")
                    continue
            self.map(f"{p}.{k}", v, f"{p}.{k}")
        if bs_from is not None and "batch_size_per_card" not in self.ours.get(split, {}).get("loader", {}):
            self.put(f"{p}.batch_size_per_card", self.src["Train"]["sampler"]["first_bs"])

def schema_has(schema: type, path: str) -> bool:
    """True when the dotted `path` is a key of dataclass `schema` (Optional sections looked through)."""
    import dataclasses
    import typing


    tp: Any = schema
    for key in path.split("."):
        if typing.get_origin(tp) is not None:  # Optional[X] / Union: the dataclass member
            tp = next((a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)), tp)
        if not dataclasses.is_dataclass(tp) or key not in {f.name for f in dataclasses.fields(tp)}:
            return False
        tp = field_types(tp)[key]
    return True


def paddleocr_translator(schema: type, translate_fn: Callable
                         ) -> Callable[[dict, Path], Optional[Tuple[dict, List[str]]]]:
    """A ``Recipe.config_translators`` entry for `schema` (a task's config class): a PaddleOCR YAML
    (is_paddleocr_config) -> (our config dict, notes: TranslationReport.notes(): the "no effect here" line and, when
    any, the "not exactly as PaddleOCR" and extensions lines). ``-o`` overrides are given in PaddleOCR's keys (the
    function's ``recognise`` attribute tells config.load_config so; an -o of ours, e.g. ``Predict.images``, wins over
    the file's key that translates to it, e.g. ``Global.infer_img``, with a note). translate_fn: ``(raw, source,
    overridden) -> (ours, report)`` (compat.paddleocr.translate_rec_config, compat.paddleocr_det's). A key the
    translator maps to a schema key this version lacks (PROPOSED_KEYS) is a ConfigError naming the PaddleOCR key;
    None for other files."""
    def translate(raw: dict, path: Path, overridden: Optional[Dict[str, str]] = None):
        if not is_paddleocr_config(raw):
            return None
        ours, report = translate_fn(raw, f"{path} (PaddleOCR config)", overridden)
        for key in report.proposed:
            target = key.split("=")[0]
            if "=" in key or not schema_has(schema, target):
                src = [k for k, v in report.mapped.items() if v == target] or [target]
                raise ConfigError(f"{src[0]}: not supported by this version of the recipe (it needs "
                                  f"{key}: {PROPOSED_KEYS.get(key, '')}) (in {path})")
        return ours, report.notes() + [OverrideNote(line) for line in report.overrides]

    translate.recognise = is_paddleocr_config
    return translate
