"""Logic of the time-to-accuracy blocks (tasks.ocr ctc_init / curriculum / step, DenseConvRec, device defaults)
and the YAML keys that reach them; FLOPs counting of the benchmarks. No timings."""
from __future__ import annotations

import json
import math
import sys

import numpy as np
import paddle
import pytest

from conftest import REPO_ROOT, run_python
from paddle_recipes.checkpoint.format import load_checkpoint
from paddle_recipes.config import ConfigError, load_config
from paddle_recipes.runtime.device_defaults import choose_defaults
from paddle_recipes.runtime.distributed import DistInfo, set_cpu_threads_per_rank
from paddle_recipes.tasks.ocr_rec.charset import CharDict
from paddle_recipes.tasks.ocr_rec.config import CurriculumSamplerConfig, RecConfig, RecGlobal, SamplerConfig
from paddle_recipes.tasks.ocr_rec.ctc_init import blank_logit, frame_prior, init_ctc_blank_bias
from paddle_recipes.tasks.ocr_rec.curriculum import LengthCurriculumSampler
from paddle_recipes.data.skips import SkipStats
from paddle_recipes.tasks.ocr_rec.losses import CTCLoss
from paddle_recipes.nn import catalog
from paddle_recipes.tasks.ocr_rec.models import build_rec_model
from paddle_recipes.tasks.ocr_rec.recipe_data import build_train_loader
from paddle_recipes.tasks.ocr_rec.step import CtcTrainStep
from paddle_recipes.train.config import TrainLoaderConfig

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.harness.flops import count_flops  # noqa: E402

ARCH = {"Backbone": {"name": "LCNetRec", "scale": 0.25, "width_stride": 8}, "Neck": {"name": "Conv", "hidden_size": 16},
        "Head": {"name": "CTCHead"}}


def tiny_model(arch=ARCH, classes=11):
    paddle.seed(0)
    return build_rec_model(arch, classes)


# ------------------------------------------------------------------ CTC blank bias
@pytest.mark.parametrize("p,c", [(0.5, 2), (0.8, 101), (0.95, 6624)])
def test_blank_logit_gives_the_blank_probability(p, c):
    b = blank_logit(p, c)
    assert math.exp(b) / (math.exp(b) + (c - 1)) == pytest.approx(p)


def test_blank_logit_rejects_bad_probability():
    with pytest.raises(ValueError, match="blank_prob"):
        blank_logit(1.0, 10)


def test_frame_prior():
    assert frame_prior(4, 24) == pytest.approx(20 / 24)


def test_init_sets_the_softmax_blank_probability_of_the_model():
    m = tiny_model()
    init_ctc_blank_bias(m, blank_prob=0.8, scale_fc=0.0)  # fc weight 0: logits = bias exactly
    m.eval()
    probs = paddle.nn.functional.softmax(m(paddle.randn([2, 3, 32, 64])), axis=-1).numpy()
    np.testing.assert_allclose(probs[..., 0], 0.8, rtol=1e-5)
    np.testing.assert_allclose(probs[..., 1], 0.02, rtol=1e-4)


def test_head_key_sets_the_same_bias_as_the_functional_form():
    """Architecture.Head.init_blank_prob (the one YAML owner) == init_ctc_blank_bias on a plain model."""
    cfg = load_config(None, ["Architecture.Head.init_blank_prob=0.9"], RecConfig)
    keyed = build_rec_model(cfg.Architecture, 11)
    plain = tiny_model(classes=11)
    assert float(plain.head.bias.numpy()[0]) == 0.0
    b = init_ctc_blank_bias(plain, blank_prob=0.9)
    expect = np.zeros(11, dtype="float32")
    expect[0] = b
    np.testing.assert_allclose(keyed.head.bias.numpy(), expect, rtol=1e-6)
    assert b == pytest.approx(blank_logit(0.9, 11))
    with pytest.raises(ConfigError, match=r"Architecture.Head.init_blank_prob must be in \(0, 1\)"):
        load_config(None, ["Architecture.Head.init_blank_prob=1.5"], RecConfig)


# ------------------------------------------------------------------ train metric every N
def _batch(charset, b=2):
    label = np.zeros([b, 4], dtype="int32")
    label[:, :2] = [1, 2]
    return {"image": paddle.randn([b, 3, 32, 64]), "label": paddle.to_tensor(label),
            "length": paddle.to_tensor(np.full([b], 2, dtype="int64")), "text": [charset.decode_ids([1, 2])] * b}


