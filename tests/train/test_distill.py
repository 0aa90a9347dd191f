"""paddle_recipes.train.distill: closed-form KD loss, temperature schedules, step wrapper on plain models."""
import math

import numpy as np
import paddle
import paddle.nn as nn
import pytest

from paddle_recipes.train.distill import (ConstantT, CosineT, DistillCallback, DistillLoss, EntropyAdaptiveT, LinearT,
                                          build_temperature, kd_kl_loss, make_distill_step)


def _softmax(z):
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def _closed_form_kd(s, t, T):
    """T^2 * sum_c p_t log(p_t / p_s), mean over rows; T scalar or per-row array."""
    T = np.asarray(T, dtype="float64").reshape(-1, *([1] * (s.ndim - 1))) if np.ndim(T) else float(T)
    ps, pt = _softmax(s / T), _softmax(t / T)
    kl = (pt * (np.log(pt) - np.log(ps))).sum(-1)
    return float((kl * np.squeeze(np.asarray(T) ** 2)).mean())


@pytest.mark.parametrize("T", [1.0, 2.0, 4.0, 7.5])
def test_kd_loss_matches_closed_form_kl(T):
    rng = np.random.RandomState(1)
    s, t = rng.randn(8, 5) * 3, rng.randn(8, 5) * 3
    got = float(kd_kl_loss(paddle.to_tensor(s, "float32"), paddle.to_tensor(t, "float32"), T))
    assert got == pytest.approx(_closed_form_kd(s, t, T), rel=1e-4, abs=1e-6)


def test_kd_loss_zero_when_equal_and_positive_otherwise():
    z = paddle.randn([4, 6])
    assert float(kd_kl_loss(z, z, 3.0)) == pytest.approx(0.0, abs=1e-6)
    assert float(kd_kl_loss(z, z * 2 + 1, 3.0)) > 1e-3


def test_kd_loss_gradient_is_T_times_prob_difference():
    # d/dz_s [T^2 KL(p_t || softmax(z_s/T))] = T * (softmax(z_s/T) - p_t), averaged over rows
    rng = np.random.RandomState(2)
    s_np, t_np, T, B = rng.randn(3, 4), rng.randn(3, 4), 3.0, 3
    s = paddle.to_tensor(s_np, "float32", stop_gradient=False)
    kd_kl_loss(s, paddle.to_tensor(t_np, "float32"), T).backward()
    expected = T * (_softmax(s_np / T) - _softmax(t_np / T)) / B
    np.testing.assert_allclose(s.grad.numpy(), expected, rtol=1e-4, atol=1e-6)


def test_kd_loss_per_sample_temperature_and_token_mask():
    rng = np.random.RandomState(3)
    s, t = rng.randn(4, 3), rng.randn(4, 3)
    T = np.array([1.0, 2.0, 3.0, 4.0])
    got = float(kd_kl_loss(paddle.to_tensor(s, "float32"), paddle.to_tensor(t, "float32"),
                           paddle.to_tensor(T, "float32")))
    assert got == pytest.approx(_closed_form_kd(s, t, T), rel=1e-4)
    # token-level [B, L, C] with mask: only masked-in positions count
    s3, t3 = rng.randn(2, 5, 3), rng.randn(2, 5, 3)
    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=bool)
    got = float(kd_kl_loss(paddle.to_tensor(s3, "float32"), paddle.to_tensor(t3, "float32"), 2.0,
                           mask=paddle.to_tensor(mask)))
    assert got == pytest.approx(_closed_form_kd(s3[mask], t3[mask], 2.0), rel=1e-4)


def test_kd_loss_rejects_shape_mismatch_and_bad_T():
    with pytest.raises(ValueError, match="same shape"):
        kd_kl_loss(paddle.zeros([2, 3]), paddle.zeros([2, 4]), 1.0)
    with pytest.raises(ValueError, match="> 0"):
        kd_kl_loss(paddle.zeros([2, 3]), paddle.zeros([2, 3]), 0.0)


def test_schedules_give_defined_values():
    assert ConstantT(3.0)(0, 100) == 3.0 and ConstantT(3.0)(99, 100) == 3.0
    lin = LinearT(8.0, 1.0)
    assert lin(0, 100) == pytest.approx(8.0)
    assert lin(50, 100) == pytest.approx(4.5)
    assert lin(25, 100) == pytest.approx(8.0 - 7.0 * 0.25)
    assert lin(100, 100) == pytest.approx(1.0) and lin(500, 100) == pytest.approx(1.0)
    cos = CosineT(8.0, 1.0)
    assert cos(0, 100) == pytest.approx(8.0)
    assert cos(50, 100) == pytest.approx(4.5)
    assert cos(25, 100) == pytest.approx(1.0 + 7.0 * 0.5 * (1 + math.cos(math.pi / 4)))
    assert cos(100, 100) == pytest.approx(1.0)
    assert build_temperature("linear", t_start=2.0, t_end=4.0)(10, 20) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="unknown temperature schedule"):
        build_temperature("cubic")


