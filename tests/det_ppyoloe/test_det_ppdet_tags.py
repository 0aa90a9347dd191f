"""ppdet YAML object tags (!PiecewiseDecay, !LinearWarmup, !CosineDecay, !ExpWarmup, any !Name ppdet registers):
parsed; PP-YOLOE configs map them to our schedules (equal, step by step, to ppdet's own LR scheduler); other
architectures end in one line naming them."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from paddle_recipes.compat.ppdet import (PpdetLoader, import_ppdet_config, load_ppdet_yaml, ppdet_config_translator,
                                         translate_ppdet_config)
from paddle_recipes.config import ConfigError, load_config
from paddle_recipes.tasks.det_ppyoloe.config import DetConfig

CFG = Path(__file__).parent.parent / "fixtures" / "ppdet_configs"


def _load(path, overrides=()):
    return load_config(path, list(overrides), DetConfig, translators=(ppdet_config_translator,))


def test_loader_reads_tags_as_named_mappings():
    text = "a: !PiecewiseDecay {gamma: 0.1, milestones: [2, 3]}\nb: !Foo [1, 2]\nc: !Bar\nd: plain\n"
    assert yaml.load(text, Loader=PpdetLoader) == {
        "a": {"name": "PiecewiseDecay", "gamma": 0.1, "milestones": [2, 3]}, "b": {"name": "Foo", "args": [1, 2]},
        "c": {"name": "Bar"}, "d": "plain"}
    with pytest.raises(yaml.YAMLError, match="unknown tag"):
        yaml.load("a: !not-a-name 1\n", Loader=PpdetLoader)
    with pytest.raises(yaml.YAMLError):  # python tags stay refused: the loader is a SafeLoader
        yaml.load("a: !!python/object/apply:os.system ['true']\n", Loader=PpdetLoader)


@pytest.mark.parametrize("path,arch,where", [
    ("yolov3/yolov3_darknet53_270e_coco.yml", "YOLOv3 (backbone: DarkNet, neck: YOLOv3FPN, yolo_head: YOLOv3Head",
     "yolov3_darknet53.yml"),
    ("picodet/picodet_s_320_coco_lcnet.yml", "PicoDet (backbone: LCNet, neck: LCPAN, head: PicoHeadV2)",
     "picodet_v2.yml")])
def test_other_architectures_end_in_one_line_naming_them(path, arch, where):
    with pytest.raises(ConfigError) as err:
        _load(CFG / path)
    msg = str(err.value)
    assert "\n" not in msg and f"architecture: {arch}" in msg and "is not built here" in msg, msg
    assert f"{where}: ppdet key architecture" in msg  # the file that set it


def test_tag_form_translates_like_the_name_form():
    name_form = import_ppdet_config(CFG / "ppyoloe" / "ppyoloe_plus_crn_s_80e_coco.yml")
    tag_form = import_ppdet_config(CFG / "ppyoloe" / "ppyoloe_plus_crn_s_80e_coco_tags.yml")
    assert tag_form.config["Optimizer"] == name_form.config["Optimizer"]
    assert (tag_form.config["Optimizer"]["schedule"], tag_form.config["Optimizer"]["warmup_epochs"]) == ("cosine", 5.0)
    strip = lambda c: {k: v for k, v in c.items() if k != "Global"}  # noqa: E731  (output_dir has the file name)
    assert strip(tag_form.config) == strip(name_form.config)
    cfg = _load(CFG / "ppyoloe" / "ppyoloe_plus_crn_s_80e_coco_tags.yml", ["Global.pretrained_model=null"])
    assert (cfg.Optimizer.schedule, cfg.Optimizer.warmup_epochs, cfg.Global.pretrained_model) == ("cosine", 5.0, "")


def test_piecewise_and_exp_warmup_map_to_our_schedule():
    imp = import_ppdet_config(CFG / "ppyoloe" / "ppyoloe_plus_crn_s_piecewise.yml")
    o = imp.config["Optimizer"]
    assert (o["schedule"], o["milestone_epochs"], o["lr_factors"], o["warmup_epochs"]) == (
        "piecewise", [32.0, 36.0], [0.1, 0.01], 2.0)  # scalar gamma g: g / 10**i, as ppdet
    assert "LearningRate.ExpWarmup" in imp.approximated
    cfg = _load(CFG / "ppyoloe" / "ppyoloe_plus_crn_s_piecewise.yml")
    assert (cfg.Global.epochs, cfg.Optimizer.lr) == (40, 0.002)


def test_piecewise_schedule_equals_ppdets_own_step_by_step():
    """ppdet's LearningRate(PiecewiseDecay + LinearWarmup from 0) and ours give the same lr at every step."""
    pytest.importorskip("ppdet", reason="paddledet not installed (.ci/setup_test_env.sh installs it)")
    from ppdet.optimizer.optimizer import LearningRate, LinearWarmup, PiecewiseDecay

    from paddle_recipes.train.optim import OptimizerConfig, build_lr_scheduler, resolve_warmup

    steps_per_epoch, base = 10, 0.01
    for gamma, warm in ((0.1, 7), ([0.5, 0.05], 25)):
        theirs = LearningRate(base, [PiecewiseDecay(gamma=gamma, milestones=[3, 5]),
                                     LinearWarmup(steps=warm, start_factor=0.0)])(steps_per_epoch)
        sc = {"schedulers": [{"name": "PiecewiseDecay", "gamma": gamma, "milestones": [3, 5]},
                             {"name": "LinearWarmup", "start_factor": 0.0, "steps": warm}]}
        cfg, origin = load_ppdet_yaml(CFG / "ppyoloe" / "ppyoloe_plus_crn_s_piecewise.yml")
        cfg["LearningRate"] = {"base_lr": base, **sc}
        opt = translate_ppdet_config(cfg, origin).config["Optimizer"]
        ours = build_lr_scheduler(resolve_warmup(OptimizerConfig(**opt), steps_per_epoch), 80)
        got, want = [], []
        for _ in range(80):
            got.append(ours.get_lr())
            want.append(theirs.get_lr())
            ours.step()
            theirs.step()
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_broken_yaml_is_one_line_naming_file_and_line(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("architecture: YOLOv3\nYOLOv3:\n  backbone: [CSPResNet\n")
    with pytest.raises(ConfigError) as err:
        _load(bad)
    assert "\n" not in str(err.value) and "bad.yml" in str(err.value) and "line" in str(err.value), str(err.value)