@pytest.mark.parametrize("every,expect", [(1, [1, 2, 3, 4, 5, 6]), (3, [3, 6]), (0, [])])
def test_train_accuracy_only_every_n_calls(every, expect):
    charset = CharDict(list("abcdefghij"))
    m = tiny_model()
    step = CtcTrainStep(charset, SkipStats(), metric_every=every)
    got = [i for i in range(1, 7) if "acc" in step(m, _batch(charset))]
    assert got == expect and step.decodes == len(expect) and step.calls == 6


def test_train_step_loss_is_the_ctc_loss():
    charset = CharDict(list("abcdefghij"))
    m = tiny_model()
    m.eval()
    b = _batch(charset)
    ref = CTCLoss()(m(b["image"]), b["label"], b["length"])
    out = CtcTrainStep(charset, SkipStats(), metric_every=0)(m, b)
    assert float(out["loss"]) == pytest.approx(float(ref), rel=1e-6) and "acc" not in out


def test_train_step_rejects_negative_every():
    with pytest.raises(ValueError, match="metric_every"):
        CtcTrainStep(CharDict(list("ab")), SkipStats(), metric_every=-1)


@pytest.mark.parametrize("value,period", [(True, 1), (False, 0), (0, 0), (1, 1), (50, 50)])
def test_cal_metric_during_train_is_a_period(value, period):
    g = load_config(None, [f"Global.cal_metric_during_train={json.dumps(value)}"], RecConfig).Global
    assert g.metric_every == period and g.cal_metric_during_train == value


def test_cal_metric_during_train_rejects_bad_values():
    with pytest.raises(ConfigError, match="Global.cal_metric_during_train"):
        RecGlobal(cal_metric_during_train=-2)
    with pytest.raises(ConfigError, match="Global.cal_metric_during_train"):
        load_config(None, ["Global.cal_metric_during_train=often"], RecConfig)


# ------------------------------------------------------------------ length curriculum
LENGTHS = [2, 6, 3, 5, 2, 4, 6, 3, 2, 5, 6, 4, 3, 2, 6, 5] * 4  # 64 samples, 24 with <= 3 chars


def test_curriculum_short_then_all():
    s = LengthCurriculumSampler(LENGTHS, batch_size=8, warm_steps=5, short_len=3)
    batches = list(s) + list(s)  # two epochs of 8 batches
    assert len(batches) == 16 and all(len(b) == 8 for b in batches)
    assert all(LENGTHS[i] <= 3 for b in batches[:5] for i in b)
    assert any(LENGTHS[i] > 3 for b in batches[5:8] for i in b)
    assert sorted(i for b in batches[8:16] for i in b) == list(range(64))  # a full pass after the warm phase


def test_curriculum_ranks_split_each_global_batch():
    r0 = list(LengthCurriculumSampler(LENGTHS, 4, 3, 3, num_replicas=2, rank=0))
    r1 = list(LengthCurriculumSampler(LENGTHS, 4, 3, 3, num_replicas=2, rank=1))
    assert len(r0) == len(r1) == 8
    for a, b in zip(r0, r1):
        assert not set(a) & set(b)


def test_curriculum_resume_is_exact():
    ref = LengthCurriculumSampler(LENGTHS, 8, warm_steps=5, short_len=3)
    full = list(ref)
    first = LengthCurriculumSampler(LENGTHS, 8, warm_steps=5, short_len=3)
    it = iter(first)
    head = [next(it) for _ in range(3)]
    state = first.state_dict()
    again = LengthCurriculumSampler(LENGTHS, 8, warm_steps=5, short_len=3)
    again.set_state_dict(state)
    again.skip_next(3)
    assert head + list(again) == full


def test_curriculum_rejects_too_few_short_lines():
    with pytest.raises(ValueError, match="<= 1 chars"):
        LengthCurriculumSampler(LENGTHS, 8, warm_steps=5, short_len=1)


def test_curriculum_loader_names_the_keys_when_the_data_cannot_fill_a_short_batch():
    from types import SimpleNamespace

    from paddle_recipes.tasks.ocr_rec.curriculum import build_curriculum_loader

    data = SimpleNamespace(label_lengths=lambda: LENGTHS)
    info = SimpleNamespace(world_size=2, rank=0)
    with pytest.raises(ConfigError, match=r"Train.sampler \(LengthCurriculumSampler, short_len=1, warm_steps=5\) with "
                                          r"Train.loader.batch_size_per_card=8 on 2 process\(es\): only \d+ samples "
                                          r"have <= 1 chars: less than one global batch of 16"):
        build_curriculum_loader(data, CurriculumSamplerConfig(warm_steps=5, short_len=1),
                                SimpleNamespace(batch_size_per_card=8), info, seed=0)


