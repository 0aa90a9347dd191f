"""PaddleOCR recognition YAMLs -> the OCR recipe's config (paddle_recipes/compat/paddleocr.py).

The fixtures under tests/fixtures/paddleocr_configs/ are PaddleOCR's rec YAMLs, keys and values (re-dumped without
their comments by tests/scripts/make_paddleocr_rec_fixtures.py); tests/fixtures/paddleocr_rec_expected.yml says
which ones train and which stop with one line naming what this version does not build.
"""
from __future__ import annotations

import copy
import dataclasses
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from paddle_recipes.compat.paddleocr import (PROPOSED_KEYS, is_paddleocr_config,  # noqa: E402
                                             paddleocr_rec_translator, translate_rec_config)
from paddle_recipes.config import ConfigError, from_dict, load_config, to_dict  # noqa: E402


def load_any_config(path, overrides, schema, notes=None):
    """`-c PATH -o ...` as the OCR recipe reads it: our YAML, or a PaddleOCR one through the translator
    (its one-line notes appended to `notes`)."""
    return load_config(path, overrides, schema, translators=(paddleocr_rec_translator(schema),), notes=notes)
from paddle_recipes.train.optim import OptimizerConfig  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "paddleocr_configs"
V2, R34, V4, V5M, V5S = ("ch_ppocr_v2.0/rec_chinese_common_train_v2.0.yml", "rec_r34_vd_none_bilstm_ctc.yml",
                         "PP-OCRv4/PP-OCRv4_mobile_rec.yml", "PP-OCRv5/PP-OCRv5_mobile_rec.yml",
                         "PP-OCRv5/PP-OCRv5_server_rec.yml")
EXPECTED = yaml.safe_load((REPO / "tests" / "fixtures" / "paddleocr_rec_expected.yml").read_text(encoding="utf-8"))
NAMES = [n for n, v in EXPECTED.items() if v == "trains"] + [R34]  # every file that translates (R34 with a dict)


from paddle_recipes.tasks.ocr_rec import config as REC  # noqa: E402  (the OCR recipe's schema)


# ----------------------------------------------------------------------------- the proposed schema keys
# A test-local extension of RecConfig with the keys in PROPOSED_KEYS that the real schema does not have yet
# (the recipe's translator rejects a file that uses one of them; see test_paddleocr_recipe.py).
@dataclass
class POptimizer(OptimizerConfig):
    decay_epochs: List[float] = field(default_factory=list)
    values: List[float] = field(default_factory=list)
    step_size_epochs: float = 0.0
    epsilon: float = 1e-8
    decay_1d_params: bool = False
    no_weight_decay_name: str = ""
    clip_norm_per_tensor: float = 0.0

    def __post_init__(self):
        if self.schedule != "piecewise":
            super().__post_init__()


@dataclass
class ProposedRecConfig(REC.RecConfig):
    Optimizer: POptimizer = field(default_factory=lambda: POptimizer(name="adam"))


# ----------------------------------------------------------------------------- helpers
def load(name: str, raw: bool = False) -> dict:
    """A fixture; the r34 file's empty dict path (PaddleOCR's built-in lowercase dict: an error here, see
    test_empty_dict_path_is_an_error) is replaced by a dict file unless `raw`."""
    data = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
    if not raw and not data["Global"].get("character_dict_path"):
        data["Global"].update(character_dict_path="dicts/en_dict.txt")
    return data


def test_empty_dict_path_is_an_error():
    with pytest.raises(ConfigError, match=r"Global\.character_dict_path: empty .*give a dict file"):
        translate(load(R34, raw=True))


