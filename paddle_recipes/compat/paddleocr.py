"""PaddleOCR recognition YAMLs (``configs/rec/...``) -> the OCR recipe's config dict.

    ours, report = translate_rec_config(yaml.safe_load(open(p)), source=p)
    logger.info(report.no_effect_line())      # one line: "no effect here: Global.use_gpu, Global.debug, ..."
    cfg = load_config(path, overrides, RecConfig, translators=(paddleocr_rec_translator(RecConfig),))

Every key of the PaddleOCR file is accounted for (the vocabulary of compat.translate): it maps onto a key of ours
(``report.mapped``: PaddleOCR path -> our path, or "fixed: ..." when our pipeline always does what the value asks),
or it truly has no effect here (``report.no_effect``: path -> why). A value whose meaning we would change
(Eval ratio_list [0.5], a TPS Transform, another dict in PostProcess, L1 decay, ...) is a ConfigError
naming the key; an unknown key is a ConfigError with the nearest valid key. The Global, Optimizer and loader
sections, the extension keys (EXTENSION_KEYS) and PROPOSED_KEYS are shared with det: compat.paddleocr_common.

Facts of PaddleOCR's rec code that the mapping follows (read, not copied):
- data ops get Global's keys merged over their own (``param.update(global_config)``), so an op's own
  max_text_length / character_dict_path / use_space_char / infer_mode are overridden by Global's;
- ``RecMetric`` ignores spaces by default (``ignore_space: true``);
- an empty ``character_dict_path`` means the built-in 36-char lowercase dict (labels lowercased);
- ``Global.character_type`` is read by no current code, and without ``Global.max_text_length`` each data op keeps
  its own value.

A network this version does not build (a DistillationModel, another algorithm, a backbone without an implementation)
is named in one ConfigError before any of the file's keys is read (``RecTranslator.preflight``).
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Tuple

from paddle_recipes.config import ConfigError
from paddle_recipes.nn import catalog

from .paddleocr_common import EXTENSION_KEYS, PROPOSED_KEYS, is_paddleocr_config  # noqa: F401 (the rec API)
from .paddleocr_common import PaddleOCRTranslator, paddleocr_translator
from .translate import TranslationReport
from .translate import canonical
from paddle_recipes.tasks.ocr_rec.export_paddleocr import PADDLEX_REC_MODEL_NAMES
from paddle_recipes.tasks.ocr_rec.models import ALGORITHMS  # it also registers the rec necks and heads in nn.catalog

CURRICULUM_KEYS = ("warm_steps", "short_len")
MULTISCALE_KEYS = ("scales", "first_bs", "fix_bs", "divided_factor", "is_training", "ratio_wh", "max_w")
# Global keys only the rec translator reads (the text: its dict, length, spaces; the free-width infer mode).
REC_GLOBAL = ("character_dict_path", "character_type", "max_text_length", "infer_mode", "use_space_char")
# our rec-only Global keys (docs/cards/distill_pretrained.md, finetune_merge.md, general_lines.md), passed through as written
REC_OUR_GLOBAL = ("distill_pretrained", "distill_weight", "distill_temperature", "finetune_merge", "general_lines",
                  "general_lines_ratio")


def _paddlex_rec_names() -> tuple:
    """The Global.model_name values an export can carry (paddlex 3.x's text-recognition names)."""
    return PADDLEX_REC_MODEL_NAMES


# Backbone / Neck / Head names, the keys each takes and the branches a MultiHead builds: nn.catalog (multihead_parts).
# Architecture.algorithm values of PaddleOCR's other rec configs (configs/rec/*.yml): recognised, not built here.
PPOCR_OTHER_ALGORITHMS = ("ABINet", "CAN", "CPPD", "LaTeXOCR", "NRTR", "PP-FormulaNet-L", "PP-FormulaNet-S",
                          "PP-FormulaNet_plus-L", "PP-FormulaNet_plus-M", "PP-FormulaNet_plus-S", "PREN", "ParseQ",
                          "RARE", "RFL", "RobustScanner", "Rosetta", "SAR", "SATRN", "SEED", "SPIN", "SRN", "STARNet",
                          "UniMERNet", "ViTSTR", "VisionLAN")
LOSSES = ("CTCLoss", "MultiLoss")
MULTILOSS_PARTS = ("CTCLoss", "NRTRLoss", "SARLoss")
DATASETS = {"SimpleDataSet": "label_file", "MultiScaleDataSet": "label_file", "LMDBDataSet": "lmdb",
            "LMDBDateSet": "lmdb"}  # LMDBDateSet: the spelling of older PaddleOCR releases
TRANSFORMS = ("DecodeImage", "RecAug", "RecConAug", "CTCLabelEncode", "MultiLabelEncode", "RecResizeImg", "KeepKeys")
RECAUG_PROBS = ("tia_prob", "crop_prob", "reverse_prob", "noise_prob", "jitter_prob", "blur_prob", "hsv_aug_prob")
RECAUG_ARGS = ("use_tia", "aug_prob") + RECAUG_PROBS  # aug_prob, use_tia: the RecAug of PaddleOCR <= 2.6
LABEL_ENCODERS = {"CTCLabelEncode": ("CTCLoss", ["image", "label", "length"]),
                  "MultiLabelEncode": ("MultiLoss", ["image", "label_ctc", "label_gtc", "length", "valid_ratio"])}
# Keys PaddleOCR merges from Global into every data op / the post-process (op values are overridden).
GLOBAL_MERGED = ("max_text_length", "character_dict_path", "use_space_char", "infer_mode")


def multihead_parts() -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(the rec head names PaddleOCR's MultiHead head_list may hold: nn.catalog's rec heads, those built here or not;
    the branches our MultiHead builds)."""
    known = tuple(n for n in catalog.names(catalog.REC, None, catalog.HEAD, ours=False) if n != "MultiHead")
    return known, catalog.find("MultiHead", catalog.REC, catalog.HEAD).cls.BRANCHES


class RecTranslator(PaddleOCRTranslator):
    """The rec sections: the network (CRNN / SVTR with CTC or MultiHead), loss, CTC decode, RecMetric, the data ops."""

    def __init__(self, data: dict, source: str, overridden: Optional[Dict[str, str]] = None):
        super().__init__(data, source, overridden)
        self.encoders: Dict[str, Tuple[str, str]] = {}  # split -> (encoder name, its path)
        self.shapes: List[Tuple[str, list]] = []  # (path, [C, H, W]) of every RecResizeImg
        self.img_modes: List[Tuple[str, str]] = []
        self.gtc: Dict[str, Tuple[str, str]] = {}  # split -> (MultiLabelEncode's gtc_encode, its path)
        self.op_lengths: List[Tuple[str, Any]] = []  # (op path, its max_text_length) when Global has none
        self.keep_keys: Dict[str, Tuple[str, list]] = {}  # split -> (KeepKeys path, its keep_keys)

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
        known, built = multihead_parts()
        for i, item in enumerate(parts if isinstance(parts, list) else []):
            name = next(iter(item), None) if isinstance(item, dict) else None
            if isinstance(name, str) and name in known and name not in built:
                raise self.error(f"Architecture.Head.head_list[{i}]", f"{name!r} is PaddleOCR's, but this version does "
                                 f"not build it; a MultiHead here is {' + '.join(built)}")

    def _global_keys(self):
        return super()._global_keys() + REC_GLOBAL + REC_OUR_GLOBAL

    def direct_global(self) -> Dict[str, str]:
        direct = super().direct_global()  # the text keys come before cal_metric_during_train, as PaddleOCR lists them
        cadence = direct.pop("cal_metric_during_train")
        direct.update({"max_text_length": "Global.max_text_length", "use_space_char": "Global.use_space_char",
                       "cal_metric_during_train": cadence, "model_name": "Export.model_name"})
        g = self.g
        if g.get("model_name") and g["model_name"] not in _paddlex_rec_names():  # e.g. PP-OCRv6_base_rec
            del direct["model_name"]
            self.none("Global.model_name", f"{g['model_name']!r} is no model name paddlex 3.x accepts (it only "
                      "names the export; PaddleOCR trains without it): the export writes Export.model_name")
        return direct

    def global_(self) -> None:
        """The shared Global keys (compat.paddleocr_common), with the text keys in PaddleOCR's order."""
        g = self.g
        self.global_training()
        self.dict_path = g.get("character_dict_path") or ""
        if "character_dict_path" in g:
            self.map("Global.character_dict_path", self.dict_path, "Global.character_dict_path")
            if not self.dict_path:
                raise self.error("Global.character_dict_path", "empty (PaddleOCR's built-in lowercase 36-char dict, "
                                 "labels lowercased) is not supported here: give a dict file")
        if "character_type" in g:  # an old key: PaddleOCR's current code does not read it
            self.none("Global.character_type", "PaddleOCR no longer reads it (the dict is character_dict_path)")
        self.global_devices()
        if "infer_mode" in g:
            if g["infer_mode"]:
                raise self.error("Global.infer_mode", "true (free-width resize in every split) is not supported "
                                 "here; use RecResizeImg eval_mode for Eval")
            self.none("Global.infer_mode", "false")
        for k in REC_OUR_GLOBAL:
            if k in g:
                self.ext(f"Global.{k}", g[k], f"Global.{k}")
        self.global_rest()

    def architecture(self) -> None:
        a = self.architecture_section(map_as_written=())
        if a.get("model_type", "rec") != "rec":
            raise self.error("Architecture.model_type", f"{a['model_type']!r}: only 'rec' is translated")
        if "model_type" in a:
            self.map("Architecture.model_type", "rec", "Architecture.model_type")
        if "algorithm" in a:
            self.map("Architecture.algorithm", canonical(a["algorithm"], ALGORITHMS, "Architecture.algorithm",
                                                      "algorithm", self.source), "Architecture.algorithm")
        if "Transform" in a:
            if a["Transform"] is not None:
                raise self.error("Architecture.Transform", "a rectification Transform (TPS, ...) is not supported")
            self.none("Architecture.Transform", "null: no rectification stage")
        self.head_name = None
        self.multihead_parts: List[str] = []
        for kind in (catalog.BACKBONE, catalog.NECK, catalog.HEAD):
            part, names = kind.capitalize(), catalog.names(catalog.REC, None, kind)
            node = a.get(part)
            if node is None:
                if part in a:
                    self.none(f"Architecture.{part}", "null")
                continue
            path = f"Architecture.{part}"
            if not isinstance(node, dict) or "name" not in node:
                raise self.error(path, "needs a name")
            node = copy.deepcopy(node)
            node["name"] = canonical(node["name"], names, f"{path}.name", kind, self.source)
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
            canon = canonical(name, multihead_parts()[0], f"{path}.head_list[{i}]", "head", self.source)
            parts[i] = {canon: item[name]}
        self.multihead_parts = [next(iter(x)) for x in parts]
        if next(iter(parts[0])) != "CTCHead":
            raise self.error(f"{path}.head_list[0]", "the first MultiHead part must be CTCHead (it gives the output)")

    def loss(self) -> None:
        lo = self.check_keys(self.src.get("Loss"), ("name", "loss_config_list", "use_focal_loss"), "Loss")
        if not lo:
            raise self.error("Loss", "is required")
        self.loss_name = canonical(lo.get("name"), LOSSES, "Loss.name", "loss", self.source)
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
                out.append({canonical(name, MULTILOSS_PARTS, f"Loss.loss_config_list[{i}]", "loss", self.source):
                            copy.deepcopy(item[name])})
            self.put("Loss.loss_config_list", out)
            self.copy_tree("Loss.loss_config_list", parts, "Loss.loss_config_list")
        elif "loss_config_list" in lo:
            raise self.error("Loss.loss_config_list", f"only MultiLoss takes it, not {self.loss_name}")

    def postprocess(self) -> None:
        pp = self.check_keys(self.src.get("PostProcess"), ("name",) + GLOBAL_MERGED[1:3], "PostProcess")
        if not pp:
            return
        canonical(pp.get("name"), ("CTCLabelDecode",), "PostProcess.name", "post-process", self.source)
        self.fixed("PostProcess.name", "greedy CTC decode with Global.character_dict_path")
        for k in ("character_dict_path", "use_space_char"):
            if k in pp:
                if k not in self.g:
                    raise self.error(f"PostProcess.{k}", f"set Global.{k} instead (decoding uses the training dict)")
                self.none(f"PostProcess.{k}", f"overridden by Global.{k}, as in PaddleOCR")

    def metric(self) -> None:
        m = self.check_keys(self.src.get("Metric"), ("name", "main_indicator", "ignore_space", "is_filter"), "Metric")
        if m:
            canonical(m.get("name"), ("RecMetric",), "Metric.name", "metric", self.source)
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
        dname = canonical(ds.get("name"), tuple(DATASETS), f"{p}.name", "dataset", self.source)
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
        names = []
        concat_at = None
        for i, name, op, args in self.data_ops(ops, p, TRANSFORMS, "transform"):
            names.append(name)
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
            self.approx(op, "our augmentation (tasks/ocr_rec/augment.py: perspective, blur, noise, brightness/contrast) "
                        "stands in for RecAug's TIA, crop, reverse, jitter and HSV ops")
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
        self.approx(op, "line concatenation is not applied here")
        for key in args:
            if key not in GLOBAL_MERGED:
                self.approx(f"{op}.{key}", "RecConAug is not applied")

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
            gtc = canonical(gtc, ("NRTRLabelEncode", "SARLabelEncode"), f"{op}.gtc_encode", "gtc_encode", self.source)
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
            self.approx(f"{op}.eval_mode", "Eval images are padded to Global.image_shape; PaddleOCR lets the width "
                        "grow (predict/export do)")

    def _op_KeepKeys(self, split, op, args, i):
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
        name = canonical(s.get("name"), ("MultiScaleSampler", "LengthCurriculumSampler"), f"{p}.name", "sampler",
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
                self.approx(f"{path}.max_text_length",
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
            kp, kept = self.keep_keys.get(split, (None, None))
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
    return RecTranslator(copy.deepcopy(data), source, overridden).run()



def paddleocr_rec_translator(schema: type):
    """A ``Recipe.config_translators`` entry for the OCR recipe's RecConfig (compat.paddleocr_common's wrapper:
    the one "no effect here" line, the "not exactly as PaddleOCR" line, -o in PaddleOCR's keys)."""
    return paddleocr_translator(schema, translate_rec_config)
