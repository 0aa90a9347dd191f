"""YAML configs mapped onto typed dataclasses, with PaddleOCR-style `-o key=value` overrides.

A recipe declares its schema as nested dataclasses with defaults (``class RecipeConfig: Global: Global =
field(default_factory=Global)``, ``class Global: epochs: int = 10``), then
``cfg = load_config("recipes/configs/x.yml", ["Global.epochs=3"], RecipeConfig)``.

Unknown keys are rejected with the nearest valid key suggested; values are type-checked.
"""
from __future__ import annotations

import argparse
import copy
import os
import dataclasses
import reprlib
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


MAX_CONFIG_BYTES = 1 << 20  # a config file larger than 1 MiB is refused before it is parsed
MAX_CONFIG_VALUES = 1_000_000  # values of a loaded YAML counted as if its aliases were expanded


class _NoDuplicateKeys:
    """Loader mixin that refuses a key written twice in one mapping (PyYAML keeps the last silently), or, when
    ``duplicates`` is a list, records (key, first line, second line) there and keeps the last, as PyYAML does.
    Keys brought in by a `<<: *anchor` merge may be overridden, as YAML intends."""

    duplicates: Optional[list] = None

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
                        if self.duplicates is None:
                            raise ConfigError(duplicate_key_line((key, first[key], line)))
                        self.duplicates.append((key, first[key], line))
                    first[key] = line
                except TypeError:  # an unhashable key: the loader reports it
                    pass
        return super().construct_mapping(node, deep=deep)


def duplicate_key_line(dup: tuple, kept_last: bool = False) -> str:
    """The line for a key written twice, ``dup`` = (key, first line, second line): an error for our configs,
    a note (``kept_last``) for a foreign file whose own loader keeps the last value."""
    key, first, second = dup
    if kept_last:
        return f"duplicate key {key!r} on lines {first} and {second}: the value on line {second} is used, as the " \
               "YAML loaders of PaddleOCR and PaddleDetection do"
    return f"duplicate key {key!r} on lines {first} and {second} (YAML would keep only the second): remove one"


def _check_expansion(data: Any, where: str) -> None:
    """ConfigError unless ``data`` holds at most MAX_CONFIG_VALUES values with every alias counted where it is
    used (dataclasses.asdict, to_dict and yaml.dump expand aliases; an alias bomb of 9 levels of 9 is 387 million
    values from a few hundred bytes), and no alias refers to its own parent. Time: one visit per distinct node."""
    sizes: dict = {}
    path: list = []

    def size(node: Any) -> int:
        if not isinstance(node, (dict, list, set)):
            return 1
        known = sizes.get(id(node))
        if known is not None:
            if known < 0:
                raise ConfigError(f"{where}: a YAML alias under '{'.'.join(path)}' refers to its own parent "
                                  "(a recursive structure): refused")
            return known
        sizes[id(node)] = -1  # being counted
        total = 1 + (len(node) if isinstance(node, dict) else 0)
        for key, value in (node.items() if isinstance(node, dict) else enumerate(node)):
            path.append(str(key))
            total += size(value)
            path.pop()
            if total > MAX_CONFIG_VALUES:
                raise ConfigError(f"{where}: YAML aliases under '{'.'.join(path) or '(top level)'}' expand to more "
                                  f"than {MAX_CONFIG_VALUES:,} values (an alias bomb?): refused")
        sizes[id(node)] = total
        return total

    size(data)


_STRICT: dict = {}


