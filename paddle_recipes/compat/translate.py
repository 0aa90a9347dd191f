"""The one vocabulary of the YAML translators (PaddleOCR rec / det, ppdet) and their one report type.

What becomes of each key of a foreign config, recorded by a ``Translator`` into its ``TranslationReport``:

- ``map(src, value, dst)``: the key sets our key ``dst`` (report.mapped: src -> dst);
- ``fixed(src, what)``: our pipeline always does what the value asks (report.mapped: src -> "fixed: what");
- ``none(src, why)``: the key changes nothing here (report.no_effect, logged in one line);
- ``approx(src, how)``: we do it only approximately (report.approximated, one WARNING line);
- ``derive(dst, value, why)``: we set our key although no key asked (the foreign default differs from ours);
- ``ext(src, value, dst)``: a paddle-recipes extension key written in the foreign file (report.extensions);
- ``raise self.error(path, why)``: refused, one ConfigError line naming the key.

``put(dst, value)`` writes our key without recording a foreign one. Paths look like
``Train.dataset.transforms[1].RecConAug.prob``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from paddle_recipes.config import ConfigError, suggest_name, bounded_repr


@dataclass
class TranslationReport:
    """What became of each foreign key (see the module docstring for the vocabulary).

    mapped: foreign path -> our key path (or "fixed: ..."); no_effect: foreign path -> why it changes nothing here;
    approximated: foreign path -> how ours differs; derived: our key -> why we set it; proposed: our paths not in
    the schema yet; extensions: extension key -> value; overrides: "-o K=V overrides the config's value X" lines.
    """

    source: str
    mapped: Dict[str, str] = field(default_factory=dict)
    no_effect: Dict[str, str] = field(default_factory=dict)
    derived: Dict[str, str] = field(default_factory=dict)
    proposed: List[str] = field(default_factory=list)
    approximated: Dict[str, str] = field(default_factory=dict)
    extensions: Dict[str, Any] = field(default_factory=dict)
    overrides: List[str] = field(default_factory=list)

    def accounts_for(self, path: str) -> bool:
        return path in self.mapped or path in self.no_effect or path in self.approximated

    def no_effect_line(self) -> str:
        """The one log line: "no effect here: Global.use_gpu, Global.debug, ... (<source>)"."""
        if not self.no_effect:
            return f"no effect here: none ({self.source})"
        return f"no effect here: {', '.join(self.no_effect)} ({self.source})"

    def approximated_line(self) -> str:
        """One warning line: "not exactly as PaddleOCR: <key> (<how>); ... (<source>)", or "" when none."""
        if not self.approximated:
            return ""
        top = {k: v for k, v in self.approximated.items()  # an op's own keys are covered by the op's entry
               if not any(k.startswith(f"{o}.") for o in self.approximated)}
        return f"not exactly as PaddleOCR: {'; '.join(f'{k} ({v})' for k, v in top.items())} ({self.source})"

    def extensions_line(self) -> str:
        """One line: "paddle-recipes extensions: Architecture.Head.init_blank_prob=0.8, ... (<source>)", or ""."""
        if not self.extensions:
            return ""
        return (f"paddle-recipes extensions: {', '.join(f'{k}={v}' for k, v in self.extensions.items())} "
                f"({self.source})")

    def lines(self) -> List[Tuple[int, str]]:
        """The report as (logging level, line): the no-effect line, then the approximated and extensions lines
        when there are any."""
        out = [(logging.INFO, self.no_effect_line())]
        if self.approximated:
            out.append((logging.WARNING, self.approximated_line()))
        if self.extensions:
            out.append((logging.INFO, self.extensions_line()))
        return out

    def notes(self) -> List[str]:
        return [line for _, line in self.lines()]

    def log(self, logger: logging.Logger) -> None:
        for level, line in self.lines():
            logger.log(level, "%s", line)


def canonical(name: Any, options, path: str, what: str, source: str) -> str:
    """The foreign format's exact spelling of a class name; a case-only difference is accepted, anything else
    is a ConfigError naming `path` with the nearest option."""
    if isinstance(name, str):
        if name in options:
            return name
        lowered = {o.lower(): o for o in options}
        if name.lower() in lowered:
            return lowered[name.lower()]
    raise ConfigError(f"{path}: {what} {name!r} is not supported here{suggest_name(str(name), list(options))} "
                      f"(in {source})")


class Translator:
    """Records what happens to each foreign key (the vocabulary above) while building our config dict ``ours``.

    overridden: dotted foreign key an ``-o`` set -> its text; when two keys set one of ours to different values,
    the ``-o`` wins (report.overrides says so), else it is an error. last_wins: a later ``put`` silently replaces
    (ppdet's merge semantics) instead. proposed_keys: our keys the schema may lack (written to report.proposed).
    """

    foreign = "PaddleOCR"  # names the format in "unknown <foreign> key" errors
    last_wins = False
    proposed_keys: Dict[str, str] = {}

    def __init__(self, source: str, overridden: Optional[Dict[str, str]] = None,
                 report: Optional[TranslationReport] = None):
        self.source = source
        self.overridden = overridden or {}
        self.set_by: Dict[str, str] = {}  # our key -> the foreign key that set it
        self.ours: dict = {}
        self.report = report if report is not None else TranslationReport(source)

    def error(self, path: str, msg: str) -> ConfigError:
        return ConfigError(f"{path}: {msg} (in {self.source})")

    # ------------------------------------------------------------------ the vocabulary
    def put(self, dst: str, value: Any, replace: bool = False, src: str = "") -> None:
        node = self.ours
        keys = dst.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if not (replace or self.last_wins) and keys[-1] in node and node[keys[-1]] != value:
            old_by, new_by = self.by_override(self.set_by.get(dst, "")), self.by_override(src)
            if old_by == new_by:
                raise self.error(dst, f"set twice with different values ({bounded_repr(node[keys[-1]])} and {bounded_repr(value)})")
            self.report.overrides.append(f"-o {old_by or new_by} overrides the config's value "
                                         f"{bounded_repr(value if old_by else node[keys[-1]])}")
            if old_by:
                return  # the -o's value stays
        node[keys[-1]] = value
        self.set_by[dst] = src
        for i in range(len(keys), 0, -1):  # the key, or the new section it belongs to
            prefix = ".".join(keys[:i])
            if prefix in self.proposed_keys:
                if prefix not in self.report.proposed:
                    self.report.proposed.append(prefix)
                break

    def by_override(self, src: str) -> str:
        """The -o text that set the foreign key `src` (or a section holding it), else ""."""
        return next((text for key, text in self.overridden.items() if src == key or src.startswith(f"{key}.")), "")

    def map(self, src: str, value: Any, dst: str) -> None:
        self.put(dst, value, src=src)
        self.report.mapped[src] = dst

    def ext(self, src: str, value: Any, dst: str) -> None:
        """A paddle-recipes extension key: mapped to our `dst` and listed in the one extensions line."""
        self.map(src, value, dst)
        self.report.extensions[src] = value

    def fixed(self, src: str, what: str) -> None:
        self.report.mapped[src] = f"fixed: {what}"

    def none(self, src: str, why: str) -> None:
        self.report.no_effect[src] = why

    def approx(self, src: str, how: str) -> None:
        self.report.approximated[src] = how

    def derive(self, dst: str, value: Any, why: str) -> None:
        self.put(dst, value)
        self.report.derived[dst] = why

    # ------------------------------------------------------------------ reading the foreign file
    def check_keys(self, node: Any, allowed, path: str) -> dict:
        """`node` as a mapping ({} for None); a key not in `allowed` is an error with the nearest allowed key."""
        if node is None:
            return {}
        if not isinstance(node, dict):
            raise self.error(path, f"expected a mapping, got {node!r}")
        for key in node:
            if key not in allowed:
                raise self.error(f"{path}.{key}", f"unknown {self.foreign} key{suggest_name(str(key), list(allowed))}")
        return node

    def copy_tree(self, src: str, value: Any, dst: str) -> None:
        """Record a free-form subtree as mapped leaf by leaf (lists of one-key mappings are walked as [i].Name)."""
        if isinstance(value, dict) and value:
            for k, v in value.items():
                self.copy_tree(f"{src}.{k}", v, f"{dst}.{k}")
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                self.copy_tree(f"{src}[{i}]", v, f"{dst}[{i}]")
        else:
            self.report.mapped[src] = dst
