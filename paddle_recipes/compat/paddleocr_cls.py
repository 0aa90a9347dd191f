"""PaddleOCR text-line orientation YAMLs (``configs/cls/cls_mv3.yml``) -> the cls recipe's config dict.

    cfg = load_config(path, overrides, ClsConfig, translators=(paddleocr_cls_translator(ClsConfig),))

The rules and report of every PaddleOCR translator (the Global / Optimizer / lr / loader mapping of
compat.paddleocr_common, the vocabulary and TranslationReport of compat.translate): every key maps onto ours, or is
reported once as having no effect here, or is a ConfigError naming it (an unknown key with the nearest valid one).

Facts of PaddleOCR's cls code the mapping follows (read, not copied):
- ``ClsLabelEncode`` gives the index of the label in ``Global.label_list``; a label outside it drops the sample;
- ``ClsResizeImg`` is the rec resize (keep ratio, width capped, (x/255 - 0.5)/0.5, zero pad): input "ppocr" here;
- ``BaseDataAugmentation`` / ``RandAugment`` are train-only photometric / geometric augmentations (approximated by
  the rec recipe's augmentation, ``Train.dataset.aug``);
- ``ClsLoss`` is the mean cross entropy of the logits; ``ClsMetric`` acc = correct / samples;
- ``ClsPostProcess`` reads ``label_list`` (its own, else Global's).
"""
from __future__ import annotations

import copy
from typing import Any, Tuple

from paddle_recipes.config import ConfigError

from .paddleocr_common import PaddleOCRTranslator, paddleocr_translator
from .translate import TranslationReport
from .translate import canonical
from paddle_recipes.tasks.ocr_cls.models import ClsArchitecture, build_cls_model

NOT_CLS_GLOBAL = ("model_name", "d2s_train_image_shape")  # shared Global keys a cls file does not take
DATASETS = {"SimpleDataSet": "label_file", "LMDBDataSet": "lmdb"}
OPS = ("DecodeImage", "ClsLabelEncode", "BaseDataAugmentation", "RandAugment", "ClsResizeImg", "KeepKeys")
AUGMENT_OPS = ("BaseDataAugmentation", "RandAugment")


