"""The one catalogue of networks: every backbone, neck and head this library builds, and the PaddleOCR ones it
knows by name.

Each part is listed once (a ``Network``): its kind (backbone / neck / head), its class, the model types it serves
(rec / det / cls / ppyoloe), its name in PaddleOCR's, PaddleX's or ppdet's YAMLs (``Architecture.<Kind>.name``) and
the other names it answers to, the arguments its model builder passes itself (the rest of its constructor's are the
config keys it accepts), and for backbones the PaddleX model names that stand for it and the ``Global.model_name`` an
export of it gets by default. A part PaddleOCR has but this version does not build has ``cls=None``: the
translators name it in a clear error.

    backbone = build_backbone("pplcnetv3", "rec", scale=0.95)    # names match case-insensitively, as PaddleOCR
    neck = build("DBFPN", "det", NECK, {"out_channels": 256}, in_channels=backbone.out_channels)

Every backbone, neck and head registers next to its class, where it is defined::

    @register(NECK, "RSEFPN", DET)
    class RSEFPN(nn.Layer): ...

This module is the registry alone (it imports no network). The package ``paddle_recipes.nn`` imports its network
files, so the backbones of ``nn/`` are listed before any module can read this one, and lists PaddleOCR's backbones
known by name only; a task's necks and heads are listed when its model module is imported (the task builders and
the translators import it).

Task model builders, the YAML translators (``compat``) and the exports read the catalogue; no other table of
network names or of their accepted keys exists. A class whose accepted keys depend on the section (PaddleOCR's
SequenceEncoder: on ``encoder_type``) defines a classmethod ``config_keys(section)``.

``arch_dict`` (an ``Architecture`` section as a dict) and ``arch_section`` (one part's keyword arguments) read the
sections the builders take.
"""
from __future__ import annotations

import difflib
import inspect
import re
import typing
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import paddle.nn as nn

from ..config import ConfigError, UnknownNameError

REC, DET, CLS, PPYOLOE = "rec", "det", "cls", "ppyoloe"
BACKBONE, NECK, HEAD = "backbone", "neck", "head"


@dataclass(frozen=True)
class Network:
    """One part. name: its ``Architecture.<Kind>.name`` in PaddleOCR's / PaddleX's / ppdet's YAMLs (for PaddleOCR's
    networks also the class name). cls: None when this version does not build it. ours: our design (PaddleOCR
    weights do not load) rather than PaddleOCR's, parameter for parameter. paddlex: model type -> regex of the
    PaddleX model names that are this network. export_name: model type -> the default ``Global.model_name`` of an
    export ("{key}" is filled from the Backbone section). kind: backbone | neck | head. aliases: other names it
    answers to. fixed: constructor arguments its model builder passes (not config keys). extra: config keys the
    builder reads besides the constructor's (e.g. init_blank_prob). classes: for a backbone that is a whole
    classifier (it carries its own fc: no Head), the key of its section that gives the number of classes."""
    name: str
    cls: Optional[type]
    model_types: Tuple[str, ...]
    ours: bool = False
    paddlex: Mapping[str, str] = field(default_factory=dict)
    export_name: Mapping[str, str] = field(default_factory=dict)
    kind: str = BACKBONE
    aliases: Tuple[str, ...] = ()
    fixed: Tuple[str, ...] = ("in_channels",)
    extra: Tuple[str, ...] = ()
    classes: str = ""

    @property
    def section(self) -> str:
        """Its section of an ``Architecture``: Backbone / Neck / Head."""
        return self.kind.capitalize()

    def answers_to(self, name: Any) -> bool:
        """True when `name` is its name or an alias, case-insensitively (as PaddleOCR matches names)."""
        key = str(name).lower()
        return key == self.name.lower() or key in (a.lower() for a in self.aliases)

    def config_keys(self, section: Optional[Mapping[str, Any]] = None) -> List[str]:
        """The keys its config section may hold (sorted, ``name`` aside): the constructor's arguments but ``fixed``,
        plus ``extra``; a class's own ``config_keys(section)`` when it has one."""
        own = getattr(self.cls, "config_keys", None)
        if own is not None:
            return sorted(set(own(dict(section or {}))) | set(self.extra))
        return sorted(set(_takes(self.cls, self.fixed)) | set(self.extra))

    def config_types(self) -> Dict[str, Any]:
        """Every key any section of it may hold -> its constructor's annotation (``inspect.Parameter.empty`` when
        it has none): the constructor's arguments but ``fixed``, plus ``extra``; for a class with its own
        ``config_keys(section)``, the union over its sections that its classmethod ``config_types()`` gives."""
        own = getattr(self.cls, "config_types", None)
        found = dict(own()) if own is not None else init_annotations(self.cls, self.fixed)
        return {**dict.fromkeys(self.extra, inspect.Parameter.empty), **found}


