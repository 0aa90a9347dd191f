"""Edits of a PaddleOCR YAML, identical for both sides of a race: ``--set KEY=VALUE`` parsed, a key set or dropped
(a number or an op name indexes a list), the derived YAML, and the -o text of the keys. Imports nothing of the
harness (the command line and every race read it)."""
from __future__ import annotations

import copy

import yaml


def _index(cur, key: str):
    """A list takes a number, or the name of its one ``{name: args}`` entry (a PaddleOCR transform op)."""
    if not isinstance(cur, list):
        return key
    if key.lstrip("-").isdigit():
        return int(key)
    hits = [i for i, x in enumerate(cur) if isinstance(x, dict) and key in x]
    if len(hits) != 1:
        raise KeyError(key)
    return hits[0]


def _step(cur, key: str):
    """One level down: a named list entry ``{name: args}`` goes straight to its args. A level written with no
    value (``- RecAug:``, ``Neck:``) becomes an empty dict, so that keys can be set under it."""
    idx = _index(cur, key)
    if isinstance(cur, list) and not key.lstrip("-").isdigit():
        cur, idx = cur[idx], key
    if cur[idx] is None:
        cur[idx] = {}
    return cur[idx]


def set_key(cfg: dict, dotted: str, value) -> None:
    """cfg[a][b][2][c] = value for "a.b.2.c" (a number indexes a list; so does an op name:
    "Train.dataset.transforms.EastRandomCropData.size"). KeyError naming the key if absent."""
    parts = dotted.split(".")
    cur = cfg
    for i, p in enumerate(parts[:-1]):
        try:
            cur = _step(cur, p)
        except (KeyError, IndexError, ValueError, TypeError):
            raise KeyError(f"--set {dotted}: no {'.'.join(parts[:i + 1])} in the YAML") from None
    last = _index(cur, parts[-1])
    if isinstance(cur, list) and not -len(cur) <= last < len(cur):
        raise KeyError(f"--set {dotted}: index {last} out of range")
    cur[last] = value


def drop_key(cfg: dict, dotted: str) -> None:
    """Remove "a.b.KEY" (a dict key, a list index or a named list entry such as
    "Train.dataset.transforms.CopyPaste"). KeyError naming it if absent."""
    parent, _, last = dotted.rpartition(".")
    cur = cfg
    try:
        for p in parent.split(".") if parent else []:
            cur = _step(cur, p)
        del cur[_index(cur, last)]
    except (KeyError, IndexError, ValueError, TypeError):
        raise KeyError(f"--drop {dotted}: no such key in the YAML") from None


def derive_yaml(original: dict, edits: list[tuple[str, object]], drops: list[str] = ()) -> dict:
    """A copy of ``original`` with ``drops`` removed, then ``edits`` (key, value) set."""
    out = copy.deepcopy(original)
    for k in drops:
        drop_key(out, k)
    for k, v in edits:
        set_key(out, k, v)
    return out


def parse_set(items: list[str]) -> list[tuple[str, object]]:
    """``KEY=YAML value`` strings -> [(key, parsed value)] (yaml.safe_load of the value; a number YAML 1.1 reads as
    a string, e.g. ``3e-5`` without a dot, becomes a float: PaddleOCR's lr would refuse the string)."""
    out = []
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or not k:
            raise SystemExit(f"--set {it!r}: expected KEY=VALUE")
        value = yaml.safe_load(v)
        if isinstance(value, str):
            try:
                value = float(value) if value.strip().lower() not in ("nan", "inf", "-inf", "infinity") else value
            except ValueError:
                pass
        out.append((k.strip(), value))
    return out


def o_text(pairs) -> dict:
    """{key: -o text} of parse_set's (key, value) pairs: a string as given, anything else as flow YAML."""
    return {k: v if isinstance(v, str) else yaml.safe_dump(v, default_flow_style=True).strip() for k, v in dict(pairs).items()}
