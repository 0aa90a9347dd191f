"""Multi-task ERNIE: heads, task samplers, sharded loader, loss weights, metrics."""
import numpy as np
import paddle
import pytest

from paddle_recipes.runtime.distributed import DistInfo
from paddle_recipes.tasks.ernie_multitask.multitask import (MultiTaskLoader, MultiTaskModel, TaskSampler, bio_spans,
                                                            build_ernie, evaluate_tasks, make_multitask_step, span_f1,
                                                            task_loss)
from paddle_recipes.tasks.ernie_multitask.synth_tasks import SEQ_CLS, TOKEN_CLS


def _arrays(n, kind, num_labels, seed):
    rng = np.random.RandomState(seed)
    ids = rng.randint(5, 100, size=(n, 12)).astype("int64")
    ids[:, 0] = 2
    labels = rng.randint(0, num_labels, size=(n, 12) if kind == TOKEN_CLS else n).astype("int64")
    if kind == TOKEN_CLS:
        labels[:, 0] = -100
    return {"input_ids": ids, "token_type_ids": np.zeros_like(ids), "labels": labels}


def test_sampler_probabilities():
    sizes = {"a": 100, "b": 400, "c": 1600}
    prop = TaskSampler(sizes, "proportional").probabilities()
    assert prop == pytest.approx({"a": 100 / 2100, "b": 400 / 2100, "c": 1600 / 2100})
    temp = TaskSampler(sizes, "temperature", temperature=2.0).probabilities()
    assert temp == pytest.approx({"a": 10 / 70, "b": 20 / 70, "c": 40 / 70})   # sqrt(n)
    assert TaskSampler(sizes, "temperature", temperature=1.0).probabilities() == pytest.approx(prop)
    assert TaskSampler(sizes, "round_robin").schedule(7, epoch=0) == ["a", "b", "c", "a", "b", "c", "a"]
    assert TaskSampler(sizes, "round_robin").schedule(4, epoch=1) == ["b", "c", "a", "b"]  # continues the cycle
    with pytest.raises(ValueError, match="unknown task sampling"):
        TaskSampler(sizes, "uniformish")


def test_sampler_schedule_is_seeded_and_follows_probabilities():
    sizes = {"a": 100, "b": 900}
    s = TaskSampler(sizes, "temperature", temperature=2.0, seed=3)
    sched = s.schedule(4000, epoch=0)
    assert sched == TaskSampler(sizes, "temperature", temperature=2.0, seed=3).schedule(4000, epoch=0)  # every rank
    assert sched != s.schedule(4000, epoch=1)
    assert sched.count("a") / 4000 == pytest.approx(0.25, abs=0.03)   # 10 / (10 + 30)


def test_loader_shards_ranks_and_follows_schedule():
    arrays = {"s": _arrays(40, SEQ_CLS, 3, 0), "t": _arrays(24, TOKEN_CLS, 5, 1)}
    sampler = TaskSampler({"s": 40, "t": 24}, "round_robin")
    seen = {}
    for rank in (0, 1):
        loader = MultiTaskLoader(arrays, 4, sampler, steps_per_epoch=6, info=DistInfo(rank=rank, world_size=2))
        batches = list(loader)
        assert [b["task"] for b in batches] == ["s", "t"] * 3 and len(loader) == 6
        assert list(batches[1]["labels"].shape) == [4, 12] and list(batches[0]["labels"].shape) == [4]
        seen[rank] = {tuple(b["input_ids"].numpy()[i]) for b in batches if b["task"] == "s" for i in range(4)}
    assert not seen[0] & seen[1]                                  # disjoint shards per rank
    loader = MultiTaskLoader(arrays, 4, sampler, 6)
    full = [b["input_ids"].numpy() for b in loader]
    loader.skip_next(2)
    resumed = [b["input_ids"].numpy() for b in loader]
    assert len(resumed) == 4 and all((a == b).all() for a, b in zip(full[2:], resumed))  # exact mid-epoch resume
    with pytest.raises(ValueError, match="fewer than batch_size"):
        MultiTaskLoader({"s": _arrays(6, SEQ_CLS, 2, 0)}, 4, TaskSampler({"s": 6}), 2, info=DistInfo(0, 2))


def _model():
    paddle.seed(0)
    enc = build_ernie(vocab_size=100, hidden_size=16, num_layers=1, num_heads=2, max_len=16)
    return MultiTaskModel(enc, [("s", SEQ_CLS, 3), ("t", TOKEN_CLS, 5)])