ENTRIES: List[Network] = []  # the whole catalogue, in the order register() lists the parts


def register(kind: str, name: str, model_types: Any, *, ours: bool = False, aliases: Sequence[str] = (),
             fixed: Sequence[str] = ("in_channels",), extra: Sequence[str] = (),
             paddlex: Optional[Mapping[str, str]] = None, export_name: Optional[Mapping[str, str]] = None,
             classes: str = ""):
    """Decorator that lists the class below it in the catalogue (see Network for the fields); returns the class.
    ``register(...)(None)`` lists a part PaddleOCR has and this version does not build."""
    types = (model_types,) if isinstance(model_types, str) else tuple(model_types)

    def add(cls: Optional[type]) -> Optional[type]:
        ENTRIES.append(Network(name, cls, types, ours=ours, paddlex=dict(paddlex or {}),
                               export_name=dict(export_name or {}),
                               kind=kind, aliases=tuple(aliases), fixed=tuple(fixed), extra=tuple(extra),
                               classes=classes))
        return cls
    return add


def networks(model_type: str, built: Optional[bool] = True, kind: str = BACKBONE,
             ours: Optional[bool] = None) -> List[Network]:
    """The `kind` parts serving `model_type` in catalogue order; built True: only those built here, None: all;
    ours True / False: only ours / only PaddleOCR's (None: both)."""
    return [n for n in ENTRIES if n.kind == kind and model_type in n.model_types
            and (built is None or (n.cls is not None) == built) and (ours is None or n.ours == ours)]


def backbone_names(model_type: str, built: Optional[bool] = True) -> List[str]:
    """Names of ``networks(model_type, built)``, in catalogue order (PaddleOCR's first, then ours)."""
    return names(model_type, built)


def names(model_type: str, built: Optional[bool] = True, kind: str = BACKBONE, ours: Optional[bool] = None
          ) -> List[str]:
    """Names of ``networks(model_type, built, kind, ours)``, in catalogue order, each once."""
    return list(dict.fromkeys(n.name for n in networks(model_type, built, kind, ours)))


def lookup(name: Any, model_type: Optional[str] = None, kind: str = BACKBONE,
           ours: Optional[bool] = None) -> Optional[Network]:
    """The `kind` part called `name` (case-insensitive, aliases too; of `model_type` when given; ours / PaddleOCR's
    when `ours` is given; a built one before one that is only known), None when unknown."""
    found = [n for n in ENTRIES if n.kind == kind and n.answers_to(name)
             and (model_type is None or model_type in n.model_types) and (ours is None or n.ours == ours)]
    return next((n for n in found if n.cls is not None), found[0] if found else None)


def find_backbone(name: Any, model_type: str) -> Network:
    """``find(name, model_type)``: the backbone `name` built here for `model_type`."""
    return find(name, model_type)


