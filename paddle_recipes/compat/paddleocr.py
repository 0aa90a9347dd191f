"""PaddleOCR recognition YAMLs (``configs/rec/...``) -> the OCR recipe's config dict.

    ours, report = translate_rec_config(yaml.safe_load(open(p)), source=p)
    logger.info(report.no_effect_line())      # one line: "no effect here: Global.use_gpu, ..."
    cfg = load_config(path, overrides, RecConfig, translators=(paddleocr_rec_translator(RecConfig),))

Every key of the PaddleOCR file is accounted for: it maps onto a key of ours (``report.mapped``:
PaddleOCR path -> our path, or "fixed: ..." when our pipeline always does what the value asks), or it
truly has no effect here (``report.no_effect``: path -> why). A value whose meaning we would change
(Eval ratio_list [0.5], a TPS Transform, another dict in PostProcess, L1 decay, ...) is a ConfigError
naming the key; an unknown key is a ConfigError with the nearest valid key.

Facts of PaddleOCR that the mapping follows (its code, read, not copied):
- data ops get Global's keys merged over their own (``param.update(global_config)``), so an op's own
  max_text_length / character_dict_path / use_space_char / infer_mode are overridden by Global's;
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
- ``RecMetric`` ignores spaces by default (``ignore_space: true``);
- an empty ``character_dict_path`` means the built-in 36-char lowercase dict (labels lowercased);
- the top-level ``profiler_options`` is overwritten by tools/program.py's ``-p`` flag, ``Global.character_type`` is
  read by no current code, and without ``Global.max_text_length`` each data op keeps its own value.

A network this version does not build (a DistillationModel, another algorithm, a backbone without an implementation)
is named in one ConfigError before any of the file's keys is read (``_Translator.preflight``).

paddle-recipes extension keys (EXTENSION_KEYS): our speedups, written in the file or given with ``-o`` on top of a
PaddleOCR YAML, in PaddleOCR's own sections; PaddleOCR itself does not read them. They are listed with their values in
one log line, "paddle-recipes extensions: Architecture.Head.init_blank_prob=0.8, EMA.enable=True, ... (<source>)"
(``report.extensions``), and an unknown spelling is a ConfigError with the nearest valid key, as for PaddleOCR's keys.

Keys our schema does not have yet are written under the names listed in PROPOSED_KEYS; ``report.proposed``
names the ones a given file uses, and the recipe's translator (``paddleocr_rec_translator``, the OCR recipe's
``config_translators`` entry) rejects such a file with a one-line error naming the PaddleOCR key. Behaviours
we only approximate are listed in ``report.approximated`` (one WARNING line), never silently.
"""
from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple


from paddle_recipes.config import ConfigError, OverrideNote, _short, _suggest
from paddle_recipes.nn import catalog

logger = logging.getLogger(__name__)

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
    "Train.loader / Eval.loader: use_buffer_reader, timeout, seed, min_shm_mb": "our loader settings "
                                                                                "(data.loader.LoaderConfig)",
    "EMA, AMP, Synthetic, Predict, Export": "our sections, as in the recipe's own configs",
    "Global: seed, device, max_steps, keep_last, weights, use_ema_weights, vdl_dir": "our Global keys",
}
LOADER_EXTENSIONS = ("use_buffer_reader", "timeout", "seed", "min_shm_mb")
CURRICULUM_KEYS = ("warm_steps", "short_len")
MULTISCALE_KEYS = ("scales", "first_bs", "fix_bs", "divided_factor", "is_training", "ratio_wh", "max_w")

PADDLEOCR_SECTIONS = ("Global", "Optimizer", "Architecture", "Loss", "PostProcess", "Metric", "Train", "Eval")
OUR_SECTIONS = ("AMP", "EMA", "Synthetic", "Predict", "Export")  # passed through as written
# Top-level keys PaddleOCR's YAMLs carry that its training never reads from the file: key -> why.
IGNORED_SECTIONS = {"profiler_options": "PaddleOCR overwrites it with its -p/--profiler_options flag (default off)"}
OUR_GLOBAL_KEYS = ("seed", "device", "max_steps", "keep_last", "weights", "use_ema_weights", "vdl_dir")

# Global keys that mark a file as PaddleOCR's even beside our own keys (an -o override of ours on their file)...
_PADDLEOCR_ONLY_GLOBAL = ("epoch_num", "save_model_dir", "print_batch_step", "save_epoch_step", "use_gpu")
# ... and these, unless the Global also holds a key only ours has (both schemas take eval_batch_step and
# cal_metric_during_train).
_SIGNATURE_GLOBAL = (*_PADDLEOCR_ONLY_GLOBAL, "log_smooth_window", "eval_batch_step", "cal_metric_during_train")
# Global keys of our schema that PaddleOCR's never has: any one of them marks a file as ours.
_NATIVE_ONLY_GLOBAL = ("epochs", "output_dir", "log_every", "eval_every_epochs", "save_every_epochs")

def _paddlex_rec_names() -> tuple:
    """The Global.model_name values an export can carry (paddlex 3.x's text-recognition names)."""
    from paddle_recipes.tasks.ocr.export_paddleocr import PADDLEX_REC_MODEL_NAMES

    return PADDLEX_REC_MODEL_NAMES


NECKS = ("SequenceEncoder", "Conv", "BiLSTM", "Im2Seq")
ENCODER_TYPES = ("rnn", "svtr", "lightsvtr", "reshape", "fc", "cascadernn")
HEADS = ("CTCHead", "MultiHead", "NRTRHead")
MULTIHEAD_PARTS = ("CTCHead", "NRTRHead", "SARHead")
MULTIHEAD_BUILT = ("CTCHead", "NRTRHead")  # SARHead (PP-OCRv3's guided-training branch) is recognised, not built
ALGORITHMS = ("CRNN", "SVTR_LCNet", "SVTR_HGNet", "SVTR")
# Architecture.algorithm values of PaddleOCR's other rec configs (configs/rec/*.yml): recognised, not built here.
PPOCR_OTHER_ALGORITHMS = ("ABINet", "CAN", "CPPD", "LaTeXOCR", "NRTR", "PP-FormulaNet-L", "PP-FormulaNet-S",
                          "PP-FormulaNet_plus-L", "PP-FormulaNet_plus-M", "PP-FormulaNet_plus-S", "PREN", "ParseQ",
                          "RARE", "RFL", "RobustScanner", "Rosetta", "SAR", "SATRN", "SEED", "SPIN", "SRN", "STARNet",
                          "UniMERNet", "ViTSTR", "VisionLAN")
