"""PaddleClas / PaddleX classification YAMLs of the text-line orientation models (PaddleX's
``paddlex/repo_apis/PaddleClas_api/configs/PP-LCNet_x0_25_textline_ori.yaml``, PaddleClas's PULC
``text_image_orientation`` configs) -> the cls recipe's config dict.

    cfg = load_config(path, overrides, ClsConfig, translators=(paddleclas_cls_translator(ClsConfig),))

The same rules and report as the PaddleOCR translators (the vocabulary of compat.translate; the Optimizer / lr
mapping of compat.paddleocr_common): every key maps onto ours, has no effect here (one log line), is approximated (one warning line), or is a
ConfigError naming it. Facts of PaddleClas the mapping follows (read, not copied):
- ``Arch``: ``PPLCNet_x<scale>`` with ``class_num``, ``stride_list`` (5 strides), ``dropout_prob``, ``class_expand``;
- ``ImageNetDataset``: ``cls_label_path`` lines ``<path relative to image_root> <class id>`` (space-separated, the
  id indexes the label list; here a label that is an index into Global.label_list is that class);
- ``DecodeImage to_rgb`` + ``ResizeImage size [W, H]`` + ``NormalizeImage`` (ImageNet) = input "paddlex" here;
- ``TimmAutoAugment`` / ``RandomErasing``: train-only augmentation (approximated by Train.dataset.aug);
- ``L2`` ``coeff`` is the coupled weight decay (as PaddleOCR's ``factor``); ``CELoss`` without ``epsilon`` is the
  mean cross entropy; ``TopkAcc`` topk 1 is acc (top-2 is not reported here).
"""
from __future__ import annotations

import copy
import math
import re
from typing import Any

from paddle_recipes.config import ConfigError, OverrideNote

from .paddleocr_common import OUR_SECTIONS, PaddleOCRTranslator
from .translate import canonical

SECTIONS = ("Global", "Arch", "Loss", "Optimizer", "DataLoader", "Infer", "Metric")
IMAGENET = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
TEXTLINE = {0.25: "PP-LCNet_x0_25_textline_ori", 1.0: "PP-LCNet_x1_0_textline_ori"}
OPS = ("DecodeImage", "ResizeImage", "TimmAutoAugment", "NormalizeImage", "RandomErasing", "ToCHWImage")


def is_paddleclas_config(data: Any) -> bool:
    """A PaddleClas config: top-level Arch and DataLoader sections."""
    return isinstance(data, dict) and "Arch" in data and "DataLoader" in data


