"""CSPRepResNet backbone (PP-YOLOE), written from the paper's description.

Building blocks:
- ``ConvBN``: conv + BatchNorm + optional activation (swish by default).
- ``RepVggBlock``: a 3x3 conv-bn branch plus a 1x1 conv-bn branch summed, then the
  activation. ``reparameterize()`` folds both branches (and their BN) into a single
  3x3 conv with bias for deployment; outputs match the training-form block in eval mode.
- ``EffectiveSE``: channel attention ``x * hardsigmoid(fc(avgpool(x)))``.
- ``CSPResStage``: stride-2 downsample, split into two 1x1 paths, residual blocks on one,
  concat, ESE, 1x1 fuse.

Widths/depths scale by ``width_mult``/``depth_mult`` (see ``model.SIZES``).
Outputs: feature maps at strides 8, 16, 32.
"""
from __future__ import annotations

import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from paddle_recipes.export import folded_conv_bn
from paddle_recipes.nn.catalog import BACKBONE, PPYOLOE, register


def get_act(name: str | None):
    if name is None:
        return nn.Identity()
    return {"swish": nn.Swish, "relu": nn.ReLU, "silu": nn.Silu}[name]()


class ConvBN(nn.Layer):
    """Conv2D (no bias) + BatchNorm2D + activation; 'same' padding for odd kernels."""

    conv_bn_pairs = (("conv", "bn"),)  # forward is act(bn(conv(x))): export.fuse_conv_bn may fold them

    def __init__(self, ch_in: int, ch_out: int, kernel: int = 3, stride: int = 1, act: str | None = "swish"):
        super().__init__()
        self.conv = nn.Conv2D(ch_in, ch_out, kernel, stride=stride, padding=kernel // 2, bias_attr=False)
        self.bn = nn.BatchNorm2D(ch_out)
        self.act = get_act(act)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class RepVggBlock(nn.Layer):
    """3x3 conv-bn + 1x1 conv-bn (summed) -> act; ``reparameterize()`` fuses to one 3x3 conv."""

    def __init__(self, ch_in: int, ch_out: int, act: str = "swish"):
        super().__init__()
        self.ch_in, self.ch_out = ch_in, ch_out
        self.conv3 = ConvBN(ch_in, ch_out, 3, act=None)
        self.conv1 = ConvBN(ch_in, ch_out, 1, act=None)
        self.act = get_act(act)
        self.fused = None

    def forward(self, x):
        if self.fused is not None:
            return self.act(self.fused(x))
        return self.act(self.conv3(x) + self.conv1(x))

    @paddle.no_grad()
    def reparameterize(self):
        """Fold both branches into ``self.fused`` (3x3 conv with bias); drop the branches."""
        if self.fused is not None:
            return
        w3, b3 = folded_conv_bn(self.conv3.conv, self.conv3.bn)
        w1, b1 = folded_conv_bn(self.conv1.conv, self.conv1.bn)
        w = w3.copy()
        w[:, :, 1:2, 1:2] += w1  # a 1x1 kernel is a 3x3 kernel that is zero off-centre
        fused = nn.Conv2D(self.ch_in, self.ch_out, 3, padding=1)
        fused.weight.set_value(w.astype("float32"))
        fused.bias.set_value((b3 + b1).astype("float32"))
        self.fused = fused
        del self.conv3
        del self.conv1


class BasicBlock(nn.Layer):
    """ConvBN 3x3 -> RepVggBlock, with an optional identity shortcut."""

    def __init__(self, ch_in: int, ch_out: int, shortcut: bool = True, act: str = "swish"):
        super().__init__()
        self.conv1 = ConvBN(ch_in, ch_out, 3, act=act)
        self.conv2 = RepVggBlock(ch_out, ch_out, act=act)
        self.shortcut = shortcut and ch_in == ch_out

    def forward(self, x):
        y = self.conv2(self.conv1(x))
        return x + y if self.shortcut else y


class EffectiveSE(nn.Layer):
    """Effective squeeze-excitation: one 1x1 conv on the pooled vector, hard-sigmoid gate."""

    def __init__(self, channels: int):
        super().__init__()
        self.fc = nn.Conv2D(channels, channels, 1)

    def forward(self, x):
        gate = F.hardsigmoid(self.fc(x.mean(axis=[2, 3], keepdim=True)))
        return x * gate


class CSPResStage(nn.Layer):
    """Downsample (3x3 s2) -> split in two 1x1 paths -> n BasicBlocks on one -> concat -> ESE -> 1x1."""

    def __init__(self, ch_in: int, ch_out: int, num_blocks: int, act: str = "swish"):
        super().__init__()
        ch_mid = (ch_in + ch_out) // 2
        self.conv_down = ConvBN(ch_in, ch_mid, 3, stride=2, act=act)
        self.conv1 = ConvBN(ch_mid, ch_mid // 2, 1, act=act)
        self.conv2 = ConvBN(ch_mid, ch_mid // 2, 1, act=act)
        self.blocks = nn.Sequential(*[BasicBlock(ch_mid // 2, ch_mid // 2, shortcut=True, act=act)
                                      for _ in range(num_blocks)])
        self.attn = EffectiveSE(ch_mid // 2 * 2)
        self.conv3 = ConvBN(ch_mid // 2 * 2, ch_out, 1, act=act)

    def forward(self, x):
        x = self.conv_down(x)
        y = paddle.concat([self.conv1(x), self.blocks(self.conv2(x))], axis=1)
        return self.conv3(self.attn(y))


def scale_width(c: int, width_mult: float) -> int:
    return max(4, int(round(c * width_mult)))


def scale_depth(n: int, depth_mult: float) -> int:
    return max(1, int(round(n * depth_mult)))


@register(BACKBONE, "CSPResNet", PPYOLOE, fixed=("width_mult", "depth_mult"))  # ppdet's name
class CSPRepResNet(nn.Layer):
    """Stem (3 convs, stride 2) + 4 CSPResStages; returns stage outputs at strides 8/16/32.

    Base widths [64, 128, 256, 512, 1024] and depths [3, 6, 6, 3] are scaled by the multipliers.
    ``out_channels`` lists the channels of the returned features.
    """

    def __init__(self, width_mult: float = 1.0, depth_mult: float = 1.0, act: str = "swish"):
        super().__init__()
        ch = [scale_width(c, width_mult) for c in (64, 128, 256, 512, 1024)]
        depths = [scale_depth(n, depth_mult) for n in (3, 6, 6, 3)]
        self.stem = nn.Sequential(
            ConvBN(3, ch[0] // 2, 3, stride=2, act=act),
            ConvBN(ch[0] // 2, ch[0] // 2, 3, act=act),
            ConvBN(ch[0] // 2, ch[0], 3, act=act),
        )
        self.stages = nn.LayerList([CSPResStage(ch[i], ch[i + 1], depths[i], act=act) for i in range(4)])
        self.out_channels = ch[2:]
        self.strides = [8, 16, 32]

    def forward(self, x):
        x = self.stem(x)
        outs = []
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i >= 1:
                outs.append(x)
        return outs


def reparameterize_model(model: nn.Layer) -> int:
    """Fuse every RepVggBlock in ``model`` for deployment; returns how many were fused."""
    n = 0
    for layer in model.sublayers(include_self=True):
        if isinstance(layer, RepVggBlock) and layer.fused is None:
            layer.reparameterize()
            n += 1
    return n
