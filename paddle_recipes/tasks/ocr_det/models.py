"""PaddleOCR detection (DB) models assembled from PaddleOCR-style ``Architecture`` sections.

``build_ppocr_det_model(arch)`` takes the section PaddleOCR's det configs hold (dict or dataclass)::

    Backbone: {name: PPLCNetV3, scale: 0.75, det: true}  # | {name: PPHGNetV2_B4, det: true} | {name: ResNet_vd, layers: 18}
    Neck:     {name: RSEFPN, out_channels: 96, shortcut: true}  # | LKPAN | DBFPN | UniRepLKFPN | UniRepLKPAN
    Head:     {name: DBHead, k: 50, fix_nan: true}               # | {name: PFHeadLocal, k: 50, mode: large}

Backbones, necks and heads come from ``paddle_recipes.nn.catalog`` (those serving ``det``; the necks and heads
register there from necks.py, replk_necks.py and heads.py). Names are matched case-insensitively; an option a network
does not take is a ``ValueError`` naming it. The presets below are PaddleOCR's published det
architectures (PP-OCRv4 mobile = v5 mobile).
"""
from __future__ import annotations

from typing import Any

import paddle.nn as nn

from ...nn.catalog import DET, HEAD, NECK, arch_dict, arch_section, build, build_backbone
from . import heads, necks, replk_necks  # noqa: F401 (they register the det necks and heads in nn.catalog)


class PPOCRDetModel(nn.Layer):
    """backbone -> neck -> head with PaddleOCR's sub-layer names (``backbone.``, ``neck.``, ``head.``).

    forward(x [B, 3, H, W], H and W multiples of 32) -> dict: eval ``{"maps": P [B, 1, H, W]}``
    (text probability); train ``{"maps": [B, 3, H, W]}`` (probability, threshold, binary), plus ``aux_maps_p4/p3/p2``
    (same layout) with PP-OCRv6's auxiliary heads."""

    def __init__(self, backbone: nn.Layer, neck: nn.Layer, head: nn.Layer):
        super().__init__()
        self.backbone, self.neck, self.head = backbone, neck, head

    def forward(self, x, targets=None):
        return self.head(self.neck(self.backbone(x)), targets)


class DetInferenceModel(nn.Layer):
    """What the det export holds: image [B, 3, H, W] -> probability map [B, 1, H, W] (PaddleOCR's det
    inference output), with the export-friendly upsampling (use_repeat_upsample)."""

    def __init__(self, det: PPOCRDetModel):
        super().__init__()
        self.det = det
        self.det.eval()
        self.switched = use_repeat_upsample(det)

    def forward(self, x):
        return self.det(x)["maps"]


def use_repeat_upsample(model: nn.Layer, on: bool = True) -> int:
    """Switch the nearest upsampling of every neck/head of ``model`` to row/column repetition (same values;
    runs in Paddle Inference's oneDNN CPU executor, see necks.upsample_nearest). Returns the layers switched."""
    layers = [m for m in model.sublayers(include_self=True) if hasattr(type(m), "repeat_upsample")]
    for m in layers:
        m.repeat_upsample = on
    return len(layers)


def build_ppocr_det_model(arch_cfg: Any, in_channels: int = 3) -> PPOCRDetModel:
    """Build a PaddleOCR DB detector from an ``Architecture`` section (see module docstring)."""
    arch = arch_dict(arch_cfg)
    if arch.get("Transform"):
        raise ValueError("Architecture.Transform: must be empty for DB detection")
    if str(arch.get("algorithm", "DB")) != "DB":
        raise ValueError(f"Architecture.algorithm: only DB is implemented, got {arch['algorithm']!r}")
    for part in ("Backbone", "Neck", "Head"):
        if not arch.get(part):
            raise ValueError(f"Architecture.{part}: missing (DB needs a backbone, a neck and a head)")
    b_kw = arch_section(arch["Backbone"], "Backbone")
    backbone = build_backbone(b_kw.pop("name"), DET, in_channels=in_channels, **b_kw)
    if not isinstance(backbone.out_channels, list):
        raise ValueError("Architecture.Backbone: set det: true (a detection backbone returns 4 feature maps)")
    n_kw, h_kw = arch_section(arch["Neck"], "Neck"), arch_section(arch["Head"], "Head")
    neck = build(n_kw.pop("name"), DET, NECK, n_kw, in_channels=backbone.out_channels)
    head = build(h_kw.pop("name"), DET, HEAD, h_kw, in_channels=neck.out_channels)
    return PPOCRDetModel(backbone, neck, head)


