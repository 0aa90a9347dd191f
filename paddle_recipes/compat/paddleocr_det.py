"""PaddleOCR detection YAMLs (``configs/det/...``, DB) -> the det recipe's config dict.

    cfg = load_config(path, overrides, DetConfig, translators=(paddleocr_det_translator(DetConfig),))

The same rules and report as the rec translator: the shared Global / Optimizer / lr / loader mapping of
compat.paddleocr_common and the vocabulary and TranslationReport of compat.translate. Every key maps onto ours,
or is reported once as having no effect here, or is a ConfigError naming it.

Facts of PaddleOCR's det code that the mapping follows (read, not copied):
- ``DetResizeForTest``: ``image_shape`` (+ ``keep_ratio``) wins, else ``limit_side_len`` (+ ``limit_type``,
  default min), else ``resize_long`` (sides ceil to 128); no argument at all = limit_side_len 736, min;
- ``IaaAugment`` without ``augmenter_args`` = Fliplr p 0.5, Affine rotate [-10, 10], Resize size [0.5, 3];
  an empty list = no augmentation; Resize without size = scale 1; an Affine ``p`` is overwritten with 1.0;
- ``MakeBorderMap`` / ``MakeShrinkMap`` grow shrink_ratio with the epoch only when an ``epoch`` is passed
  to them, which PaddleOCR's datasets never do: ``total_epoch`` changes nothing;
- ``DecodeImage`` without ``img_mode`` decodes RGB; ``NormalizeImage`` ``scale`` may be a string ("1./255.");
- ``DBPostProcess`` class defaults: thresh 0.3, box_thresh 0.7, max_candidates 1000, unclip_ratio 2.0,
  use_dilation false, score_mode fast, box_type quad (a key the file omits gets that value here too);
- ``TextDetDataset`` is ``SimpleDataSet``; ``cal_metric_during_train: true`` post-processes every train batch.
- PP-OCRv6 (configs/det/PP-OCRv6): ``Global.use_ema`` / ``ema_decay`` / ``ema_decay_type`` are ppdet's ModelEMA keys
  (decay 0.9998, threshold warm-up by default); ``DBLoss`` ``main_loss_type: DiceFocalLoss`` with ``focal_alpha``,
  ``focal_gamma``, ``dice_weight``, ``focal_weight`` and ``aux_weight_p4/p3/p2``; the ``ColorJitter`` train op
  (paddle's ColorJitter on the decoded BGR image; 0 = that factor off) and ``RandomPerspective`` (reported as not
  applied here).
"""
from __future__ import annotations

import copy
import math
from typing import Any, Tuple

from paddle_recipes.config import ConfigError, suggest_name
from paddle_recipes.nn import catalog

from .paddleocr_common import PaddleOCRTranslator, schema_has, paddleocr_translator
from .translate import TranslationReport
from .translate import canonical
from paddle_recipes.tasks.ocr_det import models  # noqa: F401 (the det necks and heads register in nn.catalog)

DATASETS = ("SimpleDataSet", "TextDetDataset")
# The one det pipeline each split runs here, in PaddleOCR's order; (optional ops in OPTIONAL).
TRAIN_OPS = ("DecodeImage", "DetLabelEncode", "CopyPaste", "ColorJitter", "IaaAugment", "RandomPerspective",
             "EastRandomCropData", "MakeBorderMap", "MakeShrinkMap", "NormalizeImage", "ToCHWImage", "KeepKeys")
EVAL_OPS = ("DecodeImage", "DetLabelEncode", "DetResizeForTest", "NormalizeImage", "ToCHWImage", "KeepKeys")
OPTIONAL = ("CopyPaste", "ColorJitter", "IaaAugment", "RandomPerspective", "KeepKeys")
OP_ARGS = {"DecodeImage": ("img_mode", "channel_first", "ignore_orientation"), "DetLabelEncode": (),
           "CopyPaste": ("objects_paste_ratio", "limit_paste"), "IaaAugment": ("augmenter_args",),
           "ColorJitter": ("brightness", "contrast", "saturation", "hue"),
           "RandomPerspective": ("prob", "scale", "shear", "perspective", "fit_output", "fill_value"),
           "EastRandomCropData": ("size", "max_tries", "keep_ratio", "min_crop_side_ratio"),
           "MakeBorderMap": ("shrink_ratio", "thresh_min", "thresh_max", "total_epoch"),
           "MakeShrinkMap": ("shrink_ratio", "min_text_size", "total_epoch"),
           "NormalizeImage": ("scale", "mean", "std", "order"), "ToCHWImage": (), "KeepKeys": ("keep_keys",),
           "DetResizeForTest": ("image_shape", "keep_ratio", "limit_side_len", "limit_type", "resize_long")}
