"""Global.distill_pretrained (paddle_recipes/tasks/ocr_rec/distill_pretrained.py): the CTC distillation term against a
float64 reference (zero when student == teacher, the gradient by central differences, only agreed lines count), and
its gradient pulls a student to the teacher's distribution; in the recipe: the teacher is the released model,
frozen, pooling as the student does, never in a checkpoint; switched off (or at weight 0) the run is bit for bit the
plain fine-tune; a run with it resumes exactly."""
from __future__ import annotations

import numpy as np
import paddle
import pytest

import paddle_recipes.tasks.ocr_rec.distill_pretrained as distill_module
from paddle_recipes.tasks.ocr_rec.distill_pretrained import CtcDistill, ctc_distill_loss, frozen_teacher
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


def test_distill_gradient_pulls_the_student_to_the_teachers_distribution():
    """Adam on the term alone: a student CTC head of another init ends with the teacher's
    per-frame distribution (KL / 100 and below 0.01 nats per frame) and its greedy path."""
    from paddle_recipes.tasks.ocr_rec.ppocr_heads import CTCHead

    paddle.seed(1)
    teacher, student = frozen_teacher(CTCHead(8, 6)), CTCHead(8, 6)
    x = paddle.randn([4, 10, 8])
    t_logits = teacher(x)
    agreed = paddle.ones([4])
    opt = paddle.optimizer.Adam(learning_rate=0.05, parameters=student.parameters())
    start = float(ctc_distill_loss(student(x), t_logits, agreed))
    for _ in range(400):
        loss = ctc_distill_loss(student(x), t_logits, agreed)
        loss.backward()
        opt.step()
        opt.clear_grad()
    end = float(ctc_distill_loss(student(x), t_logits, agreed))
    assert start > 0.5 and end < start / 100 and end / 10 < 0.01  # nats per line of 10 frames
    np.testing.assert_array_equal(student(x).numpy().argmax(-1), t_logits.numpy().argmax(-1))


def all_agreed(monkeypatch):
    """Every line counts (the tiny "released" model reads none of its lines right): the term is not 0."""
    monkeypatch.setattr(CtcDistill, "agreed", lambda self, logits, texts: np.ones(len(texts), "float32"))


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

    real = distill_module.distill_from_init
    monkeypatch.setattr(distill_module, "distill_from_init", spy)
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


def test_distill_pretrained_off_or_at_weight_0_is_the_plain_fine_tune_bit_for_bit(released, tmp_path, monkeypatch):
    """The switch off is the plain fine-tune (the step code without a distill term); on at weight 0 the same
    weights again, although the term is computed (kd > 0 logged); at weight 1 other weights."""
    data, infer, _, _ = released
    all_agreed(monkeypatch)
    common = [f"Global.pretrained_model={infer}", "Global.eval_batch_step=[]", "Global.max_steps=0"]
    run(argv(data, tmp_path / "off", *common))
    zero = run(argv(data, tmp_path / "w0", *common, "Global.distill_pretrained=true", "Global.distill_weight=0"))
    run(argv(data, tmp_path / "w1", *common, "Global.distill_pretrained=true"))
    kds = [h["kd"] for h in zero["history"]]
    assert kds[0] == 0 and max(kds) > 0 and all(h["kd_lines"] == 1 for h in zero["history"])  # step 1: student = teacher
    off, w0, w1 = (weights(tmp_path / n / "checkpoints") for n in ("off", "w0", "w1"))
    assert off.keys() == w0.keys() == w1.keys()
    assert [k for k in off if not np.array_equal(off[k], w0[k])] == []
    assert any(not np.array_equal(off[k], w1[k]) for k in off)


def test_distill_pretrained_run_resumes_exactly(released, tmp_path, monkeypatch):
    """3 steps, then Global.checkpoints -> 5 steps == 5 steps straight, bit for bit: the teacher is the released
    model again on resume (not the checkpoint's student)."""
    data, infer, _, _ = released
    all_agreed(monkeypatch)
    out, straight_out = tmp_path / "b", tmp_path / "straight"
    common = [f"Global.pretrained_model={infer}", "Global.eval_batch_step=[]", "Global.distill_pretrained=true"]
    straight = run(argv(data, straight_out, *common, "Global.max_steps=0"))
    run(argv(data, out, *common, "Global.max_steps=3"))
    resumed = run(argv(data, out, *common, "Global.max_steps=0", f"Global.checkpoints={out / 'checkpoints'}"))
    assert resumed["resumed_from"] and resumed["global_step"] == straight["global_step"] == 5
    kds = [h["kd"] for h in straight["history"]]
    assert kds[0] == 0 and kds[-1] > 0  # step 1: the student is the teacher
    assert [h["kd"] for h in resumed["history"]] == kds[-len(resumed["history"]):]
    a, b = weights(straight_out / "checkpoints"), weights(out / "checkpoints")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_distill_pretrained_without_init_weights_is_a_config_error(tmp_path):
    """A ConfigError (the console entry prints it as one line, exit 2) before any step."""
    from paddle_recipes.config import ConfigError
    from test_paddleocr_recipe import DICT_A, write_label_set

    data = write_label_set(tmp_path / "data", DICT_A)
    with pytest.raises(ConfigError, match=r"^Global.distill_pretrained needs init weights to distill from: set "
                                          r"Global.pretrained_model$"):
        run(argv(data, tmp_path / "o", "Global.distill_pretrained=true", "Global.max_steps=1"))
    assert not (tmp_path / "o" / "checkpoints").exists()


def test_paddleocr_yaml_takes_the_switch_as_an_extension_and_checks_it():
    """PaddleOCR's v5 mobile rec YAML with -o Global.distill_*: typed values in the config, listed in the one
    extensions line; off without them; a bad value or a misspelled key is a one-line ConfigError."""
    from paddle_recipes.config import ConfigError
    from test_paddleocr_extensions import V5M, load, one_line

    cfg, notes = load(V5M, ["Global.distill_pretrained=true", "Global.distill_weight=0.5",
                            "Global.distill_temperature=2"])
    g = cfg.Global
    assert (g.distill_pretrained, g.distill_weight, g.distill_temperature) == (True, 0.5, 2.0)
    line = one_line(notes, "paddle-recipes extensions: ")
    assert all(k in line for k in ("Global.distill_pretrained=True", "Global.distill_weight=0.5"))
    assert load(V5M, [])[0].Global.distill_pretrained is False
    for opt, match in (("Global.distill_temperature=0", "Global.distill_temperature"),
                       ("Global.distill_weight=-1", "Global.distill_weight"),
                       ("Global.distill_pretrain=true", "distill_pretrained")):
        with pytest.raises(ConfigError, match=match) as exc:
            load(V5M, [opt])
        assert "\n" not in str(exc.value)
