"""Typed YAML config: unknown keys are rejected with a suggestion; -o overrides are typed."""
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from paddle_recipes.config import ConfigError, load_config, to_dict

REPO_CONFIGS = Path(__file__).resolve().parents[2] / "recipes" / "configs"


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
class Op:
    name: str = ""
    limit_side_len: int = 736


@dataclass
class Free:
    """Values of the shapes -o must take: a list of sections, a free-form mapping, a list of strings."""
    ops: list[Op] = field(default_factory=list)
    backbone: dict = field(default_factory=dict)
    opt: list[str] = field(default_factory=list)


@dataclass
class Cfg:
    Global: Global = field(default_factory=Global)
    Train: Train = field(default_factory=Train)
    Free: Free = field(default_factory=Free)


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


def _foreign(raw, path):
    """A translator of files with a `legacy_epochs` key (others: None = not mine)."""
    if "legacy_epochs" not in raw:
        return None
    return {"Global": {"epochs": raw["legacy_epochs"] * 2, "name": path.stem}}, [f"{path.name}: legacy_epochs doubled"]


def test_config_translators_supply_the_base_then_overrides_apply(tmp_path):
    notes = []
    p = _write(tmp_path, "legacy_epochs: 4\n")
    cfg = load_config(p, ["Global.lr=0.5"], Cfg, translators=(_foreign,), notes=notes)
    assert (cfg.Global.epochs, cfg.Global.name, cfg.Global.lr) == (8, "c", 0.5)
    assert notes == ["c.yml: legacy_epochs doubled"]
    # -o wins over the translated value
    assert load_config(p, ["Global.epochs=3"], Cfg, translators=(_foreign,)).Global.epochs == 3
    # a native file is left to the schema (the translator says None); without a translator the key is rejected
    native = tmp_path / "n.yml"
    native.write_text("Global: {epochs: 5}\n")
    notes = []
    assert load_config(native, [], Cfg, translators=(_foreign,), notes=notes).Global.epochs == 5 and notes == []
    with pytest.raises(ConfigError, match="unknown key 'legacy_epochs'"):
        load_config(p, [], Cfg)


def test_override_into_a_mapping_or_name_field():
    from paddle_recipes.tasks.det_ppyoloe.config import DetConfig

    cfg = load_config(None, ["Architecture.normalize=ppyoloe_plus"], DetConfig)
    assert (cfg.Architecture.normalize.mean, cfg.Architecture.normalize.std) == ([0.0] * 3, [1.0] * 3)
    cfg = load_config(None, ["Architecture.normalize.is_scale=false"], DetConfig)
    assert cfg.Architecture.normalize.is_scale is False and cfg.Architecture.normalize.std == [0.229, 0.224, 0.225]
    with pytest.raises(ConfigError, match="unknown name 'plus'; valid names: imagenet, ppyoloe_plus"):
        load_config(None, ["Architecture.normalize=plus"], DetConfig)
    with pytest.raises(ConfigError, match="did you mean 'mean'"):
        load_config(None, ["Architecture.normalize.meen=[0, 0, 0]"], DetConfig)


def test_overrides_take_yaml_flow_lists_and_mappings():
    """-o values are YAML, flow collections included (PaddleOCR's -o: yaml.load of the value), typed as the file's."""
    cfg = load_config(None, ["Free.ops=[{name: DetResizeForTest, limit_side_len: 960}, {name: x}]",
                             "Free.backbone={name: PPLCNetV3, scale: 0.95}", "Global.image_shape=[3, 32, 100]"],
                      Cfg)
    assert cfg.Free.ops == [Op("DetResizeForTest", 960), Op("x", 736)]
    assert cfg.Free.backbone == {"name": "PPLCNetV3", "scale": 0.95} and cfg.Global.image_shape == [3, 32, 100]
    with pytest.raises(ConfigError, match=r"^Free.ops\[0\].limit_side_len: expected an integer, got 'big' "):
        load_config(None, ["Free.ops=[{limit_side_len: big}]"], Cfg)
    with pytest.raises(ConfigError, match=r"unknown key 'Free.ops\[0\].limit'; did you mean 'limit_side_len'"):
        load_config(None, ["Free.ops=[{limit: 960}]"], Cfg)
    # a list of -o texts (ocr_system's Det.opt): an item that is no YAML itself is kept as written
    cfg = load_config(None, ["Free.opt=[PostProcess.unclip_ratio=2.0, Eval.transform={limit_side_len: 960, "
                             "limit_type: max}, 'Global.x=[1, 2]']"], Cfg)
    assert cfg.Free.opt == ["PostProcess.unclip_ratio=2.0", "Eval.transform={limit_side_len: 960, limit_type: max}",
                            "Global.x=[1, 2]"]
    # text that is no YAML stays text, but a broken flow collection is one line naming the override
    assert load_config(None, ["Global.name=@home"], Cfg).Global.name == "@home"
    for text, where in (("Free.backbone={name: x", "column 9"), ("Free.opt=[a, {b: 1]", "column 10")):
        with pytest.raises(ConfigError) as err:
            load_config(None, [text], Cfg)
        assert str(err.value).startswith(f"override '{text}': invalid YAML flow value: ") and where in str(err.value)


def test_a_later_override_wins_and_each_replacement_is_one_note(tmp_path):
    from paddle_recipes.config import OverrideNote

    p = _write(tmp_path, "Global:\n  epochs: 3\n  name: run\nTrain:\n  label_files: [a.txt]\n")
    notes = []
    cfg = load_config(p, ["Global.epochs=5", "Train.label_files=[b.txt, c.txt]", "Global.epochs=7",
                          "Global.name=run", "Global.lr=0.5"], Cfg, notes=notes)
    assert (cfg.Global.epochs, cfg.Train.label_files, cfg.Global.lr) == (7, ["b.txt", "c.txt"], 0.5)
    assert notes == ["-o Global.epochs=5 overrides the config's value 3",
                     "-o Train.label_files=[b.txt, c.txt] overrides the config's value ['a.txt']",
                     "-o Global.epochs=7 overrides the earlier -o Global.epochs=5"]  # same value / a new key: no note
    assert all(isinstance(n, OverrideNote) for n in notes)


def test_override_notes_are_logged_at_info_in_the_run_log(tmp_path):
    """What run_recipe writes to <output_dir>/<mode>.log: one INFO line per replaced value."""
    from paddle_recipes.cli import run_recipe
    from paddle_recipes.tasks.ocr_rec.config import RecConfig

    cfg = REPO_CONFIGS / "ocr_rec_smoke.yml"
    out = tmp_path / "out"
    got = run_recipe("t", RecConfig, {"train": lambda c, info: c.Global.epochs}, argv=[
        "-c", str(cfg), "-o", f"Global.output_dir={out}", "Global.epochs=4"])
    assert got == 4
    line = [ln for ln in (out / "train.log").read_text().splitlines() if "-o Global.epochs=4" in ln]
    assert len(line) == 1 and " INFO t: -o Global.epochs=4 overrides the config's value 2" in line[0], line