KEEP_KEYS = {"Train": ["image", "threshold_map", "threshold_mask", "shrink_map", "shrink_mask"],
             "Eval": ["image", "shape", "polys", "ignore_tags"]}
IMAGENET = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
DEFAULT_IAA = [{"type": "Fliplr", "args": {"p": 0.5}}, {"type": "Affine", "args": {"rotate": [-10, 10]}},
               {"type": "Resize", "args": {"size": [0.5, 3]}}]
POSTPROCESS_DEFAULTS = {"thresh": 0.3, "box_thresh": 0.7, "max_candidates": 1000, "unclip_ratio": 2.0,
                        "use_dilation": False, "score_mode": "fast", "box_type": "quad"}
LOSS_KEYS = ("balance_loss", "main_loss_type", "alpha", "beta", "ohem_ratio", "eps", "focal_alpha", "focal_gamma",
             "dice_weight", "focal_weight", "aux_weight_p4", "aux_weight_p3", "aux_weight_p2")
EMA_GLOBAL = {"use_ema": "EMA.enable", "ema_decay": "EMA.decay", "ema_decay_type": "EMA.warmup"}
EMA_DECAY_TYPES = {"threshold": "threshold", "exponential": "exponential", "normal": "none"}  # ppdet -> ours


PARTS = (catalog.BACKBONE, catalog.NECK, catalog.HEAD)  # the Architecture sections, read from nn.catalog


