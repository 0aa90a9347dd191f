"""YAML configs mapped onto typed dataclasses, with PaddleOCR-style `-o key=value` overrides.

A recipe declares its schema as nested dataclasses with defaults::

    @dataclass
    class Global:
        epochs: int = 10
    @dataclass
    class RecipeConfig:
        Global: Global = field(default_factory=Global)

    cfg = load_config("recipes/configs/x.yml", ["Global.epochs=3"], RecipeConfig)

Unknown keys are rejected with the nearest valid key suggested; values are type-checked.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import difflib
import types
import typing
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import yaml


class ConfigError(ValueError):
    """A config file or override is wrong; the message names the key and the source."""


class UnknownNameError(ConfigError):
    """A component name (backbone, neck, head, optimizer, schedule, sampler, ...) that is not registered."""


class _NoDuplicateKeys:
    """Loader mixin that refuses a key written twice in one mapping (PyYAML keeps the last silently).
    Keys brought in by a `<<: *anchor` merge may be overridden, as YAML intends."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    if key in first:
                        raise ConfigError(f"duplicate key {key!r} on lines {first[key]} and {line} "
                                          "(YAML would keep only the second): remove one")
                    first[key] = line
                except TypeError:  # an unhashable key: the loader reports it
                    pass
        return super().construct_mapping(node, deep=deep)


_STRICT: dict = {}


def load_yaml(text: str, where: str = "", loader: type = yaml.SafeLoader) -> Any:
    """yaml.load with ``loader`` (a SafeLoader or subclass) that rejects duplicate keys:
    ConfigError '<where>: duplicate key 'lr' on lines 3 and 9 ...'. YAML syntax errors stay yaml.YAMLError."""
    strict = _STRICT.get(loader) or _STRICT.setdefault(loader, type(f"Strict{loader.__name__}",
                                                                   (_NoDuplicateKeys, loader), {}))
    try:
        return yaml.load(text, Loader=strict)  # noqa: S506 (a SafeLoader subclass)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None


def check_name(key: str, name: Any, valid) -> None:
    """Raise UnknownNameError naming `key` and listing the valid names unless `name` is one of `valid`."""
    if name not in valid:
        raise UnknownNameError(f"{key}: unknown name {name!r}; valid names: {', '.join(sorted(map(str, valid)))}")


