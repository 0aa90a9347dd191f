"""PaddleOCR's ClsHead (``ppocr/modeling/heads/cls_head.py``): the head of its text-line orientation classifier.

    head = ClsHead(200, class_dim=2)    # keys fc.weight [200, 2], fc.bias [2]
    head(features)                      # logits [N, 2] in train mode, softmax probabilities in eval mode

Facts from PaddleOCR (read, not copied): global average pool, flatten, one Linear initialised uniform in
+-1/sqrt(in_channels), softmax over the classes only when not training.
"""
from __future__ import annotations

import math

import paddle
import paddle.nn.functional as F
from paddle import nn

from .catalog import CLS, HEAD, register


@register(HEAD, "ClsHead", CLS)
class ClsHead(nn.Layer):
    """Mean over H, W -> Linear(in_channels, class_dim); softmax in eval mode."""

    def __init__(self, in_channels: int, class_dim: int = 2):
        super().__init__()
        if class_dim < 2:
            raise ValueError(f"ClsHead class_dim must be >= 2, got {class_dim}")
        self.pool = nn.AdaptiveAvgPool2D(1)
        bound = 1.0 / math.sqrt(in_channels)
        self.fc = nn.Linear(in_channels, class_dim,
                            weight_attr=paddle.ParamAttr(initializer=nn.initializer.Uniform(-bound, bound)))

    def forward(self, x):
        x = self.fc(paddle.flatten(self.pool(x), start_axis=1))
        return x if self.training else F.softmax(x, axis=1)