def load_yaml(text: str, where: str = "", loader: type = yaml.SafeLoader, duplicates: Optional[list] = None) -> Any:
    """yaml.load with ``loader`` (a SafeLoader or subclass) that rejects duplicate keys:
    ConfigError '<where>: duplicate key 'lr' on lines 3 and 9 ...'; with a ``duplicates`` list, each one is
    appended there as (key, first line, second line) and the last value kept instead. Also a ConfigError: a
    tree nested too deeply for the parser, or aliases that expand beyond MAX_CONFIG_VALUES (_check_expansion).
    YAML syntax errors stay yaml.YAMLError."""
    strict = _STRICT.get(loader) or _STRICT.setdefault(loader, type(f"Strict{loader.__name__}",
                                                                   (_NoDuplicateKeys, loader), {}))
    prefix = f"{where}: " if where else ""
    parser = strict(text)
    parser.duplicates = duplicates
    try:
        data = parser.get_single_data()
        _check_expansion(data, where or "YAML")
        return data
    except ConfigError as exc:
        raise ConfigError(str(exc) if str(exc).startswith(prefix) else f"{prefix}{exc}") from None
    except RecursionError:
        raise ConfigError(f"{prefix}YAML nested too deeply to read: refused") from None
    finally:
        parser.dispose()


