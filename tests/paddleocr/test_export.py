"""Tests for paddle_recipes.export: jit export + inference parity, TRT config, conv-BN folding."""
from __future__ import annotations

import numpy as np
import paddle
import pytest
import yaml
from paddle import nn
from paddle.static import InputSpec

from paddle_recipes.export import (TrtConfig, apply_trt, create_predictor, export_model, file_sizes,
                                   find_conv_bn_pairs, fuse_conv_bn, inference_files, measure_latency,
                                   predict, trt_config_to_dict,
                                   trt_config_to_yaml, validate_trt)


class ConvBNLayer(nn.Layer):
    """Follows the documented convention: forward is exactly bn(conv(x)) then act."""

    conv_bn_pairs = (("conv", "bn"),)

    def __init__(self, cin, cout, k=3, stride=1, groups=1, bias=False):
        super().__init__()
        self.conv = nn.Conv2D(cin, cout, k, stride=stride, padding=k // 2, groups=groups, bias_attr=bias)
        self.bn = nn.BatchNorm2D(cout)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class SmallNet(nn.Layer):
    def __init__(self, num_classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 8, 3, padding=1, bias_attr=True), nn.BatchNorm2D(8), nn.ReLU())
        self.block = ConvBNLayer(8, 16, stride=2)
        self.dw = ConvBNLayer(16, 16, groups=16)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(16, num_classes))

    def forward(self, x):
        return self.head(self.dw(self.block(self.stem(x))))


def _randomize_bn(model, seed=0):
    """Give BN layers non-trivial running stats/affine params so folding is really tested."""
    rng = np.random.default_rng(seed)
    for layer in model.sublayers():
        if isinstance(layer, nn.BatchNorm2D):
            c = layer._mean.shape[0]
            layer._mean.set_value(rng.normal(0, 0.5, c).astype("float32"))
            layer._variance.set_value(rng.uniform(0.5, 2.0, c).astype("float32"))
            layer.weight.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            layer.bias.set_value(rng.normal(0, 0.2, c).astype("float32"))


@pytest.fixture
def net():
    paddle.seed(1)
    m = SmallNet()
    _randomize_bn(m)
    m.eval()
    return m


def test_export_and_predictor_parity(net, tmp_path):
    x = np.random.default_rng(0).standard_normal((3, 3, 16, 16)).astype("float32")
    net.train()
    exp = export_model(net, [InputSpec([None, 3, 16, 16], "float32", "x")], tmp_path / "m" / "inference")
    assert net.training  # training flag restored
    net.eval()
    assert exp.format in ("pir-json", "pdmodel") and exp.params_file.endswith(".pdiparams")
    assert inference_files(exp.prefix).model_file == exp.model_file
    assert file_sizes(exp.prefix)["params_bytes"] > 4 * 8 * 3 * 9
    pred = create_predictor(exp.prefix, device="cpu", threads=1)
    ref = net(paddle.to_tensor(x)).numpy()
    (out,) = predict(pred, {"x": x})
    np.testing.assert_allclose(out, ref, atol=1e-5, rtol=0)
    (out2,) = predict(pred, [x[:1]])  # dynamic batch, positional inputs
    np.testing.assert_allclose(out2, ref[:1], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="missing"):
        predict(pred, {"y": x})
    with pytest.raises(FileNotFoundError, match="no inference model"):
        create_predictor(tmp_path / "nothing")


def test_find_and_fuse_conv_bn_parity(net):
    pairs = find_conv_bn_pairs(net)
    assert set(pairs) == {("stem.0", "stem.1"), ("block.conv", "block.bn"), ("dw.conv", "dw.bn")}
    fused = fuse_conv_bn(net)
    assert not fused.training
    assert isinstance(fused.stem[1], nn.Identity) and isinstance(fused.block.bn, nn.Identity)
    assert fused.block.conv.bias is not None and net.block.conv.bias is None  # original untouched
    assert isinstance(net.block.bn, nn.BatchNorm2D)
    assert not any(isinstance(m, nn.BatchNorm2D) for m in fused.sublayers())
    x = paddle.randn([4, 3, 16, 16])
    diff = float((fused(x) - net(x)).abs().max())
    assert diff <= 1e-4, diff
    lat = measure_latency(fused, x, warmup=1, iters=3)
    assert lat["iters"] == 3 and lat["min_ms"] > 0 and lat["median_ms"] >= lat["min_ms"]