def find(name: Any, model_type: str, kind: str = BACKBONE, ours: Optional[bool] = None) -> Network:
    """The `kind` part `name` built here for `model_type` (ours / PaddleOCR's when `ours` is given); else
    UnknownNameError (a ValueError), one line naming it, listing what is built and suggesting the closest name."""
    net = lookup(name, model_type, kind, ours)
    if net is not None and net.cls is not None:
        return net
    where = f"Architecture.{kind.capitalize()}.name"
    built = names(model_type, True, kind, ours)
    if net is not None:
        raise UnknownNameError(f"{where}: {net.name!r} is PaddleOCR's, but this version has no "
                               f"{model_type} implementation of it; built here: {', '.join(built)}")
    other = lookup(name, model_type, kind)
    if other is not None and other.cls is not None:  # the other family: ours vs PaddleOCR's
        family = "ours" if other.ours else "PaddleOCR's"
        raise UnknownNameError(f"{where}: {other.name!r} is {family}; it goes with {family} backbones. "
                               f"With this backbone: {', '.join(built)}")
    other = lookup(name, None, kind)
    if other is not None:
        raise UnknownNameError(f"{where}: {other.name!r} is a {' / '.join(other.model_types)} "
                               f"network, not a {model_type} one; {model_type} {kind}s built here: {', '.join(built)}")
    close = difflib.get_close_matches(str(name), built, n=1, cutoff=0.5)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownNameError(f"{where}: unknown name {name!r}; valid names: {', '.join(sorted(built))}{hint}")


def _takes(cls: type, fixed: Sequence[str] = ()) -> List[str]:
    """The keyword arguments ``cls.__init__`` names, but self, `fixed` and *args / **kwargs."""
    params = inspect.signature(cls.__init__).parameters
    return [p for p, v in params.items()
            if p != "self" and p not in fixed and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)]


def init_annotations(cls: type, fixed: Sequence[str] = ()) -> Dict[str, Any]:
    """``_takes(cls, fixed)`` -> the annotation of each in ``cls.__init__`` (``inspect.Parameter.empty``: none)."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: none
        hints = {}
    params = inspect.signature(cls.__init__).parameters
    return {p: hints.get(p, params[p].annotation) for p in _takes(cls, fixed)}


def _refuse(cls: type, where: str, kwargs: Mapping[str, Any], takes: Sequence[str]) -> None:
    bad = sorted(set(kwargs) - set(takes))
    if bad:
        raise ConfigError(f"Architecture.{where}: {cls.__name__} does not take {bad} "
                          f"(it takes {sorted(takes) or 'nothing'})")


def check_kwargs(cls: type, where: str, kwargs: Mapping[str, Any], extra: Sequence[str] = (),
                 fixed: Sequence[str] = ()) -> None:
    """One-line ConfigError "Architecture.<where>: <class> does not take [...] (it takes [...])" when `kwargs` holds a
    key that ``cls.__init__`` does not name. fixed: arguments the builder sets itself (e.g. in_channels), not the
    config's; extra: keys also allowed (read by the builder, e.g. init_blank_prob)."""
    _refuse(cls, where, kwargs, sorted(set(_takes(cls, fixed)) | set(extra)))


def check_args(part: Network, kwargs: Mapping[str, Any]) -> None:
    """`kwargs` (a config section but its name) against what `part` accepts (``Network.config_keys``): a key it
    does not take, or a constructor argument without a default that is missing, is a one-line ConfigError."""
    _refuse(part.cls, part.section, kwargs, part.config_keys(kwargs))
    params = inspect.signature(part.cls.__init__).parameters
    missing = [p for p, v in params.items() if p != "self" and p not in part.fixed and p not in kwargs
               and v.default is v.empty and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)]
    if missing:
        raise ConfigError(f"Architecture.{part.section}: {part.cls.__name__} needs {', '.join(missing)}")


def build(name: Any, model_type: str, kind: str, kwargs: Mapping[str, Any], ours: Optional[bool] = None,
          **fixed) -> nn.Layer:
    """The `kind` part `name` of `model_type` (``find``) built with the config's `kwargs` (checked: ``check_args``)
    and the builder's own arguments `fixed` (e.g. in_channels); keys in ``Network.extra`` are the caller's to read
    and must be taken out of `kwargs` before."""
    part = find(name, model_type, kind, ours)
    check_args(part, kwargs)
    return part.cls(**fixed, **kwargs)


def build_backbone(name: Any, model_type: str, **kwargs) -> nn.Layer:
    """The backbone `name` for `model_type` (rec | det | cls) built with `kwargs` (e.g. in_channels, scale, det);
    an unknown name or argument is a one-line ValueError."""
    cls = find(name, model_type).cls
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
    return next((n for n in ENTRIES if model_type in n.paddlex and re.search(n.paddlex[model_type], model_name)),
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
