"""PP-YOLOE assembly: CSPRepResNet -> CustomCSPPAN -> ET-head, sizes from a registry.

The three parts are in nn.catalog (model type ``ppyoloe``) under ppdet's names: CSPResNet, CustomCSPPAN, PPYOLOEHead.

``build_ppyoloe(size, num_classes)``; sizes scale widths/depths of every part:
    tiny: 0.125 / 0.33 (tests and CPU runs)
    s:    0.50 / 0.33
    m:    0.75 / 0.67
    l:    1.00 / 1.00
    x:    1.25 / 1.33
``model(image)`` -> (boxes [B, L, 4] xyxy input pixels, scores [B, L, C]);
``model(image, gt_class, gt_bbox, pad_gt_mask)`` -> dict of losses.
Input sides must be multiples of 32.
"""
from __future__ import annotations

from dataclasses import dataclass

import paddle.nn as nn

from .backbone import CSPRepResNet, reparameterize_model
from .head import PPYOLOEHead
from .neck import CustomCSPPAN


@dataclass(frozen=True)
class SizeSpec:
    width_mult: float
    depth_mult: float


SIZES = {
    "tiny": SizeSpec(0.125, 0.33),
    "s": SizeSpec(0.50, 0.33),
    "m": SizeSpec(0.75, 0.67),
    "l": SizeSpec(1.00, 1.00),
    "x": SizeSpec(1.25, 1.33),
}


class PPYOLOE(nn.Layer):
    """Backbone + neck + head; see module docstring for the call forms."""

    def __init__(self, num_classes: int, width_mult: float = 1.0, depth_mult: float = 1.0,
                 reg_max: int = 16, **head_kwargs):
        super().__init__()
        self.backbone = CSPRepResNet(width_mult, depth_mult)
        self.neck = CustomCSPPAN(self.backbone.out_channels, width_mult, depth_mult)
        self.head = PPYOLOEHead(self.neck.out_channels, num_classes, strides=self.backbone.strides,
                                reg_max=reg_max, **head_kwargs)
        self.num_classes = num_classes

    def forward(self, image, gt_class=None, gt_bbox=None, pad_gt_mask=None):
        outputs = self.head(self.neck(self.backbone(image)))
        if gt_bbox is None:
            return self.head.predict(outputs)
        return self.head.loss(outputs, gt_class, gt_bbox, pad_gt_mask)

    def reparameterize(self) -> int:
        """Fuse RepVGG blocks for deployment (irreversible); returns the number fused."""
        return reparameterize_model(self)


def build_ppyoloe(size: str = "s", num_classes: int = 80, **kwargs) -> PPYOLOE:
    """Build a PP-YOLOE of a registered ``size`` (tiny/s/m/l/x) for ``num_classes`` classes."""
    if size not in SIZES:
        raise ValueError(f"unknown PP-YOLOE size {size!r}; choose one of {sorted(SIZES)}")
    spec = SIZES[size]
    return PPYOLOE(num_classes, spec.width_mult, spec.depth_mult, **kwargs)
