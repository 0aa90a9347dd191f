"""PaddleOCR cls YAMLs through -c (compat.paddleocr_cls): every key of configs/cls/cls_mv3.yml accounted for, the
network built from its Backbone / Head, unknown keys and unsupported values rejected in one line naming the key."""
import copy

import pytest
import yaml

from paddle_recipes.config import ConfigError, load_config
from paddle_recipes.compat.paddleocr_cls import paddleocr_cls_translator, translate_cls_config
from paddle_recipes.tasks.ocr_cls.config import ClsConfig, resolve_input

# The keys and values of PaddleOCR's configs/cls/cls_mv3.yml (release 2.x), written here as a dict.
CLS_MV3 = {
    "Global": {"use_gpu": True, "use_xpu": False, "epoch_num": 100, "log_smooth_window": 20, "print_batch_step": 10,
               "save_model_dir": "./output/cls/mv3/", "save_epoch_step": 3, "eval_batch_step": [0, 1000],
               "cal_metric_during_train": True, "pretrained_model": None, "checkpoints": None,
               "save_inference_dir": None, "use_visualdl": False, "infer_img": "doc/imgs_words_en/word_10.png",
               "label_list": ["0", "180"]},
    "Architecture": {"model_type": "cls", "algorithm": "CLS", "Transform": None,
                     "Backbone": {"name": "MobileNetV3", "scale": 0.35, "model_name": "small"}, "Neck": None,
                     "Head": {"name": "ClsHead", "class_dim": 2}},
    "Loss": {"name": "ClsLoss"},
    "Optimizer": {"name": "Adam", "beta1": 0.9, "beta2": 0.999, "lr": {"name": "Cosine", "learning_rate": 0.001},
                  "regularizer": {"name": "L2", "factor": 0}},
    "PostProcess": {"name": "ClsPostProcess"},
    "Metric": {"name": "ClsMetric", "main_indicator": "acc"},
    "Train": {"dataset": {"name": "SimpleDataSet", "data_dir": "./train_data/cls",
                          "label_file_list": ["./train_data/cls/train.txt"],
                          "transforms": [{"DecodeImage": {"img_mode": "BGR", "channel_first": False}},
                                         {"ClsLabelEncode": None}, {"BaseDataAugmentation": None},
                                         {"RandAugment": None}, {"ClsResizeImg": {"image_shape": [3, 48, 192]}},
                                         {"KeepKeys": {"keep_keys": ["image", "label"]}}]},
              "loader": {"shuffle": True, "batch_size_per_card": 512, "drop_last": True, "num_workers": 8}},
    "Eval": {"dataset": {"name": "SimpleDataSet", "data_dir": "./train_data/cls",
                         "label_file_list": ["./train_data/cls/test.txt"],
                         "transforms": [{"DecodeImage": {"img_mode": "BGR", "channel_first": False}},
                                        {"ClsLabelEncode": None}, {"ClsResizeImg": {"image_shape": [3, 48, 192]}},
                                        {"KeepKeys": {"keep_keys": ["image", "label"]}}]},
             "loader": {"shuffle": False, "drop_last": False, "batch_size_per_card": 512, "num_workers": 4}},
}


def leaves(node, prefix=""):
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from leaves(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(node, list) and any(isinstance(v, dict) for v in node):
        for i, v in enumerate(node):
            yield from leaves(v, f"{prefix}[{i}]")
    else:
        yield prefix


def test_cls_mv3_translates_with_every_key_accounted_for(tmp_path):
    ours, report = translate_cls_config(copy.deepcopy(CLS_MV3), "cls_mv3.yml")
    keys = (*report.mapped, *report.no_effect, *report.approximated)
    unaccounted = [p for p in leaves(CLS_MV3) if not any(k == p or p.startswith((k + ".", k + "[")) for k in keys)]
    assert unaccounted == []
    assert ours["Global"]["label_list"] == ["0", "180"] and ours["Global"]["image_shape"] == [3, 48, 192]
    assert ours["Global"]["input"] == "ppocr" and ours["Train"]["dataset"]["aug"] is True
    assert ours["Architecture"]["Backbone"] == {"name": "MobileNetV3", "scale": 0.35, "model_name": "small"}
    path = tmp_path / "cls_mv3.yml"
    path.write_text(yaml.safe_dump(CLS_MV3))
    cfg = load_config(str(path), ["Global.epoch_num=3"], ClsConfig, translators=(paddleocr_cls_translator(ClsConfig),))
    assert cfg.Global.epochs == 3 and cfg.Optimizer.name == "adam" and cfg.Architecture.name == ""
    assert resolve_input(cfg).image_shape == (3, 48, 192) and resolve_input(cfg).turned == 1


@pytest.mark.parametrize("path, value, message", [
    ("Global.label_lst", ["0", "180"], r"Global.label_lst: unknown PaddleOCR key; did you mean 'label_list'"),
    ("Architecture.Backbone.scale", 0.3, r"Architecture: MobileNetV3 scale 0.3: one of"),
    ("Architecture.Head.class_dim", 4, r"Architecture: Architecture.Head.class_dim 4 differs from the 2 labels"),
    ("Loss.name", "CELoss", r"Loss.name: loss 'CELoss' is not supported here"),
    ("Architecture.model_type", "rec", r"Architecture.model_type: 'rec' / algorithm 'CLS'"),
])
def test_bad_keys_are_one_line_naming_the_key(path, value, message):
    data = copy.deepcopy(CLS_MV3)
    node = data
    *head, last = path.split(".")
    for k in head:
        node = node[k]
    if last == "label_lst":
        node[last] = node.pop("label_list")
    else:
        node[last] = value
    with pytest.raises(ConfigError, match=message):
        translate_cls_config(data, "cls_mv3.yml")


def test_augmentation_in_eval_and_two_shapes_are_rejected():
    data = copy.deepcopy(CLS_MV3)
    data["Eval"]["dataset"]["transforms"].insert(2, {"RandAugment": None})
    with pytest.raises(ConfigError, match=r"Eval.dataset.transforms: RandAugment in Eval"):
        translate_cls_config(data, "x.yml")
    data = copy.deepcopy(CLS_MV3)
    data["Eval"]["dataset"]["transforms"][2]["ClsResizeImg"]["image_shape"] = [3, 48, 96]
    with pytest.raises(ConfigError, match=r"Global.image_shape: set twice with different values"):
        translate_cls_config(data, "x.yml")