def test_curriculum_is_chosen_by_train_sampler_name():
    cfg = load_config(None, ["Train.sampler.name=LengthCurriculumSampler", "Train.sampler.warm_steps=5"], RecConfig)
    assert cfg.Train.sampler == CurriculumSamplerConfig(warm_steps=5, short_len=3)
    assert isinstance(load_config(None, ["Train.sampler.name=MultiScaleSampler"], RecConfig).Train.sampler, SamplerConfig)
    assert load_config(None, [], RecConfig).Train.sampler is None
    with pytest.raises(ConfigError, match="'Train.sampler.warm_step'; did you mean 'warm_steps'"):
        load_config(None, ["Train.sampler.name=LengthCurriculumSampler", "Train.sampler.warm_step=5"], RecConfig)
    with pytest.raises(ConfigError, match="Train.sampler.name: unknown name 'SortaGrad'; valid names: "
                                          "LengthCurriculumSampler, MultiScaleSampler"):
        load_config(None, ["Train.sampler.name=SortaGrad"], RecConfig)
    with pytest.raises(ConfigError, match="Train.sampler.short_len"):
        load_config(None, ["Train.sampler.name=LengthCurriculumSampler", "Train.sampler.short_len=0"], RecConfig)


class _Lines(paddle.io.Dataset):
    def __len__(self):
        return len(LENGTHS)

    def __getitem__(self, i):
        return np.array([i], dtype="int64")

    def label_lengths(self):
        return list(LENGTHS)


def test_train_sampler_builds_the_curriculum_loader_and_its_checkpoint_hook():
    loader, callbacks = build_train_loader(_Lines(), CurriculumSamplerConfig(warm_steps=3, short_len=3),
                                           TrainLoaderConfig(batch_size_per_card=8, num_workers=0), DistInfo(), 0)
    batches = [b[0].numpy().ravel().tolist() if isinstance(b, (list, tuple)) else b.numpy().ravel().tolist()
               for b in loader]
    assert len(batches) == 8 and all(LENGTHS[i] <= 3 for b in batches[:3] for i in b)
    assert any(LENGTHS[i] > 3 for b in batches[3:] for i in b)
    (hook,) = callbacks
    assert hook.state_dict() == {"batches_drawn": 8}  # the position goes into checkpoints


def test_curriculum_checkpoint_counts_consumed_batches_not_prefetched_ones():
    """A loader draws ahead of training: the hook saves the trainer's position, and resuming there is exact."""
    from types import SimpleNamespace

    from paddle_recipes.tasks.ocr_rec.curriculum import CurriculumLogger

    r = LengthCurriculumSampler(LENGTHS, 8, warm_steps=12, short_len=3)
    ref = list(r)
    r.set_epoch(1)
    ref += list(r)  # 2 uninterrupted epochs of 8 batches: warm phase = 8 + 4 batches
    s = LengthCurriculumSampler(LENGTHS, 8, warm_steps=12, short_len=3)
    hook = CurriculumLogger(s)
    trainer = SimpleNamespace(epoch=0, batch_in_epoch=0, global_step=0)
    hook.on_fit_start(trainer)
    list(s)  # epoch 0 fully drawn
    s.set_epoch(1)
    it = iter(s)
    for _ in range(5):  # the loader prefetched 5 batches of epoch 1 ...
        next(it)
    trainer.epoch, trainer.batch_in_epoch = 1, 2  # ... while training consumed only 2
    state = hook.state_dict()
    assert state == {"batches_drawn": 10} and s.batches_drawn == 13
    again = LengthCurriculumSampler(LENGTHS, 8, warm_steps=12, short_len=3)
    CurriculumLogger(again).set_state_dict(state)
    again.set_epoch(1)
    again.skip_next(2)
    assert list(again) == ref[10:]


