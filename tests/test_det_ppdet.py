"""PaddleDetection interop: ppdet PP-YOLOE(+) weights, ppdet YAMLs, ppdet deploy layout. No downloads."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import pytest

from paddle_recipes.checkpoint import CheckpointError
from paddle_recipes.tasks.det.model import build_ppyoloe
from paddle_recipes.tasks.det.ppdet_weights import (convert_ppdet_state, is_ppdet_checkpoint, load_ppdet_weights,
                                                    map_name, spp_index_of)

FIXTURES = Path(__file__).parent / "fixtures"
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
    assert map_name("neck.fpn_stages.0.0.convs.2.conv1.conv.weight", 2) == "neck.fpn_stages.0.blocks.3.conv1.conv.weight"
    assert map_name("neck.fpn_stages.0.0.convs.spp.conv.bn._mean", 2) == "neck.fpn_stages.0.blocks.2.conv.bn._mean"


def test_load_file_and_prefix_sets_values_and_folds_alpha(ckpt_file, plus_state):
    assert is_ppdet_checkpoint(ckpt_file)
    model = build_ppyoloe("s", 80)
    assert not is_ppdet_checkpoint(model.state_dict())
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