def check_number(key: str, value, *, low=None, high=None, low_open: bool = False, high_open: bool = False) -> None:
    """Raise ConfigError unless ``value`` is a finite number within [low, high] (open ends if *_open)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{key} must be a finite number, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ConfigError(f"{key} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and (value >= high if high_open else value > high):
        raise ConfigError(f"{key} must be {'<' if high_open else '<='} {high}, got {value!r}")


def check_image_shape(key: str, shape, channels=(1, 3)) -> tuple:
    """[C, H, W] with C in ``channels`` and H, W >= 1 -> tuple of ints; else ConfigError naming ``key``."""
    try:
        c, h, w = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} must be [C, H, W] (3 integers), got {shape!r}") from None
    if c not in channels or h < 1 or w < 1:
        raise ConfigError(f"{key} must be [C, H, W] with C in {list(channels)} and H, W >= 1, got {list(shape)!r}")
    return c, h, w


def add_config_args(parser: argparse.ArgumentParser, default_config: str | None = None) -> argparse.ArgumentParser:
    """Add `-c/--config PATH` and `-o/--opt key=value ...` (repeatable) to `parser`."""
    parser.add_argument("-c", "--config", default=default_config, help="YAML config file")
    parser.add_argument("-o", "--opt", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help="override config values, e.g. -o Global.epochs=3 Train.loader.num_workers=2")
    return parser


def flatten_opts(opts: list) -> list[str]:
    """argparse gives a list of lists for `-o a=1 b=2 -o c=3`; flatten it."""
    out: list[str] = []
    for item in opts or []:
        out.extend(item if isinstance(item, (list, tuple)) else [item])
    return out


def parse_override(text: str) -> tuple[list[str], Any]:
    """`Global.lr=0.1` -> (["Global", "lr"], 0.1). The value is parsed as YAML."""
    if "=" not in text:
        raise ConfigError(f"override '{text}' must look like key.path=value")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override '{text}' has an empty key part")
    try:
        value = load_yaml(raw, f"override '{text}'") if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.split("."), value


def _suggest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.5)
    if not close:  # case-insensitive second chance (epochs vs Epochs)
        lowered = {o.lower(): o for o in options}
        if name.lower() in lowered:
            close = [lowered[name.lower()]]
    return f"; did you mean '{close[0]}'?" if close else f"; valid keys: {', '.join(sorted(options))}"


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def named_members(tp: Any) -> dict[str, type]:
    """{default name: dataclass} of a Union of two or more dataclasses that each have a string `name` field with
    a default (a section whose `name` chooses its schema); {} for any other type. The first member is the
    default when a mapping gives no name."""
    members = [a for a in typing.get_args(tp) if _is_dataclass_type(a)]
    if typing.get_origin(tp) not in (Union, types.UnionType) or len(members) < 2:
        return {}
    out = {}
    for m in members:
        f = next((f for f in dataclasses.fields(m) if f.name == "name"), None)
        if f is None or not isinstance(f.default, str):
            return {}
        out[f.default] = m
    return out


def _convert(value: Any, tp: Any, where: str) -> Any:
    """Check/convert `value` to annotation `tp`; raise ConfigError naming `where`."""
    if tp is Any or tp is typing.Any:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        named = named_members(tp)
        if named and isinstance(value, dict):  # sections chosen by `name` (e.g. Train.sampler): that one's keys
            name = value.get("name", next(iter(named)))
            check_name(f"{where}.name", name, named)
            return _convert(value, named[name], where)
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{where}: bad value {value!r}")
    if _is_dataclass_type(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__} {value!r}")
        return from_dict(tp, value, where)
    if origin in (list, tuple, typing.List, typing.Tuple):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        item_tp = args[0] if args else Any
        if origin in (tuple, typing.Tuple) and args and args[-1] is not Ellipsis and len(args) == len(value):
            return tuple(_convert(v, t, f"{where}[{i}]") for i, (v, t) in enumerate(zip(value, args)))
        items = [_convert(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin in (tuple, typing.Tuple) else items
    if origin in (dict, typing.Dict):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if typing.get_origin(tp) is typing.Literal:
        if value not in args:
            raise ConfigError(f"{where}: {value!r} is not one of {list(args)}")
        return value
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 1e-3 as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    return value


def field_types(schema: type) -> dict[str, Any]:
    """Field name -> type. Copes with `Global: Global = field(default_factory=Global)`, where the class
    attribute shadows the annotation (the section-name pattern PaddleOCR-style configs invite)."""
    try:
        hints = typing.get_type_hints(schema)
    except Exception:
        hints = {}
    out = {}
    for f in dataclasses.fields(schema):
        tp = hints.get(f.name, f.type)
        if isinstance(tp, dataclasses.Field) or isinstance(tp, str) or tp is None:
            if f.default_factory is not dataclasses.MISSING and isinstance(f.default_factory, type):
                tp = f.default_factory
            elif f.default is not dataclasses.MISSING and f.default is not None:
                tp = type(f.default)
            else:
                tp = Any
        out[f.name] = tp
    return out


def from_dict(schema: type, data: dict, where: str = "") -> Any:
    """Build dataclass `schema` from `data`, rejecting unknown keys with a suggestion."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'}: expected a mapping, got {data!r}")
    hints = field_types(schema)
    fields = {f.name: f for f in dataclasses.fields(schema) if f.init}
    kwargs = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else str(key)
        if key not in fields:
            raise ConfigError(f"unknown key '{path}'{_suggest(str(key), list(fields))}")
        kwargs[key] = _convert(value, hints[key], path)
    try:
        return schema(**kwargs)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            if where and not str(exc).startswith(where.split(".")[0]):
                raise ConfigError(f"{where}: {exc}") from None  # name the section (Train.loader: ...)
            raise
        raise ConfigError(f"{where or 'config'}: {exc}") from exc


