"""Logic of the time-to-accuracy blocks (paddle_recipes.speedups, DenseConvRec, device defaults): no timings."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import paddle
import pytest

from paddle_recipes.device_defaults import choose_defaults
from paddle_recipes.distributed import set_cpu_threads_per_rank
from paddle_recipes.speedups.ctc_init import CTCBlankBias, blank_logit, frame_prior, init_ctc_blank_bias
from paddle_recipes.speedups.curriculum import LengthCurriculumSampler
from paddle_recipes.speedups.flops import count_flops
from paddle_recipes.speedups.train_metric import ctc_train_step
from paddle_recipes.tasks.ocr.charset import CharDict
from paddle_recipes.tasks.ocr.losses import CTCLoss
from paddle_recipes.tasks.ocr.models import BACKBONES, build_rec_model

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


def test_callback_applies_on_fresh_runs_only():
    m = tiny_model()
    cb = CTCBlankBias(blank_prob=0.9)
    cb.on_fit_start(SimpleNamespace(model=m, global_step=7))  # resumed: keep the loaded bias
    assert not cb.applied and float(m.head.bias.numpy()[0]) == 0.0
    cb.on_fit_start(SimpleNamespace(model=m, global_step=0))
    assert cb.applied and float(m.head.bias.numpy()[0]) == pytest.approx(blank_logit(0.9, 11), rel=1e-5)


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
    step = ctc_train_step(CTCLoss(), charset, metric_every=every)
    got = [i for i in range(1, 7) if "acc" in step(m, _batch(charset))]
    assert got == expect and step.decodes == len(expect)


def test_train_step_loss_is_the_ctc_loss():
    charset = CharDict(list("abcdefghij"))
    m = tiny_model()
    m.eval()
    b = _batch(charset)
    ref = CTCLoss()(m(b["image"]), b["label"], b["length"])
    out = ctc_train_step(CTCLoss(), charset, metric_every=0)(m, b)
    assert float(out["loss"]) == pytest.approx(float(ref), rel=1e-6)


def test_train_step_rejects_negative_every():
    with pytest.raises(ValueError, match="metric_every"):
        ctc_train_step(CTCLoss(), CharDict(list("ab")), metric_every=-1)


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
    assert "DenseConvRec" in BACKBONES
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
