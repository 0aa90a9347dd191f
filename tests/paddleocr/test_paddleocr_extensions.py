"""paddle-recipes extension keys on top of REAL PaddleOCR rec YAMLs (compat.paddleocr.EXTENSION_KEYS, issue 24):
our speedups reached with -o only (blank prior, warmup in steps, length curriculum, EMA, metric cadence, loader
settings); each takes effect in the built config, model and schedule; they are listed in ONE log line; a
misspelled one is a one-line error with the nearest valid key."""
from __future__ import annotations

import math

import numpy as np
import pytest

from paddle_recipes.compat.paddleocr import translate_rec_config
from paddle_recipes.config import ConfigError, load_config, load_yaml
from paddle_recipes.train.optim import build_lr_scheduler, resolve_warmup
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.tasks.ocr_rec.charset import CharDict
from paddle_recipes.tasks.ocr_rec.config import CurriculumSamplerConfig
from paddle_recipes.tasks.ocr_rec.models import build_rec_model
from test_paddleocr_recipe import DICT_A, FIXTURES, REPO, data_opts, fresh_logging, narrow, run, write_label_set

R34, V5M = "rec_r34_vd_none_bilstm_ctc.yml", "PP-OCRv5/PP-OCRv5_mobile_rec.yml"
DICT = REPO / "datasets" / "ocr_rec" / "ch_hanzi_100.txt"
EXT = ["Architecture.Head.init_blank_prob=0.8", "Optimizer.lr.warmup_steps=7", "Train.sampler.name=LengthCurriculumSampler",
       "Train.sampler.warm_steps=5", "Train.sampler.short_len=2", "EMA.enable=true", "EMA.decay=0.995",
       "Global.cal_metric_during_train=50", "Train.loader.use_buffer_reader=false"]


def load(name: str, opts: list[str]):
    notes: list[str] = []
    cfg = load_config(FIXTURES / name, [f"Global.character_dict_path={DICT}", *opts], OcrRec.Config,
                      translators=OcrRec.config_translators, notes=notes)
    return cfg, notes


def one_line(notes: list[str], head: str) -> str:
    lines = [n for n in notes if n.startswith(head)]
    assert len(lines) == 1, notes
    return lines[0]


@pytest.mark.parametrize("name", [R34, V5M])
def test_extension_keys_reach_the_config_and_are_listed_once(name):
    cfg, notes = load(name, EXT)
    assert cfg.Architecture.Head.init_blank_prob == 0.8
    assert cfg.Optimizer.warmup_steps == 7 and cfg.Optimizer.warmup_epochs == 0
    assert isinstance(cfg.Train.sampler, CurriculumSamplerConfig)
    assert (cfg.Train.sampler.warm_steps, cfg.Train.sampler.short_len) == (5, 2)
    assert cfg.EMA.enable is True and cfg.EMA.decay == 0.995
    assert cfg.Global.metric_every == 50 and cfg.Train.loader.use_buffer_reader is False
    line = one_line(notes, "paddle-recipes extensions: ")
    for key in ("Architecture.Head.init_blank_prob=0.8", "Optimizer.lr.warmup_steps=7",
                "Train.sampler.name=LengthCurriculumSampler", "Train.sampler.warm_steps=5", "Train.sampler.short_len=2",
                "EMA.enable=True", "EMA.decay=0.995", "Global.cal_metric_during_train=50",
                "Train.loader.use_buffer_reader=False"):
        assert key in line, (key, line)
    no_effect = one_line(notes, "no effect here: ")
    if name == V5M:  # the file's warmup_epoch and MultiScaleSampler keys are replaced, each said once
        for key in ("Optimizer.lr.warmup_epoch", "Train.sampler.scales", "Train.sampler.first_bs"):
            assert f" {key}" in no_effect, (key, no_effect)
        assert not any("warmup_epoch" in n for n in notes if n.startswith("not exactly as PaddleOCR"))
    # without extensions: the file as PaddleOCR trains it, and no extension line
    plain, plain_notes = load(name, [])
    assert plain.Architecture.Head.init_blank_prob is None and not plain.EMA.enable
    assert not any(n.startswith("paddle-recipes extensions") for n in plain_notes)
    assert plain.Global.metric_every == 1 and plain.Optimizer.warmup_steps == 0


def test_every_extension_key_is_accounted_for_in_the_report():
    raw = load_yaml((FIXTURES / V5M).read_text(encoding="utf-8"), V5M)
    raw["Architecture"]["Head"]["init_blank_prob"] = 0.8
    raw["Optimizer"]["lr"]["warmup_steps"] = 7
    raw["Train"]["sampler"].update(name="LengthCurriculumSampler", warm_steps=5)
    raw["Train"]["loader"]["timeout"] = 60
    raw["EMA"] = {"enable": True}
    _, report = translate_rec_config(raw, "v5m")
    for key in ("Architecture.Head.init_blank_prob", "Optimizer.lr.warmup_steps", "Train.sampler.name",
                "Train.sampler.warm_steps", "Train.loader.timeout", "EMA.enable"):
        assert report.accounts_for(key) and key in report.extensions, key
    assert report.no_effect["Optimizer.lr.warmup_epoch"].startswith("replaced by Optimizer.lr.warmup_steps")


