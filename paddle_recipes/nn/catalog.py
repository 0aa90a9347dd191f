"""The one catalogue of networks: every backbone this library builds, and the PaddleOCR backbones it knows by name.

Each network is listed once (``NETWORKS``): its class, the model types it serves (rec / det / cls), its name in
PaddleOCR's and PaddleX's YAMLs (``Architecture.Backbone.name``, which is also the class name), the PaddleX model
names that stand for it, and the ``Global.model_name`` an export of it gets by default. A network PaddleOCR has
but this version does not build has ``cls=None``: the translators name it in a clear error.

    backbone = build_backbone("pplcnetv3", "rec", scale=0.95)    # names match case-insensitively, as PaddleOCR

Porting a backbone = one file in ``paddle_recipes/nn/`` + one line here. Task model builders, the PaddleOCR YAML
translators (``compat``) and the exports read this table; no other backbone table exists.

The helpers below build any named part (neck, head) from a PaddleOCR-style ``Architecture`` section:
``arch_dict`` (the section as a dict), ``arch_section`` (one part's keyword arguments), ``build_part`` (a registry
lookup with the arguments checked against the class).
"""
from __future__ import annotations

import difflib
import inspect
import re
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import paddle.nn as nn

from ..config import ConfigError, UnknownNameError
from .dense_conv import DenseConvDet, DenseConvRec
from .lcnetrec import LCNetRec
from .lcnetv4 import PPLCNetV4
from .mobilenet_v3 import MobileNetV3
from .mobilenetv1_enhance import MobileNetV1Enhance
from .pp_lcnet import PPLCNet
from .pphgnetv2 import PPHGNetV2_B4
from .pplcnetv3 import PPLCNetV3
from .resnet34vd import ResNet34vd
from .resnet_vd import ResNet, ResNet_vd

REC, DET, CLS = "rec", "det", "cls"


@dataclass(frozen=True)
class Network:
    """One backbone. name: PaddleOCR's / PaddleX's ``Backbone.name`` (= the class name). cls: None when this version
    does not build it. ours: our design (PaddleOCR weights do not load) rather than PaddleOCR's, parameter for
    parameter. paddlex: model type -> regex of the PaddleX model names that are this network. export_name: model
    type -> the default ``Global.model_name`` of an export ("{key}" is filled from the Backbone section)."""
    name: str
    cls: Optional[type]
    model_types: Tuple[str, ...]
    ours: bool = False
    paddlex: Mapping[str, str] = field(default_factory=dict)
    export_name: Mapping[str, str] = field(default_factory=dict)


NETWORKS: Tuple[Network, ...] = (
    # PaddleOCR's networks, parameter for parameter
    Network("PPLCNetV3", PPLCNetV3, (REC, DET), paddlex={REC: r"PP-OCRv[45]_mobile_rec$"},
            export_name={REC: "PP-OCRv5_mobile_rec", DET: "PP-OCRv5_mobile_det"}),
    Network("PPLCNetV4", PPLCNetV4, (REC, DET), paddlex={REC: r"PP-OCRv6_\w+_rec$"},  # v6 base: no PaddleX name
            export_name={REC: "PP-OCRv6_medium_rec", DET: "PP-OCRv6_{model_size}_det"}),
    Network("PPHGNetV2_B4", PPHGNetV2_B4, (REC, DET), paddlex={REC: r"PP-OCRv5_server_rec$"},
            export_name={REC: "PP-OCRv5_server_rec", DET: "PP-OCRv5_server_det"}),
    Network("ResNet", ResNet, (REC,)),
    Network("ResNet_vd", ResNet_vd, (DET,)),
    Network("MobileNetV1Enhance", MobileNetV1Enhance, (REC,), paddlex={REC: r"PP-OCRv3_mobile_rec$"},
            export_name={REC: "PP-OCRv3_mobile_rec"}),
    Network("MobileNetV3", MobileNetV3, (CLS,), export_name={CLS: "ch_ppocr_mobile_v2.0_cls"}),  # rec_mobilenet_v3
    Network("PPLCNet", PPLCNet, (CLS,), paddlex={CLS: r"PP-LCNet_x\d_\d+_textline_ori$"}),  # PaddleClas's, with fc
    # our designs
    Network("LCNetRec", LCNetRec, (REC,), ours=True),
    Network("ResNet34vd", ResNet34vd, (REC,), ours=True),
    Network("DenseConvRec", DenseConvRec, (REC,), ours=True),
    Network("DenseConvDet", DenseConvDet, (DET,), ours=True),
    # PaddleOCR's, known by name, not built here
    Network("PPHGNet_small", None, (REC, DET), paddlex={REC: r"PP-OCRv4_server_rec(_doc)?$"}),
    Network("MobileNetV3", None, (REC, DET)),  # rec's is the cls class above (its rec use is untested), det's another
    Network("SVTRNet", None, (REC,)),
    Network("ResNet31", None, (REC,)),
    Network("ResNet45", None, (REC,)),
    Network("SVTRv2", None, (REC,), paddlex={REC: r"SVTRv2_rec$"}),
    Network("RepSVTR", None, (REC,), paddlex={REC: r"RepSVTR_rec$"}),
)


def networks(model_type: str, built: Optional[bool] = True) -> List[Network]:
    """The networks serving `model_type` in catalogue order; built True: only those built here, None: all."""
    return [n for n in NETWORKS if model_type in n.model_types and (built is None or (n.cls is not None) == built)]


