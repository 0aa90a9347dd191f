"""PaddleDetection's YAML config files: ``_BASE_`` includes and ppdet's object tags (``!PiecewiseDecay {...}``).

    cfg, origin = load_ppdet_yaml("configs/ppyoloe/ppyoloe_plus_crn_s_80e_coco.yml")   # merged dict, key -> file

Loading follows ppdet's ``_BASE_`` semantics: each listed file (paths relative to the including
file, ``~`` expanded) is loaded recursively; later bases override earlier ones, the including
file overrides all its bases; dicts merge key by key at any depth, lists and scalars replace.
A bad file is one ConfigError line naming it (and the line for invalid YAML); an include cycle names the chain.
The translation onto our det config is compat.ppdet's.
"""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from paddle_recipes.config import ConfigError, load_yaml, read_config_text

BASE_KEY = "_BASE_"


class PpdetLoader(yaml.SafeLoader):
    """SafeLoader that also reads ppdet's object tags: ``!PiecewiseDecay {gamma: 0.1, milestones: [216, 243]}``
    becomes ``{"name": "PiecewiseDecay", "gamma": 0.1, ...}``, the dict form ppdet itself accepts wherever it
    builds an object by name (schedulers, NMS, assigners). ppdet registers a tag for each ``@serializable``
    class (about 200 in 2.6.0: the LR schedulers CosineDecay, PiecewiseDecay, LinearWarmup, ExpWarmup, plus
    backbones, necks, losses, datasets, transforms), so any ``!Name`` is read; what a name means is checked
    where it is used. A tagged sequence is kept as ``{"name": Name, "args": [...]}`` (positional arguments)."""


def _construct_tag(loader: PpdetLoader, suffix: str, node: yaml.Node) -> dict:
    if not suffix.isidentifier():
        raise yaml.constructor.ConstructorError(None, None, f"unknown tag !{suffix}", node.start_mark)
    if isinstance(node, yaml.MappingNode):
        return {"name": suffix, **loader.construct_mapping(node, deep=True)}
    if isinstance(node, yaml.SequenceNode):
        return {"name": suffix, "args": loader.construct_sequence(node, deep=True)}
    value = loader.construct_scalar(node)
    return {"name": suffix, **({"args": [value]} if value not in ("", None) else {})}


PpdetLoader.add_multi_constructor("!", _construct_tag)


def _read_yaml(path: Path, duplicates: list | None = None) -> dict:
    """One ppdet YAML file. A key written twice in one mapping keeps its last value, as ppdet's loader does;
    each is appended to `duplicates` as (path, (key, first line, second line)) when given."""
    text = read_config_text(path, "ppdet config")
    found: list = []
    try:
        data = load_yaml(text, str(path), PpdetLoader, found)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}:{where} not valid YAML ({getattr(e, 'problem', e)})") from None
    if duplicates is not None:
        duplicates.extend((path, dup) for dup in found)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping, got {type(data).__name__}")
    return data


def _merge(dst: dict, src: dict) -> dict:
    """ppdet's dict_merge: src wins; nested dicts merge recursively; lists/scalars replace."""
    for k, v in src.items():
        if k in dst and isinstance(dst[k], dict) and isinstance(v, dict):
            _merge(dst[k], v)
        else:
            dst[k] = v
    return dst


def _load(path: Path, stack: tuple, duplicates: list | None) -> tuple[dict, dict]:
    path = path.resolve()
    if path in stack:
        raise ConfigError(f"{path}: _BASE_ include cycle: {' -> '.join(str(p) for p in stack + (path,))}")
    cfg = _read_yaml(path, duplicates)
    origin = {k: str(path) for k in cfg}
    bases = cfg.pop(BASE_KEY, None)
    origin.pop(BASE_KEY, None)
    if bases is None:
        return cfg, origin
    if isinstance(bases, str):
        bases = [bases]
    if not isinstance(bases, list):
        raise ConfigError(f"{path}: {BASE_KEY} must be a list of file paths, got {type(bases).__name__}")
    merged, merged_origin = {}, {}
    for base in bases:
        p = Path(os.path.expanduser(str(base)))
        if not p.is_absolute():
            p = path.parent / p
        if not p.is_file():
            raise ConfigError(f"{path}: {BASE_KEY} file {base!r} not found (looked at {p})")
        sub, sub_origin = _load(p, stack + (path,), duplicates)
        _merge(merged, sub)
        merged_origin.update(sub_origin)
    _merge(merged, cfg)
    merged_origin.update(origin)
    return merged, merged_origin


def load_ppdet_yaml(path: str | os.PathLike, duplicates: list | None = None) -> tuple[dict, dict]:
    """(merged config, {top-level key: file that last set it}) of a ppdet YAML with its _BASE_ files; keys written
    twice in one mapping are appended to `duplicates` (see _read_yaml) when given."""
    return _load(Path(path), (), duplicates)


def is_ppdet_config(source: str | os.PathLike | dict) -> bool:
    """True for a ppdet-style YAML (``_BASE_`` includes or an ``architecture`` key)."""
    data = source if isinstance(source, dict) else _read_yaml(Path(source))
    return BASE_KEY in data or "architecture" in data