@pytest.mark.parametrize("name,layer", [(R34, "head.fc.bias"), (V5M, "head.ctc_head.fc.bias")])
def test_blank_prior_sets_the_ctc_output_bias_to_the_log_prior(name, layer):
    """The CTC output bias (MultiHead: its CTC branch) is [log(p (C-1) / (1-p)), 0, ..., 0]: softmax(bias)[0] == p."""
    cfg, _ = load(name, ["Architecture.Head.init_blank_prob=0.8"])
    n = CharDict.from_file(str(DICT), use_space_char=cfg.Global.use_space_char).num_classes
    bias = build_rec_model(cfg.Architecture, n, 3).state_dict()[layer].numpy()
    assert bias.shape == (n,) and np.all(bias[1:] == 0.0)
    np.testing.assert_allclose(bias[0], math.log(0.8 * (n - 1) / 0.2), rtol=1e-6)  # float32 of the exact value
    p = np.exp(bias.astype(np.float64) - bias.max())
    np.testing.assert_allclose(p[0] / p.sum(), 0.8, rtol=1e-6)
    plain, _ = load(name, [])
    assert np.any(build_rec_model(plain.Architecture, n, 3).state_dict()[layer].numpy()[1:] != 0.0)  # PaddleOCR's init


@pytest.mark.parametrize("name", [R34, V5M])
def test_warmup_steps_is_the_schedules_warmup(name):
    """lr rises linearly from 0 to the file's learning_rate over exactly N optimizer steps (the file's warmup_epoch,
    if any, is replaced)."""
    cfg, _ = load(name, ["Optimizer.lr.warmup_steps=8"])
    opt = resolve_warmup(cfg.Optimizer, steps_per_epoch=100)
    sched = build_lr_scheduler(opt, total_steps=1000)
    lrs = []
    for _ in range(10):
        lrs.append(sched.get_lr())
        sched.step()
    peak = cfg.Optimizer.lr
    np.testing.assert_allclose(lrs[:9], [peak * i / 8 for i in range(9)], rtol=1e-9, atol=1e-12)
    assert lrs[9] <= peak


@pytest.mark.parametrize("opt,match", [
    ("Optimizer.lr.warmup_step=100", "Optimizer.lr.warmup_step: unknown PaddleOCR key; did you mean 'warmup_steps'?"),
    ("Architecture.Head.init_blank_pro=0.8", "unknown key 'Architecture.Head.init_blank_pro'; did you mean "
                                             "'init_blank_prob'?"),
    ("Train.sampler.warm_step=5", "Train.sampler.warm_step: unknown PaddleOCR key; did you mean 'warm_steps'?"),
    ("Train.sampler.name=LengthCurriculum", "did you mean 'LengthCurriculumSampler'?"),
    ("Train.loader.use_buffer_readr=false", "did you mean 'use_buffer_reader'?"),
    ("EMA.decya=0.99", "unknown key 'EMA.decya'; did you mean 'decay'?"),
    ("Optimizer.lr.warmup_steps=1.5", "Optimizer.lr.warmup_steps: 1.5: expected an integer >= 0"),
    ("Architecture.Head.init_blank_prob=1.5", "Architecture.Head.init_blank_prob must be in \\(0, 1\\)"),
])
def test_misspelled_or_bad_extension_key_is_one_line_naming_it(opt, match):
    with pytest.raises(ConfigError, match=match) as exc:
        load(V5M, [opt])
    assert "\n" not in str(exc.value)


def test_curriculum_keys_need_the_curriculum_sampler():
    with pytest.raises(ConfigError, match="Train.sampler.warm_steps: only Train.sampler.name LengthCurriculumSampler"):
        load(V5M, ["Train.sampler.warm_steps=5"])


def test_recipe_trains_a_real_yaml_with_the_extensions(tmp_path):
    """PP-OCRv5 mobile as written (width 96 via -o) + every extension: 2 steps through the recipe's CLI path; the
    log names the extensions once, the curriculum sampler feeds the steps, EMA is on with that decay, the lr warms
    up over 4 steps, the train accuracy is not computed (every 50 steps)."""
    data = write_label_set(tmp_path / "data", DICT_A)
    out = tmp_path / "out"
    ext = ["Architecture.Head.init_blank_prob=0.8", "Optimizer.lr.warmup_steps=4",
           "Train.sampler.name=LengthCurriculumSampler", "Train.sampler.warm_steps=1", "Train.sampler.short_len=3",
           "EMA.enable=true", "EMA.decay=0.995", "Global.cal_metric_during_train=50",
           "Train.loader.use_buffer_reader=false", "Train.loader.batch_size_per_card=4"]
    summary = run(["-c", str(FIXTURES / V5M), "-o", *data_opts(data, out, V5M), "Global.use_gpu=false",
                   *narrow(V5M), *ext])
    assert summary["global_step"] == 2 and all(np.isfinite(h["loss"]) for h in summary["history"])
    assert summary["ema"] is True and summary["config"]["EMA"]["decay"] == 0.995
    log = (out / "train.log").read_text(encoding="utf-8")
    assert len([ln for ln in log.splitlines() if "paddle-recipes extensions: " in ln]) == 1
    assert "length curriculum: lines <= 3 chars for the first 1 batches" in log
    assert "length curriculum: warm phase over at step 1" in log
    peak = summary["config"]["Optimizer"]["lr"]
    # the lr logged after step k (the scheduler has stepped k times): k / 4 of the file's learning_rate
    np.testing.assert_allclose([h["lr"] for h in summary["history"]], [peak / 4, peak / 2], rtol=1e-6)
    assert all("acc" not in h for h in summary["history"])
    fresh_logging()


def test_misspelled_extension_key_exits_2_with_one_line_through_the_cli(tmp_path, capsys):
    fresh_logging()
    with pytest.raises(SystemExit) as exc:
        OcrRec.cli(["-c", str(FIXTURES / V5M), "-o", f"Global.save_model_dir={tmp_path / 'out'}",
                    "Optimizer.lr.warmup_step=100"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ocr_rec: error: Optimizer.lr.warmup_step: unknown PaddleOCR key; "
                                               "did you mean 'warmup_steps'?"), err