def test_model_heads_and_every_param_gets_a_gradient():
    model = _model()
    arr = {"s": _arrays(8, SEQ_CLS, 3, 0), "t": _arrays(8, TOKEN_CLS, 5, 1)}
    step = make_multitask_step(loss_weights={"t": 3.0}, with_hidden=True, with_attentions=True)
    for task, shape in (("s", [8, 3]), ("t", [8, 12, 5])):
        batch = {k: paddle.to_tensor(v) for k, v in arr[task].items()}
        batch["task"] = task
        out = step(model, batch)
        assert list(out["logits"].shape) == shape
        assert len(out["hidden_states"]) == 2 and len(out["attentions"]) == 1
        ce = float(task_loss(out["logits"], batch["labels"]))
        assert float(out["loss"]) == pytest.approx(ce * (3.0 if task == "t" else 1.0), rel=1e-5)
        assert float(out[f"{task}_loss"]) == pytest.approx(ce, rel=1e-5)
        out["loss"].backward()
        # the zero anchor gives unused heads/pooler a (zero) gradient, so DDP needs no unused-param search
        missing = [n for n, p in model.named_parameters() if p.grad is None]
        assert not missing, missing
        head_other = model.heads["t" if task == "s" else "s"].classifier.weight.grad
        assert float(head_other.abs().sum()) == 0.0
        model.clear_gradients()
    with pytest.raises(KeyError, match="unknown task"):
        model(paddle.to_tensor(arr["s"]["input_ids"]), task="nope")
    with pytest.raises(ValueError, match="1..16 tasks"):
        MultiTaskModel(model.encoder, [(f"x{i}", SEQ_CLS, 2) for i in range(17)])


def test_task_loss_ignores_unlabelled_rows():
    logits = paddle.randn([4, 3])
    labels = paddle.to_tensor([0, -100, 2, -100])
    expect = float(paddle.nn.functional.cross_entropy(logits[paddle.to_tensor([0, 2])], paddle.to_tensor([0, 2])))
    assert float(task_loss(logits, labels)) == pytest.approx(expect, rel=1e-5)
    assert float(task_loss(logits, paddle.full([4], -100, "int64"))) == 0.0  # all unlabelled: no nan


def test_bio_spans_and_f1():
    assert bio_spans([0, 1, 2, 2, 0, 3, 4, 0]) == {(0, 1, 4), (1, 5, 7)}
    assert bio_spans([2, 2, 1]) == {(0, 0, 2), (0, 2, 3)}          # stray I- starts a span
    assert span_f1([[0, 1, 2, 0]], [[0, 1, 2, 0]]) == 1.0
    assert span_f1([[0, 1, 0, 0]], [[0, 1, 2, 0]]) == 0.0         # boundary error = miss
    assert span_f1([[1, 2, 0, 3]], [[1, 2, 0, 0]]) == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_evaluate_tasks_reports_per_task_and_average():
    model = _model()
    arr = {"s": _arrays(10, SEQ_CLS, 3, 0), "t": _arrays(10, TOKEN_CLS, 5, 1)}
    m = evaluate_tasks(model, arr, {"s": SEQ_CLS, "t": TOKEN_CLS}, batch_size=4)
    assert set(m) == {"s/acc", "t/acc", "t/f1", "avg_score"}
    assert m["avg_score"] == pytest.approx((m["s/acc"] + m["t/f1"]) / 2)
    assert model.training  # restored


def test_distill_step_with_hidden_and_attention_terms():
    from paddle_recipes.train.distill import DistillLoss, EntropyAdaptiveT, make_distill_step

    paddle.seed(1)
    teacher = MultiTaskModel(build_ernie(100, 16, 2, 2, max_len=16), [("s", SEQ_CLS, 3), ("t", TOKEN_CLS, 5)])
    student = _model()
    step = make_distill_step(teacher, make_multitask_step({"t": 2.0}, with_hidden=True, with_attentions=True),
                             DistillLoss(EntropyAdaptiveT(1.0, 3.0), alpha=0.5, hidden_weight=1.0, attn_weight=1.0),
                             total_steps=10)
    arr = _arrays(6, TOKEN_CLS, 5, 2)
    arr["input_ids"][:, 8:] = 0                                    # padding: excluded by the feature mask
    batch = {k: paddle.to_tensor(v) for k, v in arr.items()}
    batch["task"] = "t"
    out = step(student, batch)
    for key in ("kd_loss", "hard_loss", "hidden_loss", "attn_loss", "temperature", "t_loss"):
        assert key in out, key
    assert "logits" not in out and "hidden_states" not in out      # only loggable scalars reach the Trainer
    assert 1.0 <= out["temperature"] <= 3.0
    expect = 2.0 * (0.5 * out["kd_loss"] + 0.5 * out["hard_loss"] + out["hidden_loss"] + out["attn_loss"])
    assert float(out["loss"]) == pytest.approx(float(expect), rel=1e-5)   # task weight covers every term
    out["loss"].backward()
    assert student.encoder.embeddings.word_embeddings.weight.grad is not None
    assert all(p.grad is None for p in teacher.parameters())