def test_fuse_explicit_pairs_and_errors():
    class Plain(nn.Layer):  # no convention declared: only explicit pairs fuse
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2D(2, 4, 1)
            self.b = nn.BatchNorm2D(4)
            self.c2 = nn.Conv2D(4, 3, 1)

        def forward(self, x):
            return self.b(self.c(x))

    m = Plain()
    _randomize_bn(m, 3)
    m.eval()
    assert find_conv_bn_pairs(m) == []
    fused = fuse_conv_bn(m, pairs=[("c", "b")])
    x = paddle.randn([2, 2, 5, 5])
    assert float((fused(x) - m(x)).abs().max()) <= 1e-4
    with pytest.raises(ValueError, match="'c2' normalizes|output channels"):
        find_conv_bn_pairs(m, pairs=[("c2", "b")])
    with pytest.raises(ValueError, match="not a BatchNorm"):
        find_conv_bn_pairs(m, pairs=[("c", "c2")])
    with pytest.raises(ValueError, match="no sublayer 'nope'"):
        find_conv_bn_pairs(m, pairs=[("nope", "b")])


def test_trt_config_dict_yaml_and_validation(tmp_path):
    trt = TrtConfig(precision="fp16", min_shapes={"image": [1, 3, 608, 608]},
                    max_shapes={"image": [8, 3, 1536, 1536]}, opt_shapes={"image": [4, 3, 1024, 1024]})
    d = trt_config_to_dict(trt)
    assert d["enable_tensorrt_engine"] == {"workspace_size": 1 << 30, "max_batch_size": 8, "min_subgraph_size": 5,
                                           "precision_mode": "Half", "use_static": False, "use_calib_mode": False}
    assert d["set_trt_dynamic_shape_info"] == {"min_input_shape": {"image": [1, 3, 608, 608]},
                                               "max_input_shape": {"image": [8, 3, 1536, 1536]},
                                               "optim_input_shape": {"image": [4, 3, 1024, 1024]}}
    assert "set_trt_dynamic_shape_info" not in trt_config_to_dict(TrtConfig())
    text = trt_config_to_yaml(trt, tmp_path / "trt.yml")
    loaded = yaml.safe_load((tmp_path / "trt.yml").read_text())
    assert text == (tmp_path / "trt.yml").read_text()
    assert loaded["paddle_inference_calls"] == d and loaded["TensorRT"]["precision"] == "fp16"
    with pytest.raises(ValueError, match="precision"):
        validate_trt(TrtConfig(precision="bf16"))
    with pytest.raises(ValueError, match="'image' has no entry in opt_shapes"):
        validate_trt(TrtConfig(min_shapes={"image": [1, 3]}, max_shapes={"image": [2, 3]}))
    with pytest.raises(ValueError, match="min <= opt <= max"):
        validate_trt(TrtConfig(min_shapes={"x": [1, 3]}, max_shapes={"x": [2, 3]}, opt_shapes={"x": [4, 3]}))


def test_apply_trt_on_cpu_is_skipped_with_message(net, tmp_path):
    import paddle.inference as pi

    exp = export_model(net, [InputSpec([None, 3, 16, 16], "float32", "x")], tmp_path / "m")
    cfg = pi.Config(exp.model_file, exp.params_file)
    cfg.disable_gpu()
    with pytest.warns(RuntimeWarning, match="TensorRT skipped: this predictor runs on CPU"):
        assert apply_trt(cfg, TrtConfig()) is False
    assert not cfg.tensorrt_engine_enabled()
    with pytest.raises(ValueError):  # invalid configs fail on every device
        apply_trt(cfg, TrtConfig(precision="fp8"))
    with pytest.warns(RuntimeWarning, match="TensorRT skipped"):
        pred = create_predictor(exp.prefix, use_trt=True)
    x = np.ones((1, 3, 16, 16), "float32")
    np.testing.assert_allclose(predict(pred, [x])[0], net(paddle.to_tensor(x)).numpy(), atol=1e-5)
