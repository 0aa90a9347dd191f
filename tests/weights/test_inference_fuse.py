"""Eval / predict load the model with its rep blocks fused (Recipe.load_for_inference, nn.reparam.fuse_in_place):
the same eval-mode outputs up to float32 rounding; Global.fuse_for_inference=false and export keep the training form.

Tolerance: fusing folds each block's branches and BNs in float64 and rounds the kernel once to float32 (relative
2^-24 per weight); the un-fused path rounds every branch conv, every BN and the branch sum instead. Per output that
is at most ~n * 2^-24 of the sum of |terms| over the n = 9*9*1 .. 5*5*1 depthwise taps plus the 1x1 / identity /
BN terms (n < 100: < 6e-6), and the three blocks compound it once each: 1e-5 of the output scale (test_ppocr_import's
TOL; measured 4.2e-7)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import paddle
import pytest

from paddle_recipes.checkpoint.format import save_checkpoint
from paddle_recipes.recipes.base import Recipe
from paddle_recipes.train.config import GlobalConfig

TOL = 1e-5  # max abs diff / max abs output, see the module docstring


def rep_net() -> paddle.nn.Layer:
    """One of each rep block (PPLCNetV3's LearnableRepLayer, LCNetV4's RepDWConv, the det neck's
    DilatedReparamBlock), BN statistics and weights far from their initial values."""
    from paddle_recipes.nn.lcnetv4 import RepDWConv
    from paddle_recipes.nn.pplcnetv3 import LearnableRepLayer
    from paddle_recipes.tasks.ocr_det.replk_necks import DilatedReparamBlock

    paddle.seed(0)
    net = paddle.nn.Sequential(LearnableRepLayer(8, 8, 3, num_conv_branches=2), RepDWConv(8, 3),
                               DilatedReparamBlock(8, 9))
    rng = np.random.RandomState(1)
    for layer in net.sublayers():
        if isinstance(layer, paddle.nn.BatchNorm2D):
            c = layer.weight.shape[0]
            layer._mean.set_value(rng.randn(c).astype("float32") * 0.1)
            layer._variance.set_value(rng.uniform(0.5, 2, c).astype("float32"))
            layer.weight.set_value(rng.uniform(0.5, 1.5, c).astype("float32"))
            layer.bias.set_value(rng.randn(c).astype("float32") * 0.1)
    return net


class RepRecipe(Recipe):
    name = "rep"

    def build_model(self):
        return rep_net()


def recipe(out, **global_keys) -> RepRecipe:
    return RepRecipe(SimpleNamespace(Global=GlobalConfig(output_dir=str(out), **global_keys)),
                     SimpleNamespace(is_main=True, rank=0, world_size=1))


def fused_blocks(model) -> list:
    return [n for n, m in model.named_sublayers() if hasattr(m, "fused_conv_name")
            and (getattr(m, "fused", False) or getattr(m, "reparam_conv", None) is not None)]


def run(model, x) -> np.ndarray:
    with paddle.no_grad():
        return model(paddle.to_tensor(x)).numpy()


@pytest.fixture
def out(tmp_path):
    save_checkpoint(tmp_path / "checkpoints", {"model": rep_net().state_dict()}, "best")
    return tmp_path


def test_inference_load_fuses_and_keeps_the_outputs(out):
    x = np.random.RandomState(2).uniform(-1, 1, (2, 8, 24, 24)).astype("float32")
    fused, _ = recipe(out).load_for_inference()
    plain, _ = recipe(out, fuse_for_inference=False).load_for_inference()
    exported, _ = recipe(out).load_for_inference(fuse=False)  # what export loads (training-form weights file)
    assert fused_blocks(fused) == ["0", "1", "2"] and fused_blocks(plain) == fused_blocks(exported) == []
    assert not fused.training and not plain.training
    ref = run(plain, x)
    diff = float(np.abs(run(fused, x) - ref).max() / np.abs(ref).max())
    assert 0 < np.abs(ref).max() and diff <= TOL, diff
    assert np.array_equal(run(exported, x), ref)  # un-fused loads are the same network, bit for bit
