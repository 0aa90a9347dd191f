"""The shared command line of every recipe: `-c config.yml -o key=value --mode train|eval|...`.

    def main(argv=None):
        return run_recipe("ocr_rec", RecConfig, MODES, default_config="recipes/configs/ocr_rec.yml", argv=argv)

    if __name__ == "__main__":
        exit_on_user_error(main, "ocr_rec", extra_errors=(LabelFileError,))

run_recipe parses the config (typed, unknown keys rejected), sets up the process group, device,
seeds and rank-aware logging (output_dir/<mode>.log), saves the resolved config next to the
outputs and calls `modes[mode](cfg, info)`. The config must have a `Global` section with
`seed`, `device` and `output_dir`.
"""
from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from . import distributed as dist_utils
from .checkpoint import CheckpointError
from .config import ConfigError, add_config_args, check_image_shape, check_number, dump_config, flatten_opts, load_config
from .data import DataError
from .trainer import NonFiniteError

USER_ERRORS: tuple = (ConfigError, CheckpointError, DataError, NonFiniteError, FileNotFoundError)
DEVICE_KINDS = ("cpu", "gpu", "xpu", "npu", "mlu", "dcu")


@dataclass
class GlobalConfig:
    """The run settings every recipe's `Global:` section shares (recipes subclass it to add their own).

    seed: base seed (each rank adds its rank). device: None = this rank's GPU if any, else CPU.
    epochs; max_steps: stop after this many optimizer steps (0 = no cap). output_dir: logs, config,
    checkpoints, exports. log_every: optimizer steps between log lines. eval_every_epochs /
    save_every_epochs: 0 disables. keep_last: checkpoints kept. resume: checkpoint folder/root to
    continue from ("auto" = output_dir/checkpoints when it exists). weights: eval/predict/export
    source ("" = output_dir/checkpoints, best if present). use_ema_weights: prefer the EMA weights there.
    save_every_steps: also checkpoint every this many optimizer steps (0 = only at epoch ends).
    max_nonfinite_steps: stop with an error after this many optimizer steps in a row skipped for
    inf/nan gradients (0 = never stop). All numbers are checked when the config is built.
    """

    seed: int = 42
    device: Optional[str] = None
    epochs: int = 10
    max_steps: int = 0
    output_dir: str = "output/run"
    log_every: int = 20
    eval_every_epochs: int = 1
    save_every_epochs: int = 1
    keep_last: int = 2
    resume: str = ""
    weights: str = ""
    use_ema_weights: bool = True
    save_every_steps: int = 0
    max_nonfinite_steps: int = 20

    def __post_init__(self):
        check_number("Global.epochs", self.epochs, low=1)
        for key in ("max_steps", "eval_every_epochs", "save_every_epochs", "save_every_steps", "keep_last",
                    "max_nonfinite_steps"):
            check_number(f"Global.{key}", getattr(self, key), low=0)
        check_number("Global.log_every", self.log_every, low=1)
        if not str(self.output_dir).strip():
            raise ConfigError("Global.output_dir is empty: logs and checkpoints need a folder")
        if hasattr(self, "image_shape"):  # recipes with an image input add Global.image_shape
            check_image_shape("Global.image_shape", self.image_shape)
        if self.device:
            kind, _, index = str(self.device).partition(":")
            if kind not in DEVICE_KINDS or (index and not index.isdigit()) or (_ and not index):
                raise ConfigError(f"Global.device {self.device!r} is not a device: use one of "
                                  f"{', '.join(DEVICE_KINDS)} (optionally with ':N', e.g. gpu:1)")


def run_recipe(name: str, schema: type, modes: dict[str, Callable], default_config: str | None = None,
               argv: list[str] | None = None, default_mode: str = "train",
               check: Callable[[Any], None] | None = None, description: str | None = None) -> Any:
    """Parse args, build the typed config, set up distributed + logging, run the chosen mode."""
    parser = argparse.ArgumentParser(prog=name, description=description or f"{name} recipe")
    add_config_args(parser, default_config=default_config)
    parser.add_argument("--mode", choices=sorted(modes), default=default_mode)
    args = parser.parse_args(argv)
    cfg = load_config(args.config, flatten_opts(args.opt), schema)
    if check is not None:
        check(cfg)
    g = cfg.Global
    info = dist_utils.setup(seed=g.seed, device=g.device or None)
    out = Path(g.output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"Global.output_dir {str(out)!r}: cannot create the folder ({exc.strerror or exc})") from None
    dist_utils.setup_logging(info, log_file=str(out / f"{args.mode}.log"))
    if info.is_main:
        dump_config(cfg, out / ("config.yml" if args.mode == "train" else f"config.{args.mode}.yml"))
    logging.getLogger(name).info("%s --mode %s: world_size %d, device %s", name, args.mode, info.world_size,
                                 info.device)
    return modes[args.mode](cfg, info)


def exit_on_user_error(main: Callable[[], Any], name: str, extra_errors: tuple = ()) -> None:
    """Run `main()`; a user error (bad config key, missing file, bad data) exits 2 with one clear line."""
    try:
        main()
    except USER_ERRORS + tuple(extra_errors) as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        sys.exit(2)