def test_recipe_yaml_reaches_curriculum_and_metric_period(tmp_path):
    """The OCR recipe, from -o keys only: curriculum for 2 batches, train accuracy on every 2nd step."""
    out = tmp_path / "out"
    proc = run_python(["recipes/ocr_rec.py", "-c", "recipes/configs/ocr_rec_smoke.yml", "-o", f"Global.output_dir={out}",
                       f"Synthetic.root={tmp_path / 'synth'}", "Global.epochs=1", "Global.log_every=1",
                       "Train.sampler.name=LengthCurriculumSampler", "Train.sampler.warm_steps=2",
                       "Train.sampler.short_len=3", "Global.cal_metric_during_train=2"])
    log = proc.stdout + proc.stderr
    assert "length curriculum: lines <= 3 chars for the first 2 batches" in log
    assert "length curriculum: warm phase over at step 2" in log
    s = json.loads((out / "summary.json").read_text())
    assert [("acc" in row) for row in s["history"]] == [False, True, False, True]
    assert {"batches_drawn": 4} in load_checkpoint(out / "checkpoints")["callbacks"]  # the phase resumes exactly


# ------------------------------------------------------------------ FLOPs + dense backbone
def test_count_flops_conv_linear_depthwise():
    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 8, 3, padding=1), paddle.nn.Conv2D(8, 8, 3, padding=1, groups=8),
                               paddle.nn.Flatten(), paddle.nn.Linear(8 * 8 * 8, 10))
    f = count_flops(net, [2, 3, 8, 8])
    assert f["by_type"]["Conv2D"] == 2 * 8 * 64 * 27
    assert f["by_type"]["Conv2D-dw"] == 2 * 8 * 64 * 9
    assert f["by_type"]["Linear"] == 2 * 512 * 10
    assert f["total"] == sum(f["by_type"].values())


def test_dense_backbone_registered_shape_and_no_depthwise():
    assert catalog.find_backbone("DenseConvRec", "rec").ours  # in the catalogue, no side-effect import
    arch = {"Backbone": {"name": "DenseConvRec", "width_stride": 8}, "Neck": {"name": "Im2Seq"}, "Head": {"name": "CTCHead"}}
    m = tiny_model(arch)
    assert m.backbone(paddle.randn([2, 3, 32, 192])).shape == [2, 96, 1, 24]
    f = count_flops(m, [1, 3, 32, 192])
    assert f["by_type"].get("Conv2D-dw", 0) == 0
    lc = count_flops(tiny_model({**ARCH, "Backbone": {"name": "LCNetRec", "scale": 0.5, "width_stride": 8},
                                 "Neck": {"name": "Im2Seq"}}), [1, 3, 32, 192])
    assert f["total"] < 1.2 * lc["total"]  # about the FLOPs of the default LCNetRec-0.5


# ------------------------------------------------------------------ device defaults + threads per rank
def test_cpu_defaults_split_cores_between_ranks():
    dd = choose_defaults("cpu", cores=2, nproc=2, env={})
    assert (dd.threads_per_process, dd.num_workers, dd.amp) == (1, 0, False)
    assert any("2 cores // 2 processes" in r for r in dd.reasons)
    dd = choose_defaults("cpu", cores=16, nproc=2, env={})
    assert dd.threads_per_process == 8 and dd.num_workers == 0
    dd = choose_defaults("cpu", cores=16, nproc=2, env={}, user={"threads": 4})
    assert dd.threads_per_process == 4 and dd.num_workers == 4  # 8 spare cores over 2 ranks


def test_env_and_user_values_win():
    dd = choose_defaults("cpu", cores=8, nproc=1, env={"OMP_NUM_THREADS": "3"})
    assert dd.threads_per_process == 3 and any("environment" in r for r in dd.reasons)
    dd = choose_defaults("gpu:0", cores=8, nproc=1, env={}, user={"amp": False})
    assert not dd.amp and dd.amp_dtype is None


def test_gpu_defaults_amp_dtype():
    assert choose_defaults("gpu:0", 16, 2, env={}, bf16_supported=True).amp_dtype == "bfloat16"
    dd = choose_defaults("gpu", 16, 2, env={})
    assert dd.amp and dd.amp_dtype == "float16" and dd.num_workers == 7


def test_defaults_reject_bad_input():
    with pytest.raises(ValueError, match="cores"):
        choose_defaults("cpu", cores=0)
    with pytest.raises(ValueError, match="OMP_NUM_THREADS"):
        choose_defaults("cpu", 2, env={"OMP_NUM_THREADS": "many"})


def test_threads_per_rank_only_when_unset():
    env = {}
    assert set_cpu_threads_per_rank(2, env=env, cores=2) == 1
    assert env["OMP_NUM_THREADS"] == "1" and env["MKL_NUM_THREADS"] == "1"
    env = {"OMP_NUM_THREADS": "2"}
    assert set_cpu_threads_per_rank(2, env=env, cores=8) is None and env == {"OMP_NUM_THREADS": "2"}
