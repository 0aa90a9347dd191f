"""PaddleDetection interop: ppdet PP-YOLOE(+) weights, ppdet YAMLs, ppdet deploy layout. No downloads."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import pytest

from paddle_recipes.checkpoint.format import CheckpointError
from paddle_recipes.tasks.det_ppyoloe.model import build_ppyoloe
from paddle_recipes.tasks.det_ppyoloe.ppdet_weights import (convert_ppdet_state, is_ppdet_checkpoint,
                                                            load_ppdet_weights, map_name, spp_index_of)

FIXTURES = Path(__file__).parent.parent / "fixtures"
MANIFEST_PLUS_S = FIXTURES / "ppdet_manifests" / "ppyoloe_plus_crn_s_80e.json"
MANIFEST_S = FIXTURES / "ppdet_manifests" / "ppyoloe_crn_s_300e.json"


def manifest(path=MANIFEST_PLUS_S) -> dict:
    return json.loads(path.read_text())["shapes"]


def random_ppdet_state(shapes: dict, seed: int = 0, reg_max: int = 16) -> dict:
    """Random values under ppdet's names: BN variances > 0, alphas around 1, fixed DFL projection."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes.items():
        if name == "yolo_head.proj_conv.weight":
            out[name] = np.linspace(0, reg_max, reg_max + 1, dtype=np.float32).reshape(shape)
        elif name.endswith("_variance"):
            out[name] = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        elif name.endswith(".alpha"):
            out[name] = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        elif name.endswith("bn.weight"):
            out[name] = rng.uniform(0.8, 1.2, shape).astype(np.float32)
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            out[name] = (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
    return out


@pytest.fixture(scope="module")
def plus_state():
    return random_ppdet_state(manifest())


@pytest.fixture(scope="module")
def ckpt_file(tmp_path_factory, plus_state):
    path = tmp_path_factory.mktemp("ppdet") / "ppyoloe_plus_crn_s_80e_coco.pdparams"
    paddle.save({k: paddle.to_tensor(v) for k, v in plus_state.items()}, str(path))
    return path


def test_manifest_maps_one_to_one_for_both_families():
    for path, alphas in ((MANIFEST_PLUS_S, 6), (MANIFEST_S, 0)):
        shapes = manifest(path)
        model = build_ppyoloe("s", 80)
        ours, info = convert_ppdet_state({k: np.zeros(v, np.float32) for k, v in shapes.items()
                                          if k != "yolo_head.proj_conv.weight"}, spp_index_of(model))
        want = {k: list(v.shape) for k, v in model.state_dict().items()}
        assert {k: list(v.shape) for k, v in ours.items()} == want, path.name
        assert info["folded_alpha"] == alphas
        assert len(shapes) == len(want) + alphas + 1  # + alphas folded + proj_conv dropped


def test_named_facts_of_the_mapping():
    # each of the systematic renames, one representative name each (s: spp at block 1)
    facts = {
        "backbone.stem.conv1.conv.weight": "backbone.stem.0.conv.weight",
        "backbone.stages.1.blocks.0.conv2.conv1.bn._mean": "backbone.stages.1.blocks.0.conv2.conv3.bn._mean",
        "backbone.stages.1.blocks.0.conv2.conv2.conv.weight": "backbone.stages.1.blocks.0.conv2.conv1.conv.weight",
        "neck.fpn_stages.0.0.convs.spp.conv.conv.weight": "neck.fpn_stages.0.blocks.1.conv.conv.weight",
        "neck.fpn_stages.1.0.convs.0.conv1.bn.bias": "neck.fpn_stages.1.blocks.0.conv1.bn.bias",
        "neck.pan_stages.0.0.conv3.conv.weight": "neck.pan_stages.1.conv3.conv.weight",
        "neck.pan_routes.1.conv.weight": "neck.pan_routes.0.conv.weight",
        "yolo_head.pred_cls.0.weight": "head.pred_cls.2.weight",
        "yolo_head.stem_reg.2.fc.bias": "head.stem_reg.0.fc.bias",
    }
    for ppdet_name, ours in facts.items():
        assert map_name(ppdet_name, spp_index=1) == ours
    # deeper sizes: blocks after the SPP shift by one (l: convs 0, 1, spp, 2 -> blocks 0, 1, 2, 3)
    assert map_name("neck.fpn_stages.0.0.convs.2.conv1.conv.weight", 2) == \
        "neck.fpn_stages.0.blocks.3.conv1.conv.weight"
    assert map_name("neck.fpn_stages.0.0.convs.spp.conv.bn._mean", 2) == "neck.fpn_stages.0.blocks.2.conv.bn._mean"


def test_load_file_and_prefix_sets_values_and_folds_alpha(ckpt_file, plus_state):
    assert is_ppdet_checkpoint(ckpt_file)
    model = build_ppyoloe("s", 80)
    assert not is_ppdet_checkpoint(model.state_dict())
    assert not is_ppdet_checkpoint(ckpt_file.parent)  # a folder (e.g. our checkpoints root) is not one
    report = load_ppdet_weights(model, str(ckpt_file)[: -len(".pdparams")])  # prefix form
    assert (report.loaded, report.folded_alpha, report.reinitialised) == (422, 6, [])
    assert report.dropped == ["yolo_head.proj_conv.weight"]
    sd = model.state_dict()
    np.testing.assert_array_equal(sd["head.pred_cls.2.weight"].numpy(), plus_state["yolo_head.pred_cls.0.weight"])
    # alpha: ppdet's RepVgg is act(conv3x3_bn(x) + alpha * conv1x1_bn(x)); compute it from the raw tensors
    p = "backbone.stages.1.blocks.0.conv2"
    s = {k[len(p) + 1:]: paddle.to_tensor(v) for k, v in plus_state.items() if k.startswith(p + ".")}
    x = paddle.to_tensor(np.random.default_rng(1).standard_normal((1, s["conv1.conv.weight"].shape[1], 8, 8)),
                         dtype="float32")

    def conv_bn(br, pad):
        y = F.conv2d(x, s[f"{br}.conv.weight"], padding=pad)
        return F.batch_norm(y, s[f"{br}.bn._mean"], s[f"{br}.bn._variance"], s[f"{br}.bn.weight"],
                            s[f"{br}.bn.bias"], training=False, epsilon=1e-5)

    ref = F.swish(conv_bn("conv1", 1) + s["alpha"] * conv_bn("conv2", 0))
    block = model.backbone.stages[1].blocks[0].conv2
    block.eval()
    np.testing.assert_allclose(block(x).numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_class_count_change_reinitialises_head_in_one_line(ckpt_file, caplog):
    model = build_ppyoloe("s", 3)
    with caplog.at_level(logging.INFO, logger="paddle_recipes.det"):
        report = load_ppdet_weights(model, ckpt_file)
    assert (report.checkpoint_classes, report.model_classes) == (80, 3)
    assert report.reinitialised == [f"head.pred_cls.{i}.{w}" for i in range(3) for w in ("bias", "weight")]
    assert report.loaded == 422 - 6
    lines = [r.getMessage() for r in caplog.records if "class head re-initialised" in r.getMessage()]
    assert len(lines) == 1 and "80 classes, model 3" in lines[0]
    assert float(np.abs(model.head.pred_cls[0].weight.numpy()).max()) == 0.0
    np.testing.assert_allclose(model.head.pred_cls[0].bias.numpy(), -np.log(99.0), rtol=1e-6)
    with pytest.raises(CheckpointError, match=r"6 shape mismatch\(es\) \(first head\.pred_cls"):
        load_ppdet_weights(build_ppyoloe("s", 3), ckpt_file, num_classes_ok=False)


def test_strict_errors_name_the_file_and_the_keys(tmp_path, plus_state):
    broken = dict(plus_state)
    for k in [k for k in broken if k.startswith("neck.pan_routes.")]:
        del broken[k]
    broken["neck.extra.weight"] = np.zeros(3, np.float32)
    path = tmp_path / "broken.pdparams"
    paddle.save(broken, str(path))
    with pytest.raises(CheckpointError) as e:
        load_ppdet_weights(build_ppyoloe("s", 80), path)
    msg = str(e.value)
    assert "broken.pdparams" in msg
    assert "10 missing (neck.pan_routes.0.bn._mean" in msg and "1 unexpected (neck.extra.weight)" in msg
    assert "\n" not in msg
    with pytest.raises(CheckpointError, match=r"shape mismatch.*checkpoint looks like size s \(width 0.50\)"):
        load_ppdet_weights(build_ppyoloe("m", 80), plus_state)  # s weights into an m model
    bad_proj = dict(plus_state, **{"yolo_head.proj_conv.weight": np.ones((1, 17, 1, 1), np.float32)})
    with pytest.raises(CheckpointError, match="DFL projection"):
        load_ppdet_weights(build_ppyoloe("s", 80), bad_proj)
    with pytest.raises(CheckpointError, match="not found"):
        load_ppdet_weights(build_ppyoloe("s", 80), tmp_path / "nothing")


def test_outputs_equal_paddledet_own_model(plus_state):
    """The strongest proof: ppdet's own network with the same random weights gives our boxes/scores."""
    pytest.importorskip("ppdet", reason="paddledet not installed")
    from ppdet.modeling.architectures.yolo import YOLOv3
    from ppdet.modeling.backbones.cspresnet import CSPResNet
    from ppdet.modeling.bbox_utils import batch_distance2bbox
    from ppdet.modeling.heads.ppyoloe_head import PPYOLOEHead
    from ppdet.modeling.necks.custom_pan import CustomCSPPAN

    bb = CSPResNet(layers=[3, 6, 6, 3], channels=[64, 128, 256, 512, 1024], return_idx=[1, 2, 3],
                   use_large_stem=True, use_alpha=True, width_mult=0.5, depth_mult=0.33)
    neck = CustomCSPPAN(in_channels=[c.channels for c in bb.out_shape], out_channels=[768, 384, 192],
                        stage_num=1, block_num=3, act="swish", spp=True, width_mult=0.5, depth_mult=0.33)
    head = PPYOLOEHead(in_channels=[c.channels for c in neck.out_shape], num_classes=80, fpn_strides=[32, 16, 8],
                       grid_cell_scale=5.0, grid_cell_offset=0.5)
    ref = YOLOv3(backbone=bb, neck=neck, yolo_head=head, post_process=None)
    assert {k: list(v.shape) for k, v in ref.state_dict().items()} == manifest()  # the fixture is ppdet's fact
    ref.set_state_dict({k: paddle.to_tensor(v) for k, v in plus_state.items()})
    ref.eval()
    ours = build_ppyoloe("s", 80)
    load_ppdet_weights(ours, plus_state)
    ours.eval()
    x = paddle.to_tensor(np.random.default_rng(2).uniform(0, 1, (1, 3, 96, 128)), dtype="float32")
    with paddle.no_grad():
        scores, dist, anchors, strides = ref.yolo_head(ref.neck(ref.backbone({"image": x})))
        ref_boxes = (batch_distance2bbox(anchors, dist) * strides).numpy()[0]
        ref_scores = scores.transpose([0, 2, 1]).numpy()[0]
        boxes, sc = [t.numpy()[0] for t in ours(x)]
    # ppdet concatenates levels deep -> shallow (32/16/8), we shallow -> deep (8/16/32)
    sizes = [(96 // s) * (128 // s) for s in (8, 16, 32)]
    order = np.concatenate([np.arange(sum(sizes[:i]), sum(sizes[:i + 1])) for i in (2, 1, 0)])
    np.testing.assert_allclose(boxes[order], ref_boxes, atol=1e-3)
    np.testing.assert_allclose(sc[order], ref_scores, atol=1e-5)
    # the way out: our weights under ppdet's names load into ppdet's model (alpha = 1) with the same outputs
    from paddle_recipes.tasks.det_ppyoloe.ppdet_weights import to_ppdet_state

    out_state = to_ppdet_state(ours)
    assert set(out_state) == set(ref.state_dict())
    ref.set_state_dict({k: paddle.to_tensor(v) for k, v in out_state.items()})
    with paddle.no_grad():
        scores, dist, anchors, strides = ref.yolo_head(ref.neck(ref.backbone({"image": x})))
    np.testing.assert_allclose((batch_distance2bbox(anchors, dist) * strides).numpy()[0], ref_boxes, atol=1e-3)
    np.testing.assert_allclose(scores.transpose([0, 2, 1]).numpy()[0], ref_scores, atol=1e-5)


# ----------------------------------------------------------------------------- ppdet YAML configs
PPDET_CFG = FIXTURES / "ppdet_configs" / "ppyoloe"


def test_ppdet_yaml_base_merge_semantics(tmp_path):
    from paddle_recipes.compat.ppdet import load_ppdet_yaml

    cfg, origin = load_ppdet_yaml(PPDET_CFG / "ppyoloe_plus_crn_s_80e_coco.yml")
    assert "_BASE_" not in cfg
    assert (cfg["log_iter"], cfg["snapshot_epoch"]) == (100, 5)  # the file beats runtime.yml's 20 / 1
    assert origin["log_iter"].endswith("ppyoloe_plus_crn_s_80e_coco.yml")
    assert origin["TrainReader"].endswith("ppyoloe_plus_reader.yml")
    assert cfg["EvalReader"]["sample_transforms"][1]["Resize"]["target_size"] == [640, 640]  # YAML aliases
    # nested dicts merge key by key, lists replace; a later base beats an earlier one
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mine.yml").write_text(
        f"_BASE_: ['{PPDET_CFG / 'ppyoloe_plus_crn_s_80e_coco.yml'}', '../late.yml']\n"
        "PPYOLOEHead:\n  nms: {keep_top_k: 100}\nTrainReader:\n  batch_transforms: []\n")
    (tmp_path / "late.yml").write_text("epoch: 12\nlog_iter: 7\n")
    cfg, _ = load_ppdet_yaml(tmp_path / "sub" / "mine.yml")
    assert cfg["PPYOLOEHead"]["nms"] == {"name": "MultiClassNMS", "nms_top_k": 1000, "keep_top_k": 100,
                                         "score_threshold": 0.01, "nms_threshold": 0.7}
    assert cfg["PPYOLOEHead"]["fpn_strides"] == [32, 16, 8]
    assert cfg["TrainReader"]["batch_transforms"] == [] and cfg["TrainReader"]["batch_size"] == 8
    assert (cfg["epoch"], cfg["log_iter"]) == (12, 7)


def test_ppdet_yaml_translates_to_a_valid_det_config(caplog):
    from paddle_recipes.compat.ppdet import import_ppdet_config, is_ppdet_config
    from paddle_recipes.config import from_dict
    from paddle_recipes.tasks.det_ppyoloe.config import DetConfig

    assert is_ppdet_config(PPDET_CFG / "ppyoloe_plus_crn_s_80e_coco.yml")
    assert not is_ppdet_config(Path(__file__).parents[2] / "recipes" / "configs" / "det_ppyoloe_s.yml")
    with caplog.at_level(logging.INFO, logger="paddle_recipes.compat.ppdet"):
        imp = import_ppdet_config(PPDET_CFG / "ppyoloe_plus_crn_s_80e_coco.yml")
    assert sum("no effect here" in r.getMessage() for r in caplog.records) == 1
    assert sum("approximated" in r.getMessage() for r in caplog.records) == 1
    cfg = from_dict(DetConfig, imp.config)
    assert imp.family == "ppyoloe_plus"
    assert (cfg.Architecture.size, cfg.Architecture.reg_max) == ("s", 16)
    assert (cfg.Architecture.normalize.mean, cfg.Architecture.normalize.std) == ([0.0] * 3, [1.0] * 3)
    assert cfg.Architecture.normalize.is_scale is True
    assert (cfg.Global.epochs, cfg.Global.log_every, cfg.Global.save_every_epochs) == (80, 100, 5)
    assert cfg.Global.output_dir == "output/ppyoloe_plus_crn_s_80e_coco"
    assert cfg.Global.pretrained_model.endswith("ppyoloe_crn_s_obj365_pretrained.pdparams")
    assert (cfg.Optimizer.name, cfg.Optimizer.lr, cfg.Optimizer.momentum, cfg.Optimizer.weight_decay) == \
        ("momentum", 0.001, 0.9, 0.0005)
    assert (cfg.Optimizer.schedule, cfg.Optimizer.warmup_epochs) == ("cosine", 5.0)
    assert (cfg.Train.loader.batch_size_per_card, cfg.Train.sizes[0], cfg.Train.sizes[-1], len(cfg.Train.sizes)) == (8, 320, 768, 15)
    assert (cfg.Eval.size, cfg.Eval.loader.batch_size_per_card) == (640, 2)
    assert (cfg.Eval.nms.keep_top_k, cfg.Eval.nms.iou_threshold) == (300, 0.7)
    assert cfg.Train.dataset.ann_file == "dataset/coco/annotations/instances_train2017.json"
    assert cfg.Eval.dataset.image_dir == "dataset/coco/val2017"
    assert (cfg.EMA.enable, cfg.EMA.decay) == (True, 0.9998)
    assert (cfg.Loss.topk, cfg.Loss.iou_weight) == (13, 2.5)
    assert "num_classes" in imp.no_effect and "norm_type" in imp.no_effect
    assert "PPYOLOEHead.static_assigner_epoch" in imp.approximated
    plain = import_ppdet_config(PPDET_CFG / "ppyoloe_crn_s_300e_coco.yml")
    assert plain.family == "ppyoloe"
    assert plain.config["Architecture"]["normalize"] == {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                                                         "is_scale": True}


@pytest.mark.parametrize("extra, message", [
    ("TrainReader:\n  fuse_normalize: true\n", r"TrainReader\.fuse_normalize: not understood"),
    ("EvalReader:\n  sample_transforms:\n  - Resize: {target_size: [640, 640], keep_ratio: true}\n",
     r"EvalReader\.Resize\.keep_ratio"),
    ("architecture: PicoDet\n", r"architecture: PicoDet is not built here"),
    ("metric: VOC\n", r"metric: 'VOC'"),
    ("width_mult: 0.6\n", r"width 0.6 / depth 0.33 is none of the PP-YOLOE sizes"),
    ("TrainReader:\n  batch_transforms:\n  - NormalizeImage: {mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5]}\n",
     r"readers normalise differently"),
])
def test_ppdet_yaml_meaning_changes_are_errors(tmp_path, extra, message):
    from paddle_recipes.compat.ppdet import import_ppdet_config
    from paddle_recipes.config import ConfigError

    path = tmp_path / "cfg.yml"
    path.write_text(f"_BASE_: ['{PPDET_CFG / 'ppyoloe_plus_crn_s_80e_coco.yml'}']\n" + extra)
    with pytest.raises(ConfigError, match=message) as e:
        import_ppdet_config(path)
    assert "cfg.yml" in str(e.value) and "\n" not in str(e.value)


def test_ppdet_yaml_bad_includes_name_the_file(tmp_path):
    from paddle_recipes.compat.ppdet import load_ppdet_yaml
    from paddle_recipes.config import ConfigError

    (tmp_path / "a.yml").write_text("_BASE_: ['missing.yml']\n")
    with pytest.raises(ConfigError, match=r"a\.yml: _BASE_ file 'missing.yml' not found"):
        load_ppdet_yaml(tmp_path / "a.yml")
    (tmp_path / "b.yml").write_text("_BASE_: ['c.yml']\n")
    (tmp_path / "c.yml").write_text("_BASE_: ['b.yml']\n")
    with pytest.raises(ConfigError, match="include cycle"):
        load_ppdet_yaml(tmp_path / "b.yml")
    (tmp_path / "d.yml").write_text("epoch: [1,\n")
    with pytest.raises(ConfigError, match=r"d\.yml: line \d+"):
        load_ppdet_yaml(tmp_path / "d.yml")


# ----------------------------------------------------------------------------- normalisation + deploy layout
def test_detcollate_normalisation_presets():
    from paddle_recipes.tasks.det_ppyoloe.coco import DetCollate
    from paddle_recipes.tasks.det_ppyoloe.normalize import NORMALIZE_PRESETS, collate_kwargs

    img = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    sample = {"image": img, "gt_bbox": np.zeros((0, 4), np.float32), "gt_class": np.zeros(0, np.int64),
              "im_id": 0, "orig_size": (64, 64)}
    default = DetCollate([64])([sample])["image"][0]
    imagenet = DetCollate([64], **collate_kwargs(NORMALIZE_PRESETS["imagenet"]))([sample])["image"][0]
    plus = DetCollate([64], **collate_kwargs(NORMALIZE_PRESETS["ppyoloe_plus"]))([sample])["image"][0]
    np.testing.assert_array_equal(default, imagenet)  # the default is unchanged
    np.testing.assert_allclose(plus, img.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
    np.testing.assert_allclose(default, (img.transpose(2, 0, 1) / 255.0 - mean) / np.array(
        [0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1), rtol=1e-5, atol=1e-5)


def _model_with_varied_scores(num_classes=3):
    paddle.seed(0)
    model = build_ppyoloe("tiny", num_classes, reg_max=8)
    rng = np.random.default_rng(0)
    with paddle.no_grad():
        for conv in list(model.head.pred_cls) + list(model.head.pred_reg):
            conv.weight.set_value(rng.normal(0, 0.05, conv.weight.shape).astype("float32"))
            conv.bias.set_value(rng.normal(-1.0, 0.5, conv.bias.shape).astype("float32"))
    model.eval()
    return model


def test_ppdet_deploy_layout_and_inference_parity(tmp_path):
    import yaml

    from paddle_recipes.export import create_predictor
    from paddle_recipes.tasks.det_ppyoloe.deploy import export_ppdet_deploy, preprocess_like_deploy
    from paddle_recipes.tasks.det_ppyoloe.normalize import NORMALIZE_PRESETS
    from paddle_recipes.tasks.det_ppyoloe.postprocess import postprocess_batch

    model = _model_with_varied_scores()
    nms = {"score_threshold": 0.05, "nms_top_k": 1000, "keep_top_k": 50, "iou_threshold": 0.6}
    norm = NORMALIZE_PRESETS["ppyoloe_plus"]
    out = export_ppdet_deploy(model, tmp_path / "deploy", ["rect", "ellipse", "triangle"], input_size=96,
                              norm=norm, nms=nms)
    assert sorted(p.name for p in (tmp_path / "deploy").iterdir()) == ["infer_cfg.yml", "model.json", "model.pdiparams"]
    cfg = yaml.safe_load(Path(out["infer_cfg"]).read_text())
    # the keys and values ppdet's deploy PredictConfig reads (arch must contain a SUPPORT_MODELS name)
    assert list(cfg)[:8] == ["mode", "draw_threshold", "metric", "use_dynamic_shape", "arch", "min_subgraph_size",
                             "Preprocess", "label_list"]
    assert (cfg["mode"], cfg["arch"], cfg["min_subgraph_size"], cfg["metric"]) == ("paddle", "YOLO", 3, "COCO")
    assert cfg["Preprocess"] == [
        {"type": "Resize", "interp": 1, "keep_ratio": False, "target_size": [96, 96]},
        {"type": "NormalizeImage", "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0], "is_scale": True,
         "norm_type": "none"},
        {"type": "Permute"}]
    assert cfg["label_list"] == ["rect", "ellipse", "triangle"]

    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, (120, 80, 3), dtype=np.uint8), rng.integers(0, 256, (70, 150, 3), dtype=np.uint8)]
    prep = [preprocess_like_deploy(im, cfg) for im in images]
    batch = np.stack([p[0] for p in prep])
    scale = np.stack([p[1] for p in prep])
    np.testing.assert_allclose(scale[0], [96 / 120, 96 / 80])
    pred = create_predictor(Path(out["model_file"]).with_suffix(""), threads=1)
    assert pred.get_input_names() == ["image", "scale_factor"]
    for name, arr in (("image", batch), ("scale_factor", scale)):
        h = pred.get_input_handle(name)
        h.reshape(list(arr.shape))
        h.copy_from_cpu(arr)
    pred.run()
    bbox, bbox_num = [pred.get_output_handle(n).copy_to_cpu() for n in pred.get_output_names()]
    with paddle.no_grad():
        boxes, scores = model(paddle.to_tensor(batch))
    ref = postprocess_batch(boxes.numpy(), scores.numpy(), scale, **nms)
    assert bbox.shape[1] == 6 and bbox_num.tolist() == [len(r) for r in ref] and min(bbox_num) > 0
    start = 0
    for r, n in zip(ref, bbox_num):
        got = bbox[start:start + n]
        start += n
        order_g, order_r = np.lexsort((got[:, 0], -got[:, 1])), np.lexsort((r[:, 0], -r[:, 1]))
        np.testing.assert_allclose(got[order_g], r[order_r], atol=2e-3)


def test_the_way_out_round_trips_to_ppdet_names(tmp_path):
    from paddle_recipes.tasks.det_ppyoloe.ppdet_weights import save_ppdet_weights, to_ppdet_state

    paddle.seed(3)
    model = build_ppyoloe("s", 80)
    with paddle.no_grad():  # non-trivial BN statistics so a wrong pairing would show
        for name, t in model.state_dict().items():
            if name.endswith(("_variance", "bn.weight")):
                t.set_value(np.random.default_rng(len(name)).uniform(0.5, 1.5, t.shape).astype("float32"))
    for family, path in (("ppyoloe_plus", MANIFEST_PLUS_S), ("ppyoloe", MANIFEST_S)):
        state = to_ppdet_state(model, family)
        assert {k: list(v.shape) for k, v in state.items()} == manifest(path)  # exactly ppdet's names and shapes
    file = save_ppdet_weights(model, tmp_path / "mine")
    back = build_ppyoloe("s", 80)
    assert load_ppdet_weights(back, file).loaded == 422
    model.eval()
    back.eval()
    x = paddle.to_tensor(np.random.default_rng(4).uniform(0, 1, (1, 3, 64, 64)), dtype="float32")
    with paddle.no_grad():
        for a, b in zip(model(x), back(x)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_paddlex_layout_names(tmp_path):
    import yaml

    from paddle_recipes.tasks.det_ppyoloe.deploy import export_ppdet_deploy

    model = _model_with_varied_scores()
    with pytest.raises(ValueError, match="needs model_name"):
        export_ppdet_deploy(model, tmp_path / "x", ["a", "b", "c"], input_size=64, layout="paddlex")
    out = export_ppdet_deploy(model, tmp_path / "px", ["a", "b", "c"], input_size=64, layout="paddlex",
                              model_name="PP-YOLOE_plus-S")
    assert sorted(p.name for p in (tmp_path / "px").iterdir()) == ["inference.json", "inference.pdiparams",
                                                                    "inference.yml"]
    cfg = yaml.safe_load(Path(out["infer_cfg"]).read_text())
    assert cfg["Global"] == {"model_name": "PP-YOLOE_plus-S"} and cfg["arch"] == "YOLO"
    assert [op["type"] for op in cfg["Preprocess"]] == ["Resize", "NormalizeImage", "Permute"]