def test_entropy_adaptive_temperature():
    sched = EntropyAdaptiveT(t_min=1.0, t_max=5.0)
    uniform = paddle.zeros([1, 4])                     # entropy log(4) -> h = 1 -> t_min
    confident = paddle.to_tensor([[50.0, 0, 0, 0]])    # h ~ 0 -> t_max
    probs = np.array([0.7, 0.1, 0.1, 0.1])
    mid = paddle.to_tensor(np.log(probs)[None], "float32")
    h = -(probs * np.log(probs)).sum() / np.log(4)
    T = sched(0, 10, paddle.concat([uniform, confident, mid]))
    assert list(T.shape) == [3]
    np.testing.assert_allclose(T.numpy(), [1.0, 5.0, 5.0 - 4.0 * h], rtol=1e-4, atol=1e-4)
    token_T = sched(0, 10, paddle.zeros([2, 7, 3]))    # token-level logits -> per-token T
    assert list(token_T.shape) == [2, 7]
    with pytest.raises(ValueError):
        sched(0, 10, None)


def test_distill_loss_combines_terms():
    paddle.seed(0)
    s, t, hard = paddle.randn([4, 3]), paddle.randn([4, 3]), paddle.to_tensor(0.7)
    loss = DistillLoss(temperature=LinearT(4.0, 2.0), alpha=0.25)
    out = loss(s, t, hard_loss=hard, step=5, total_steps=10)
    kd = float(kd_kl_loss(s, t, 3.0))
    assert out["temperature"] == pytest.approx(3.0)
    assert float(out["loss"]) == pytest.approx(0.25 * kd + 0.75 * 0.7, rel=1e-5)
    # hidden / attention terms: zero for identical features, positive otherwise, projection for width mismatch
    hs = [paddle.randn([2, 5, 8]) for _ in range(3)]
    at = [nn.functional.softmax(paddle.randn([2, 2, 5, 5]), -1) for _ in range(2)]
    full = DistillLoss(2.0, alpha=1.0, hidden_weight=1.0, attn_weight=1.0)
    same = full(s, s, student_hidden=hs, teacher_hidden=hs, student_attn=at, teacher_attn=at)
    assert float(same["loss"]) == pytest.approx(0.0, abs=1e-6)
    diff = full(s, s, student_hidden=hs[:2], teacher_hidden=[h * 2 for h in hs],
                student_attn=at[:1], teacher_attn=at)  # student layer 1 <-> teacher layer 2
    assert float(diff["hidden_loss"]) > 0 and float(diff["attn_loss"]) > 0
    proj = DistillLoss(2.0, hidden_weight=1.0, hidden_dims=(4, 8))
    out = proj(s, t, student_hidden=[paddle.randn([2, 5, 4])] * 2, teacher_hidden=hs)
    out["loss"].backward()
    assert proj.hidden_proj.weight.grad is not None
    with pytest.raises(ValueError, match="hidden_dims"):
        full(s, t, student_hidden=[paddle.randn([2, 5, 4])] * 2, teacher_hidden=hs, student_attn=at, teacher_attn=at)


def test_distill_step_on_plain_models_pulls_student_to_teacher():
    """Usable on its own: two arbitrary paddle models, a plain loop, KD only on unlabeled inputs."""
    paddle.seed(0)
    teacher = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))
    student = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4))
    x = paddle.randn([256, 6])

    def base_step(model, batch):
        return {"logits": model(batch)}          # no labels: pure distillation

    step = make_distill_step(teacher, base_step, DistillLoss(CosineT(4.0, 1.0)), total_steps=200)
    opt = paddle.optimizer.Adam(1e-2, parameters=student.parameters())
    first = None
    for i in range(200):
        out = step(student, x[(i % 8) * 32:(i % 8 + 1) * 32])
        out["loss"].backward()
        opt.step()
        opt.clear_grad()
        first = first if first is not None else float(out["kd_loss"])
    assert step.step == 200 and all(p.stop_gradient for p in teacher.parameters())
    agree = (student(x).argmax(-1) == teacher(x).argmax(-1)).astype("float32").mean()
    assert float(kd_kl_loss(student(x), teacher(x), 1.0)) < 0.2 * first
    assert float(agree) > 0.85


def test_distill_callback_syncs_to_optimizer_steps():
    class FakeTrainer:
        global_step, total_steps = 0, 40

    step = make_distill_step(nn.Linear(2, 2), lambda m, b: {"logits": m(b)}, DistillLoss(2.0))
    cb, tr = DistillCallback(step), FakeTrainer()
    cb.on_fit_start(tr)
    assert step.total_steps == 40  # the temperature schedule spans the trainer's run
    step(nn.Linear(2, 2), paddle.randn([3, 2]))
    step(nn.Linear(2, 2), paddle.randn([3, 2]))   # two micro-steps ...
    tr.global_step = 1
    cb.on_step_end(tr)                             # ... one optimizer step
    assert step.step == 1