def backbone_names(model_type: str, built: Optional[bool] = True) -> List[str]:
    """Names of ``networks(model_type, built)``, in catalogue order (PaddleOCR's first, then ours)."""
    return [n.name for n in networks(model_type, built)]


def lookup(name: Any, model_type: Optional[str] = None) -> Optional[Network]:
    """The network called `name` (case-insensitive; of `model_type` when given), None when unknown."""
    key = str(name).lower()
    return next((n for n in NETWORKS if n.name.lower() == key and (model_type is None or model_type in n.model_types)),
                None)


def find_backbone(name: Any, model_type: str) -> Network:
    """The network `name` built here for `model_type`; else UnknownNameError (a ValueError), one line naming it,
    listing what is built and suggesting the closest name."""
    net = lookup(name, model_type)
    if net is not None and net.cls is not None:
        return net
    built = backbone_names(model_type)
    if net is not None:
        raise UnknownNameError(f"Architecture.Backbone.name: {net.name!r} is PaddleOCR's, but this version has no "
                               f"{model_type} implementation of it; built here: {', '.join(built)}")
    other = lookup(name)
    if other is not None:
        raise UnknownNameError(f"Architecture.Backbone.name: {other.name!r} is a {' / '.join(other.model_types)} "
                               f"network, not a {model_type} one; {model_type} backbones built here: "
                               f"{', '.join(built)}")
    close = difflib.get_close_matches(str(name), built, n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownNameError(f"Architecture.Backbone.name: unknown name {name!r}; valid names: "
                           f"{', '.join(sorted(built))}{hint}")


def check_kwargs(cls: type, where: str, kwargs: Mapping[str, Any], extra: Sequence[str] = (),
                 fixed: Sequence[str] = ()) -> None:
    """One-line ConfigError "Architecture.<where>: <class> does not take [...] (it takes [...])" when `kwargs` holds a
    key that ``cls.__init__`` does not name. fixed: arguments the builder sets itself (e.g. in_channels), not the
    config's; extra: keys also allowed (read by the builder, e.g. init_blank_prob)."""
    params = inspect.signature(cls.__init__).parameters
    takes = [p for p, v in params.items()
             if p != "self" and p not in fixed and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)]
    bad = sorted(set(kwargs) - set(takes) - set(extra))
    if bad:
        raise ConfigError(f"Architecture.{where}: {cls.__name__} does not take {bad} "
                          f"(it takes {sorted(set(takes) | set(extra)) or 'nothing'})")


def build_backbone(name: Any, model_type: str, **kwargs) -> nn.Layer:
    """The backbone `name` for `model_type` (rec | det | cls) built with `kwargs` (e.g. in_channels, scale, det);
    an unknown name or argument is a one-line ValueError."""
    cls = find_backbone(name, model_type).cls
    check_kwargs(cls, "Backbone", kwargs)
    return cls(**kwargs)


def export_name(backbone: Any, model_type: str) -> Optional[str]:
    """The default ``Global.model_name`` of an export of `backbone` (a name or its Backbone section), None when the
    catalogue has none (or the section lacks a key the name needs, e.g. PP-OCRv6 det without model_size)."""
    section = dict(backbone) if isinstance(backbone, Mapping) else {"name": backbone}
    net = lookup(section.get("name", ""), model_type)
    pattern = net.export_name.get(model_type) if net is not None else None
    if pattern is None:
        return None
    try:
        return pattern.format(**section)
    except KeyError:
        return None


def paddlex_network(model_name: str, model_type: str) -> Optional[Network]:
    """The network PaddleX's `model_name` stands for (by ``Network.paddlex``), None when unknown."""
    return next((n for n in NETWORKS if model_type in n.paddlex and re.search(n.paddlex[model_type], model_name)),
                None)


# ------------------------------------------------------------ parts of an Architecture section
ARCH_KEYS = ("model_type", "algorithm", "Transform", "Backbone", "Neck", "Head")


def arch_dict(arch_cfg: Any) -> Dict[str, Any]:
    """An ``Architecture`` section (dict or dataclass) as a dict; keys other than PaddleOCR's are a ValueError."""
    arch = asdict(arch_cfg) if is_dataclass(arch_cfg) else dict(arch_cfg or {})
    unknown = sorted(set(arch) - set(ARCH_KEYS))
    if unknown:
        raise ValueError(f"Architecture: unknown keys {unknown}")
    return arch


def arch_section(cfg: Any, where: str) -> Optional[Dict[str, Any]]:
    """One part (Backbone / Neck / Head; dict or dataclass) as keyword arguments with its ``name``, None values
    dropped; None for an absent part; ValueError when it has no name."""
    if cfg is None:
        return None
    d = asdict(cfg) if is_dataclass(cfg) else dict(cfg)
    d = {k: v for k, v in d.items() if v is not None}
    if "name" not in d:
        raise ValueError(f"Architecture.{where}: missing 'name'")
    return d


def build_part(registry: Mapping[str, type], where: str, kwargs: Dict[str, Any], **fixed) -> nn.Layer:
    """registry[lower-case kwargs.pop("name")](**fixed, **kwargs); an unknown name or key is a one-line ValueError."""
    name = kwargs.pop("name")
    cls = registry.get(str(name).lower())
    if cls is None:
        raise ValueError(f"Architecture.{where}.name: unknown {name!r}; choose one of "
                         f"{sorted(c.__name__ for c in registry.values())}")
    check_kwargs(cls, where, kwargs)
    return cls(**fixed, **kwargs)
