"""The checks a recipe run can make before paddle is imported (``import paddle`` takes seconds: 6-12 s on 2 shared
cores): the weights' inference model files and the run's dict, refused in one line and exit 2 within about a second.

    stopping.run_entry("paddle_recipes.recipes.ocr_rec", preflight="paddle_recipes.recipes.preflight")
    # -> check("paddle_recipes.recipes.ocr_rec", argv), then the recipe module (and paddle) is imported

Nothing here imports paddle (a test checks), and nothing is a copy: the files are checked by the importer's own
``inference_files.check_inference_files`` and the dict by ``charset.run_dict``, the functions the recipe calls again
after paddle's import (``Recipe.check_weights_files``, ``OcrRec.charset``); the weights key is picked by
``named_weights``, which ``Recipe.named_weights`` calls too. The config is read raw (``config.read_config_text`` and
``config.load_yaml``, then the ``-o`` of the few Global keys used here). The typed schemas of ocr_rec / ocr_det /
ocr_cls / det_ppyoloe / ernie_multitask import paddle (their Architecture sections are checked against the network
classes' signatures in nn.catalog, and their modules build paddle layers), so whatever the raw read cannot settle
(an unknown key, a key of the wrong type, both init keys set) is left to those recipes, which report it in their own
words. The OCR system's schema imports no paddle: its config is checked whole, by the recipe's own ``load_config``
(Entry.hook, system_problems). The pre-flight only ever adds an earlier exit for a fault the recipe would report.

One ``Entry`` per recipe (RECIPES): which modes read the Global weights, whether a dict is read, or its own hook.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import yaml

from ..assets import resolve_path
from ..config import (ConfigError, add_config_args, flatten_opts, load_config, load_yaml, parse_override,
                      read_config_text)
from ..formats.inference_files import InferenceFormatError, check_inference_files, is_inference_model
from ..tasks.ocr_rec.charset import CharDictError, run_dict
from ..tasks.ocr_system.config import SystemConfig, system_runs

__all__ = ["check", "named_weights", "inference_weights_problem", "Preflight", "Entry", "RECIPES"]

WEIGHTS_KEYS = ("weights", "checkpoints", "pretrained_model")  # Global keys naming eval/predict/export weights, in order
GLOBAL_KEYS = (*WEIGHTS_KEYS, "character_dict_path", "use_space_char")
MODES = ("train", "eval", "predict", "export")


def named_weights(weights, checkpoints, pretrained_model) -> list[tuple[str, str]]:
    """(key, path) of the Global weights keys that are set, in WEIGHTS_KEYS order (empty, null and "auto" are
    unset)."""
    named = {"weights": weights, "checkpoints": checkpoints, "pretrained_model": pretrained_model}
    values = ((key, named[key] or "") for key in WEIGHTS_KEYS)
    return [(key, value) for key, value in values if isinstance(value, str) and value and value != "auto"]


def inference_weights_problem(path: str, origin: str = "") -> Optional[str]:
    """When ``path`` is an inference model: the one-line problem its files have as the importer reads them
    (check_inference_files: caps, FIFOs, program, .info, every .pdiparams header; data skipped), "<origin>: <why>";
    None when fine or not an inference model (other weights are checked as they load)."""
    if not path or not is_inference_model(path):
        return None
    try:
        check_inference_files(path)
    except InferenceFormatError as exc:
        return f"{origin}: {exc}" if origin else str(exc)
    return None


class Preflight:
    """The raw Global keys of one run (``g``: key -> value as the YAML and the -o give them) and its mode."""

    def __init__(self, g: Dict[str, object], mode: str):
        self.g, self.mode = g, mode

    def weights(self) -> Tuple[str, str]:
        """(path, origin) of the weights the mode reads first: train's init weights (Global.pretrained_model or
        Global.weights; both set is the recipe's error), else the first named weights key (eval / predict /
        export); ("", "") when none."""
        g = self.g
        if self.mode == "train":
            init = [v for v in (g.get("pretrained_model"), g.get("weights")) if isinstance(v, str) and v]
            return (init[0], "") if len(init) == 1 else ("", "")
        named = named_weights(g.get("weights"), g.get("checkpoints"), g.get("pretrained_model"))
        if not named or named[0][1].startswith(("http://", "https://")):
            return "", ""
        key, value = named[0]
        return value, f"Global.{key}={value}"

    def problems(self, with_dict: bool) -> list[str]:
        path, origin = self.weights()
        found = [inference_weights_problem(path, origin)]
        dict_path, space = self.g.get("character_dict_path"), self.g.get("use_space_char", False)
        if with_dict and isinstance(dict_path, str) and isinstance(space, bool):
            named = named_weights(self.g.get("weights"), self.g.get("checkpoints"), self.g.get("pretrained_model"))
            try:
                run_dict(dict_path, (value for _, value in named), use_space_char=space)
            except CharDictError as exc:
                found.append(str(exc))
        return [p for p in found if p]


def raw_config_globals(config: Optional[str], opts: Sequence) -> Optional[Dict[str, object]]:
    """The raw Global keys of GLOBAL_KEYS after the config file ``config`` (None: none) and the -o ``opts``, or None
    when they cannot be read here (the recipe then says why, in its own words) or the file has no Global mapping
    (a foreign file, e.g. PaddleDetection's, whose keys a translator maps: not read here)."""
    g: Dict[str, object] = {}
    try:
        if config:
            data = load_yaml(read_config_text(Path(config)), str(config), duplicates=[])
            section = data.get("Global") if isinstance(data, dict) else None
            if not isinstance(section, dict):
                return None
            g.update({k: v for k, v in section.items() if k in GLOBAL_KEYS})
        for text in flatten_opts(list(opts)):
            keys, value = parse_override(text)
            if len(keys) == 2 and keys[0] == "Global" and keys[1] in GLOBAL_KEYS:
                g[keys[1]] = value
    except (ConfigError, yaml.YAMLError, OSError, ValueError):
        return None
    return g


def command_line(argv: Sequence[str], default_config: Optional[str]) -> Optional[Tuple[Optional[str], list, str]]:
    """(config path resolved as the recipe resolves it, the -o list, the mode) of ``argv``, or None when argparse
    would refuse it (the recipe's parser prints that)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_config_args(parser, default_config=resolve_path(default_config) if default_config else None)
    parser.add_argument("--mode", default="train")
    try:
        args, _ = parser.parse_known_args(list(argv))
    except SystemExit:
        return None
    return (resolve_path(args.config) if args.config else None), flatten_opts(args.opt), args.mode


@dataclass(frozen=True)
class Entry:
    """The pre-flight of one recipe: its default config, its --mode choices (another one is argparse's error, left
    to the recipe), the modes whose run reads the Global weights first (Recipe.train / load_for_inference check
    them), whether it reads a character dict, and ``hook``: its own check, (entry, config, -o, mode) -> problems,
    in place of the Global weights one (a recipe whose typed schema imports no paddle checks it whole)."""
    default_config: Optional[str]
    modes: Tuple[str, ...] = MODES
    weights_modes: Tuple[str, ...] = MODES
    with_dict: bool = False
    hook: Optional[Callable[["Entry", Optional[str], list, str], List[str]]] = None

    def problems(self, config: Optional[str], opts: list, mode: str) -> List[str]:
        if self.hook is not None:
            return self.hook(self, config, opts, mode)
        g = raw_config_globals(config, opts) if mode in self.weights_modes else None
        return [] if g is None else Preflight(g, mode).problems(self.with_dict)


def system_problems(entry: Entry, config: Optional[str], opts: list, mode: str) -> List[str]:
    """ocr_system: its typed config (SystemConfig imports no paddle: config.load_config, the recipe's own first
    step, so the same line), then each run it loads (Rec, Det, Cls: system_runs) as that recipe's predict reads it."""
    try:
        cfg = load_config(config, opts, SystemConfig)
    except ConfigError as exc:
        return [str(exc)]
    found: List[str] = []
    for m, sub in system_runs(cfg, mode):
        g = raw_config_globals(resolve_path(m.config), m.run_opts()) if m.config else None
        found += [] if g is None else Preflight(g, "predict").problems(RECIPES[sub].with_dict)
    return found


# recipe -> its pre-flight
RECIPES: Dict[str, Entry] = {
    "ocr_rec": Entry("recipes/configs/ocr_rec.yml", with_dict=True),
    "ocr_det": Entry("recipes/configs/ocr_det.yml"),
    "ocr_cls": Entry("recipes/configs/ocr_cls.yml"),
    "ocr_system": Entry("recipes/configs/ocr_system.yml", ("predict", "eval"), hook=system_problems),
    "det_ppyoloe": Entry("recipes/configs/det_ppyoloe_tiny.yml"),
    # its train refuses every weights key (ConfigError): the weights are read by eval only
    "ernie_multitask": Entry(None, ("train", "eval"), weights_modes=("eval",)),
}


def check(module: str, argv: Optional[Sequence[str]] = None,
          report: Callable[[str], None] = lambda line: print(line, file=sys.stderr)) -> None:
    """The pre-flight of recipe ``module`` ("paddle_recipes.recipes.ocr_rec") on ``argv`` (None: sys.argv[1:]): a
    problem is reported as the recipe reports it ("<recipe>: error: <why>") and the process exits 2 before paddle
    is imported. A recipe without an entry in RECIPES, or a command line this cannot read, passes through."""
    name = module.rsplit(".", 1)[-1]
    if name not in RECIPES or os.environ.get("PADDLE_RECIPES_PREFLIGHT", "1") == "0":
        return
    entry = RECIPES[name]
    cmd = command_line(sys.argv[1:] if argv is None else argv, entry.default_config)
    if cmd is None or cmd[2] not in entry.modes:
        return
    problems = entry.problems(*cmd)
    if problems:
        report(f"{name}: error: {problems[0]}")
        sys.exit(2)