def to_dict(cfg: Any) -> Any:
    """Dataclass tree -> plain dicts/lists (YAML/JSON friendly)."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return {f.name: to_dict(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    if isinstance(cfg, (list, tuple)):
        return [to_dict(v) for v in cfg]
    if isinstance(cfg, dict):
        return {k: to_dict(v) for k, v in cfg.items()}
    return cfg


def _set_path(tree: dict, keys: list[str], value: Any) -> None:
    node = tree
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[keys[-1]] = value


def _check_override_path(schema: type, keys: list[str], text: str) -> None:
    tp: Any = schema
    for i, key in enumerate(keys):
        if typing.get_origin(tp) in (Union, types.UnionType):  # NormalizeConfig | str: the mapping form; sections
            members = [a for a in typing.get_args(tp) if _is_dataclass_type(a)]  # chosen by name: one with the key
            tp = next((a for a in members if key in {f.name for f in dataclasses.fields(a)}), members[0] if members else tp)
            if len(members) > 1 and key not in {f.name for f in dataclasses.fields(tp)}:
                names = sorted({f.name for m in members for f in dataclasses.fields(m)})
                raise ConfigError(f"override '{text}': unknown key '{'.'.join(keys[:i + 1])}'{_suggest(key, names)}")
        if not _is_dataclass_type(tp):
            if i and typing.get_origin(tp) in (dict, typing.Dict) or tp is Any:
                return
            raise ConfigError(f"override '{text}': '{'.'.join(keys[:i])}' is not a section")
        names = [f.name for f in dataclasses.fields(tp)]
        if key not in names:
            raise ConfigError(f"override '{text}': unknown key '{'.'.join(keys[:i + 1])}'{_suggest(key, names)}")
        tp = field_types(tp)[key]


def _set_raw_path(tree: dict, keys: list[str], value: Any, text: str) -> None:
    """_set_path on a foreign config's raw mapping; a number indexes a list (``Train.dataset.transforms.3
    .RecResizeImg.image_shape=[3,32,96]``)."""
    node: Any = tree
    for i, key in enumerate(keys):
        last = i == len(keys) - 1
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                raise ConfigError(f"override '{text}': '{'.'.join(keys[:i])}' is a list of {len(node)}: "
                                  f"'{key}' is not an index")
            key = int(key)
        elif not isinstance(node, dict):
            raise ConfigError(f"override '{text}': '{'.'.join(keys[:i])}' is not a section")
        elif not last and not isinstance(node.get(key), (dict, list)):
            node[key] = {}
        if last:
            node[key] = value
        else:
            node = node[key]


ConfigTranslator = Callable[[dict, Path], Optional[tuple[dict, list[str]]]]


def translate_config(data: dict, path: Path, translators: Sequence[ConfigTranslator],
                     overrides: Sequence[str] = ()) -> tuple[dict, list[str], list[str]]:
    """Offer a config file's raw mapping to each translator in order; the first that recognises it
    (returns (config dict, notes) instead of None) supplies the base config. A translator with a
    ``recognise(raw) -> bool`` attribute takes `overrides` in the file's own keys (PaddleOCR's
    ``-o Global.epoch_num=1``): they are applied to the raw mapping before it translates. A translator with
    an ``override_aliases`` attribute ({foreign key: our dotted key}, e.g. ppdet's ``weights`` ->
    ``Global.weights``) has overrides of those keys renamed.
    Returns (config dict, notes, the overrides still to apply); untranslated: (data, [], overrides)."""
    for translate in translators:
        recognise = getattr(translate, "recognise", None)
        own_keys = bool(overrides) and recognise is not None and recognise(data)
        raw = data
        if own_keys:
            raw = copy.deepcopy(data)
            for text in overrides:
                _set_raw_path(raw, *parse_override(text), text)
        result = translate(raw, path)
        if result is not None:
            translated, notes = result
            aliases = getattr(translate, "override_aliases", {})
            left = [] if own_keys else [_alias(text, aliases) for text in overrides]
            return translated, list(notes), left
    return data, [], list(overrides)


def _alias(text: str, aliases: dict) -> str:
    key, sep, value = text.partition("=")
    return f"{aliases[key.strip()]}={value}" if sep and key.strip() in aliases else text


def yaml_error_line(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: the problem and where (line:column), without PyYAML's multi-line context."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else str(problem)


def load_config(path: str | Path | None, overrides: list[str] | None, schema: type,
                translators: Sequence[ConfigTranslator] = (), notes: list[str] | None = None) -> Any:
    """Read YAML `path` (None = schema defaults), apply `overrides`, return a typed `schema` instance.

    translators: foreign-config readers (e.g. PaddleDetection / PaddleOCR YAMLs; one with a ``yaml_loader``
    attribute, a yaml Loader class, reads the file, e.g. to accept ppdet's ``!Tag`` objects), each
    ``translator(raw: dict, path: Path) -> (config dict for schema, notes: list[str]) | None`` (None = not
    mine); the first match replaces the file's mapping before `overrides` are applied (or, for a translator
    with a ``recognise`` attribute, the overrides are applied to the file's mapping in its own keys first,
    see translate_config). Its notes (lines for the user: keys without effect here, approximations) are
    appended to `notes` when given.
    """
    data: dict = {}
    source = "defaults"
    if path:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        loader = next((t.yaml_loader for t in translators if getattr(t, "yaml_loader", None)), yaml.SafeLoader)
        try:
            data = load_yaml(p.read_text(encoding="utf-8"), str(p), loader) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: invalid YAML: {yaml_error_line(exc)}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{p}: top level must be a mapping")
        if not data:
            raise ConfigError(f"{p}: the config file is empty")
        source = str(p)
        data, found, overrides = translate_config(data, p, translators, flatten_opts(overrides or []))
        if notes is not None:
            notes.extend(found)
        names = [f.name for f in dataclasses.fields(schema)]
        if "Global" in names and "Global" not in data and all(k in names for k in data):  # unknown keys: from_dict says
            raise ConfigError(f"{p}: no 'Global' section (required; sections here: {sorted(map(str, data))})")
    for text in flatten_opts(overrides or []):
        keys, value = parse_override(text)
        _check_override_path(schema, keys, text)
        _set_path(data, keys, value)
    try:
        return from_dict(schema, data)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {source})") from None


def dump_config(cfg: Any, path: str | Path) -> None:
    """Write the resolved config as YAML (for reproducibility)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(yaml.safe_dump(to_dict(cfg), allow_unicode=True, sort_keys=False), encoding="utf-8")