class DetTranslator(PaddleOCRTranslator):
    """The det sections (Architecture, Loss, PostProcess, Metric, data) on the shared PaddleOCR translator."""

    def __init__(self, data: dict, source: str, schema: type | None = None, overridden: dict | None = None):
        super().__init__(data, source, overridden)
        self.schema = schema

    def _global_keys(self):
        return super()._global_keys() + tuple(EMA_GLOBAL)

    def direct_global(self):
        """The shared ones but cal_metric_during_train (det_global: a train-batch metric is refused here)."""
        return {k: v for k, v in super().direct_global().items() if k != "cal_metric_during_train"}

    def path_global(self):
        """The shared ones but save_res_path (det_global maps it)."""
        return {k: v for k, v in super().path_global().items() if k != "save_res_path"}

    def global_(self) -> None:
        """The shared Global keys (compat.paddleocr_common), then det's own: its metric cadence, save_res_path,
        model_name and ppdet's EMA keys."""
        super().global_()
        self.det_global()

    def preflight(self) -> None:
        """The model first: a distillation model, another algorithm or a network not built here is named in
        one line before any of its keys could be reported."""
        a = self.src.get("Architecture")
        if not isinstance(a, dict):
            raise self.error("Architecture", "is required (a mapping)")
        self.no_distillation(a, "the Student's section as Architecture, Loss DBLoss, PostProcess DBPostProcess, "
                                "Metric DetMetric")
        if a.get("model_type", "det") != "det":
            raise self.error("Architecture.model_type", f"{a['model_type']!r}: this recipe trains det models")
        if a.get("algorithm", "DB") != "DB":
            raise self.error("Architecture.algorithm", f"{a['algorithm']!r} is PaddleOCR's, but this version builds "
                             "only DB detectors")
        for kind in PARTS:
            node = a.get(kind.capitalize())
            name = node.get("name") if isinstance(node, dict) else None
            part = catalog.lookup(name, catalog.DET, kind)
            if part is None or part.cls is None:
                built = ", ".join(sorted(catalog.names(catalog.DET, kind=kind)))
                raise self.error(f"Architecture.{kind.capitalize()}.name", f"{name!r} is not built here for "
                                 f"detection; built: {built}")
        self.backbone_builds(a["Backbone"])

    def backbone_builds(self, node: dict) -> None:
        """A backbone option value not built here (e.g. the PP-OCRv6 det model_size: base) is named before any key of
        the file is reported: the backbone is built once (seconds at most)."""
        kw = {k: v for k, v in node.items() if k != "in_channels"}
        try:
            catalog.build_backbone(node.get("name"), catalog.DET, **{k: v for k, v in kw.items() if k != "name"})
        except (ValueError, TypeError, KeyError) as e:
            raise self.error("Architecture.Backbone", f"{node.get('name')!r} with {kw}: {e}") from None

    def det_global(self) -> None:
        g = self.g
        if "cal_metric_during_train" in g:
            if g["cal_metric_during_train"]:
                raise self.error("Global.cal_metric_during_train", "true (a DetMetric of every train batch) is not "
                                 "supported here; the det recipe scores Eval only")
            self.fixed("Global.cal_metric_during_train", "false: no metric on train batches")
        if "save_res_path" in g:
            self.map("Global.save_res_path", g["save_res_path"] or "", "Predict.save_res_path")
        for k, dst in EMA_GLOBAL.items():
            if k not in g:
                continue
            v = g[k]
            if k == "ema_decay_type":
                if v not in EMA_DECAY_TYPES:
                    raise self.error(f"Global.{k}", f"{v!r} is not one of {list(EMA_DECAY_TYPES)} (ppdet's ModelEMA)")
                v = EMA_DECAY_TYPES[v]
            self.map(f"Global.{k}", v, dst)
        if "model_name" in g:
            if self.schema is not None and schema_has(self.schema, "Export.model_name"):
                self.map("Global.model_name", g["model_name"], "Export.model_name")
            else:
                self.none("Global.model_name", "only names the inference.yml of PaddleOCR's export; this version's "
                          "det export writes model.json/model.pdiparams")

    def architecture(self) -> None:
        a = self.architecture_section()
        if "Transform" in a:
            if a["Transform"] is not None:
                raise self.error("Architecture.Transform", "a Transform stage is not supported for DB detection")
            self.none("Architecture.Transform", "null: no transform stage")
        for kind in PARTS:
            section = kind.capitalize()
            path, node = f"Architecture.{section}", copy.deepcopy(a[section])
            part = catalog.lookup(node["name"], catalog.DET, kind)
            node["name"] = part.name
            if "in_channels" in node:  # PaddleOCR's BaseModel overwrites it: 3, then each stage's out_channels
                node.pop("in_channels")
                self.none(f"{path}.in_channels", "overwritten by PaddleOCR's model builder (3, then the previous "
                          "stage's channels)")
            params = part.config_keys(node)
            for key in node:
                if key != "name" and key not in params:
                    raise self.error(f"{path}.{key}", f"not an option of {part.name} here{suggest_name(key, params)}")
            if "det" in params and not node.get("det"):
                raise self.error(f"{path}.det", f"{node.get('det')!r}: a detection backbone needs det: true")
            self.put(path, node)
            self.copy_tree(path, {k: v for k, v in a[section].items() if k != "in_channels"}, path)

    def loss(self) -> None:
        lo = self.check_keys(self.src.get("Loss"), ("name",) + LOSS_KEYS, "Loss")
        canonical(lo.get("name"), ("DBLoss",), "Loss.name", "loss", self.source)
        self.map("Loss.name", "DBLoss", "Loss.name")
        if "main_loss_type" in lo:
            canonical(lo["main_loss_type"], ("DiceLoss", "BCELoss", "MaskL1Loss", "DiceFocalLoss"),
                      "Loss.main_loss_type", "loss", self.source)
        for k in LOSS_KEYS:
            if k in lo:
                self.map(f"Loss.{k}", lo[k], f"Loss.{k}")

    def postprocess(self) -> None:
        pp = self.check_keys(self.src.get("PostProcess"), ("name",) + tuple(POSTPROCESS_DEFAULTS), "PostProcess")
        canonical(pp.get("name"), ("DBPostProcess",), "PostProcess.name", "post-process", self.source)
        self.map("PostProcess.name", "DBPostProcess", "PostProcess.name")
        for k, default in POSTPROCESS_DEFAULTS.items():
            if k in pp:
                self.map(f"PostProcess.{k}", pp[k], f"PostProcess.{k}")
            else:
                self.derive(f"PostProcess.{k}", default, "PaddleOCR's DBPostProcess default")
        for k, choices in (("score_mode", ("fast", "slow")), ("box_type", ("quad", "poly"))):
            if k in pp and pp[k] not in choices:
                raise self.error(f"PostProcess.{k}", f"{pp[k]!r} is not one of {list(choices)}")

    def metric(self) -> None:
        m = self.check_keys(self.src.get("Metric"), ("name", "main_indicator"), "Metric")
        canonical(m.get("name"), ("DetMetric",), "Metric.name", "metric", self.source)
        self.map("Metric.name", "DetMetric", "Metric.name")
        if "main_indicator" in m:
            canonical(m["main_indicator"], ("hmean", "precision", "recall"), "Metric.main_indicator", "indicator",
                   self.source)
            self.map("Metric.main_indicator", m["main_indicator"], "Metric.main_indicator")

    # ------------------------------------------------------------------ data
    def split(self, split: str) -> None:
        node, p, ds = self.split_sections(split)
        canonical(ds.get("name"), DATASETS, f"{p}.name", "dataset", self.source)
        self.fixed(f"{p}.name", "PaddleOCR det label files (path<TAB>json polygons)")
        if "data_dir" in ds:
            self.map(f"{p}.data_dir", ds["data_dir"] or "", f"{p}.data_dir")
        if "label_file_list" in ds:
            lfl = ds["label_file_list"]
            self.map(f"{p}.label_file_list", [lfl] if isinstance(lfl, str) else list(lfl or []), f"{p}.label_file_list")
        if "delimiter" in ds:
            if ds["delimiter"] != "\t":
                raise self.error(f"{p}.delimiter", f"{ds['delimiter']!r}: det label lines are split at a tab here")
            self.fixed(f"{p}.delimiter", "tab")
        if "ratio_list" in ds:
            r = ds["ratio_list"]
            if any(float(x) != 1.0 for x in (r if isinstance(r, list) else [r])):
                raise self.error(f"{p}.ratio_list", f"{r!r}: sampling a fraction of a label file is not supported "
                                 "here (every sample is used; set all ratios to 1.0)")
            self.fixed(f"{p}.ratio_list", "1.0: every sample of every label file is used")
        self.transforms(split, ds.get("transforms"))
        self.loader(split, node.get("loader"), None)

    def transforms(self, split: str, ops: Any) -> None:
        p = f"{split}.dataset.transforms"
        order = TRAIN_OPS if split == "Train" else EVAL_OPS
        names = []
        for i, name, op, args in self.data_ops(ops, p, order, f"{split} data op"):
            if names and order.index(name) <= order.index(names[-1]):
                raise self.error(f"{p}[{i}]", f"{name} after {names[-1]}: the {split} ops run in the order "
                                 f"{', '.join(order)} here")
            names.append(name)
            args = self.check_keys(args, OP_ARGS[name], op)
            if not args:
                self.fixed(op, f"{name} with PaddleOCR's defaults")
            getattr(self, f"_op_{name}")(split, op, args)
        missing = [n for n in order if n not in names and n not in OPTIONAL]
        if missing:
            raise self.error(p, f"{split} needs {', '.join(missing)} (the det pipeline here always runs them)")
        if split == "Train" and "IaaAugment" not in names:
            self.derive("Train.transform.augment", False, "no IaaAugment in Train.dataset.transforms")

    def _op_DecodeImage(self, split, op, args):
        mode = str(args.get("img_mode", "RGB")).upper()
        if mode != "BGR":
            raise self.error(f"{op}.img_mode", f"{mode} (PaddleOCR's default when img_mode is absent is RGB): images "
                             "are decoded BGR here, as in PaddleOCR's det configs; set img_mode: BGR")
        self.fixed(f"{op}.img_mode", "BGR")
        for k in ("channel_first", "ignore_orientation"):
            if args.get(k):
                raise self.error(f"{op}.{k}", "true is not supported here")
            if k in args:
                self.fixed(f"{op}.{k}", "false")

    def _op_DetLabelEncode(self, split, op, args):
        self.fixed(op, "PaddleOCR det labels; '###' and '*' are ignored regions")

    def _op_CopyPaste(self, split, op, args):
        self.approx(op, "text instances are not copy-pasted here")

    def _op_ColorJitter(self, split, op, args):
        keys = OP_ARGS["ColorJitter"]
        self.put("Train.transform.color_jitter", [float(args.get(k) or 0.0) for k in keys])
        for k in keys:
            if k in args:
                self.report.mapped[f"{op}.{k}"] = "Train.transform.color_jitter"

    def _op_RandomPerspective(self, split, op, args):
        self.approx(op, "no random perspective warp here")

    def _op_IaaAugment(self, split, op, args):
        aug = DEFAULT_IAA if args.get("augmenter_args") is None else args["augmenter_args"]
        path = f"{op}.augmenter_args"
        if not isinstance(aug, list):
            raise self.error(path, "expected a list of {type, args}")
        if not aug:
            self.derive("Train.transform.augment", False, "IaaAugment with no augmenters")
            self.fixed(path, "[]: no augmentation")
            return
        types = [a.get("type") if isinstance(a, dict) else None for a in aug]
        kinds = ("Fliplr", "Affine", "Resize")
        for i, t in enumerate(types):
            canonical(t, kinds, f"{path}[{i}].type", "augmenter", self.source)
        if types != [t for t in kinds if t in types] or "Fliplr" not in types:
            raise self.error(path, f"{types}: the augmentation here is Fliplr (p 0.5), then Affine rotate, then "
                             "Resize, each at most once")
        self.put("Train.transform.augment", True)
        for i, a in enumerate(aug):
            ap = f"{path}[{i}]"
            a_args = self.check_keys(a.get("args") or {}, {"Fliplr": ("p",), "Affine": ("rotate", "p"),
                                                           "Resize": ("size",)}[a["type"]], f"{ap}.args")
            if "type" in a:
                self.fixed(f"{ap}.type", a["type"])
            if a["type"] == "Fliplr":
                if float(a_args.get("p", 1.0)) != 0.5:
                    raise self.error(f"{ap}.args.p", f"{a_args.get('p', 1.0)!r}: the flip probability is 0.5 here")
                self.fixed(f"{ap}.args.p", "0.5")
            elif a["type"] == "Affine":
                rot = a_args.get("rotate", 0)
                rot = [rot, rot] if isinstance(rot, (int, float)) else list(rot)
                if len(rot) != 2 or float(rot[0]) != -float(rot[1]):
                    raise self.error(f"{ap}.args.rotate", f"{a_args.get('rotate')!r}: only a symmetric range "
                                     "[-a, a] is supported here")
                self.put("Train.transform.max_rotate", abs(float(rot[1])))
                self.report.mapped[f"{ap}.args.rotate"] = "Train.transform.max_rotate"
                if "p" in a_args:
                    self.none(f"{ap}.args.p", "PaddleOCR's IaaAugment sets the Affine probability to 1.0 (always "
                              "rotated)")
            else:
                size = a_args.get("size") or [1.0, 1.0]
                self.put("Train.transform.scale", [float(s) for s in size])
                self.report.mapped[f"{ap}.args.size"] = "Train.transform.scale"
        if "Affine" not in types:
            self.derive("Train.transform.max_rotate", 0.0, "no Affine augmenter")
        if "Resize" not in types:
            self.derive("Train.transform.scale", [1.0, 1.0], "no Resize augmenter")

    def _op_EastRandomCropData(self, split, op, args):
        for k in ("size", "max_tries", "keep_ratio"):
            if k in args:
                self.map(f"{op}.{k}", args[k], f"Train.transform.{k}")
        if "min_crop_side_ratio" in args:
            if float(args["min_crop_side_ratio"]) != 0.1:
                raise self.error(f"{op}.min_crop_side_ratio", "only 0.1 (PaddleOCR's default) is supported here")
            self.fixed(f"{op}.min_crop_side_ratio", "0.1")

    def _epoch_growth(self, op, args):
        if "total_epoch" in args:
            self.none(f"{op}.total_epoch", "PaddleOCR's datasets never pass an epoch to the op: the ratio stays fixed")

    def _shrink_ratio(self, op, args):
        ratio = float(args.get("shrink_ratio", 0.4))
        first = getattr(self, "ratio_from", None)
        if first is not None and ratio != first[1]:
            raise self.error(f"{op}.shrink_ratio", f"{ratio} differs from {first[0]} {first[1]}: one shrink_ratio "
                             "for both maps here")
        self.ratio_from = (f"{op}.shrink_ratio", ratio)
        self.put("Train.transform.shrink_ratio", ratio)
        if "shrink_ratio" in args:
            self.report.mapped[f"{op}.shrink_ratio"] = "Train.transform.shrink_ratio"

    def _op_MakeBorderMap(self, split, op, args):
        self._shrink_ratio(op, args)
        for k in ("thresh_min", "thresh_max"):
            if k in args:
                self.map(f"{op}.{k}", args[k], f"Train.transform.{k}")
        self._epoch_growth(op, args)

    def _op_MakeShrinkMap(self, split, op, args):
        self._shrink_ratio(op, args)
        if "min_text_size" in args:
            self.map(f"{op}.min_text_size", args["min_text_size"], "Train.transform.min_text_size")
        self._epoch_growth(op, args)

    def _op_NormalizeImage(self, split, op, args):
        scale = args.get("scale")
        value = 1 / 255.0
        if isinstance(scale, str):  # PaddleOCR evaluates the string ("1./255."); a number or a/b is read here
            try:
                num, _, den = scale.partition("/")
                value = float(num) / float(den or 1)
            except (ValueError, ZeroDivisionError):
                raise self.error(f"{op}.scale", f"{scale!r} is not a number or a/b") from None
        elif scale is not None:
            value = float(scale)
        if not math.isclose(value, 1 / 255.0, rel_tol=1e-6):
            raise self.error(f"{op}.scale", f"{scale!r}: only 1/255 is supported here")
        for k in ("mean", "std"):
            v = args.get(k, IMAGENET[k])
            if v is None or len(v) != 3 or any(not math.isclose(float(a), b, rel_tol=1e-6) for a, b in
                                                zip(v, IMAGENET[k])):
                raise self.error(f"{op}.{k}", f"{v!r}: only ImageNet's {IMAGENET[k]} is supported here")
        if str(args.get("order", "chw")).lower() != "hwc":
            raise self.error(f"{op}.order", f"{args.get('order', 'chw')!r}: the image is HWC when it is normalised "
                             "here (PaddleOCR's det configs say hwc; its default chw would mis-broadcast)")
        for k in args:
            self.fixed(f"{op}.{k}", "(x / 255 - ImageNet mean) / std, HWC (transforms.normalize_chw)")

    def _op_ToCHWImage(self, split, op, args):
        self.fixed(op, "CHW after normalising")

    def _op_KeepKeys(self, split, op, args):
        kept = list(args.get("keep_keys") or [])
        if kept != KEEP_KEYS[split]:
            raise self.error(f"{op}.keep_keys", f"{kept} differs from the {split} batch here: {KEEP_KEYS[split]}")
        self.fixed(f"{op}.keep_keys", f"the {split} batch keys")

    def _op_DetResizeForTest(self, split, op, args):
        t = "Eval.transform"
        if "image_shape" in args:
            self.map(f"{op}.image_shape", [int(v) for v in args["image_shape"]], f"{t}.image_shape")
            if "keep_ratio" in args:
                self.map(f"{op}.keep_ratio", bool(args["keep_ratio"]), f"{t}.keep_ratio")
            used = ("image_shape", "keep_ratio")
        elif "limit_side_len" in args:
            self.map(f"{op}.limit_side_len", args["limit_side_len"], f"{t}.limit_side_len")
            self.put(f"{t}.limit_type", args.get("limit_type", "min"))
            if "limit_type" in args:
                self.report.mapped[f"{op}.limit_type"] = f"{t}.limit_type"
            used = ("limit_side_len", "limit_type")
        elif "resize_long" in args:
            self.map(f"{op}.resize_long", int(args["resize_long"]), f"{t}.resize_long")
            used = ("resize_long",)
        else:
            self.derive(f"{t}.limit_side_len", 736, "DetResizeForTest without size arguments")
            self.derive(f"{t}.limit_type", "min", "DetResizeForTest without size arguments")
            used = ()
        for k in args:
            if k not in used:
                self.none(f"{op}.{k}", f"PaddleOCR ignores it when {used[0] if used else 'no size key'} is set")

def translate_det_config(data: dict, source: str = "<dict>", schema: type | None = None,
                         overridden: dict | None = None) -> Tuple[dict, TranslationReport]:
    """Map a PaddleOCR det config (a loaded YAML dict) onto the det recipe's config dict.
    Returns (our config dict, TranslationReport); a ConfigError names the key otherwise. overridden: as
    compat.paddleocr.translate_rec_config's."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping")
    return DetTranslator(copy.deepcopy(data), source, schema, overridden).run()


def paddleocr_det_translator(schema: type):
    """A ``Recipe.config_translators`` entry for the det recipe (compat.paddleocr_common's wrapper: the one "no
    effect here" line, the "not exactly as PaddleOCR" line, -o in PaddleOCR's keys)."""
    return paddleocr_translator(schema, lambda raw, source, overridden: translate_det_config(
        raw, source, schema, overridden))
