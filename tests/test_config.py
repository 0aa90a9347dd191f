"""Typed YAML config: unknown keys are rejected with a suggestion; -o overrides are typed."""
from dataclasses import dataclass, field

import pytest

from paddle_recipes.config import ConfigError, load_config, to_dict


@dataclass
class Loader:
    num_workers: int = 0
    use_shared_memory: bool = True


@dataclass
class Global:
    epochs: int = 10
    lr: float = 0.001
    name: str = "x"
    image_shape: list[int] = field(default_factory=lambda: [3, 48, 320])


@dataclass
class Train:
    loader: Loader = field(default_factory=Loader)
    label_files: list[str] = field(default_factory=list)


@dataclass
class Cfg:
    Global: Global = field(default_factory=Global)
    Train: Train = field(default_factory=Train)


def _write(tmp_path, text):
    p = tmp_path / "c.yml"
    p.write_text(text, encoding="utf-8")
    return p


def test_unknown_key_names_key_and_suggests(tmp_path):
    p = _write(tmp_path, "Global:\n  epoch: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config(p, [], Cfg)
    msg = str(err.value)
    assert "Global.epoch" in msg and "did you mean 'Global.epochs'" not in msg  # message names the path...
    assert "did you mean 'epochs'" in msg and str(p) in msg


def test_unknown_section_and_override_key():
    with pytest.raises(ConfigError, match=r"unknown key 'Trian'.*did you mean 'Train'"):
        load_config(None, ["Trian.loader.num_workers=2"], Cfg)
    with pytest.raises(ConfigError, match=r"Train.loader.num_worker'.*did you mean 'num_workers'"):
        load_config(None, ["Train.loader.num_worker=2"], Cfg)


def test_overrides_and_types(tmp_path):
    p = _write(tmp_path, "Global:\n  epochs: 3\n  lr: 1e-3\nTrain:\n  label_files: [a.txt]\n")
    cfg = load_config(p, ["Global.epochs=5", "Train.loader.use_shared_memory=false", "Global.image_shape=[3,32,100]"], Cfg)
    assert cfg.Global.epochs == 5 and cfg.Global.lr == pytest.approx(1e-3)
    assert cfg.Train.loader.use_shared_memory is False
    assert cfg.Global.image_shape == [3, 32, 100] and cfg.Train.label_files == ["a.txt"]
    assert to_dict(cfg)["Global"]["epochs"] == 5


def test_type_errors_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"Global.epochs: expected an integer"):
        load_config(None, ["Global.epochs=abc"], Cfg)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yml", [], Cfg)
    with pytest.raises(ConfigError, match="key.path=value"):
        load_config(None, ["Global.epochs"], Cfg)