def leaf_paths(node: Any, prefix: str = "") -> List[str]:
    """Every key path of a PaddleOCR config; lists of one-key mappings (transforms, head_list) as [i].Name."""
    out = []
    if isinstance(node, dict) and node:
        for k, v in node.items():
            out += leaf_paths(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(node, list) and any(isinstance(v, dict) for v in node):
        for i, v in enumerate(node):
            out += leaf_paths(v, f"{prefix}[{i}]")
    else:
        out.append(prefix)
    return out


def strip_proposed(ours: dict, proposed: List[str]) -> dict:
    """Our dict without the keys the current schema lacks (pseudo entries 'key=value' drop that key)."""
    out = copy.deepcopy(ours)
    for path in proposed:
        path = path.split("=")[0]
        if path == "Global.character_dict_path":
            continue  # the key exists; only the meaning of '' is new
        *parents, last = path.split(".")
        node = out
        for p in parents:
            node = node.get(p, {})
        node.pop(last, None)
    return {k: v for k, v in out.items() if v != {}}  # a section left empty (Metric) is new as a whole


def translate(data: dict, **kw):
    return translate_rec_config(data, kw.get("source", "test.yml"))


def with_change(name: str, path: str, value: Any) -> dict:
    data = load(name)
    node = data
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    if isinstance(node, list):
        node[int(keys[-1])] = value
    else:
        node[keys[-1]] = value
    return data


# ----------------------------------------------------------------------------- every fixture
@pytest.mark.parametrize("name", NAMES)
def test_fixture_translates_and_every_key_is_accounted_for(name):
    data = load(name)
    assert is_paddleocr_config(data)
    ours, report = translate(data)
    paths = leaf_paths(data)
    assert len(paths) >= 55
    missing = [p for p in paths if not report.accounts_for(p)]
    assert missing == []
    assert set(report.mapped).isdisjoint(report.no_effect)
    assert report.no_effect_line().startswith("no effect here: ") and "\n" not in report.no_effect_line()
    assert all(p in paths or p in data for p in report.no_effect)  # leaf keys, or a top-level key (profiler_options)
    assert all(p.split("=")[0] in {k.split("=")[0] for k in PROPOSED_KEYS} for p in report.proposed)
    # the whole output is typed by the schema with the proposed keys
    cfg = from_dict(ProposedRecConfig, ours)
    g = data["Global"]
    assert (cfg.Global.epochs, cfg.Global.output_dir, cfg.Global.log_every) == (
        g["epoch_num"], g["save_model_dir"], g["print_batch_step"])
    assert cfg.Global.eval_batch_step == g["eval_batch_step"] and cfg.Global.eval_every_epochs == 0
    assert cfg.Global.keep_every_epochs == g["save_epoch_step"] and cfg.Global.save_every_epochs == 1
    assert cfg.Optimizer.name == "adam" and cfg.Optimizer.warmup_steps == 0
    assert cfg.Optimizer.weight_decay == pytest.approx(float(data["Optimizer"]["regularizer"]["factor"]))
    assert cfg.Metric.ignore_space is data["Metric"].get("ignore_space", True)  # RecMetric's default: true
    assert cfg.Train.loader.batch_size_per_card == data["Train"]["loader"]["batch_size_per_card"]
    assert cfg.Eval.loader.num_workers == data["Eval"]["loader"]["num_workers"]


@pytest.mark.parametrize("name", NAMES)
def test_existing_keys_load_into_the_current_schema(name):
    ours, report = translate(load(name))
    cfg = from_dict(REC.RecConfig, strip_proposed(ours, report.proposed))
    data = load(name)
    assert cfg.Global.epochs == data["Global"]["epoch_num"]
    assert cfg.Global.max_text_length == data["Global"].get("max_text_length", 25)  # else the ops' (all 25 in Train)
    assert cfg.Optimizer.lr == pytest.approx(data["Optimizer"]["lr"]["learning_rate"])
    assert cfg.Train.dataset.data_dir == data["Train"]["dataset"]["data_dir"]


def test_v2_chinese_common_translates_to_this_dict():
    """PaddleOCR's rec_chinese_common_train_v2.0.yml, every value as in the file."""
    ours, report = translate(load(V2))
    ds = lambda split: {"format": "label_file", "data_dir": "./train_data/",
                        "label_file_list": [f"./train_data/{split}_list.txt"], "label_encoder": "CTCLabelEncode"}
    assert ours == {
        "Global": {"epochs": 500, "output_dir": "./output/rec_chinese_common_v2.0", "log_every": 10,
                   "use_visualdl": False, "max_text_length": 25, "use_space_char": True,
                   "cal_metric_during_train": True, "pretrained_model": "", "checkpoints": "", "eval_batch_step": [0, 2000],
                   "eval_every_epochs": 0, "keep_every_epochs": 3, "save_every_epochs": 1,
                   "character_dict_path": "ppocr/utils/ppocr_keys_v1.txt", "image_shape": [3, 32, 320]},
        "Predict": {"images": "doc/imgs_words/ch/word_1.jpg",
                    "save_res_path": "./output/rec/predicts_chinese_common_v2.0.txt"},
        "Architecture": {"model_type": "rec", "algorithm": "CRNN", "Backbone": {"name": "ResNet", "layers": 34},
                         "Neck": {"name": "SequenceEncoder", "encoder_type": "rnn", "hidden_size": 256},
                         "Head": {"name": "CTCHead", "fc_decay": 0.00004}},
        "Loss": {"name": "CTCLoss"},
        "Metric": {"main_indicator": "acc", "ignore_space": True},
        "Optimizer": {"name": "adam", "beta1": 0.9, "beta2": 0.999, "warmup_steps": 0, "min_lr": 0.0,
                      "schedule": "cosine", "lr": 0.001, "warmup_epochs": 5, "weight_decay": 0.00004,
                      "grad_clip_norm": 0.0},
        "Train": {"dataset": {**ds("train"), "aug": True},
                  "loader": {"shuffle": True, "batch_size_per_card": 256, "drop_last": True, "num_workers": 8}},
        "Eval": {"dataset": ds("val"),
                 "loader": {"shuffle": False, "drop_last": False, "batch_size_per_card": 256, "num_workers": 8}},
    }
    assert report.approximated["Train.dataset.transforms[1].RecAug"].startswith("our augmentation (tasks/ocr_rec/augment.py")
    assert report.mapped["Optimizer.regularizer.factor"] == "Optimizer.weight_decay"
    assert report.mapped["Optimizer.lr.warmup_epoch"] == "Optimizer.warmup_epochs"  # v2.0's warmup: mapped
    assert list(report.no_effect) == ["Global.save_inference_dir", "Global.use_gpu", "Global.infer_mode",
                                      "Architecture.Transform"]


def test_v4_multihead_multiscale_and_warmup():
    ours, report = translate(load(V4))
    head = ours["Architecture"]["Head"]
    assert head["name"] == "MultiHead" and [next(iter(h)) for h in head["head_list"]] == ["CTCHead", "NRTRHead"]
    assert head["head_list"][0]["CTCHead"]["Head"]["fc_decay"] == 0.00001
    assert head["head_list"][1]["NRTRHead"]["max_text_length"] == 25  # the YAML anchor resolved
    assert ours["Architecture"]["Neck"] is None and "Architecture.Neck" in report.derived
    assert ours["Loss"] == {"name": "MultiLoss", "loss_config_list": [{"CTCLoss": None}, {"NRTRLoss": None}]}
    opt = ours["Optimizer"]
    assert (opt["schedule"], opt["lr"], opt["warmup_epochs"], opt["warmup_steps"]) == ("cosine", 0.001, 5, 0)
    assert "restarts it with the full length" in report.approximated["Optimizer.lr.warmup_epoch"]
    assert ours["Train"]["sampler"] == {"name": "MultiScaleSampler", "scales": [[320, 32], [320, 48], [320, 64]],
                                        "first_bs": 192, "fix_bs": False, "divided_factor": [8, 16],
                                        "is_training": True}
    assert not any(k.startswith("concat_aug") for k in ours["Train"]["dataset"])  # RecConAug: reported, not applied
    assert report.approximated["Train.dataset.transforms[1].RecConAug"] == "line concatenation is not applied here"
    assert "RecConAug" in report.approximated_line() and "RecConAug.prob" not in report.approximated_line()
    assert ours["Train"]["dataset"]["gtc_encode"] == "NRTRLabelEncode"
    assert ours["Global"]["image_shape"] == [3, 48, 320]  # from Eval's RecResizeImg; Train is multi-scale
    # the op's own max_text_length is overridden by Global's in PaddleOCR: reported, not used
    assert "Train.dataset.transforms[1].RecConAug.max_text_length" in report.no_effect
    assert ours["Global"]["max_text_length"] == 25


def test_recconaug_with_prob_0_is_exact_and_a_bad_prob_names_the_key():
    """RecConAug prob 0 never concatenates in PaddleOCR either: no effect, not 'not exactly as PaddleOCR'."""
    cfg = load(V4)
    cfg["Train"]["dataset"]["transforms"][1]["RecConAug"]["prob"] = 0
    ours, report = translate(cfg)
    op = "Train.dataset.transforms[1].RecConAug"
    assert op in report.no_effect and f"{op}.prob" in report.no_effect and f"{op}.image_shape" in report.no_effect
    assert "RecConAug" not in report.approximated_line()
    cfg["Train"]["dataset"]["transforms"][1]["RecConAug"]["prob"] = "half"
    with pytest.raises(ConfigError, match=r"RecConAug\.prob: 'half' is not a number"):
        translate(cfg)



def test_recaug_with_every_probability_0_is_off_and_exact_and_others_name_the_key():
    """PaddleOCR's RecAug fires each of its ops when random() <= its probability: all of them 0 changes no image,
    so ours trains without augmentation and says 'no effect'. Any other parameter set is a one-line error naming
    the first parameter that is not 0."""
    from paddle_recipes.compat.paddleocr import RECAUG_PROBS

    cfg = load(V4)
    ops = cfg["Train"]["dataset"]["transforms"]
    i = next(j for j, o in enumerate(ops) if "RecAug" in o)
    ops[i] = {"RecAug": {**{k: 0 for k in RECAUG_PROBS}, "use_tia": True, "aug_prob": 0.0}}
    ours, report = translate(cfg)
    op = f"Train.dataset.transforms[{i}].RecAug"
    assert ours["Train"]["dataset"]["aug"] is False and op in report.no_effect
    assert all(f"{op}.{k}" in report.no_effect for k in RECAUG_PROBS) and "RecAug" not in report.approximated_line()
    ops[i]["RecAug"]["blur_prob"] = 0.4
    with pytest.raises(ConfigError, match=rf"{re.escape(op)}\.blur_prob: RecAug parameters are not supported"):
        translate(cfg)
    ops[i]["RecAug"] = {"tia_prob": 0}  # the other six default to 0.4 in PaddleOCR
    with pytest.raises(ConfigError, match=rf"{re.escape(op)}\.tia_prob: .*hsv_aug_prob: 0\)"):
        translate(cfg)

def test_v5_latin_without_global_max_text_length_and_eval_mode():
    """latin_PP-OCRv5_mobile_rec.yml has no Global.max_text_length: PaddleOCR's ops keep their own (Train 25, Eval
    1000). Ours is Train's encoder's; Eval's other value is reported. Its Eval eval_mode free-width: reported."""
    name = "PP-OCRv5/multi_language/latin_PP-OCRv5_mobile_rec.yml"
    ours, report = translate(load(name))
    assert ours["Global"]["max_text_length"] == 25
    assert report.mapped["Train.dataset.transforms[3].MultiLabelEncode.max_text_length"] == "Global.max_text_length"
    assert report.mapped["Train.dataset.transforms[1].RecConAug.max_text_length"] == "Global.max_text_length"
    assert report.approximated["Eval.dataset.transforms[1].MultiLabelEncode.max_text_length"].startswith(
        "1000 here is 25 (Train.dataset.transforms[3].MultiLabelEncode.max_text_length)")
    assert "resize_mode" not in ours["Eval"]["dataset"] and "Eval.dataset.transforms[2].RecResizeImg.eval_mode" in \
        report.approximated
    assert ours["Global"]["pretrained_model"] == "PP-OCRv5_mobile_rec_pretrained.pdparams"


def test_keys_paddleocr_does_not_read_are_no_effect(tmp_path):
    """profiler_options (top level; PaddleOCR's -p flag overwrites it), Global.character_type (whatever the dict),
    d2s_train_image_shape, Eval.loader.shuffle true: each reported once, in the one no-effect line.
    Global.to_static (PaddleOCR's static-graph training switch) reaches ours (static_train)."""
    _, report = translate(load("PP-OCRv4/en_PP-OCRv4_mobile_rec.yml"))
    line = report.no_effect_line()
    assert "profiler_options" in report.no_effect and line.count("profiler_options") == 1 and "\n" not in line
    ours, report = translate(with_change(V5M, "Global.to_static", True))
    assert "Global.d2s_train_image_shape" in report.no_effect and "Global.to_static" not in report.no_effect
    assert ours["Global"]["to_static"] is True
    for ctype in ("en", "ch", "EN"):
        data = with_change(V2, "Global.character_type", ctype)
        _, rep = translate(data)
        assert rep.no_effect["Global.character_type"].startswith("PaddleOCR no longer reads it")
    _, rep = translate(load("PP-OCRv5/multi_language/korean_PP-OCRv5_mobile_rec.yml"))
    assert "Eval.loader.shuffle" in rep.no_effect
    with pytest.raises(ConfigError, match=r"Eval\.loader\.shuffle/drop_last must be false"):
        (tmp_path / "x.yml").write_text(yaml.safe_dump(with_change(V2, "Eval.loader.drop_last", True)))
        load_any_config(tmp_path / "x.yml", [], REC.RecConfig)  # drop_last true would leave samples unscored
    with pytest.raises(ConfigError, match=r"profiler_option: unknown top-level section; did you mean "
                                          r"'profiler_options'"):
        translate({**load(V2), "profiler_option": None})


@pytest.mark.parametrize("name", [n for n, v in EXPECTED.items() if v != "trains"])
def test_what_this_version_does_not_build_is_one_line_naming_it(name):
    with pytest.raises(ConfigError) as exc:
        translate(yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8")), source=name)
    assert re.search(EXPECTED[name]["error"], str(exc.value)) and "\n" not in str(exc.value)


def test_other_paddleocr_algorithm_is_named_before_its_keys():
    """PaddleOCR's NRTR / SAR / ... configs carry keys of their own (Architecture.in_channels, Global.num_heads): the
    one line names the algorithm, not a key."""
    data = with_change(V2, "Architecture.algorithm", "NRTR")
    data["Architecture"]["in_channels"] = 1
    data["Global"]["num_heads"] = 8
    with pytest.raises(ConfigError, match=r"^Architecture\.algorithm: 'NRTR' is PaddleOCR's, but this version does not "
                                          r"build it; built here: CRNN, SVTR_LCNet, SVTR_HGNet, SVTR \(in test\.yml\)$"):
        translate(data)


def test_distillation_is_named_before_its_other_keys():
    """A distillation YAML's CombinedLoss / DistillationCTCLabelDecode / DistillationMetric are not reported as
    unknown: the one line names the DistillationModel and its Teacher/Student backbones."""
    data = yaml.safe_load((FIXTURES / "PP-OCRv4/PP-OCRv4_mobile_rec_distillation.yml").read_text(encoding="utf-8"))
    assert data["Loss"]["name"] == "CombinedLoss" and data["PostProcess"]["name"].startswith("Distillation")
    with pytest.raises(ConfigError, match=r"Models Teacher: SVTRNet, Student: PPLCNetV3\) are not built here"):
        translate(data)


def test_v5_names_and_server_interval():
    mobile, _ = translate(load(V5M))
    server, rep = translate(load(V5S))
    assert mobile["Export"]["model_name"] == "PP-OCRv5_mobile_rec"
    assert mobile["Architecture"]["Backbone"] == {"name": "PPLCNetV3", "scale": 0.95}
    assert server["Architecture"]["Backbone"] == {"name": "PPHGNetV2_B4", "text_rec": True}
    assert "calc_epoch_interval" not in server["Global"] and "Global.calc_epoch_interval" in rep.approximated
    assert "Train.dataset.ext_op_transform_idx" in rep.no_effect  # no RecConAug: nothing uses it


# ----------------------------------------------------------------------------- -o and the loader hook
def test_overrides_use_paddleocr_keys(tmp_path):
    lines = []
    cfg = load_any_config(FIXTURES / V5M,
                          [["Global.epoch_num=3", "Global.save_model_dir=" + str(tmp_path / "out")],
                           ["Train.dataset.data_dir=/data/rec", "Optimizer.lr.learning_rate=0.01",
                            "Train.loader.num_workers=0"]], ProposedRecConfig, notes=lines)
    assert cfg.Global.epochs == 3 and cfg.Global.output_dir == str(tmp_path / "out")
    assert cfg.Train.dataset.data_dir == "/data/rec" and cfg.Optimizer.lr == 0.01
    assert cfg.Train.loader.num_workers == 0
    assert lines[0].startswith("no effect here: Global.save_inference_dir, Global.use_gpu") and "\n" not in lines[0]
    assert "not exactly as PaddleOCR" in lines[1] and "\n" not in lines[1]  # the approximations
    # then one line for each -o that replaced a value of the file
    assert lines[2:] == [f"-o {text} overrides the config's value {old}" for text, old in (
        ("Global.epoch_num=3", "75"), ("Global.save_model_dir=" + str(tmp_path / "out"),
                                        "'./output/PP-OCRv5_mobile_rec'"), ("Train.dataset.data_dir=/data/rec", "'./train_data/'"),
        ("Optimizer.lr.learning_rate=0.01", "0.0005"), ("Train.loader.num_workers=0", "8"))]


def test_overrides_of_our_own_keys_pass_through():
    cfg = load_any_config(FIXTURES / V2,
                          ["Global.max_steps=5", "AMP.enable=true", "EMA.enable=true", "Train.accumulate_steps=2"],
                          ProposedRecConfig)
    assert (cfg.Global.max_steps, cfg.AMP.enable, cfg.EMA.enable, cfg.Train.accumulate_steps) == (5, True, True, 2)
    with pytest.raises(ConfigError, match="Global.epochs.*did you mean 'epoch_num'"):
        load_any_config(FIXTURES / V2, ["Global.epochs=5"], ProposedRecConfig)


def test_override_with_a_wrong_key_suggests_the_paddleocr_key():
    with pytest.raises(ConfigError, match=r"Global\.epoch_nums.*did you mean 'epoch_num'"):
        load_any_config(FIXTURES / V4, ["Global.epoch_nums=3"], ProposedRecConfig)
    with pytest.raises(ConfigError, match=r"Train\.loader\.batch_size.*did you mean 'batch_size_per_card'"):
        load_any_config(FIXTURES / V4, ["Train.loader.batch_size=8"], ProposedRecConfig)


def test_paddleocr_backbone_without_an_implementation_is_named_first():
    """PaddleOCR's MobileNetV3 (ch_ppocr_mobile_v2.0_rec) is recognised but not built here: the error names
    the backbone and what is built, before its own keys (model_name, ...) could be reported as unknown."""
    data = with_change(V2, "Architecture.Backbone.name", "MobileNetV3")
    data["Architecture"]["Backbone"]["model_name"] = "small"
    with pytest.raises(ConfigError, match=r"Architecture\.Backbone\.name: 'MobileNetV3' is PaddleOCR's, but this "
                                          r"version has no implementation of it; built here: PPLCNetV3, .*ResNet"):
        translate(data)


def test_unknown_key_in_the_file_suggests():
    data = load(V2)
    data["Global"]["print_batch_stp"] = 10
    with pytest.raises(ConfigError, match=r"Global\.print_batch_stp: unknown PaddleOCR key; did you mean "
                                          r"'print_batch_step'.*test\.yml"):
        translate(data)
    data = load(V2)
    data["Train"]["dataset"]["transforms"][3]["RecResizeImg"]["imag_shape"] = [3, 32, 320]
    with pytest.raises(ConfigError, match=r"transforms\[3\]\.RecResizeImg\.imag_shape.*'image_shape'"):
        translate(data)
    with pytest.raises(ConfigError, match=r"Architecture\.Backbone\.name.*'ResNetX'.*did you mean 'ResNet'"):
        translate(with_change(V2, "Architecture.Backbone.name", "ResNetX"))


def test_class_names_ignore_case_only():
    ours, report = translate(with_change(V2, "Optimizer.name", "adam"))
    assert ours["Optimizer"]["name"] == "adam"
    ours, _ = translate(with_change(V2, "Architecture.Neck.name", "sequenceencoder"))
    assert ours["Architecture"]["Neck"]["name"] == "SequenceEncoder"
    ours, _ = translate(with_change(R34, "Train.dataset.name", "LMDBDateSet"))
    assert ours["Train"]["dataset"]["format"] == "lmdb"  # older PaddleOCR's spelling


# ----------------------------------------------------------------------------- meaning-changing values
@pytest.mark.parametrize("name,path,value,match", [
    (V2, "Train.dataset.ratio_list", [0.5, 0.5], r"Train\.dataset\.ratio_list"),
    (V2, "Architecture.Transform", {"name": "TPS", "num_fiducial": 20},
     r"Architecture\.Transform: a rectification Transform"),
    (V2, "Optimizer.regularizer", {"name": "L1", "factor": 1e-4},
     r"Optimizer\.regularizer\.name: 'L1'"),
    (V2, "Loss.name", "MultiLoss", r"Loss\.loss_config_list"),
    (V2, "PostProcess.name", "AttnLabelDecode", r"PostProcess\.name"),
    (V2, "Eval.dataset.transforms.2.RecResizeImg.image_shape", [3, 48, 320],
     r"Eval\.dataset\.transforms\[2\]\.RecResizeImg\.image_shape: \[3, 48, 320\] differs"),
    (V2, "Eval.dataset.transforms.0.DecodeImage.img_mode", "RGB",
     r"Eval\.dataset\.transforms\[0\]\.DecodeImage\.img_mode: RGB .*decoded BGR here"),
    (V2, "Global.character_dict_path", "",
     r"Global\.character_dict_path: empty .*not supported here"),
    (V2, "Eval.dataset.transforms.2.RecResizeImg.padding", False,
     r"RecResizeImg\.padding: false .*not supported here"),
    (V2, "Train.dataset.transforms.1", {"RecAug": {"aug_prob": 0.2}},
     r"RecAug\.aug_prob: RecAug parameters are not supported"),
    (V2, "Train.dataset.transforms.4.KeepKeys.keep_keys", ["image", "label"],
     r"KeepKeys\.keep_keys"),
    (V4, "Train.dataset.ext_op_transform_idx", 2, r"Train\.dataset\.ext_op_transform_idx"),
    (V4, "Train.dataset.ds_width", True, r"Train\.dataset\.ds_width"),
    (V4, "Architecture.Head.name", "CTCHead", r"Loss\.name: MultiLoss does not go with"),
    (V4, "Optimizer.lr.name", "OneCycle", r"Optimizer\.lr\.name: lr schedule 'OneCycle'"),
    (V4, "Global.infer_mode", True, r"Global\.infer_mode"),
    (V4, "Train.dataset.transforms.3.MultiLabelEncode.gtc_encode", "SARLabelEncode",
     r"MultiLabelEncode\.gtc_encode: SARLabelEncode does not go with Architecture\.Head\.head_list\[1\] NRTRHead"),
])
def test_meaning_changing_value_is_an_error_naming_the_key(name, path, value, match):
    with pytest.raises(ConfigError, match=match):
        translate(with_change(name, path, value))


def test_ratio_list_of_ones_is_accepted():
    ours, report = translate(with_change(V2, "Train.dataset.ratio_list", [1.0]))
    assert report.mapped["Train.dataset.ratio_list"].startswith("fixed:")


# ----------------------------------------------------------------------------- optimizer semantics
def _opt(**changes):
    data = load(V2)
    data["Optimizer"].update(changes)
    data["Optimizer"] = {k: v for k, v in data["Optimizer"].items() if v is not None}
    ours, report = translate(data)
    return ours["Optimizer"], report


def test_adamw_keeps_paddleocr_decay_semantics():
    opt, _ = _opt(name="AdamW", regularizer=None)  # no regularizer: PaddleOCR's AdamW decays with 0.01
    assert (opt["name"], opt["weight_decay"], opt["decay_1d_params"]) == ("adamw", 0.01, True)
    opt, _ = _opt(name="AdamW", regularizer={"name": "L2", "factor": 0.05}, one_dim_param_no_weight_decay=True)
    assert (opt["weight_decay"], opt["decay_1d_params"]) == (0.05, False)


def test_clip_norm_is_per_tensor_and_clip_norm_global_is_global():
    opt, _ = _opt(clip_norm=5)
    assert opt["clip_norm_per_tensor"] == 5.0 and opt["grad_clip_norm"] == 0.0
    opt, _ = _opt(clip_norm_global=3)
    assert opt["grad_clip_norm"] == 3.0 and "clip_norm_per_tensor" not in opt


def test_lr_schedules():
    opt, report = _opt(lr={"learning_rate": 0.001, "warmup_epoch": 2})  # no name: a constant, warmup unread
    assert (opt["schedule"], opt["lr"]) == ("constant", 0.001) and "warmup_epochs" not in opt
    assert "Optimizer.lr.warmup_epoch" in report.no_effect
    opt, report = _opt(lr={"name": "Cosine", "learning_rate": 0.001, "decay_epochs": [10], "gamma": 0.5})
    assert {"Optimizer.lr.decay_epochs", "Optimizer.lr.gamma"} <= set(report.no_effect)  # Cosine reads neither
    opt, _ = _opt(lr={"name": "Piecewise", "decay_epochs": [10, 20], "values": [0.01, 0.001, 0.0001]})
    assert (opt["schedule"], opt["lr"], opt["decay_epochs"], opt["values"]) == (
        "piecewise", 0.01, [10, 20], [0.01, 0.001, 0.0001])
    opt, _ = _opt(lr={"name": "Linear", "learning_rate": 0.01, "end_lr": 0.0001})
    assert (opt["schedule"], opt["min_lr"]) == ("linear", 0.0001)
    opt, _ = _opt(lr={"name": "Step", "learning_rate": 0.01, "step_size": 5, "gamma": 0.5})
    assert (opt["schedule"], opt["step_size_epochs"], opt["gamma"]) == ("step", 5, 0.5)


def test_global_device_and_int_eval_step():
    data = load(V2)
    data["Global"].update(use_gpu=False, eval_batch_step=500, use_amp=True)
    ours, report = translate(data)
    assert ours["Global"]["device"] == "cpu" and "Global.use_gpu" not in report.no_effect
    assert ours["Global"]["eval_batch_step"] == [0, 500]
    assert ours["AMP"] == {"enable": True, "level": "O2", "init_loss_scaling": 1.0, "use_dynamic_loss_scaling": False}


def test_empty_eval_batch_step_is_off_as_documented():
    """recipes/README_ocr_rec.md: `Global.eval_batch_step: []` = off (no evaluation by step; the translator sets
    eval_every_epochs 0 as for any PaddleOCR file): in the file, by -o, and in our own config."""
    doc = (REPO / "recipes" / "README_ocr_rec.md").read_text(encoding="utf-8")
    assert "`[]` = off" in doc
    data = load(V2)
    data["Global"]["eval_batch_step"] = []
    ours, _ = translate(data)
    assert ours["Global"]["eval_batch_step"] == [] and ours["Global"]["eval_every_epochs"] == 0
    cfg = load_any_config(FIXTURES / V2, ["Global.eval_batch_step=[]"], REC.RecConfig)
    assert (cfg.Global.eval_batch_step, cfg.Global.eval_every_epochs) == ([], 0)
    assert load_config(None, ["Global.eval_batch_step=[]"], REC.RecConfig).Global.eval_batch_step == []
    with pytest.raises(ConfigError, match=r"Global.eval_batch_step: expected \[start, every\], an integer or \[\] "
                                          r"\(off\), got \[5\]"):
        load_any_config(FIXTURES / V2, ["Global.eval_batch_step=[5]"], REC.RecConfig)


def test_a_later_override_wins_over_what_the_file_translates_to(tmp_path):
    """-o in our keys (Predict, Global.weights, ...) applies to the translated config: it wins over the value a
    PaddleOCR key of the file gave (Global.infer_img -> Predict.images), as PaddleOCR's -o wins, with one note."""
    notes = []
    cfg = load_any_config(FIXTURES / V5M, ["Predict.images=/data/imgs"], REC.RecConfig, notes=notes)
    assert cfg.Predict.images == "/data/imgs"
    assert notes[-1] == "-o Predict.images=/data/imgs overrides the config's value 'doc/imgs_words/ch/word_1.jpg'"
    notes = []
    cfg = load_any_config(FIXTURES / V5M, ["Predict.images=a", "Predict.images=b"], REC.RecConfig, notes=notes)
    assert cfg.Predict.images == "b" and notes[-1] == "-o Predict.images=b overrides the earlier -o Predict.images=a"
    # two keys of the file that set one of ours differently stay an error; an -o of either decides
    data = load(V5M, raw=True)
    data["Predict"] = {"images": "other.jpg"}
    both = tmp_path / "both.yml"
    both.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"Predict.images: set twice with different values"):
        load_any_config(both, [], REC.RecConfig)
    assert load_any_config(both, ["Global.infer_img=mine.jpg"], REC.RecConfig).Predict.images == "mine.jpg"
    assert load_any_config(both, ["Predict.images=mine.jpg"], REC.RecConfig).Predict.images == "mine.jpg"


# ----------------------------------------------------------------------------- our own YAML is untouched
@pytest.mark.parametrize("cfg", sorted((REPO / "recipes" / "configs").glob("ocr_rec*.yml")))
def test_our_yaml_passes_through_unchanged(cfg):
    assert not is_paddleocr_config(yaml.safe_load(cfg.read_text(encoding="utf-8")))
    opts = ["Global.epochs=2", "Train.loader.num_workers=0"]
    assert to_dict(load_any_config(cfg, opts, REC.RecConfig)) == to_dict(load_config(cfg, opts, REC.RecConfig))
    with pytest.raises(ConfigError, match="Global.epoch_num.*did you mean 'epochs'"):
        load_any_config(cfg, ["Global.epoch_num=2"], REC.RecConfig)  # our file keeps our keys


def test_no_config_of_ours_looks_like_paddleocr():
    for cfg in sorted((REPO / "recipes" / "configs").glob("*.yml")):
        assert not is_paddleocr_config(yaml.safe_load(cfg.read_text(encoding="utf-8"))), cfg
    # keys both schemas have (eval_batch_step, cal_metric_during_train, PostProcess) do not make ours PaddleOCR's
    ours = {"Global": {"epochs": 3, "eval_batch_step": [0, 250], "cal_metric_during_train": 50},
            "PostProcess": {"box_thresh": 0.6}}
    assert not is_paddleocr_config(ours)
    assert is_paddleocr_config({"Global": {"epoch_num": 3, "eval_batch_step": [0, 250]}})


def test_defaults_without_a_file_are_ours():
    assert to_dict(load_any_config(None, [], REC.RecConfig)) == to_dict(REC.RecConfig())


def test_proposed_keys_are_in_the_test_schema():
    """Every key the translator may write exists in ProposedRecConfig (what the lead will add)."""
    for path in PROPOSED_KEYS:
        path = path.split("=")[0]
        tp: Any = ProposedRecConfig
        for part in path.split("."):
            fields = {f.name: f for f in dataclasses.fields(tp)}
            assert part in fields, path
            tp = fields[part].default_factory if fields[part].default_factory is not dataclasses.MISSING else None
            tp = type(tp()) if callable(tp) else None
        assert path.split(".")[0] in {f.name for f in dataclasses.fields(ProposedRecConfig)}