def read_config_text(path: Path, what: str = "config file") -> str:
    """The UTF-8 text of config file ``path``; ConfigError (one line naming it) when it is not a regular file,
    is larger than MAX_CONFIG_BYTES (1 MiB; read no further), or is not UTF-8. Imports no package of paddle_recipes
    (config sits below them all; data/files.py is the bounded reader of images and the importer's files)."""
    if not path.is_file():
        raise ConfigError(f"{what} not found: {path}")
    with open(path, "rb") as f:
        raw = f.read(MAX_CONFIG_BYTES + 1)
        size = max(len(raw), os.fstat(f.fileno()).st_size)
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: {size:,} bytes: a {what} may have at most {MAX_CONFIG_BYTES:,} bytes (1 MiB): "
                          "refused")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (at byte offset {exc.start}: {raw[exc.start]:#04x})") from None


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
    """`Global.lr=0.1` -> (["Global", "lr"], 0.1). The value is parsed as YAML, flow lists and mappings included
    (`Train.dataset.label_file_list=[a.txt, b.txt]`, `Architecture.Backbone={name: PPLCNetV3, scale: 0.95}`);
    see _override_value for text that is not valid YAML."""
    if "=" not in text:
        raise ConfigError(f"override '{text}' must look like key.path=value")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override '{text}' has an empty key part")
    return key.split("."), _override_value(raw, text)


def _override_value(raw: str, text: str) -> Any:
    """The YAML value of `raw` ("" when blank). Text that is not valid YAML is kept as written (`@x`), except
    a flow list or mapping: a list whose items are each kept as written when not YAML themselves
    (`Det.opt=[PostProcess.box_thresh=0.5, Eval.transform={limit_side_len: 960}]`, a list of -o texts), else
    a ConfigError naming the override and the YAML error."""
    if not raw.strip():
        return ""
    try:
        return load_yaml(raw, f"override '{text}'")
    except yaml.YAMLError as exc:
        if raw.strip()[0] not in "[{":
            return raw
        items = _flow_items(raw.strip())
        if items is None:
            raise ConfigError(f"override '{text}': invalid YAML flow value: {yaml_error_line(exc)}") from None
        return [_override_value(item, text) for item in items]


def _flow_items(raw: str) -> Optional[list[str]]:
    """The items of `[a, b={x: 1, y: 2}, c]` split at its top-level commas (brackets and quotes balanced);
    None when `raw` is no such list."""
    if not (raw.startswith("[") and raw.endswith("]")):
        return None
    items, depth, quote, start = [], 0, "", 1
    for i, ch in enumerate(raw[1:-1], start=1):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            items.append(raw[start:i])
            start = i + 1
    items.append(raw[start:-1])
    items = [item.strip() for item in items]
    return None if depth or quote or not all(items) else items


def suggest_name(name: str, options: list[str]) -> str:
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
        kinds = [a for a in args if a is not type(None)]
        if bool in kinds and all(a is bool or typing.get_origin(a) is typing.Literal for a in kinds):  # auto|true|false
            words = ["true", "false"] + [str(v) for a in kinds if a is not bool for v in typing.get_args(a)]
            raise ConfigError(f"{where}: expected {', '.join(words[:-1])} or {words[-1]}, got {value!r}")
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
            raise ConfigError(f"unknown key '{path}'{suggest_name(str(key), list(fields))}")
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


_MISSING = object()


def _set_path(tree: dict, keys: list[str], value: Any) -> Any:
    """tree[k0][k1]... = value (missing sections made); returns the value replaced (_MISSING: none)."""
    node = tree
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    old = node.get(keys[-1], _MISSING)
    node[keys[-1]] = value
    return old


def _check_override_path(schema: type, keys: list[str], text: str) -> None:
    tp: Any = schema
    for i, key in enumerate(keys):
        if typing.get_origin(tp) in (Union, types.UnionType):  # NormalizeConfig | str: the mapping form; sections
            members = [a for a in typing.get_args(tp) if _is_dataclass_type(a)]  # chosen by name: one with the key
            tp = next((a for a in members if key in {f.name for f in dataclasses.fields(a)}), members[0] if members else tp)
            if len(members) > 1 and key not in {f.name for f in dataclasses.fields(tp)}:
                names = sorted({f.name for m in members for f in dataclasses.fields(m)})
                raise ConfigError(f"override '{text}': unknown key '{'.'.join(keys[:i + 1])}'{suggest_name(key, names)}")
        if not _is_dataclass_type(tp):
            if i and typing.get_origin(tp) in (dict, typing.Dict) or tp is Any:
                return
            raise ConfigError(f"override '{text}': '{'.'.join(keys[:i])}' is not a section")
        names = [f.name for f in dataclasses.fields(tp)]
        if key not in names:
            raise ConfigError(f"override '{text}': unknown key '{'.'.join(keys[:i + 1])}'{suggest_name(key, names)}")
        tp = field_types(tp)[key]


def _set_raw_path(tree: dict, keys: list[str], value: Any, text: str) -> Any:
    """_set_path on a foreign config's raw mapping; a number indexes a list (``Train.dataset.transforms.3
    .RecResizeImg.image_shape=[3,32,96]``). Returns the value replaced (_MISSING: none)."""
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
            old = node[key] if isinstance(node, list) else node.get(key, _MISSING)
            node[key] = value
            return old
        node = node[key]
    return _MISSING


ConfigTranslator = Callable[[dict, Path], Optional[tuple[dict, list[str]]]]


class OverrideNote(str):
    """A notes line saying that an ``-o`` replaced a value (cli logs it at INFO; other notes are warnings)."""


class _Overrides:
    """Applies ``-o`` texts in order to one mapping, collecting an OverrideNote for each that replaces a value
    of the config (or of an earlier ``-o`` of the same key): ``-o Predict.images=DIR overrides the config's
    value 'doc/imgs_en/img_10.jpg'``."""

    def __init__(self, notes: list):
        self.notes, self.earlier = notes, {}

    def apply(self, text: str, setter: Callable[[list, Any], Any]) -> None:
        """setter(keys, value) sets the value of `text` and returns the value it replaced (_MISSING: none)."""
        keys, value = parse_override(text)
        old = setter(keys, value)
        dotted = ".".join(keys)
        if old is not _MISSING and old != value:
            by = f"the earlier -o {self.earlier[dotted]}" if dotted in self.earlier else \
                f"the config's value {bounded_repr(old)}"
            self.notes.append(OverrideNote(f"-o {text} overrides {by}"))
        self.earlier[dotted] = text


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 60, 60


def bounded_repr(value: Any, limit: int = 80) -> str:
    """repr(value) cut to ``limit`` characters, built in bounded time and memory (reprlib: at most 3 levels, a few
    items of each container, long strings cut): safe for a value from a file, such as an alias-bomb's expansion."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def bounded_text(text: str, limit: int = 80) -> str:
    """A name read from a file, for a one-line message: as is when printable and at most ``limit`` characters,
    else bounded_repr (quoted, escaped, cut)."""
    return text if isinstance(text, str) and text.isprintable() and len(text) <= limit else bounded_repr(text, limit)


def translate_config(data: dict, path: Path, translators: Sequence[ConfigTranslator],
                     overrides: Sequence[str] = ()) -> tuple[dict, list[str], list[str], bool]:
    """Offer a config file's raw mapping to each translator in order; the first that recognises it
    (returns (config dict, notes) instead of None) supplies the base config.

    A translator with a ``recognise(raw) -> bool`` attribute takes `overrides` in the file's own keys
    (PaddleOCR's ``-o Global.epoch_num=1``; also our sections a PaddleOCR file may hold, e.g. ``Predict``): they
    are applied to the raw mapping before it translates, and it is called as ``translate(raw, path,
    overridden={dotted key: -o text})`` so that a value an -o set wins over another key of the file that
    translates to the same key of ours (``-o Predict.images=DIR`` over ``Global.infer_img``; its OverrideNote
    is the translator's). A translator with an ``override_aliases`` attribute ({foreign key: our dotted key},
    e.g. ppdet's ``weights`` -> ``Global.weights``) has overrides of those keys renamed.
    Returns (config dict, notes (its own, then an OverrideNote for each raw value an -o replaced), the
    overrides still to apply, whether a translator took the file); untranslated: (data, [], overrides, False)."""
    for translate in translators:
        recognise = getattr(translate, "recognise", None)
        own = recognise is not None and bool(overrides) and recognise(data)
        raw, set_notes, overridden = data, [], {}
        if own:
            raw, applier = copy.deepcopy(data), _Overrides(set_notes)
            for text in overrides:
                applier.apply(text, lambda keys, value: _set_raw_path(raw, keys, value, text))
                overridden[".".join(parse_override(text)[0])] = text
        result = translate(raw, path, overridden=overridden) if recognise is not None else translate(raw, path)
        if result is not None:
            translated, notes = result
            aliases = getattr(translate, "override_aliases", {})
            left = [] if own else [_alias(text, aliases) for text in overrides]
            return translated, [*notes, *(n for n in set_notes if n not in notes)], left, True
    return data, [], list(overrides), False


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
    """Read YAML `path` (None = schema defaults), apply `overrides` in order, return a typed `schema` instance.

    A later override wins over the file's value and over an earlier override of the same key; each such
    replacement adds an OverrideNote to `notes`. The file: at most MAX_CONFIG_BYTES (1 MiB), aliases within
    MAX_CONFIG_VALUES, and no key written twice in one mapping, except in a file a translator takes (a
    PaddleOCR / PaddleDetection YAML: their loaders keep the last value, so does this one, with a note).

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
    found: list[str] = []
    overrides = flatten_opts(overrides or [])
    if path:
        p = Path(path)
        text = read_config_text(p)
        loader = next((t.yaml_loader for t in translators if getattr(t, "yaml_loader", None)), yaml.SafeLoader)
        duplicates: list = []
        try:
            data = load_yaml(text, str(p), loader, duplicates) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: invalid YAML: {yaml_error_line(exc)}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{p}: top level must be a mapping")
        if not data:
            raise ConfigError(f"{p}: the config file is empty")
        source = str(p)
        data, translated_notes, overrides, foreign = translate_config(data, p, translators, overrides)
        if duplicates and not foreign:  # our own config: strict
            raise ConfigError(f"{p}: {duplicate_key_line(duplicates[0])}")
        found = [f"{p}: {duplicate_key_line(d, kept_last=True)}" for d in duplicates] + translated_notes
        names = [f.name for f in dataclasses.fields(schema)]
        if "Global" in names and "Global" not in data and all(k in names for k in data):  # unknown keys: from_dict says
            raise ConfigError(f"{p}: no 'Global' section (required; sections here: {sorted(map(str, data))})")
    applier = _Overrides(found)
    for text in overrides:
        _check_override_path(schema, parse_override(text)[0], text)
        applier.apply(text, lambda keys, value: _set_path(data, keys, value))
    if notes is not None:
        notes.extend(found)
    try:
        return from_dict(schema, data)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (in {source})") from None


def dump_config(cfg: Any, path: str | Path) -> None:
    """Write the resolved config as YAML (for reproducibility)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(yaml.safe_dump(to_dict(cfg), allow_unicode=True, sort_keys=False), encoding="utf-8")