LOSSES = ("CTCLoss", "MultiLoss")
MULTILOSS_PARTS = ("CTCLoss", "NRTRLoss", "SARLoss")
OPTIMIZERS = {"Adam": "adam", "AdamW": "adamw", "Momentum": "momentum", "SGD": "sgd"}
LR_SCHEDULES = {"Cosine": "cosine", "Linear": "linear", "Step": "step", "Piecewise": "piecewise", "Const": "constant"}
DATASETS = {"SimpleDataSet": "label_file", "MultiScaleDataSet": "label_file", "LMDBDataSet": "lmdb",
            "LMDBDateSet": "lmdb"}  # LMDBDateSet: the spelling of older PaddleOCR releases
TRANSFORMS = ("DecodeImage", "RecAug", "RecConAug", "CTCLabelEncode", "MultiLabelEncode", "RecResizeImg", "KeepKeys")
RECAUG_PROBS = ("tia_prob", "crop_prob", "reverse_prob", "noise_prob", "jitter_prob", "blur_prob", "hsv_aug_prob")
RECAUG_ARGS = ("use_tia", "aug_prob") + RECAUG_PROBS  # aug_prob, use_tia: the RecAug of PaddleOCR <= 2.6
LABEL_ENCODERS = {"CTCLabelEncode": ("CTCLoss", ["image", "label", "length"]),
                  "MultiLabelEncode": ("MultiLoss", ["image", "label_ctc", "label_gtc", "length", "valid_ratio"])}
# Keys PaddleOCR merges from Global into every data op / the post-process (op values are overridden).
GLOBAL_MERGED = ("max_text_length", "character_dict_path", "use_space_char", "infer_mode")
DEVICE_SWITCHES = ("use_xpu", "use_npu", "use_mlu", "use_gcu", "use_tensorboard", "use_wandb")
AMP_KEYS = {"use_amp": "enable", "amp_level": "level", "scale_loss": "init_loss_scaling",
            "use_dynamic_loss_scaling": "use_dynamic_loss_scaling", "amp_dtype": "dtype",
            "amp_custom_black_list": "custom_black_list", "amp_custom_white_list": "custom_white_list"}


@dataclass
class TranslationReport:
    """What became of each PaddleOCR key. Paths look like ``Train.dataset.transforms[1].RecConAug.prob``.

    mapped: PaddleOCR path -> our key path (or "fixed: ..." when our pipeline always behaves so); an extension
    key (EXTENSION_KEYS) is mapped too and also listed in extensions (path -> value).
    no_effect: PaddleOCR path -> why it changes nothing here. derived: our key -> why we set it although
    no key asked (PaddleOCR's behaviour differs from our default). proposed: our paths not in the schema yet.
    """

    source: str
    mapped: Dict[str, str] = field(default_factory=dict)
    no_effect: Dict[str, str] = field(default_factory=dict)
    derived: Dict[str, str] = field(default_factory=dict)
    proposed: List[str] = field(default_factory=list)
    approximated: Dict[str, str] = field(default_factory=dict)
    extensions: Dict[str, Any] = field(default_factory=dict)
    overrides: List[str] = field(default_factory=list)  # "-o K=V overrides the config's value X" (config.OverrideNote)

    def extensions_line(self) -> str:
        """One line: "paddle-recipes extensions: Architecture.Head.init_blank_prob=0.8, ... (<source>)", or ""."""
        if not self.extensions:
            return ""
        return (f"paddle-recipes extensions: {', '.join(f'{k}={v}' for k, v in self.extensions.items())} "
                f"({self.source})")

    def accounts_for(self, path: str) -> bool:
        return path in self.mapped or path in self.no_effect or path in self.approximated

    def approximated_line(self) -> str:
        """One warning line: "not exactly as PaddleOCR: <key> (<how>); ... (<source>)", or "" when none."""
        if not self.approximated:
            return ""
        top = {k: v for k, v in self.approximated.items()  # an op's own keys are covered by the op's entry
               if not any(k.startswith(f"{o}.") for o in self.approximated)}
        return f"not exactly as PaddleOCR: {'; '.join(f'{k} ({v})' for k, v in top.items())} ({self.source})"

    def no_effect_line(self) -> str:
        """The one log line: "no effect here: Global.use_gpu, Global.debug, ... (<source>)"."""
        if not self.no_effect:
            return f"no effect here: none ({self.source})"
        return f"no effect here: {', '.join(self.no_effect)} ({self.source})"


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


def _canon(name: Any, options, path: str, what: str, source: str) -> str:
    """PaddleOCR's exact spelling of a class name; a case-only difference is accepted, anything else errors."""
    if isinstance(name, str):
        if name in options:
            return name
        lowered = {o.lower(): o for o in options}
        if name.lower() in lowered:
            return lowered[name.lower()]
    raise ConfigError(f"{path}: {what} {name!r} is not supported here{_suggest(str(name), list(options))} "
                      f"(in {source})")


