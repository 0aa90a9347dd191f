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


# The keys and values of PaddleX's paddlex/repo_apis/PaddleClas_api/configs/PP-LCNet_x0_25_textline_ori.yaml.
def _ops(train):
    ops = [{"DecodeImage": {"to_rgb": True, "channel_first": False}}, {"ResizeImage": {"size": [160, 80]}}]
    if train:
        ops.append({"TimmAutoAugment": {"prob": 1.0, "config_str": "rand-m9-mstd0.5-inc1",
                                        "interpolation": "bicubic", "img_size": [160, 80]}})
    ops.append({"NormalizeImage": {"scale": "1.0/255.0", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                                   "order": ""}})
    if train:
        ops.append({"RandomErasing": {"EPSILON": 0.0, "sl": 0.02, "sh": "1.0/3.0", "r1": 0.3, "attempt": 10,
                                      "use_log_aspect": True, "mode": "pixel"}})
    return ops


PADDLEX_TEXTLINE = {
    "Global": {"checkpoints": None, "pretrained_model": None, "output_dir": "./output/", "device": "gpu",
               "save_interval": 1, "eval_during_train": True, "start_eval_epoch": 1, "eval_interval": 1, "epochs": 20,
               "print_batch_step": 10, "use_visualdl": False, "image_shape": [3, 80, 160],
               "save_inference_dir": "./inference", "to_static": False, "use_dali": False},
    "Arch": {"name": "PPLCNet_x0_25", "class_num": 2, "pretrained": False, "use_ssld": False,
             "stride_list": [2, [2, 1], [2, 1], [2, 1], [2, 1]]},
    "Loss": {"Train": [{"CELoss": {"weight": 1.0}}], "Eval": [{"CELoss": {"weight": 1.0}}]},
    "Optimizer": {"name": "Momentum", "momentum": 0.9,
                  "lr": {"name": "Cosine", "learning_rate": 0.8, "warmup_epoch": 5},
                  "regularizer": {"name": "L2", "coeff": 0.00001}},
    "DataLoader": {
        "Train": {"dataset": {"name": "ImageNetDataset", "image_root": "./dataset/textline_orientation/",
                              "cls_label_path": "./dataset/textline_orientation/train_list.txt",
                              "transform_ops": _ops(True)},
                  "sampler": {"name": "DistributedBatchSampler", "batch_size": 256, "drop_last": False,
                              "shuffle": True},
                  "loader": {"num_workers": 16, "use_shared_memory": True}},
        "Eval": {"dataset": {"name": "ImageNetDataset", "image_root": "./dataset/textline_orientation/",
                             "cls_label_path": "./dataset/textline_orientation/val_list.txt",
                             "transform_ops": _ops(False)},
                 "sampler": {"name": "DistributedBatchSampler", "batch_size": 32, "drop_last": False,
                             "shuffle": False},
                 "loader": {"num_workers": 8, "use_shared_memory": True}}},
    "Infer": {"infer_imgs": "deploy/images/PULC/textline_orientation/textline_orientation_test_0_0.png",
              "batch_size": 10, "transforms": [{"ToCHWImage": None}],
              "PostProcess": {"name": "Topk", "topk": 1,
                              "class_id_map_file": "ppcls/utils/PULC_label_list/textline_orientation_label_list.txt"}},
    "Metric": {"Train": [{"TopkAcc": {"topk": [1, 2]}}], "Eval": [{"TopkAcc": {"topk": [1, 2]}}]},
}


def test_paddlex_textline_yaml_is_the_named_network_with_every_key_accounted_for(tmp_path):
    from paddle_recipes.compat.paddleclas_cls import translate_clas_config
    from paddle_recipes.recipes.ocr_cls import OcrCls

    ours, report = translate_clas_config(copy.deepcopy(PADDLEX_TEXTLINE), "x.yaml")
    keys = (*report.mapped, *report.no_effect, *report.approximated)
    assert [p for p in leaves(PADDLEX_TEXTLINE) if not any(k == p or p.startswith((k + ".", k + "["))
                                                             for k in keys)] == []
    assert ours["Architecture"] == {"name": "PP-LCNet_x0_25_textline_ori", "Backbone": {}}
    assert ours["Global"]["image_shape"] == [3, 80, 160] and ours["Global"]["input"] == "paddlex"
    assert ours["Train"]["dataset"]["delimiter"] == " " and ours["Train"]["dataset"]["aug"] is True
    assert ours["Optimizer"]["name"] == "momentum" and ours["Optimizer"]["weight_decay"] == 1e-5
    path = tmp_path / "PP-LCNet_x0_25_textline_ori.yaml"
    path.write_text(yaml.safe_dump(PADDLEX_TEXTLINE))
    cfg = load_config(str(path), ["Global.epochs=2"], ClsConfig, translators=OcrCls.config_translators)
    assert cfg.Global.epochs == 2 and cfg.Train.loader.batch_size_per_card == 256
    assert resolve_input(cfg).labels == ("0_degree", "180_degree")
    data = copy.deepcopy(PADDLEX_TEXTLINE)
    data["Loss"]["Train"][0]["CELoss"]["epsilon"] = 0.1
    with pytest.raises(ConfigError, match=r"Loss.Train\[0\].CELoss.epsilon: label smoothing is not supported"):
        translate_clas_config(data, "x.yaml")