class ClasTranslator(PaddleOCRTranslator):
    """PaddleClas's sections; its Optimizer is PaddleOCR's (``coeff`` for ``factor``), read by the shared mapping."""

    def run(self):
        for key in self.src:
            if key not in SECTIONS + OUR_SECTIONS:
                raise self.error(str(key), f"unknown top-level section of a PaddleClas config; one of {SECTIONS}")
        self.glob()
        self.arch()
        self.loss_metric()
        self.clas_optimizer()
        for split in ("Train", "Eval"):
            self.data(split)
        self.infer()
        self.our_sections()
        return self.ours, self.report

    def glob(self) -> None:
        g = self.check_keys(self.src.get("Global"), (
            "checkpoints", "pretrained_model", "output_dir", "device", "save_interval", "eval_during_train",
            "start_eval_epoch", "eval_interval", "epochs", "print_batch_step", "use_visualdl", "image_shape",
            "save_inference_dir", "to_static", "use_dali", "seed"), "Global")
        direct = {"epochs": "Global.epochs", "print_batch_step": "Global.log_every", "output_dir": "Global.output_dir",
                  "use_visualdl": "Global.use_visualdl", "save_interval": "Global.save_every_epochs",
                  "seed": "Global.seed"}
        for k, dst in direct.items():
            if k in g:
                self.map(f"Global.{k}", g[k], dst)
        for k, dst in (("pretrained_model", "Global.pretrained_model"), ("checkpoints", "Global.resume")):
            if k in g:
                self.map(f"Global.{k}", g[k] or "", dst)
        if "image_shape" in g:
            self.map("Global.image_shape", [int(v) for v in g["image_shape"]], "Global.image_shape")
        if g.get("eval_during_train", True):
            if "eval_interval" in g:
                self.map("Global.eval_interval", g["eval_interval"], "Global.eval_every_epochs")
        else:
            self.derive("Global.eval_every_epochs", 0, "Global.eval_during_train false")
            self.report.mapped["Global.eval_during_train"] = "Global.eval_every_epochs"
        if g.get("eval_during_train", True) and "eval_during_train" in g:
            self.fixed("Global.eval_during_train", "true")
        if "start_eval_epoch" in g:
            self.approx("Global.start_eval_epoch", "evaluation runs from the first eval_interval")
        if "device" in g:
            self.none("Global.device", "the device is chosen automatically (GPU when paddle has CUDA)")
        if "save_inference_dir" in g:
            self.none("Global.save_inference_dir", "export goes to Export.out_prefix (output_dir/inference)")
        for k in ("to_static", "use_dali"):
            if g.get(k):
                raise self.error(f"Global.{k}", "true is not supported here")
            if k in g:
                self.none(f"Global.{k}", "false")

    def arch(self) -> None:
        a = self.check_keys(self.src.get("Arch"), ("name", "class_num", "pretrained", "use_ssld", "stride_list",
                                                   "dropout_prob", "class_expand", "scale"), "Arch")
        m = re.fullmatch(r"PPLCNet_x(\d+)_(\d+)", str(a.get("name")))
        if not m:
            raise self.error("Arch.name", f"{a.get('name')!r}: only PPLCNet_x<scale> networks are built here")
        scale = float(f"{m.group(1)}.{m.group(2)}")
        n = int(a.get("class_num", 1000))
        labels = ["0_degree", "180_degree"] if n == 2 else [str(i) for i in range(n)]
        self.derive("Global.label_list", labels, "PaddleX's textline-orientation labels (class ids otherwise)")
        backbone = {"name": "PPLCNet", "scale": scale, "class_num": n}
        for k in ("stride_list", "dropout_prob", "class_expand"):
            if k in a:
                backbone[k] = copy.deepcopy(a[k])
                self.report.mapped[f"Arch.{k}"] = f"Architecture.Backbone.{k}"
        self.report.mapped["Arch.name"] = "Architecture.Backbone.scale"
        self.report.mapped["Arch.class_num"] = "Architecture.Backbone.class_num"
        textline = [2, [2, 1], [2, 1], [2, 1], [2, 1]]
        name = TEXTLINE.get(scale) if n == 2 and backbone.get("stride_list") == textline and \
            set(backbone) <= {"name", "scale", "class_num", "stride_list"} else None
        self.put("Architecture.name", name or "")
        self.put("Architecture.Backbone", {} if name else backbone)
        for k in ("pretrained", "use_ssld"):
            if a.get(k):
                raise self.error(f"Arch.{k}", "downloads ImageNet weights: give Global.pretrained_model instead")
            if k in a:
                self.none(f"Arch.{k}", "false")

    def loss_metric(self) -> None:
        lo = self.check_keys(self.src.get("Loss"), ("Train", "Eval"), "Loss")
        for split in ("Train", "Eval"):
            for i, item in enumerate(lo.get(split) or []):
                p = f"Loss.{split}[{i}]"
                if not isinstance(item, dict) or list(item) != ["CELoss"]:
                    raise self.error(p, f"{item!r}: only CELoss is supported here")
                args = self.check_keys(item["CELoss"] or {}, ("weight", "epsilon"), f"{p}.CELoss")
                if args.get("epsilon"):
                    raise self.error(f"{p}.CELoss.epsilon", "label smoothing is not supported here")
                if float(args.get("weight", 1.0)) != 1.0:
                    raise self.error(f"{p}.CELoss.weight", "only 1.0 (one loss) here")
                self.fixed(p, "ClsLoss: mean cross entropy")
        self.put("Loss.name", "ClsLoss")
        me = self.check_keys(self.src.get("Metric"), ("Train", "Eval"), "Metric")
        for split in ("Train", "Eval"):
            for i, item in enumerate(me.get(split) or []):
                p = f"Metric.{split}[{i}]"
                if not isinstance(item, dict) or list(item) != ["TopkAcc"]:
                    raise self.error(p, f"{item!r}: only TopkAcc is supported here")
                topk = (item["TopkAcc"] or {}).get("topk", [1, 5])
                topk = topk if isinstance(topk, list) else [topk]
                if 1 not in topk:
                    raise self.error(f"{p}.TopkAcc.topk", f"{topk}: top-1 accuracy (acc) is what is scored here")
                if topk != [1]:
                    self.approx(f"{p}.TopkAcc.topk", "acc (top-1) only")
                else:
                    self.fixed(f"{p}.TopkAcc.topk", "acc")

    def clas_optimizer(self) -> None:
        o = copy.deepcopy(self.src.get("Optimizer") or {})
        reg = o.get("regularizer")
        if isinstance(reg, dict) and "coeff" in reg:
            reg["factor"] = reg.pop("coeff")
        saved, self.src = self.src, {**self.src, "Optimizer": o}
        try:
            self.optimizer()
        finally:
            self.src = saved
        if "Optimizer.regularizer.factor" in self.report.mapped:
            self.report.mapped["Optimizer.regularizer.coeff"] = self.report.mapped.pop("Optimizer.regularizer.factor")

    def data(self, split: str) -> None:
        node = self.check_keys((self.src.get("DataLoader") or {}).get(split), ("dataset", "sampler", "loader"),
                               f"DataLoader.{split}")
        if not node:
            raise self.error(f"DataLoader.{split}", "is required")
        p, ours = f"DataLoader.{split}", split
        ds = self.check_keys(node.get("dataset"), ("name", "image_root", "cls_label_path", "transform_ops",
                                                    "delimiter"), f"{p}.dataset")
        canonical(ds.get("name"), ("ImageNetDataset",), f"{p}.dataset.name", "dataset", self.source)
        self.fixed(f"{p}.dataset.name", "label files of image paths and class ids")
        self.map(f"{p}.dataset.image_root", ds.get("image_root") or "", f"{ours}.dataset.data_dir")
        if "cls_label_path" in ds:
            self.map(f"{p}.dataset.cls_label_path", [ds["cls_label_path"]], f"{ours}.dataset.label_file_list")
        self.map(f"{p}.dataset.delimiter", ds.get("delimiter", " "), f"{ours}.dataset.delimiter")
        self.clas_ops(split, ds.get("transform_ops"), f"{p}.dataset.transform_ops")
        s = self.check_keys(node.get("sampler"), ("name", "batch_size", "drop_last", "shuffle"), f"{p}.sampler")
        if "name" in s:
            canonical(s["name"], ("DistributedBatchSampler", "BatchSampler"), f"{p}.sampler.name", "sampler", self.source)
            self.fixed(f"{p}.sampler.name", "one shard per process")
        for k, dst in (("batch_size", "batch_size_per_card"), ("drop_last", "drop_last"), ("shuffle", "shuffle")):
            if k in s:
                if split == "Eval" and k != "batch_size":
                    if s[k]:
                        raise self.error(f"{p}.sampler.{k}", "true: evaluation scores every sample once, in order")
                    self.none(f"{p}.sampler.{k}", "false")
                else:
                    self.map(f"{p}.sampler.{k}", s[k], f"{ours}.loader.{dst}")
        lo = self.check_keys(node.get("loader"), ("num_workers", "use_shared_memory"), f"{p}.loader")
        for k in lo:
            self.map(f"{p}.loader.{k}", lo[k], f"{ours}.loader.{k}")

    def clas_ops(self, split: str, ops: Any, p: str) -> None:
        names = []
        for _, name, op, args in self.data_ops(ops, p, OPS, "data op"):
            names.append(name)
            args = args or {}
            if name == "DecodeImage":
                self.check_keys(args, ("to_rgb", "channel_first"), op)
                if not args.get("to_rgb", True) or args.get("channel_first"):
                    raise self.error(op, "to_rgb true, channel_first false only (the paddlex input here)")
                for k in args:
                    self.fixed(f"{op}.{k}", str(args[k]))
            elif name == "ResizeImage":
                self.check_keys(args, ("size", "interpolation", "backend"), op)
                w, h = (int(v) for v in args.get("size") or [0, 0])
                self.map(f"{op}.size", [3, h, w], "Global.image_shape")
                self.derive("Global.input", "paddlex", "ResizeImage + NormalizeImage: RGB, W x H, ImageNet mean/std")
                for k in ("interpolation", "backend"):
                    if k in args:
                        self.approx(f"{op}.{k}", "cv2 bilinear here")
            elif name == "NormalizeImage":
                self.check_keys(args, ("scale", "mean", "std", "order", "channel_num"), op)
                for k in ("mean", "std"):
                    v = args.get(k, IMAGENET[k])
                    if len(v) != 3 or any(not math.isclose(float(a), b, rel_tol=1e-6) for a, b in zip(v, IMAGENET[k])):
                        raise self.error(f"{op}.{k}", f"{v!r}: only ImageNet's {IMAGENET[k]} here")
                for k in args:
                    self.fixed(f"{op}.{k}", "(x / 255 - ImageNet mean) / std")
            elif name in ("TimmAutoAugment", "RandomErasing"):
                if split != "Train":
                    raise self.error(op, "augmentation is for Train only here")
                self.approx(op, "the rec recipe's augmentation (perspective, blur, noise, contrast)")
                self.put("Train.dataset.aug", True)
            else:
                self.fixed(op, "CHW")
        if "ResizeImage" not in names:
            raise self.error(p, "needs ResizeImage (the model input size)")
        if split == "Train" and not {"TimmAutoAugment", "RandomErasing"} & set(names):
            self.derive("Train.dataset.aug", False, "no TimmAutoAugment / RandomErasing")

    def infer(self) -> None:
        inf = self.check_keys(self.src.get("Infer"), ("infer_imgs", "batch_size", "transforms", "PostProcess"),
                              "Infer")
        if "infer_imgs" in inf:
            self.map("Infer.infer_imgs", inf["infer_imgs"] or "", "Predict.images")
        if "batch_size" in inf:
            self.map("Infer.batch_size", inf["batch_size"], "Predict.batch_size")
        for k in ("transforms", "PostProcess"):
            if k in inf:
                self.none(f"Infer.{k}", "predict uses the training input and the argmax label with its probability")


def translate_clas_config(data: dict, source: str = "<dict>", overridden: dict | None = None):
    """Map a PaddleClas / PaddleX orientation config onto the cls recipe's config dict -> (ours, TranslationReport).
    overridden: as compat.paddleocr.translate_rec_config's."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping")
    return ClasTranslator(copy.deepcopy(data), source, overridden).run()


def paddleclas_cls_translator(schema: type):
    """A ``Recipe.config_translators`` entry for the cls recipe: a PaddleClas / PaddleX orientation YAML
    (is_paddleclas_config) -> (our config dict, the "no effect here" / "not exactly as PaddleClas" lines); None for
    other files. ``-o`` overrides are given in the file's own keys."""
    def translate(raw: dict, path, overridden: dict | None = None):
        if not is_paddleclas_config(raw):
            return None
        ours, report = translate_clas_config(raw, f"{path} (PaddleClas config)", overridden)
        notes = [report.no_effect_line()] + ([report.approximated_line()] if report.approximated else [])
        return ours, notes + [OverrideNote(line) for line in report.overrides]

    translate.recognise = is_paddleclas_config
    return translate