class _Translator:
    def __init__(self, data: dict, source: str, overridden: Optional[Dict[str, str]] = None):
        self.src = data
        self.source = source
        self.overridden = overridden or {}  # dotted key an -o set -> its text: an -o wins a "set twice"
        self.set_by: Dict[str, str] = {}  # our key -> the file's key that set it
        self.ours: dict = {}
        self.report = TranslationReport(source)
        self.encoders: Dict[str, Tuple[str, str]] = {}  # split -> (encoder name, its path)
        self.shapes: List[Tuple[str, list]] = []  # (path, [C, H, W]) of every RecResizeImg
        self.img_modes: List[Tuple[str, str]] = []
        self.gtc: Dict[str, Tuple[str, str]] = {}  # split -> (MultiLabelEncode's gtc_encode, its path)
        self.op_lengths: List[Tuple[str, Any]] = []  # (op path, its max_text_length) when Global has none

    # ------------------------------------------------------------------ recording
    def error(self, path: str, msg: str) -> ConfigError:
        return ConfigError(f"{path}: {msg} (in {self.source})")

    def put(self, dst: str, value: Any, replace: bool = False, src: str = "") -> None:
        node = self.ours
        keys = dst.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if not replace and keys[-1] in node and node[keys[-1]] != value:
            old_by, new_by = self.by_override(self.set_by.get(dst, "")), self.by_override(src)
            if old_by == new_by:
                raise self.error(dst, f"set twice with different values ({node[keys[-1]]!r} and {value!r})")
            self.report.overrides.append(f"-o {old_by or new_by} overrides the config's value "
                                         f"{_short(value if old_by else node[keys[-1]])}")
            if old_by:
                return  # the -o's value stays
        node[keys[-1]] = value
        self.set_by[dst] = src
        for i in range(len(keys), 0, -1):  # the key, or the new section it belongs to
            prefix = ".".join(keys[:i])
            if prefix in PROPOSED_KEYS:
                if prefix not in self.report.proposed:
                    self.report.proposed.append(prefix)
                break

    def by_override(self, src: str) -> str:
        """The -o text that set the file's key `src` (or a section holding it), else ""."""
        return next((text for key, text in self.overridden.items() if src == key or src.startswith(f"{key}.")), "")

    def map(self, src: str, value: Any, dst: str) -> None:
        self.put(dst, value, src=src)
        self.report.mapped[src] = dst

    def ext(self, src: str, value: Any, dst: str) -> None:
        """A paddle-recipes extension key: mapped to our `dst` and listed in the one extensions line."""
        self.map(src, value, dst)
        self.report.extensions[src] = value

    def fixed(self, src: str, what: str) -> None:
        self.report.mapped[src] = f"fixed: {what}"

    def none(self, src: str, why: str) -> None:
        self.report.no_effect[src] = why

    def derive(self, dst: str, value: Any, why: str) -> None:
        self.put(dst, value)
        self.report.derived[dst] = why

    def check_keys(self, node: Any, allowed, path: str) -> dict:
        if node is None:
            return {}
        if not isinstance(node, dict):
            raise self.error(path, f"expected a mapping, got {node!r}")
        for key in node:
            if key not in allowed:
                raise self.error(f"{path}.{key}", f"unknown PaddleOCR key{_suggest(str(key), list(allowed))}")
        return node

    def copy_tree(self, src: str, value: Any, dst: str) -> None:
        """Map a free-form subtree leaf by leaf (lists of one-key mappings are walked as [i].Name)."""
        if isinstance(value, dict) and value:
            for k, v in value.items():
                self.copy_tree(f"{src}.{k}", v, f"{dst}.{k}")
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                self.copy_tree(f"{src}[{i}]", v, f"{dst}[{i}]")
        else:
            self.report.mapped[src] = dst

    # ------------------------------------------------------------------ sections
    def run(self) -> Tuple[dict, TranslationReport]:
        self.preflight()
        allowed = PADDLEOCR_SECTIONS + OUR_SECTIONS + tuple(IGNORED_SECTIONS)
        for key in self.src:
            if key not in allowed:
                raise self.error(str(key), f"unknown top-level section{_suggest(str(key), list(allowed))}")
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
        for sec in OUR_SECTIONS:
            if sec in self.src:
                for k, v in (self.src[sec] or {}).items():
                    self.ext(f"{sec}.{k}", copy.deepcopy(v), f"{sec}.{k}")
        return self.ours, self.report

    def no_distillation(self, a: dict, alone: str) -> None:
        """A PaddleOCR DistillationModel (Architecture.Models: Teacher/Student, ...) is one ConfigError naming its
        models' backbones; `alone` says how to train one of them instead."""
        if a.get("name") == "DistillationModel" or "Models" in a:
            models = ", ".join(f"{k}: {(v or {}).get('Backbone', {}).get('name', '?')}"
                               for k, v in (a.get("Models") or {}).items() if isinstance(v, dict))
            raise self.error("Architecture.name", f"{a.get('name', 'Models')!r}: PaddleOCR distillation models "
                             f"(Models {models}) are not built here; train one model alone ({alone})")

    def preflight(self) -> None:
        """The model itself first: a PaddleOCR network this version does not build is named before any key of
        the file could be reported (a distillation model's Loss/PostProcess/Metric names, a backbone's args)."""
        a = self.src.get("Architecture")
        if not isinstance(a, dict):
            return
        self.no_distillation(a, "its section under Architecture.Models as Architecture, Loss CTCLoss/MultiLoss, "
                                "PostProcess CTCLabelDecode")
        if a.get("algorithm") in PPOCR_OTHER_ALGORITHMS:  # before its own keys (in_channels, ...) read as unknown
            raise self.error("Architecture.algorithm", f"{a['algorithm']!r} is PaddleOCR's, but this version does not "
                             f"build it; built here: {', '.join(ALGORITHMS)}")
        b = a.get("Backbone")
        network = catalog.lookup(b.get("name") if isinstance(b, dict) else None, catalog.REC)
        if network is not None and network.cls is None:  # a recognised PaddleOCR name: a clear error, not a key error
            raise self.error("Architecture.Backbone.name", f"{network.name!r} is PaddleOCR's, but this version has no "
                             f"implementation of it; built here: {', '.join(catalog.backbone_names(catalog.REC))}")
        parts = (a.get("Head") or {}).get("head_list") if isinstance(a.get("Head"), dict) else None
        for i, item in enumerate(parts if isinstance(parts, list) else []):
            name = next(iter(item), None) if isinstance(item, dict) else None
            if isinstance(name, str) and name in MULTIHEAD_PARTS and name not in MULTIHEAD_BUILT:
                raise self.error(f"Architecture.Head.head_list[{i}]", f"{name!r} is PaddleOCR's, but this version does "
                                 f"not build it; a MultiHead here is {' + '.join(MULTIHEAD_BUILT)}")

    @staticmethod
    def _global_keys():
        return ("epoch_num", "save_model_dir", "print_batch_step", "eval_batch_step", "save_epoch_step",
                "cal_metric_during_train", "calc_epoch_interval", "log_smooth_window", "pretrained_model",
                "checkpoints", "save_inference_dir", "use_visualdl", "infer_img", "character_dict_path",
                "character_type", "max_text_length", "infer_mode", "use_space_char", "distributed", "debug",
                "use_gpu", "save_res_path", "d2s_train_image_shape", "to_static", "model_name") \
            + DEVICE_SWITCHES + tuple(AMP_KEYS) + OUR_GLOBAL_KEYS

    def global_(self) -> None:
        g = self.g
        direct = {"epoch_num": "Global.epochs", "save_model_dir": "Global.output_dir",
                  "print_batch_step": "Global.log_every", "use_visualdl": "Global.use_visualdl",
                  "max_text_length": "Global.max_text_length", "use_space_char": "Global.use_space_char",
                  "cal_metric_during_train": "Global.cal_metric_during_train",
                  "model_name": "Export.model_name"}
        if g.get("model_name") and g["model_name"] not in _paddlex_rec_names():  # e.g. PP-OCRv6_base_rec
            del direct["model_name"]
            self.none("Global.model_name", f"{g['model_name']!r} is no model name paddlex 3.x accepts (it only "
                      "names the export; PaddleOCR trains without it): the export writes Export.model_name")
        for k, dst in direct.items():
            if k in g:
                self.map(f"Global.{k}", g[k], dst)
        for k, dst in {"pretrained_model": "Global.pretrained_model", "checkpoints": "Global.checkpoints",
                       "infer_img": "Predict.images", "save_res_path": "Predict.save_res_path"}.items():
            if k in g:  # an empty YAML value is None: "" in our typed config
                self.map(f"Global.{k}", "" if g[k] is None else g[k], dst)
        for k in OUR_GLOBAL_KEYS:
            if k in g:
                self.ext(f"Global.{k}", g[k], f"Global.{k}")
        cadence = g.get("cal_metric_during_train")
        if isinstance(cadence, int) and not isinstance(cadence, bool) and cadence >= 2:  # PaddleOCR: any int = true
            self.report.extensions["Global.cal_metric_during_train"] = cadence
        if "log_smooth_window" in g:  # log lines only: values are averaged differently, training is the same
            self.report.approximated["Global.log_smooth_window"] = "logged values average the print_batch_step window"
        if "calc_epoch_interval" in g:
            if int(g["calc_epoch_interval"]) < 1:
                raise self.error("Global.calc_epoch_interval", f"{g['calc_epoch_interval']!r}: must be >= 1")
            self.report.approximated["Global.calc_epoch_interval"] = (
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
        self.dict_path = g.get("character_dict_path") or ""
        if "character_dict_path" in g:
            self.map("Global.character_dict_path", self.dict_path, "Global.character_dict_path")
            if not self.dict_path:
                raise self.error("Global.character_dict_path", "empty (PaddleOCR's built-in lowercase 36-char dict, "
                                 "labels lowercased) is not supported here: give a dict file")
        if "character_type" in g:  # an old key: PaddleOCR's current code does not read it
            self.none("Global.character_type", "PaddleOCR no longer reads it (the dict is character_dict_path)")
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
        if "infer_mode" in g:
            if g["infer_mode"]:
                raise self.error("Global.infer_mode", "true (free-width resize in every split) is not supported "
                                 "here; use RecResizeImg eval_mode for Eval")
            self.none("Global.infer_mode", "false")
        if "distributed" in g:
            self.none("Global.distributed", "the world size comes from the launcher (PaddleOCR overwrites it too)")
        if "debug" in g:
            self.none("Global.debug", "debug switch of PaddleOCR's own code")
        if "to_static" in g:  # static-graph training (static_train), as PaddleOCR's
            self.map("Global.to_static", g["to_static"] is True, "Global.to_static")  # PaddleOCR: `is True`
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

    def architecture(self) -> None:
        a = self.check_keys(self.src.get("Architecture"),
                            ("model_type", "algorithm", "Transform", "Backbone", "Neck", "Head"), "Architecture")
        if a.get("model_type", "rec") != "rec":
            raise self.error("Architecture.model_type", f"{a['model_type']!r}: only 'rec' is translated")
        if "model_type" in a:
            self.map("Architecture.model_type", "rec", "Architecture.model_type")
        if "algorithm" in a:
            self.map("Architecture.algorithm", _canon(a["algorithm"], ALGORITHMS, "Architecture.algorithm",
                                                      "algorithm", self.source), "Architecture.algorithm")
        if "Transform" in a:
            if a["Transform"] is not None:
                raise self.error("Architecture.Transform", "a rectification Transform (TPS, ...) is not supported")
            self.none("Architecture.Transform", "null: no rectification stage")
        self.head_name = None
        self.multihead_parts: List[str] = []
        backbones = catalog.backbone_names(catalog.REC, built=None)
        for part, names in (("Backbone", backbones), ("Neck", NECKS), ("Head", HEADS)):
            node = a.get(part)
            if node is None:
                if part in a:
                    self.none(f"Architecture.{part}", "null")
                continue
            path = f"Architecture.{part}"
            if not isinstance(node, dict) or "name" not in node:
                raise self.error(path, "needs a name")
            node = copy.deepcopy(node)
            node["name"] = _canon(node["name"], names, f"{path}.name", part.lower(), self.source)
            if part == "Neck" and node["name"] == "SequenceEncoder":
                _canon(node.get("encoder_type"), ENCODER_TYPES, f"{path}.encoder_type", "encoder_type", self.source)
            if part == "Head":
                self.head_name = node["name"]
                if "init_blank_prob" in node:  # ours: the CTC output bias (MultiHead: its CTC branch)
                    self.report.extensions["Architecture.Head.init_blank_prob"] = node["init_blank_prob"]
                if node["name"] == "MultiHead":
                    self._head_list(node, path)
            self.put(path, node)
            self.copy_tree(path, a[part], path)
        if a.get("Neck") is None:  # our schema's default neck must not slip in
            self.derive("Architecture.Neck", None, "no Neck in the PaddleOCR file")

    def _head_list(self, node: dict, path: str) -> None:
        parts = node.get("head_list")
        if not isinstance(parts, list) or not parts:
            raise self.error(f"{path}.head_list", "MultiHead needs a non-empty head_list")
        for i, item in enumerate(parts):
            if not isinstance(item, dict) or len(item) != 1:
                raise self.error(f"{path}.head_list[{i}]", "each entry is a one-key mapping {HeadName: args}")
            name = next(iter(item))
            canon = _canon(name, MULTIHEAD_PARTS, f"{path}.head_list[{i}]", "head", self.source)
            parts[i] = {canon: item[name]}
        self.multihead_parts = [next(iter(x)) for x in parts]
        if next(iter(parts[0])) != "CTCHead":
            raise self.error(f"{path}.head_list[0]", "the first MultiHead part must be CTCHead (it gives the output)")

    def loss(self) -> None:
        lo = self.check_keys(self.src.get("Loss"), ("name", "loss_config_list", "use_focal_loss"), "Loss")
        if not lo:
            raise self.error("Loss", "is required")
        self.loss_name = _canon(lo.get("name"), LOSSES, "Loss.name", "loss", self.source)
        self.map("Loss.name", self.loss_name, "Loss.name")
        if "use_focal_loss" in lo:
            if lo["use_focal_loss"]:
                raise self.error("Loss.use_focal_loss", "true is not supported here")
            self.none("Loss.use_focal_loss", "false")
        if self.loss_name == "MultiLoss":
            parts = lo.get("loss_config_list")
            if not isinstance(parts, list) or not parts:
                raise self.error("Loss.loss_config_list", "MultiLoss needs a non-empty loss_config_list")
            out = []
            for i, item in enumerate(parts):
                if not isinstance(item, dict) or len(item) != 1:
                    raise self.error(f"Loss.loss_config_list[{i}]", "each entry is a one-key mapping {Loss: args}")
                name = next(iter(item))
                out.append({_canon(name, MULTILOSS_PARTS, f"Loss.loss_config_list[{i}]", "loss", self.source):
                            copy.deepcopy(item[name])})
            self.put("Loss.loss_config_list", out)
            self.copy_tree("Loss.loss_config_list", parts, "Loss.loss_config_list")
        elif "loss_config_list" in lo:
            raise self.error("Loss.loss_config_list", f"only MultiLoss takes it, not {self.loss_name}")

    def postprocess(self) -> None:
        pp = self.check_keys(self.src.get("PostProcess"), ("name",) + GLOBAL_MERGED[1:3], "PostProcess")
        if not pp:
            return
        _canon(pp.get("name"), ("CTCLabelDecode",), "PostProcess.name", "post-process", self.source)
        self.fixed("PostProcess.name", "greedy CTC decode with Global.character_dict_path")
        for k in ("character_dict_path", "use_space_char"):
            if k in pp:
                if k not in self.g:
                    raise self.error(f"PostProcess.{k}", f"set Global.{k} instead (decoding uses the training dict)")
                self.none(f"PostProcess.{k}", f"overridden by Global.{k}, as in PaddleOCR")

    def metric(self) -> None:
        m = self.check_keys(self.src.get("Metric"), ("name", "main_indicator", "ignore_space", "is_filter"), "Metric")
        if m:
            _canon(m.get("name"), ("RecMetric",), "Metric.name", "metric", self.source)
            self.fixed("Metric.name", "acc + norm_edit_dis (RecMetric)")
        main = m.get("main_indicator", "acc")
        if main not in ("acc", "norm_edit_dis"):
            raise self.error("Metric.main_indicator", f"{main!r} is not one of ['acc', 'norm_edit_dis']")
        if "main_indicator" in m:
            self.map("Metric.main_indicator", main, "Metric.main_indicator")
        if "ignore_space" in m:
            self.map("Metric.ignore_space", bool(m["ignore_space"]), "Metric.ignore_space")
        else:
            self.derive("Metric.ignore_space", True, "PaddleOCR's RecMetric default")
        if "is_filter" in m:
            self.map("Metric.is_filter", bool(m["is_filter"]), "Metric.is_filter")

    def optimizer(self) -> None:
        o = self.check_keys(self.src.get("Optimizer"), ("name", "beta1", "beta2", "epsilon", "momentum", "lr",
                                                        "regularizer", "clip_norm", "clip_norm_global",
                                                        "no_weight_decay_name", "one_dim_param_no_weight_decay",
                                                        "multi_precision", "lazy_mode"), "Optimizer")
        if not o:
            raise self.error("Optimizer", "is required")
        name = OPTIMIZERS[_canon(o.get("name"), tuple(OPTIMIZERS), "Optimizer.name", "optimizer", self.source)]
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
        sched = LR_SCHEDULES[_canon(lr["name"], tuple(LR_SCHEDULES), "Optimizer.lr.name", "lr schedule", self.source)]
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
            self.report.approximated["Optimizer.lr.warmup_epoch"] = (
                "after warmup the schedule spans the remaining steps; PaddleOCR restarts it with the full length")

    def split(self, split: str) -> None:
        node = self.src.get(split)
        allowed = ("dataset", "loader", "sampler") if split == "Train" else ("dataset", "loader")
        node = self.check_keys(node, allowed + ("accumulate_steps",), split)
        if not node:
            raise self.error(split, "is required")
        if "accumulate_steps" in node:
            if split != "Train":
                raise self.error(f"{split}.accumulate_steps", "only Train takes it")
            self.map("Train.accumulate_steps", node["accumulate_steps"], "Train.accumulate_steps")
        ds = self.check_keys(node.get("dataset"), ("name", "data_dir", "label_file_list", "ratio_list", "transforms",
                                                    "delimiter", "ds_width", "ext_op_transform_idx"), f"{split}.dataset")
        p = f"{split}.dataset"
        dname = _canon(ds.get("name"), tuple(DATASETS), f"{p}.name", "dataset", self.source)
        fmt = DATASETS[dname]
        self.map(f"{p}.name", fmt, f"{p}.format")
        if "data_dir" in ds:
            self.map(f"{p}.data_dir", ds["data_dir"] or "", f"{p}.data_dir")
        if "label_file_list" in ds:
            if fmt == "lmdb":
                self.none(f"{p}.label_file_list", f"{dname} reads data_dir only")
            else:
                lfl = ds["label_file_list"]
                self.map(f"{p}.label_file_list", [lfl] if isinstance(lfl, str) else list(lfl or []),
                         f"{p}.label_file_list")
        if "delimiter" in ds:
            self.map(f"{p}.delimiter", ds["delimiter"], f"{p}.delimiter")
        if "ratio_list" in ds:
            r = ds["ratio_list"]
            ratios = r if isinstance(r, list) else [r]
            if all(float(x) == 1.0 for x in ratios):
                self.fixed(f"{p}.ratio_list", "1.0: every sample of every label file is used")
            elif (split == "Train" and fmt == "label_file" and isinstance(node.get("sampler"), dict)  # a fresh
                  and str(node["sampler"].get("name")).lower() == "multiscalesampler"):  # fraction per epoch
                files = ds.get("label_file_list") or []
                self.map(f"{p}.ratio_list", [float(x) for x in (r if isinstance(r, list) else [r] * len(files))],
                         f"{p}.ratio_list")
            else:
                raise self.error(f"{p}.ratio_list", f"{r!r}: sampling a fraction of each label file is supported "
                                 "for Train label files with a MultiScaleSampler only")
        if "ds_width" in ds:
            if ds["ds_width"]:
                raise self.error(f"{p}.ds_width", "true (per-sample width buckets) is not supported here")
            self.none(f"{p}.ds_width", "false")
        if dname == "MultiScaleDataSet" and "sampler" not in node:
            raise self.error(f"{split}.sampler", "MultiScaleDataSet needs a MultiScaleSampler")
        self.transforms(split, ds.get("transforms"), ds.get("ext_op_transform_idx"), "ext_op_transform_idx" in ds)
        bs_path = self.sampler(node.get("sampler")) if split == "Train" and "sampler" in node else None
        self.loader(split, node.get("loader"), bs_path)

    def transforms(self, split: str, ops: Any, ext_idx: Any, has_ext_idx: bool) -> None:
        p = f"{split}.dataset.transforms"
        if not isinstance(ops, list) or not ops:
            raise self.error(p, "is required (a list of data ops)")
        names = []
        concat_at = None
        for i, item in enumerate(ops):
            if not isinstance(item, dict) or len(item) != 1:
                raise self.error(f"{p}[{i}]", "each op is a one-key mapping {OpName: args}")
            raw = next(iter(item))
            name = _canon(raw, TRANSFORMS, f"{p}[{i}]", "transform", self.source)
            names.append(name)
            args = item[raw]
            op = f"{p}[{i}].{raw}"
            allowed = {"DecodeImage": ("img_mode", "channel_first"), "RecAug": RECAUG_ARGS,
                       "RecConAug": ("prob", "ext_data_num", "image_shape", "max_text_length"),
                       "CTCLabelEncode": (), "MultiLabelEncode": ("gtc_encode",),
                       "RecResizeImg": ("image_shape", "padding", "eval_mode"), "KeepKeys": ("keep_keys",)}[name]
            args = self.check_keys(args, allowed + GLOBAL_MERGED, op)
            if not args:
                self.fixed(op, f"{name} with its defaults")
            self._merged_from_global(op, args)
            getattr(self, f"_op_{name}")(split, op, args, i)
            if name == "RecConAug":
                concat_at = i
        if split == "Train" and "RecAug" not in names:
            self.derive("Train.dataset.aug", False, "no RecAug in Train.dataset.transforms")
        if "RecAug" in names and split == "Eval":
            raise self.error(f"{p}[{names.index('RecAug')}]", "augmenting Eval images is not supported")
        if has_ext_idx:
            ep = f"{split}.dataset.ext_op_transform_idx"
            if concat_at is None:
                self.none(ep, "only used to load RecConAug's extra samples; there is no RecConAug")
            elif ext_idx != concat_at:
                raise self.error(ep, f"{ext_idx!r}: the extra samples of RecConAug must go through exactly the "
                                 f"ops before it ({concat_at})")
            else:
                self.fixed(ep, "RecConAug's extra samples are decoded like the main one")
        enc = [n for n in names if n in LABEL_ENCODERS]
        if len(enc) != 1:
            raise self.error(p, f"needs exactly one label encoder of {sorted(LABEL_ENCODERS)}, found {enc}")

    def _merged_from_global(self, op: str, args: dict) -> None:
        for k in GLOBAL_MERGED:
            if k not in args:
                continue
            if k in self.g:  # PaddleOCR merges Global's value over the op's, so the op's value never counts
                self.none(f"{op}.{k}", f"overridden by Global.{k}, as in PaddleOCR")
            elif k == "max_text_length":  # each op keeps its own value: one of them becomes ours (consistency)
                self.op_lengths.append((op, args[k]))
            else:
                raise self.error(f"{op}.{k}", f"set Global.{k} instead (one value for the whole run)")

    def _op_DecodeImage(self, split, op, args, i):
        mode = str(args.get("img_mode", "RGB")).upper()
        if mode not in ("RGB", "BGR", "GRAY"):
            raise self.error(f"{op}.img_mode", f"{args.get('img_mode')!r} is not one of RGB, BGR, GRAY")
        self.img_modes.append((f"{op}.img_mode", mode))
        if "img_mode" in args:
            self.report.mapped[f"{op}.img_mode"] = "Global.img_mode"
        if args.get("channel_first"):
            raise self.error(f"{op}.channel_first", "true is not supported here (images stay HWC until the resize)")
        if "channel_first" in args:
            self.fixed(f"{op}.channel_first", "false: HWC until the resize")

    def _op_RecAug(self, split, op, args, i):
        if not args:
            self.put(f"{split}.dataset.aug", True)
            self.report.approximated[op] = ("our augmentation (tasks/ocr/augment.py: perspective, blur, noise, "
                                            "brightness/contrast) stands in for RecAug's TIA, crop, reverse, "
                                            "jitter and HSV ops")
            return
        zero = {k: isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0 for k, v in args.items()}
        if all(zero.get(k) for k in RECAUG_PROBS) and all(ok for k, ok in zero.items() if k != "use_tia"):
            self.put(f"{split}.dataset.aug", False)  # PaddleOCR's RecAug fires each op when random() <= its prob
            self.none(op, "every probability 0: PaddleOCR's RecAug changes no image either")
            for key in args:
                self.none(f"{op}.{key}", "RecAug with every probability 0 does nothing")
            return
        bad = next((k for k, ok in zero.items() if not ok and k != "use_tia"), next(iter(args)))
        raise self.error(f"{op}.{bad}", "RecAug parameters are not supported here: the augmentation is on (RecAug "
                         f"listed with no parameters) or off (not listed, or {': 0, '.join(RECAUG_PROBS)}: 0)")

    def _op_RecConAug(self, split, op, args, i):
        if split != "Train":
            raise self.error(op, "only Train can use RecConAug")
        try:
            prob = float(args.get("prob", 0.5))  # PaddleOCR's default; it concatenates when random() <= prob
        except (TypeError, ValueError):
            raise self.error(f"{op}.prob", f"{args.get('prob')!r} is not a number") from None
        if prob <= 0:
            self.none(op, "prob 0: PaddleOCR never concatenates lines either")
            for key in args:
                if key not in GLOBAL_MERGED:
                    self.none(f"{op}.{key}", "RecConAug with prob 0 does nothing")
            return
        self.report.approximated[op] = "line concatenation is not applied here"
        for key in args:
            if key not in GLOBAL_MERGED:
                self.report.approximated[f"{op}.{key}"] = "RecConAug is not applied"

    def _label_encoder(self, split, op, name):
        self.encoders[split] = (name, op)
        self.put(f"{split}.dataset.label_encoder", name)
        self.report.mapped[op] = f"{split}.dataset.label_encoder"

    def _op_CTCLabelEncode(self, split, op, args, i):
        self._label_encoder(split, op, "CTCLabelEncode")

    def _op_MultiLabelEncode(self, split, op, args, i):
        self._label_encoder(split, op, "MultiLabelEncode")
        gtc = args.get("gtc_encode")
        if gtc is not None:
            gtc = _canon(gtc, ("NRTRLabelEncode", "SARLabelEncode"), f"{op}.gtc_encode", "gtc_encode", self.source)
            self.map(f"{op}.gtc_encode", gtc, f"{split}.dataset.gtc_encode")
        else:  # PaddleOCR's MultiLabelEncode falls back to SAR labels (label_sar)
            gtc = "SARLabelEncode"
            self.derive(f"{split}.dataset.gtc_encode", gtc, "MultiLabelEncode without gtc_encode")
        self.gtc[split] = (gtc, f"{op}.gtc_encode")
        if args:
            self.report.mapped[op] = f"{split}.dataset.label_encoder"

    def _op_RecResizeImg(self, split, op, args, i):
        if "image_shape" not in args:
            raise self.error(f"{op}.image_shape", "is required")
        shape = [int(v) for v in args["image_shape"]]
        self.shapes.append((f"{op}.image_shape", shape))
        self.report.mapped[f"{op}.image_shape"] = "Global.image_shape"
        mode = "pad"
        if args.get("padding", True) is False:
            mode = "stretch"
        if args.get("eval_mode") and self.dict_path:  # PaddleOCR: eval_mode + a dict -> free-width resize
            mode = "free_width"
        for k in ("padding", "eval_mode"):
            if k in args:
                self.report.mapped[f"{op}.{k}"] = f"{split}.dataset.resize_mode"
        if "eval_mode" in args and args["eval_mode"] and not self.dict_path:
            self.report.mapped.pop(f"{op}.eval_mode")
            self.none(f"{op}.eval_mode", "without a dict file PaddleOCR resizes as usual")
        if mode == "stretch":
            raise self.error(f"{op}.padding", "false (stretch to the full width) is not supported here: our resize "
                             "keeps the aspect ratio and pads (padding: true)")
        for k in ("padding", "eval_mode"):
            if k in args and f"{op}.{k}" not in self.report.no_effect:
                self.report.mapped.pop(f"{op}.{k}", None)
                if k == "padding" or mode != "free_width":
                    self.fixed(f"{op}.{k}", "keep-ratio resize, right-padded to Global.image_shape")
        if mode == "free_width":
            self.report.approximated[f"{op}.eval_mode"] = (
                "Eval images are padded to Global.image_shape; PaddleOCR lets the width grow (predict/export do)")

    def _op_KeepKeys(self, split, op, args, i):
        self.keep_keys = getattr(self, "keep_keys", {})
        self.keep_keys[split] = (f"{op}.keep_keys", list(args.get("keep_keys") or []))
        if "keep_keys" in args:
            self.fixed(f"{op}.keep_keys", "the batch keys follow the label encoder")

    def sampler(self, s: Any) -> Optional[str]:
        """Train.sampler: PaddleOCR's MultiScaleSampler (returns the path batch sizes come from), or our extension
        LengthCurriculumSampler (its warm_steps / short_len; a MultiScaleSampler's keys left in the section by an
        ``-o Train.sampler.name=...`` are reported as having no effect; None: the batch size is Train.loader's)."""
        p = "Train.sampler"
        s = self.check_keys(s, ("name",) + MULTISCALE_KEYS + CURRICULUM_KEYS, p)
        if not s:
            self.none(p, "null")
            return None
        name = _canon(s.get("name"), ("MultiScaleSampler", "LengthCurriculumSampler"), f"{p}.name", "sampler",
                      self.source)
        if name == "LengthCurriculumSampler":
            for k, v in s.items():
                if k in MULTISCALE_KEYS:
                    self.none(f"{p}.{k}", "MultiScaleSampler's: the LengthCurriculumSampler extension replaces it "
                              "(batches of Train.loader.batch_size_per_card at Global.image_shape)")
                else:
                    self.ext(f"{p}.{k}", v if k != "name" else name, f"{p}.{k}")
            return None
        for k in CURRICULUM_KEYS:
            if k in s:
                raise self.error(f"{p}.{k}", "only Train.sampler.name LengthCurriculumSampler (paddle-recipes "
                                 "extension) takes it")
        for k, v in s.items():
            self.map(f"{p}.{k}", copy.deepcopy(v), f"{p}.{k}")
        if "first_bs" not in s:
            raise self.error(f"{p}.first_bs", "is required")
        return f"{p}.first_bs"

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

    def _op_max_text_length(self) -> None:
        """No Global.max_text_length: PaddleOCR's data ops use their own. Ours is one value for the run: the
        Train label encoder's (else the first op's); another op's value that differs is reported."""
        if not self.op_lengths:
            return
        enc = self.encoders.get("Train", (None, ""))[1]
        src, value = next(((p, v) for p, v in self.op_lengths if p == enc), self.op_lengths[0])
        self.map(f"{src}.max_text_length", int(value), "Global.max_text_length")
        for path, v in self.op_lengths:
            if path == src:
                continue
            if int(v) == int(value):
                self.report.mapped[f"{path}.max_text_length"] = "Global.max_text_length"
            else:
                self.report.approximated[f"{path}.max_text_length"] = (
                    f"{v} here is {value} ({src}.max_text_length): longer labels are counted skips")

    def consistency(self) -> None:
        """One image shape, one channel order, label encoders that match the loss, keep_keys that match them."""
        if not self.shapes:
            raise self.error("Train.dataset.transforms", "no RecResizeImg image_shape in Train or Eval: the input "
                             "shape is unknown")
        first_path, first = self.shapes[0]
        for path, shape in self.shapes[1:]:
            if shape != first:
                raise self.error(path, f"{shape} differs from {first_path} {first}: one input shape per run")
        self.put("Global.image_shape", first)
        self._op_max_text_length()
        for path, mode in self.img_modes:  # our pipeline decodes BGR (transforms.decode_image), as PaddleOCR's rec
            if mode != "BGR":
                raise self.error(path, f"{mode} (PaddleOCR's default when img_mode is absent is RGB): images are "
                                 "decoded BGR here, as in PaddleOCR's rec configs; set img_mode: BGR")
            self.report.mapped[path] = "fixed: BGR"
        for split, (name, path) in self.encoders.items():
            need_loss, keys = LABEL_ENCODERS[name]
            if need_loss != self.loss_name:
                raise self.error(path, f"{name} does not go with Loss.name {self.loss_name}")
            if split in self.gtc:
                gtc, gtc_path = self.gtc[split]
                if gtc == "SARLabelEncode":
                    keys = [("label_sar" if k == "label_gtc" else k) for k in keys]
                second = self.multihead_parts[1:2]
                want = {"NRTRLabelEncode": "NRTRHead", "SARLabelEncode": "SARHead"}[gtc]
                if second and second[0] != want:
                    raise self.error(gtc_path, f"{gtc} does not go with Architecture.Head.head_list[1] {second[0]}")
            kp, kept = getattr(self, "keep_keys", {}).get(split, (None, None))
            if kept is not None and kept and kept != keys:
                raise self.error(kp, f"{kept} does not match {name}, which gives {keys}")
        want_head = {"CTCLoss": "CTCHead", "MultiLoss": "MultiHead"}[self.loss_name]
        if self.head_name is not None and self.head_name != want_head:
            raise self.error("Loss.name", f"{self.loss_name} does not go with Architecture.Head.name {self.head_name}")


def translate_rec_config(data: dict, source: str = "<dict>", overridden: Optional[Dict[str, str]] = None
                         ) -> Tuple[dict, TranslationReport]:
    """Map a PaddleOCR recognition config (a loaded YAML dict) onto the OCR recipe's config dict.

    Returns (our config dict, TranslationReport). Raises ConfigError naming the key for an unknown key
    (with the nearest valid one) and for a value whose meaning would change here. overridden: {dotted key: -o
    text} of the -o applied to `data` (config.translate_config); two keys of the file that set one of ours to
    different values are an error, unless an -o set one of them: that value wins (report.overrides says so).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping")
    return _Translator(copy.deepcopy(data), source, overridden).run()


def _schema_has(schema: type, path: str) -> bool:
    """True when the dotted `path` is a key of dataclass `schema` (Optional sections looked through)."""
    import dataclasses
    import typing

    from paddle_recipes.config import field_types

    tp: Any = schema
    for key in path.split("."):
        if typing.get_origin(tp) is not None:  # Optional[X] / Union: the dataclass member
            tp = next((a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)), tp)
        if not dataclasses.is_dataclass(tp) or key not in {f.name for f in dataclasses.fields(tp)}:
            return False
        tp = field_types(tp)[key]
    return True


def paddleocr_rec_translator(schema: type, translate_fn: Optional[Callable] = None
                             ) -> Callable[[dict, Path], Optional[Tuple[dict, List[str]]]]:
    """A ``Recipe.config_translators`` entry for `schema` (the OCR recipe's RecConfig): a PaddleOCR rec YAML
    (is_paddleocr_config) -> (our config dict, notes: the "no effect here" line and, when any, the
    "not exactly as PaddleOCR" line). ``-o`` overrides are given in PaddleOCR's keys (the function's
    ``recognise`` attribute tells config.load_config so; an -o of ours, e.g. ``Predict.images``, wins over the
    file's key that translates to it, e.g. ``Global.infer_img``, with a note); translate_fn: another ``(raw,
    source, overridden) -> (ours, report)`` of the same shape (compat.paddleocr_det's). A key the translator maps to a schema key this
    version lacks (PROPOSED_KEYS) is a ConfigError naming the PaddleOCR key; None for other files."""
    def translate(raw: dict, path: Path, overridden: Optional[Dict[str, str]] = None):
        if not is_paddleocr_config(raw):
            return None
        ours, report = (translate_fn or translate_rec_config)(raw, f"{path} (PaddleOCR config)", overridden)
        for key in report.proposed:
            target = key.split("=")[0]
            if "=" in key or not _schema_has(schema, target):
                src = [k for k, v in report.mapped.items() if v == target] or [target]
                raise ConfigError(f"{src[0]}: not supported by this version of the recipe (it needs "
                                  f"{key}: {PROPOSED_KEYS.get(key, '')}) (in {path})")
        notes = [report.no_effect_line()]
        if report.approximated:
            notes.append(report.approximated_line())
        if report.extensions:
            notes.append(report.extensions_line())
        return ours, notes + [OverrideNote(line) for line in report.overrides]

    translate.recognise = is_paddleocr_config
    return translate