# PaddleOCR's published det architectures (configs/det/...: Architecture sections).
PPOCR_MOBILE_DET_ARCH = {
    "model_type": "det", "algorithm": "DB",
    "Backbone": {"name": "PPLCNetV3", "scale": 0.75, "det": True},
    "Neck": {"name": "RSEFPN", "out_channels": 96, "shortcut": True},
    "Head": {"name": "DBHead", "k": 50, "fix_nan": True},
}
PPOCR_SERVER_DET_ARCH = {
    "model_type": "det", "algorithm": "DB",
    "Backbone": {"name": "PPHGNetV2_B4", "det": True},
    "Neck": {"name": "LKPAN", "out_channels": 256, "intracl": True},
    "Head": {"name": "PFHeadLocal", "k": 50, "mode": "large"},
}
PPOCR_R18_DB_ARCH = {
    "model_type": "det", "algorithm": "DB",
    "Backbone": {"name": "ResNet_vd", "layers": 18, "disable_se": True},
    "Neck": {"name": "DBFPN", "out_channels": 256},
    "Head": {"name": "DBHead", "k": 50},
}
PPOCR_R50_DB_ARCH = {**PPOCR_R18_DB_ARCH, "Backbone": {"name": "ResNet_vd", "layers": 50}}
PPOCR_V3_SERVER_DET_ARCH = {  # PP-OCRv3_server_det.yml (its Backbone in_channels: 3 is PaddleOCR's default)
    "model_type": "det", "algorithm": "DB",
    "Backbone": {"name": "ResNet_vd", "layers": 50},
    "Neck": {"name": "LKPAN", "out_channels": 256},
    "Head": {"name": "DBHead", "kernel_list": [7, 2, 2], "k": 50},
}


def _v6_det_arch(size, neck, aux):
    """PP-OCRv6_<size>_det.yml's Architecture (PaddleOCR configs/det/PP-OCRv6)."""
    return {"model_type": "det", "algorithm": "DB", "Backbone": {"name": "PPLCNetV4", "det": True, "model_size": size},
            "Neck": neck, "Head": {"name": "DBHead", "k": 50, "fix_nan": True, "aux_in_channels": aux}}


PPOCR_V6_DET_ARCHS = {
    "PP-OCRv6_tiny_det": _v6_det_arch("tiny", {"name": "UniRepLKFPN", "out_channels": 64, "dilated_kernel_size": 5,
                                               "shortcut": True}, 64),
    "PP-OCRv6_small_det": _v6_det_arch("small", {"name": "UniRepLKFPN", "out_channels": 96, "dilated_kernel_size": 7,
                                                 "shortcut": True}, 96),
    "PP-OCRv6_medium_det": _v6_det_arch("medium", {"name": "UniRepLKPAN", "out_channels": 256, "intracl": True}, 256),
}
PPOCR_DET_PRESETS = {
    **PPOCR_V6_DET_ARCHS,
    "PP-OCRv5_mobile_det": PPOCR_MOBILE_DET_ARCH,
    "PP-OCRv4_mobile_det": PPOCR_MOBILE_DET_ARCH,
    "PP-OCRv5_server_det": PPOCR_SERVER_DET_ARCH,
    "ch_det_res18_db_v2.0": PPOCR_R18_DB_ARCH,
    "det_r50_vd_db": PPOCR_R50_DB_ARCH,
    "PP-OCRv3_server_det": PPOCR_V3_SERVER_DET_ARCH,
}