class ClsTranslator(PaddleOCRTranslator):
    """The cls sections (Architecture, Loss, PostProcess, Metric, data) on the shared PaddleOCR translator."""

    def _global_keys(self):
        return tuple(k for k in super()._global_keys() if k not in NOT_CLS_GLOBAL) + ("label_list",)

    def global_(self) -> None:
        super().global_()
        if "label_list" in self.g:
            labels = [str(v) for v in self.g["label_list"] or []]
            if len(labels) < 2:
                raise self.error("Global.label_list", f"{self.g['label_list']!r}: at least 2 labels")
            self.map("Global.label_list", labels, "Global.label_list")
        else:
            self.derive("Global.label_list", ["0", "180"], "PaddleOCR's cls configs' label_list")

    def preflight(self) -> None:
        a = self.src.get("Architecture")
        if not isinstance(a, dict):
            raise self.error("Architecture", "is required (a mapping)")
        self.no_distillation(a, "the Student's section as Architecture")
        if a.get("model_type", "cls") != "cls" or a.get("algorithm", "CLS") != "CLS":
            raise self.error("Architecture.model_type", f"{a.get('model_type')!r} / algorithm "
                             f"{a.get('algorithm')!r}: this recipe trains model_type cls, algorithm CLS")

    def architecture(self) -> None:
        a = self.architecture_section()
        for k in ("Transform", "Neck"):
            if a.get(k) is not None:
                raise self.error(f"Architecture.{k}", "a cls network has none here (null)")
            if k in a:
                self.none(f"Architecture.{k}", "null")
        parts = {k: copy.deepcopy(a.get(k)) for k in ("Backbone", "Head")}
        try:
            build_cls_model(ClsArchitecture(name="", Backbone=parts["Backbone"] or {}, Head=parts["Head"]),
                            len(self.ours["Global"]["label_list"]))
        except (ValueError, TypeError, KeyError) as exc:
            raise self.error("Architecture", str(exc)) from None
        self.derive("Architecture.name", "", "the network is the file's Backbone / Head")
        for k, node in parts.items():
            self.put(f"Architecture.{k}", node)
            self.copy_tree(f"Architecture.{k}", node, f"Architecture.{k}")

    def loss(self) -> None:
        lo = self.check_keys(self.src.get("Loss"), ("name",), "Loss")
        self.map("Loss.name", canonical(lo.get("name"), ("ClsLoss",), "Loss.name", "loss", self.source), "Loss.name")

    def postprocess(self) -> None:
        pp = self.check_keys(self.src.get("PostProcess"), ("name", "label_list"), "PostProcess")
        canonical(pp.get("name"), ("ClsPostProcess",), "PostProcess.name", "post-process", self.source)
        self.fixed("PostProcess.name", "argmax label and its probability")
        if "label_list" in pp and pp["label_list"] is not None:
            if [str(v) for v in pp["label_list"]] != self.ours["Global"]["label_list"]:
                raise self.error("PostProcess.label_list", "differs from Global.label_list (one list here)")
            self.fixed("PostProcess.label_list", "Global.label_list")

    def metric(self) -> None:
        m = self.check_keys(self.src.get("Metric"), ("name", "main_indicator"), "Metric")
        self.map("Metric.name", canonical(m.get("name"), ("ClsMetric",), "Metric.name", "metric", self.source),
                 "Metric.name")
        if "main_indicator" in m:
            self.map("Metric.main_indicator", canonical(m["main_indicator"], ("acc",), "Metric.main_indicator",
                                                     "indicator", self.source), "Metric.main_indicator")

    def split(self, split: str) -> None:
        node, p, ds = self.split_sections(split)
        name = canonical(ds.get("name"), tuple(DATASETS), f"{p}.name", "dataset", self.source)
        self.map(f"{p}.name", DATASETS[name], f"{p}.format")
        if "data_dir" in ds:
            self.map(f"{p}.data_dir", ds["data_dir"] or "", f"{p}.data_dir")
        if "label_file_list" in ds:
            lfl = ds["label_file_list"]
            if DATASETS[name] == "lmdb":
                self.none(f"{p}.label_file_list", f"{name} reads data_dir only")
            else:
                self.map(f"{p}.label_file_list", [lfl] if isinstance(lfl, str) else list(lfl or []),
                         f"{p}.label_file_list")
        if "delimiter" in ds:
            self.map(f"{p}.delimiter", ds["delimiter"], f"{p}.delimiter")
        if "ratio_list" in ds:
            r = ds["ratio_list"]
            if any(float(x) != 1.0 for x in (r if isinstance(r, list) else [r])):
                raise self.error(f"{p}.ratio_list", f"{r!r}: every sample is used here (set all ratios to 1.0)")
            self.fixed(f"{p}.ratio_list", "1.0: every sample of every label file is used")
        self.cls_transforms(split, ds.get("transforms"))
        self.loader(split, node.get("loader"), None)

    def cls_transforms(self, split: str, ops: Any) -> None:
        p = f"{split}.dataset.transforms"
        names = []
        for i, name, op, args in self.data_ops(ops, p, OPS, f"{split} data op"):
            if names and OPS.index(name) <= OPS.index(names[-1]):
                raise self.error(f"{p}[{i}]", f"{name} after {names[-1]}: the ops run in the order {', '.join(OPS)}")
            names.append(name)
            args = args or {}
            allowed = {"DecodeImage": ("img_mode", "channel_first"), "ClsResizeImg": ("image_shape",),
                       "KeepKeys": ("keep_keys",)}.get(name, ())
            self.check_keys(args, allowed, op)
            getattr(self, f"_cls_{name}", self._cls_fixed)(split, op, args, name)
        if "ClsResizeImg" not in names:
            raise self.error(p, "needs ClsResizeImg (the model input shape)")
        aug = [n for n in names if n in AUGMENT_OPS]
        if aug and split == "Eval":
            raise self.error(p, f"{aug[0]} in Eval: augmentation is for Train only here")
        if split == "Train":
            self.derive("Train.dataset.aug", bool(aug), "BaseDataAugmentation / RandAugment in Train")

    def _cls_fixed(self, split, op, args, name):
        if name in AUGMENT_OPS:
            self.approx(op, "the rec recipe's augmentation (perspective, blur, noise, contrast)")
        else:
            self.fixed(op, "the label's index in Global.label_list")

    def _cls_DecodeImage(self, split, op, args, name):
        if str(args.get("img_mode", "RGB")).upper() != "BGR" or args.get("channel_first"):
            raise self.error(f"{op}.img_mode", "BGR, channel_first false only (PaddleOCR's cls configs)")
        for k in args:
            self.fixed(f"{op}.{k}", str(args[k]))

    def _cls_ClsResizeImg(self, split, op, args, name):
        shape = [int(v) for v in args.get("image_shape") or []]
        if len(shape) != 3:
            raise self.error(f"{op}.image_shape", f"{args.get('image_shape')!r}: [C, H, W]")
        self.map(f"{op}.image_shape", shape, "Global.image_shape")  # both splits: set twice must agree
        self.derive("Global.input", "ppocr", "ClsResizeImg: keep-ratio resize, (x/255 - 0.5)/0.5, zero pad")

    def _cls_KeepKeys(self, split, op, args, name):
        if list(args.get("keep_keys") or []) != ["image", "label"]:
            raise self.error(f"{op}.keep_keys", f"{args.get('keep_keys')!r}: the batch here is ['image', 'label']")
        self.fixed(f"{op}.keep_keys", "image, label")

def translate_cls_config(data: dict, source: str = "<dict>", overridden: dict | None = None
                         ) -> Tuple[dict, TranslationReport]:
    """Map a PaddleOCR cls config (a loaded YAML dict) onto the cls recipe's config dict. overridden: as
    compat.paddleocr.translate_rec_config's."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping")
    return ClsTranslator(copy.deepcopy(data), source, overridden).run()


def paddleocr_cls_translator(schema: type):
    """A ``Recipe.config_translators`` entry for the cls recipe (compat.paddleocr_common's wrapper)."""
    return paddleocr_translator(schema, translate_cls_config)
