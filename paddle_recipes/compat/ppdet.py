"""PaddleDetection PP-YOLOE / PP-YOLOE+ YAML configs -> the det recipe's config dict.

    imp = import_ppdet_config("configs/ppyoloe/ppyoloe_plus_crn_s_80e_coco.yml")
    imp.config         # nested dict for recipes/det_ppyoloe.py DetConfig (feed to config.from_dict)
    imp.no_effect      # {ppdet key: why it does nothing here}   (logged once, one line)
    imp.approximated   # {ppdet key: how ours differs}           (logged once, one line)

Loading (``_BASE_`` includes, ppdet's YAML tags) is formats.ppdet_yaml's; its names are importable from here too.

Every key of the merged config is either mapped onto one of ours, reported as having no effect
here, reported as approximated (e.g. ppdet's own augmentation ops are replaced by ours), or a
``ConfigError`` naming the key and the file that set it: unknown keys and values that would
silently change meaning (another architecture, keep-ratio resize, a non-COCO metric, ...).

Keys this emits that the det recipe must have (see the report to the lead):
``Architecture.normalize`` {mean, std, is_scale}, ``Global.pretrained_model``,
``Optimizer.warmup_epochs`` (warm-up length in epochs; ppdet's ``LinearWarmup.epochs``),
``Optimizer.schedule: piecewise`` with ``milestone_epochs`` / ``lr_factors`` (ppdet's ``PiecewiseDecay``).

ppdet's YAML object tags (``- !PiecewiseDecay {...}``) are read by ``PpdetLoader`` as ``{name: ..., ...}``;
``ppdet_config_translator`` carries that loader (``yaml_loader``) and ppdet's ``-o`` spellings
(``override_aliases``: ``-o weights=x.pdparams`` = ``-o Global.weights=x.pdparams``) for ``config.load_config``.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from paddle_recipes.config import ConfigError, duplicate_key_line
from paddle_recipes.formats.ppdet_yaml import PpdetLoader, is_ppdet_config, load_ppdet_yaml
from paddle_recipes.nn import catalog
from paddle_recipes.tasks.det_ppyoloe import model  # noqa: F401 (its parts register in nn.catalog: PPYOLOE_PARTS)

from .translate import TranslationReport, Translator

_log = logging.getLogger("paddle_recipes.compat.ppdet")

# width/depth multipliers of the PP-YOLOE sizes (ppdet configs state them; we name them)
SIZE_BY_MULTS = {(0.50, 0.33): "s", (0.75, 0.67): "m", (1.00, 1.00): "l", (1.25, 1.33): "x"}
# YOLOv3.backbone / neck / yolo_head: ppdet's names of the parts built here (nn.catalog)
PPYOLOE_PARTS = [catalog.names(catalog.PPYOLOE, kind=kind)[0] for kind in (catalog.BACKBONE, catalog.NECK, catalog.HEAD)]


# ----------------------------------------------------------------------------- translation
@dataclass
class PpdetImport(TranslationReport):
    """Result of translating a ppdet config (see module docstring): the shared report (compat.translate) with the
    config dict and the PP-YOLOE family; its lines name the source first."""
    config: dict = field(default_factory=dict)
    family: str = ""  # "ppyoloe_plus" | "ppyoloe"

    def lines(self) -> list[tuple[int, str]]:
        """The report as at most two lines: keys with no effect here (INFO), keys approximated (WARNING)."""
        out = []
        if self.no_effect:
            out.append((logging.INFO, f"{self.source}: no effect here: " +
                        "; ".join(f"{k} ({v})" for k, v in self.no_effect.items())))
        if self.approximated:
            out.append((logging.WARNING, f"{self.source}: approximated: " +
                        "; ".join(f"{k} ({v})" for k, v in self.approximated.items())))
        return out

    def log(self, logger: logging.Logger | None = None) -> None:
        super().log(logger or _log)


class PpdetTranslator(Translator):
    """ppdet's keys in the shared vocabulary (compat.translate): ``put`` our key (a later value replaces, as ppdet's
    merge does), ``none`` (no effect here), ``approx``, or ``raise self.error`` naming the key and its file."""

    foreign = "ppdet"
    last_wins = True

    def __init__(self, cfg: dict, origin: dict, source: str, name: str):
        super().__init__(source, report=PpdetImport(source))
        self.cfg, self.origin, self.name = cfg, origin, name
        self.imp = self.report

    # -- helpers
    def where(self, key: str) -> str:
        top = key.split(".")[0]
        return self.origin.get(top, self.source)

    def error(self, key: str, msg: str) -> ConfigError:
        return ConfigError(f"{self.where(key)}: ppdet key {key}: {msg}")

    def pop(self, d: dict, key: str, path: str, default=None, required: bool = False):
        if key not in d:
            if required:
                raise self.error(f"{path}.{key}" if path else key, "missing")
            return default
        return d.pop(key)

    def expect(self, key: str, value, allowed, why: str):
        if value not in allowed:
            raise self.error(key, f"{value!r} is not supported here ({why}); supported: {allowed}")

    def leftover(self, d: dict, path: str):
        if d:
            k = sorted(d)[0]
            raise self.error(f"{path}.{k}" if path else k,
                             "not understood by this importer (would be silently ignored)")

    # -- sections
    def run(self) -> PpdetImport:
        c = self.cfg
        self.architecture(c)  # first: another architecture is the one line to report
        self.global_keys(c)
        self.datasets(c)
        self.optimizer(c)
        self.readers(c)
        self.leftover(c, "")
        self.imp.config = self.ours
        return self.imp

    def global_keys(self, c: dict):
        self.expect("metric", self.pop(c, "metric", "", "COCO"), ["COCO"], "COCO mAP is the det metric here")
        n = self.pop(c, "num_classes", "")
        if n is not None:
            self.none("num_classes", f"{n}: the class count comes from the annotation file's categories")
        for dev in ("use_xpu", "use_mlu", "use_npu"):
            if self.pop(c, dev, "", False):
                raise self.error(dev, "only CPU/GPU are supported here")
            self.none(dev, "false")
        use_gpu = self.pop(c, "use_gpu", "", True)
        if use_gpu:
            self.none("use_gpu", "true: a GPU is used when present (Global.device)")
        else:
            self.put("Global.device", "cpu")
        if "log_iter" in c:
            self.put("Global.log_every", int(c.pop("log_iter")))
        save_dir = self.pop(c, "save_dir", "", "output")
        self.put("Global.output_dir", str(Path(save_dir) / self.name))  # ppdet writes to save_dir/<config name>
        if "snapshot_epoch" in c:
            e = int(c.pop("snapshot_epoch"))
            self.put("Global.save_every_epochs", e)
            self.put("Global.eval_every_epochs", e)  # ppdet's --eval evaluates at every snapshot
        for k in ("print_flops", "print_params"):
            if k in c:
                self.none(k, str(c.pop(k)))
        if "weights" in c:
            self.none("weights", f"{c.pop('weights')}: eval/export read output_dir/checkpoints "
                                 "(set Global.weights to use another file)")
        if "pretrain_weights" in c:
            self.put("Global.pretrained_model", str(c.pop("pretrain_weights")))
        if "epoch" in c:
            self.put("Global.epochs", int(c.pop("epoch")))
        if "use_ema" in c:
            self.put("EMA.enable", bool(c.pop("use_ema")))
        if "ema_decay" in c:
            self.put("EMA.decay", float(c.pop("ema_decay")))
        black = self.pop(c, "ema_black_list", "", None)
        if black is not None:
            if set(black) - {"proj_conv.weight"}:
                raise self.error("ema_black_list", f"{black}: only proj_conv.weight (our DFL buffer, never averaged) "
                                 "is understood")
            self.none("ema_black_list", "proj_conv is a fixed buffer here, never averaged")
        amp_black = self.pop(c, "custom_black_list", "", None)
        if amp_black is not None:
            if set(amp_black) - {"reduce_mean"}:
                raise self.error("custom_black_list", f"{amp_black}: set AMP.custom_black_list in our config instead "
                                 "(it would replace the recipe's detection list)")
            self.none("custom_black_list", "reduce_mean is already in the recipe's fp16 black list")
        norm = self.pop(c, "norm_type", "", "bn")
        self.expect("norm_type", norm, ["bn", "sync_bn"], "BatchNorm")
        self.none("norm_type", f"{norm}: BatchNorm statistics are per process here (no SyncBN)")
        export = self.pop(c, "export", "", None)
        if export is not None:
            export = dict(export)
            for k, ok in (("post_process", True), ("nms", True), ("benchmark", False)):
                v = self.pop(export, k, "export", ok)
                if bool(v) != ok:
                    raise self.error(f"export.{k}",
                                     f"{v!r}: the ppdet-layout export always includes post-processing + NMS")
                self.none(f"export.{k}", f"{v}: as in our ppdet-layout export")
            if "fuse_conv_bn" in export:
                self.put("Export.fold_bn", bool(export.pop("fuse_conv_bn")))
            self.leftover(export, "export")

    def architecture(self, c: dict):
        arch = self.pop(c, "architecture", "", required=True)
        parts = {k: v for k, v in dict(c.get(arch) or {}).items() if isinstance(v, str)}  # backbone, neck, head...
        if arch != "YOLOv3" or [parts.get(k) for k in ("backbone", "neck", "yolo_head")] != PPYOLOE_PARTS:
            built = f"{arch} ({', '.join(f'{k}: {v}' for k, v in parts.items())})" if parts else str(arch)
            raise self.error("architecture", f"{built} is not built here: this recipe builds PP-YOLOE / PP-YOLOE+ "
                             f"(YOLOv3 with {', '.join(PPYOLOE_PARTS)})")
        y = dict(self.pop(c, "YOLOv3", "", required=True))
        for k in ("backbone", "neck", "yolo_head"):
            y.pop(k)
        if y.pop("post_process", None) is not None:
            raise self.error("YOLOv3.post_process", "PP-YOLOE decodes in its head (post_process: ~)")
        self.leftover(y, "YOLOv3")

        w = float(self.pop(c, "width_mult", "", 1.0))
        d = float(self.pop(c, "depth_mult", "", 1.0))
        size = SIZE_BY_MULTS.get((round(w, 2), round(d, 2)))
        if size is None:
            raise self.error("width_mult", f"width {w} / depth {d} is none of the PP-YOLOE sizes {SIZE_BY_MULTS}")
        self.put("Architecture.size", size)

        b = dict(self.pop(c, "CSPResNet", "", required=True))
        for k, want in (("layers", [3, 6, 6, 3]), ("channels", [64, 128, 256, 512, 1024]), ("return_idx", [1, 2, 3]),
                        ("use_large_stem", True), ("act", "swish")):
            v = self.pop(b, k, "CSPResNet", want)
            self.expect(f"CSPResNet.{k}", v, [want], "our CSPRepResNet")
        alpha = bool(self.pop(b, "use_alpha", "CSPResNet", False))
        self.imp.family = "ppyoloe_plus" if alpha else "ppyoloe"
        if alpha:
            self.approx("CSPResNet.use_alpha", "the RepVgg alpha scale is not a separate parameter here: "
                                               "it is folded into the 1x1 branch's BN (same function class)")
        for k in ("width_mult", "depth_mult"):  # may also sit inside the section
            if k in b:
                raise self.error(f"CSPResNet.{k}", "set width_mult/depth_mult at the top level, as ppdet's configs do")
        self.leftover(b, "CSPResNet")

        n = dict(self.pop(c, "CustomCSPPAN", "", required=True))
        for k, want in (("out_channels", [768, 384, 192]), ("stage_num", 1), ("block_num", 3), ("act", "swish"),
                        ("spp", True), ("drop_block", False), ("use_alpha", False)):
            self.expect(f"CustomCSPPAN.{k}", self.pop(n, k, "CustomCSPPAN", want), [want], "our CustomCSPPAN")
        self.leftover(n, "CustomCSPPAN")

        h = dict(self.pop(c, "PPYOLOEHead", "", required=True))
        self.expect("PPYOLOEHead.fpn_strides", self.pop(h, "fpn_strides", "PPYOLOEHead", [32, 16, 8]),
                    [[32, 16, 8]], "three levels")
        self.expect("PPYOLOEHead.grid_cell_offset", self.pop(h, "grid_cell_offset", "PPYOLOEHead", 0.5), [0.5],
                    "anchor points at cell centres")
        self.expect("PPYOLOEHead.use_varifocal_loss", self.pop(h, "use_varifocal_loss", "PPYOLOEHead", True),
                    [True], "our classification loss is VFL")
        if "reg_max" in h:
            self.put("Architecture.reg_max", int(h.pop("reg_max")))
        if "grid_cell_scale" in h:
            self.none("PPYOLOEHead.grid_cell_scale", f"{h.pop('grid_cell_scale')}: only used by the ATSS warm-up")
        sae = self.pop(h, "static_assigner_epoch", "PPYOLOEHead", 0)
        sa = self.pop(h, "static_assigner", "PPYOLOEHead", None)
        if sae:
            self.approx("PPYOLOEHead.static_assigner_epoch",
                        f"{sae}: no ATSS warm-up here, TAL assigns from the first step (README_det Differences)")
        if sa is not None:
            self.none("PPYOLOEHead.static_assigner", "ATSS warm-up is not implemented")
        lw = dict(self.pop(h, "loss_weight", "PPYOLOEHead", {}))
        for k, ours in (("class", "cls_weight"), ("iou", "iou_weight"), ("dfl", "dfl_weight")):
            if k in lw:
                self.put(f"Loss.{ours}", float(lw.pop(k)))
        self.leftover(lw, "PPYOLOEHead.loss_weight")
        a = dict(self.pop(h, "assigner", "PPYOLOEHead", {}))
        if a:
            self.expect("PPYOLOEHead.assigner.name", a.pop("name", "TaskAlignedAssigner"), ["TaskAlignedAssigner"],
                        "TAL")
            for k in ("topk", "alpha", "beta"):
                if k in a:
                    self.put(f"Loss.{k}", a.pop(k) if k == "topk" else float(a.pop(k)))
            self.leftover(a, "PPYOLOEHead.assigner")
        nms = dict(self.pop(h, "nms", "PPYOLOEHead", {}))
        if nms:
            self.expect("PPYOLOEHead.nms.name", nms.pop("name", "MultiClassNMS"), ["MultiClassNMS"], "class-wise NMS")
            for k, ours in (("nms_top_k", "nms_top_k"), ("keep_top_k", "keep_top_k"),
                            ("score_threshold", "score_threshold"), ("nms_threshold", "iou_threshold"),
                            ("normalized", "normalized")):
                if k in nms:
                    self.put(f"Eval.nms.{ours}", nms.pop(k))
            eta = float(nms.pop("nms_eta", 1.0))
            if eta != 1.0:
                raise self.error("PPYOLOEHead.nms.nms_eta", f"{eta}: adaptive NMS is not implemented (1.0 only)")
            self.leftover(nms, "PPYOLOEHead.nms")
        self.leftover(h, "PPYOLOEHead")

    def datasets(self, c: dict):
        for section, ours in (("TrainDataset", "Train"), ("EvalDataset", "Eval")):
            d = dict(self.pop(c, section, "", {}))
            if not d:
                continue
            self.expect(f"{section}.name", d.pop("name", "COCODataSet"), ["COCODataSet"], "COCO json")
            root = Path(str(d.pop("dataset_dir", "")))
            if "anno_path" in d:
                self.put(f"{ours}.dataset.ann_file", str(root / str(d.pop("anno_path"))))
            if "image_dir" in d:
                self.put(f"{ours}.dataset.image_dir", str(root / str(d.pop("image_dir"))))
            if "data_fields" in d:
                self.none(f"{section}.data_fields", "boxes, classes and iscrowd are always read")
            d.pop("data_fields", None)
            if "allow_empty" in d:
                self.none(f"{section}.allow_empty", "images without boxes are always kept")
                d.pop("allow_empty")
            self.leftover(d, section)
        t = self.pop(c, "TestDataset", "", None)
        if t is not None:
            self.none("TestDataset", "predict takes -o Predict.images; labels come from the eval annotations")

    def optimizer(self, c: dict):
        lr = dict(self.pop(c, "LearningRate", "", {}))
        if lr:
            self.put("Optimizer.lr", float(self.pop(lr, "base_lr", "LearningRate", required=True)))
            for s in list(self.pop(lr, "schedulers", "LearningRate", [])):
                s = dict(s)
                name = s.pop("name", None)
                handler = {"CosineDecay": self._cosine, "PiecewiseDecay": self._piecewise,
                           "LinearWarmup": self._warmup, "ExpWarmup": self._warmup}.get(name)
                if handler is None:
                    raise self.error("LearningRate.schedulers", f"scheduler {name!r} is not supported here "
                                     "(CosineDecay, PiecewiseDecay, LinearWarmup, ExpWarmup)")
                handler(name, s)
                self.leftover(s, f"LearningRate.{name}")
            self.leftover(lr, "LearningRate")
        ob = dict(self.pop(c, "OptimizerBuilder", "", {}))
        if ob:
            o = dict(self.pop(ob, "optimizer", "OptimizerBuilder", {}))
            kind = o.pop("type", "Momentum")
            names = {"Momentum": "momentum", "SGD": "sgd", "AdamW": "adamw", "Adam": "adam"}
            if kind not in names:
                raise self.error("OptimizerBuilder.optimizer.type", f"{kind!r} is not supported ({sorted(names)})")
            self.put("Optimizer.name", names[kind])
            if "momentum" in o:
                self.put("Optimizer.momentum", float(o.pop("momentum")))
            if "weight_decay" in o:  # AdamW's decoupled decay
                self.put("Optimizer.weight_decay", float(o.pop("weight_decay")))
            self.leftover(o, "OptimizerBuilder.optimizer")
            r = dict(self.pop(ob, "regularizer", "OptimizerBuilder", {}) or {})
            if r:
                self.expect("OptimizerBuilder.regularizer.type", r.pop("type", "L2"), ["L2"], "L2 weight decay")
                if names[kind] == "adamw":
                    raise self.error("OptimizerBuilder.regularizer", "AdamW takes weight_decay, not an L2 regularizer")
                self.put("Optimizer.weight_decay", float(r.pop("factor")))
                self.leftover(r, "OptimizerBuilder.regularizer")
            clip = ob.pop("clip_grad_by_norm", None)
            if clip is not None:
                self.put("Optimizer.grad_clip_norm", float(clip))
            self.leftover(ob, "OptimizerBuilder")

    def _cosine(self, name: str, s: dict):
        self.put("Optimizer.schedule", "cosine")
        me = s.pop("max_epochs", None)
        epochs = self.cfg.get("epoch", self.ours.get("Global", {}).get("epochs"))
        if me is not None and epochs is not None and int(me) != int(epochs):
            self.approx("LearningRate.CosineDecay.max_epochs", f"{me}: ppdet stops at epoch {epochs} of a "
                                                               f"{me}-epoch cosine; ours decays to min_lr over the run")
        if "min_lr_ratio" in s:
            self.put("Optimizer.min_lr", float(s.pop("min_lr_ratio")) * float(lr_base(self.ours)))
        plateau = s.pop("last_plateau_epochs", 0)
        if plateau:
            self.approx("LearningRate.CosineDecay.last_plateau_epochs", f"{plateau}: no final constant plateau here")
        if not s.pop("use_warmup", True):
            raise self.error("LearningRate.CosineDecay.use_warmup", "false: the warm-up always precedes the decay here")

    def _piecewise(self, name: str, s: dict):
        """ppdet: lr = base_lr * gamma[i] after milestone i (epochs); a scalar gamma g means g / 10**i; values
        (absolute learning rates, len(milestones) + 1) replace gamma."""
        milestones = [float(m) for m in s.pop("milestones", [8, 11])]
        gamma = s.pop("gamma", [0.1, 0.01])
        values = s.pop("values", None)
        base = lr_base(self.ours)
        if values is not None:
            if len(values) != len(milestones) + 1:
                raise self.error("LearningRate.PiecewiseDecay.values", f"{values}: needs len(milestones) + 1 values")
            factors = [float(v) / base for v in values[1:]]
            if float(values[0]) != base:
                self.approx("LearningRate.PiecewiseDecay.values", f"{values[0]} before the first milestone: "
                                                                   f"ours starts at base_lr {base}")
        else:
            factors = [float(g) for g in gamma] if isinstance(gamma, list) else \
                [float(gamma) / 10 ** i for i in range(len(milestones))]
        if not s.pop("use_warmup", True):
            raise self.error("LearningRate.PiecewiseDecay.use_warmup",
                             "false: the warm-up always precedes the decay here")
        self.put("Optimizer.schedule", "piecewise")
        self.put("Optimizer.milestone_epochs", milestones)
        self.put("Optimizer.lr_factors", factors)

    def _warmup(self, name: str, s: dict):
        if name == "ExpWarmup":
            power = s.pop("power", 2)
            self.approx("LearningRate.ExpWarmup", f"power {power}: our warm-up is linear from 0")
            s.setdefault("steps", 1000)  # ppdet's ExpWarmup default
        else:
            sf = float(s.pop("start_factor", 1.0 / 3))
            if sf != 0.0:
                self.approx("LearningRate.LinearWarmup.start_factor", f"{sf}: our warm-up starts from 0")
            s.setdefault("steps", 500)  # ppdet's LinearWarmup default
        steps, epochs = s.pop("steps"), s.pop("epochs", None)
        if epochs is not None:  # ppdet: epochs, when given, overrides steps
            self.put("Optimizer.warmup_epochs", float(epochs))
        else:
            self.put("Optimizer.warmup_steps", int(steps))

    def _normalize(self, op: dict, key: str) -> dict:
        op = dict(op)
        mean = [float(v) for v in op.pop("mean", [0.485, 0.456, 0.406])]
        std = [float(v) for v in op.pop("std", [0.229, 0.224, 0.225])]
        is_scale = bool(op.pop("is_scale", True))
        norm_type = op.pop("norm_type", "mean_std")
        self.expect(f"{key}.norm_type", norm_type, ["mean_std", "none"], "ppdet NormalizeImage")
        if norm_type == "none":  # ppdet then applies only the /255 scale
            mean, std = [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]
        self.leftover(op, key)
        return {"mean": mean, "std": std, "is_scale": is_scale}

    def _transforms(self, ops: list, key: str) -> dict:
        """{op name: args}, failing on a repeated op."""
        out = {}
        for i, op in enumerate(ops or []):
            if not isinstance(op, dict) or len(op) != 1:
                raise self.error(f"{key}[{i}]", f"expected a one-key mapping like {{Resize: {{...}}}}, got {op!r}")
            (name, args), = op.items()
            if name in out:
                raise self.error(f"{key}.{name}", "appears twice")
            out[name] = dict(args or {})
        return out

    def _square(self, value, key: str) -> int:
        if isinstance(value, int):
            return value
        if not (isinstance(value, list) and len(value) == 2 and value[0] == value[1]):
            raise self.error(key, f"{value!r}: only square inputs are supported here")
        return int(value[0])

    def readers(self, c: dict):
        norms = {}
        workers = self.pop(c, "worker_num", "", None)
        if workers is not None:
            self.put("Train.loader.num_workers", int(workers))
            self.put("Eval.loader.num_workers", int(workers))
        eval_size = None
        if "eval_height" in c or "eval_width" in c or "eval_size" in c:
            h, w = c.pop("eval_height", None), c.pop("eval_width", None)
            size = c.pop("eval_size", [h, w])
            eval_size = self._square(size, "eval_size")
            self.put("Eval.size", eval_size)

        tr = dict(self.pop(c, "TrainReader", "", {}))
        if tr:
            st = self._transforms(tr.pop("sample_transforms", []), "TrainReader.sample_transforms")
            st.pop("Decode", None)
            aug = sorted(st)
            known = {"RandomDistort", "RandomExpand", "RandomCrop", "RandomFlip"}
            if set(aug) - known:
                raise self.error(f"TrainReader.sample_transforms.{sorted(set(aug) - known)[0]}",
                                 f"not supported here (understood: Decode, {sorted(known)})")
            self.put("Train.augment", bool(aug))
            if aug:
                self.approx("TrainReader.sample_transforms", f"{aug} replaced by this package's albumentations "
                                                              "pipeline (flip, colour, scale/translate)")
            bt = self._transforms(tr.pop("batch_transforms", []), "TrainReader.batch_transforms")
            brr = bt.pop("BatchRandomResize", None)
            if brr is not None:
                if brr.pop("keep_ratio", False):
                    raise self.error("TrainReader.BatchRandomResize.keep_ratio",
                                     "true: only square resizes are supported")
                sizes = [self._square(s, "TrainReader.BatchRandomResize.target_size")
                         for s in brr.pop("target_size")]
                self.put("Train.sizes", sizes)
                if not brr.pop("random_size", True) and len(sizes) > 1:
                    raise self.error("TrainReader.BatchRandomResize.random_size", "false with several sizes")
                if brr.pop("random_interp", False):
                    self.approx("TrainReader.BatchRandomResize.random_interp", "true: ours always resizes bilinear")
                self.leftover(brr, "TrainReader.BatchRandomResize")
            if "NormalizeImage" in bt:
                norms["TrainReader"] = self._normalize(bt.pop("NormalizeImage"), "TrainReader.NormalizeImage")
            for op in ("Permute", "PadGT"):
                if bt.pop(op, None) is not None:
                    self.none(f"TrainReader.{op}", "always done by DetCollate")
            if bt:
                raise self.error(f"TrainReader.batch_transforms.{sorted(bt)[0]}", "not supported here")
            if "batch_size" in tr:
                self.put("Train.loader.batch_size_per_card", int(tr.pop("batch_size")))
            for k, want in (("shuffle", True), ("drop_last", True)):
                v = tr.pop(k, want)
                self.expect(f"TrainReader.{k}", v, [want], "training always shuffles and drops the last partial batch")
            if "use_shared_memory" in tr:
                self.put("Train.loader.use_shared_memory", bool(tr.pop("use_shared_memory")))
            if "collate_batch" in tr:
                self.none("TrainReader.collate_batch", f"{tr.pop('collate_batch')}: DetCollate pads per batch")
            self.leftover(tr, "TrainReader")

        for reader in ("EvalReader", "TestReader"):
            r = dict(self.pop(c, reader, "", {}))
            if not r:
                continue
            st = self._transforms(r.pop("sample_transforms", []), f"{reader}.sample_transforms")
            st.pop("Decode", None)
            rs = st.pop("Resize", None)
            if rs is not None:
                if rs.pop("keep_ratio", True):
                    raise self.error(f"{reader}.Resize.keep_ratio",
                                     "true (or unset): only square, non-keep-ratio resizes")
                size = self._square(rs.pop("target_size"), f"{reader}.Resize.target_size")
                if eval_size is not None and size != eval_size:
                    raise self.error(f"{reader}.Resize.target_size", f"{size} differs from eval_size {eval_size}")
                if reader == "EvalReader":
                    self.put("Eval.size", size)
                interp = rs.pop("interp", 1)
                if interp != 1:
                    self.approx(f"{reader}.Resize.interp", f"{interp} (cv2 code): ours resizes bilinear (1)")
                self.leftover(rs, f"{reader}.Resize")
            if "NormalizeImage" in st:
                norms[reader] = self._normalize(st.pop("NormalizeImage"), f"{reader}.NormalizeImage")
            if st.pop("Permute", None) is not None:
                self.none(f"{reader}.Permute", "always done by DetCollate")
            if st:
                raise self.error(f"{reader}.sample_transforms.{sorted(st)[0]}", "not supported here")
            bs = r.pop("batch_size", None)
            if reader == "EvalReader" and bs is not None:
                self.put("Eval.loader.batch_size_per_card", int(bs))
            elif bs is not None:
                self.none("TestReader.batch_size", f"{bs}: predict runs image by image")
            inputs_def = r.pop("inputs_def", None)
            if inputs_def is not None:
                shape = dict(inputs_def).get("image_shape")
                if shape is not None and eval_size is not None and list(shape[1:]) != [eval_size, eval_size]:
                    raise self.error(f"{reader}.inputs_def.image_shape", f"{shape} differs from eval_size {eval_size}")
                self.none(f"{reader}.inputs_def", "the export input is dynamic [N, 3, H, W]; Eval.size is written "
                                                  "to infer_cfg.yml")
            self.leftover(r, reader)
        distinct = {tuple(map(tuple, (v["mean"], v["std"]))) + (v["is_scale"],) for v in norms.values()}
        if len(distinct) > 1:
            raise self.error("TrainReader.NormalizeImage", f"readers normalise differently {norms}: one normalisation "
                             "per model is supported")
        if norms:
            self.put("Architecture.normalize", next(iter(norms.values())))


def lr_base(out: dict) -> float:
    return float(out.get("Optimizer", {}).get("lr", 0.0))


def translate_ppdet_config(cfg: dict, origin: dict | None = None, source: str = "<ppdet config>",
                           name: str = "ppdet") -> PpdetImport:
    """Translate a merged ppdet config dict (``load_ppdet_yaml``) into our det config dict.

    name: run name for ``Global.output_dir`` = ``<save_dir>/<name>`` (ppdet uses the config file stem).
    The input dict is not modified.
    """
    import copy

    return PpdetTranslator(copy.deepcopy(cfg), dict(origin or {}), source, name).run()


def import_ppdet_config(path: str | os.PathLike, logger: logging.Logger | None = None) -> PpdetImport:
    """Load a ppdet YAML (with its _BASE_ files), translate it, and log the report once."""
    cfg, origin = load_ppdet_yaml(path)
    imp = translate_ppdet_config(cfg, origin, str(path), Path(path).stem)
    imp.log(logger)
    return imp


def ppdet_config_translator(raw: dict, path: Path) -> tuple[dict, list[str]] | None:
    """``Recipe.config_translators`` entry of the det recipe: a ppdet YAML given to ``-c`` (recognised by
    ``is_ppdet_config`` on its raw mapping) -> (our config dict, report lines); None for any other file.
    A ppdet config exports in ppdet's deploy layout (``Export.layout: ppdet``; ``-o`` can change it)."""
    if not is_ppdet_config(raw):
        return None
    duplicates: list = []
    cfg, origin = load_ppdet_yaml(path, duplicates)
    imp = translate_ppdet_config(cfg, origin, str(path), Path(path).stem)
    imp.config.setdefault("Export", {}).setdefault("layout", "ppdet")
    top = Path(path).resolve()  # config.load_config reports the -c file's own duplicates
    return imp.config, [*(f"{file}: {duplicate_key_line(dup, kept_last=True)}" for file, dup in duplicates
                          if file != top), *imp.notes()]


# the YAML reader of -c files (ppdet's tags), and ppdet's spellings of `-o` keys (tools/eval.py -o weights=...)
ppdet_config_translator.yaml_loader = PpdetLoader
ppdet_config_translator.override_aliases = {
    "weights": "Global.weights", "pretrain_weights": "Global.pretrained_model", "epoch": "Global.epochs",
    "log_iter": "Global.log_every", "use_ema": "EMA.enable", "ema_decay": "EMA.decay"}
