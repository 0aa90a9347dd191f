"""Global.distill_pretrained (paddle_recipes/tasks/ocr_rec/distill_pretrained.py): the CTC distillation term against a
float64 reference (zero when student == teacher, the gradient by central differences, only agreed lines count); in
the recipe: the teacher is the released model, frozen, never in a checkpoint, and a run with it resumes exactly."""
from __future__ import annotations

import numpy as np
import paddle
import pytest

import paddle_recipes.recipes.ocr_rec as ocr_rec_module
from paddle_recipes.tasks.ocr_rec.distill_pretrained import ctc_distill_loss, frozen_teacher
from test_finetune_released import argv, log_lines, released, weights  # noqa: F401 (the module-scoped fixture)
from test_paddleocr_recipe import run


def reference_kd(student: np.ndarray, teacher: np.ndarray, agreed: np.ndarray, tau: float) -> float:
    """The module doc's formula in float64: (1/B) sum_b agreed_b sum_t tau^2 KL(p_t || p_s) at temperature tau."""
    def log_softmax(x):
        x = x / tau
        x = x - x.max(-1, keepdims=True)
        return x - np.log(np.exp(x).sum(-1, keepdims=True))

    lt, ls = log_softmax(teacher), log_softmax(student)
    kl = (np.exp(lt) * (lt - ls)).sum(-1)  # [B, T]
    return float(tau ** 2 * (kl.sum(1) * agreed).sum() / student.shape[0])


@pytest.mark.parametrize("tau", [1.0, 2.5])
def test_ctc_distill_loss_is_zero_at_the_teacher_and_its_gradient_is_the_reference(tau):
    rng = np.random.default_rng(0)
    b, t, c = 3, 5, 7
    teacher = rng.normal(0, 2, (b, t, c))
    student = rng.normal(0, 2, (b, t, c))
    agreed = np.array([1.0, 0.0, 1.0])
    same = ctc_distill_loss(paddle.to_tensor(teacher, "float32"), paddle.to_tensor(teacher, "float32"),
                            paddle.to_tensor(agreed), tau)
    assert abs(float(same)) < 1e-6  # float32 rounding of log-softmax differences of values ~ log(7)
    s = paddle.to_tensor(student, "float32", stop_gradient=False)
    loss = ctc_distill_loss(s, paddle.to_tensor(teacher, "float32"), paddle.to_tensor(agreed), tau)
    ref = reference_kd(student, teacher, agreed, tau)
    assert abs(float(loss) - ref) <= 1e-5 * max(1.0, abs(ref))
    loss.backward()
    grad = s.grad.numpy()
    eps, num = 1e-6, np.zeros_like(student)
    for idx in np.ndindex(student.shape):
        up, down = student.copy(), student.copy()
        up[idx] += eps
        down[idx] -= eps
        num[idx] = (reference_kd(up, teacher, agreed, tau) - reference_kd(down, teacher, agreed, tau)) / (2 * eps)
    assert np.abs(num).max() > 1e-2  # a gradient to compare
    np.testing.assert_allclose(grad, num, atol=1e-6, rtol=1e-4)  # float32 softmax of O(1) values vs float64
    assert not grad[1].any()  # a line the teacher misreads gets no soft target


def test_frozen_teacher_is_an_eval_copy_that_returns_logits():
    from paddle_recipes.tasks.ocr_rec.ppocr_heads import CTCHead

    head = CTCHead(8, 5)
    teacher = frozen_teacher(head)
    x = paddle.randn([2, 4, 8])
    assert not teacher.training and all(p.stop_gradient for p in teacher.parameters())
    head.eval()
    np.testing.assert_allclose(paddle.nn.functional.softmax(teacher(x), axis=2).numpy(), head(x).numpy(), atol=1e-6)
    head.fc.weight.set_value(head.fc.weight * 2)  # a copy: the student's updates never reach the teacher
    assert not np.allclose(teacher.fc.weight.numpy(), head.fc.weight.numpy())


def test_distill_pretrained_teacher_is_the_frozen_released_model_and_never_saved(released, tmp_path, monkeypatch):
    data, infer, ft, _ = released
    made = []

    def spy(*args):
        made.append(real(*args))
        made.append({k: v.numpy().copy() for k, v in made[0].teacher.state_dict().items()})
        return made[0]

    real = ocr_rec_module.distill_from_init
    monkeypatch.setattr(ocr_rec_module, "distill_from_init", spy)
    out = tmp_path / "kd"
    common = [f"Global.pretrained_model={infer}", "Global.eval_batch_step=[]", "Global.max_steps=0"]
    summary = run(argv(data, out, *common, "Global.distill_pretrained=true", "Global.distill_weight=0.5"))
    assert len(log_lines(out, "Global.distill_pretrained: a frozen copy of")) == 1
    hist = summary["history"]
    assert summary["global_step"] == 5 and all(np.isfinite(h["kd"]) and 0 <= h["kd_lines"] <= 1 for h in hist)
    distill, at_start = made
    assert distill.weight == 0.5 and not distill.teacher.training
    after = distill.teacher.state_dict()
    assert after.keys() == at_start.keys() and all(np.array_equal(after[k].numpy(), at_start[k]) for k in after)
    plain = weights(ft / "checkpoints")  # the same fine-tune without distillation (the fixture's run)
    saved = weights(out / "checkpoints")
    assert saved.keys() == plain.keys()  # no teacher tensor in the checkpoint
    assert any(not np.array_equal(saved[k], at_start[k]) for k in saved)  # the student did learn


def test_distill_pretrained_run_resumes_exactly(released, tmp_path):
    """3 steps, then Global.checkpoints -> 5 steps == 5 steps straight, bit for bit: the teacher is the released
    model again on resume (not the checkpoint's student)."""
    data, infer, _, _ = released
    out, straight_out = tmp_path / "b", tmp_path / "straight"
    common = [f"Global.pretrained_model={infer}", "Global.eval_batch_step=[]", "Global.distill_pretrained=true"]
    straight = run(argv(data, straight_out, *common, "Global.max_steps=0"))
    run(argv(data, out, *common, "Global.max_steps=3"))
    resumed = run(argv(data, out, *common, "Global.max_steps=0", f"Global.checkpoints={out / 'checkpoints'}"))
    assert resumed["resumed_from"] and resumed["global_step"] == straight["global_step"] == 5
    assert [h["kd"] for h in resumed["history"]] == [h["kd"] for h in straight["history"]][-len(resumed["history"]):]
    a, b = weights(straight_out / "checkpoints"), weights(out / "checkpoints")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_distill_pretrained_without_init_weights_is_one_line(tmp_path, capsys):
    from test_paddleocr_recipe import DICT_A, write_label_set

    data = write_label_set(tmp_path / "data", DICT_A)
    with pytest.raises(SystemExit) as exc:
        run(argv(data, tmp_path / "o", "Global.distill_pretrained=true", "Global.max_steps=1"))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("Global.distill_pretrained needs init weights to distill from: set Global.pretrained_model")
