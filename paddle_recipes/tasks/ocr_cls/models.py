"""The orientation classifiers, by PaddleOCR / PaddleX name, and the builder of an ``Architecture`` section.

    net = build_cls_model(ClsArchitecture(name="ch_ppocr_mobile_v2.0_cls"), num_classes=2)
    net.eval(); net(x)   # softmax probabilities [N, 2] (logits in train mode)

PRESETS are the released models by name (their backbones are nn.catalog's cls networks): each gives the
Architecture's Backbone/Head, the input shape and preprocessing (``input``: "ppocr" = BGR, keep-ratio resize to H, width <= W, (x/255 - 0.5)/0.5,
zero-padded right (PaddleOCR's ClsResizeImg); "paddlex" = RGB, resized to W x H, ImageNet mean/std (PaddleX's
ResizeImage + NormalizeImage)) and the released model's label list.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from paddle import nn

from paddle_recipes.nn.catalog import BACKBONE, CLS, HEAD, build, build_backbone, find_backbone
from paddle_recipes.nn.pp_lcnet import TEXTLINE_STRIDES

INPUTS = ("ppocr", "paddlex")


@dataclass(frozen=True)
class ClsNetwork:
    """A released orientation classifier: Architecture parts, input [C, H, W], preprocessing, labels."""
    backbone: Dict[str, Any]
    head: Optional[Dict[str, Any]]
    image_shape: List[int]
    input: str
    label_list: List[str]


def _lcnet(scale: float) -> ClsNetwork:
    return ClsNetwork({"name": "PPLCNet", "scale": scale, "class_num": 2, "stride_list": TEXTLINE_STRIDES}, None,
                      [3, 80, 160], "paddlex", ["0_degree", "180_degree"])


PRESETS: Dict[str, ClsNetwork] = {
    "ch_ppocr_mobile_v2.0_cls": ClsNetwork({"name": "MobileNetV3", "scale": 0.35, "model_name": "small"},
                                           {"name": "ClsHead", "class_dim": 2}, [3, 48, 192], "ppocr", ["0", "180"]),
    "PP-LCNet_x0_25_textline_ori": _lcnet(0.25),
    "PP-LCNet_x1_0_textline_ori": _lcnet(1.0),
}


@dataclass
class ClsArchitecture:
    """PaddleOCR's cls ``Architecture``. name: a PRESETS entry whose Backbone / Head are used when those are
    empty ("" = Backbone / Head as given). Backbone: {name: MobileNetV3 | PPLCNet, options}. Head: {name: ClsHead,
    class_dim} for MobileNetV3; none for PPLCNet (its fc is the head, class_num its classes)."""
    name: str = "PP-LCNet_x0_25_textline_ori"
    model_type: str = "cls"
    algorithm: str = "CLS"
    Transform: Optional[Dict[str, Any]] = None
    Backbone: Dict[str, Any] = field(default_factory=dict)
    Neck: Optional[Dict[str, Any]] = None
    Head: Optional[Dict[str, Any]] = None

    def __post_init__(self):
        if self.name and self.name not in PRESETS:
            raise ValueError(f"Architecture.name {self.name!r}: one of {list(PRESETS)} or '' (Backbone/Head given)")
        if self.model_type != "cls" or self.algorithm != "CLS":
            raise ValueError(f"Architecture model_type {self.model_type!r} / algorithm {self.algorithm!r}: this "
                             "recipe builds model_type cls, algorithm CLS")
        if self.Transform or self.Neck:
            raise ValueError("Architecture.Transform / Neck: a cls network has neither here (null)")
        if not self.name and not self.Backbone:
            raise ValueError("Architecture: give a name (one of PRESETS) or a Backbone")

    @property
    def network(self) -> Optional[ClsNetwork]:
        return PRESETS.get(self.name)

    def parts(self) -> tuple:
        """(Backbone dict, Head dict or None): the given ones, else the named network's."""
        if self.Backbone:
            return copy.deepcopy(self.Backbone), copy.deepcopy(self.Head)
        net = self.network
        return copy.deepcopy(net.backbone), copy.deepcopy(net.head)


class ClsModel(nn.Layer):
    """Backbone -> ClsHead (PaddleOCR's BaseModel for model_type cls: keys backbone.*, head.*)."""

    def __init__(self, backbone: nn.Layer, head: nn.Layer):
        super().__init__()
        self.backbone, self.head = backbone, head

    def class_dependent_params(self) -> List[str]:
        return ["head.fc."]

    def forward(self, x):
        return self.head(self.backbone(x))


def build_cls_model(arch: ClsArchitecture, num_classes: int) -> nn.Layer:
    """The network of `arch` with `num_classes` outputs (a class_dim / class_num that differs is a ValueError
    naming the key). Eval mode returns softmax probabilities, train mode logits. A backbone that is a whole
    classifier (nn.catalog's ``Network.classes``: its own fc, e.g. PPLCNet) takes no Head and is built with
    eval_softmax."""
    backbone, head = arch.parts()
    name = backbone.pop("name", "")
    part = find_backbone(name, CLS)
    if part.classes:
        if head:
            raise ValueError(f"Architecture.Head: {part.name} carries its own fc (Backbone.{part.classes}); "
                             "set Head: null")
        _check_classes(f"Architecture.Backbone.{part.classes}", backbone.setdefault(part.classes, num_classes),
                       num_classes)
        return build(name, CLS, BACKBONE, backbone, eval_softmax=True)
    net = build_backbone(name, CLS, **backbone)
    if not head:
        raise ValueError(f"Architecture.Head: {type(net).__name__} needs a head ({{name: ClsHead, class_dim: N}})")
    _check_classes("Architecture.Head.class_dim", head.setdefault("class_dim", num_classes), num_classes)
    return ClsModel(net, build(head.pop("name", None), CLS, HEAD, head, in_channels=net.out_channels))


def _check_classes(key: str, value: int, num_classes: int) -> None:
    if int(value) != num_classes:
        raise ValueError(f"{key} {value} differs from the {num_classes} labels of Global.label_list")
