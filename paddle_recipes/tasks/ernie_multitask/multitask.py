"""Multi-task ERNIE: one shared encoder, a registry of task heads, task samplers, loader, step, metrics.

    encoder = build_ernie(vocab_size=3824, hidden_size=64, num_layers=2, heads=2)
    model = MultiTaskModel(encoder, [(spec.name, spec.kind, spec.num_labels) for spec in specs])
    sampler = TaskSampler({name: n_train}, strategy="temperature", temperature=2.0, seed=0)
    loader = MultiTaskLoader(train_arrays, batch_size=32, sampler=sampler, steps_per_epoch=200, info=info)
    step = make_multitask_step(loss_weights={"t02_ner_tag": 2.0})      # Trainer train_step_fn
    metrics = evaluate_tasks(model, eval_arrays, kinds)                  # {"t00_keyword_cls/acc": ..., "avg_score": ...}

DDP: every forward adds 0 * (sum of the parameters the current task does not use: other heads,
the pooler for token tasks) to the logits, so every parameter gets a (zero) gradient each step and
paddle.DataParallel needs no find_unused_parameters; accumulation across micro-steps of different
tasks stays exact. The task schedule depends only on (seed, epoch), so all ranks run the same task
at each step; each rank reads its own shard of that task's data.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
import paddle
import paddle.nn as nn
import paddle.nn.functional as F

from ...data.reproducible import build_batch_sampler
from ...runtime.distributed import DistInfo, unwrap
from .synth_tasks import SEQ_CLS, TOKEN_CLS

IGNORE_INDEX = -100


# ----------------------------------------------------------------------------- encoder
def build_ernie(vocab_size: int, hidden_size: int = 64, num_layers: int = 2, num_heads: int = 2,
                intermediate_size: Optional[int] = None, max_len: int = 64, dropout: float = 0.1):
    """A randomly initialised paddlenlp ErnieModel (never downloads weights)."""
    from paddlenlp.transformers import ErnieConfig, ErnieModel

    cfg = ErnieConfig(vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_layers,
                      num_attention_heads=num_heads, intermediate_size=intermediate_size or 4 * hidden_size,
                      max_position_embeddings=max_len, type_vocab_size=2, hidden_dropout_prob=dropout,
                      attention_probs_dropout_prob=dropout, pad_token_id=0)
    return ErnieModel(cfg)


# ----------------------------------------------------------------------------- heads
class SeqClsHead(nn.Layer):
    """Sentence (pair) classification from the pooled [CLS] vector -> logits [B, C]."""
    uses_pooled = True

    def __init__(self, hidden_size: int, num_labels: int, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_labels)

    def forward(self, sequence_output, pooled_output):
        return self.classifier(self.dropout(pooled_output))


class TokenClsHead(nn.Layer):
    """Per-token tagging from the sequence output -> logits [B, L, C]."""
    uses_pooled = False

    def __init__(self, hidden_size: int, num_labels: int, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_labels)

    def forward(self, sequence_output, pooled_output):
        return self.classifier(self.dropout(sequence_output))


HEADS: dict[str, type] = {SEQ_CLS: SeqClsHead, TOKEN_CLS: TokenClsHead}


def register_head(kind: str, head_cls: type) -> None:
    """Add a head kind: head_cls(hidden_size, num_labels, dropout); forward(seq, pooled) -> logits."""
    HEADS[kind] = head_cls


class MultiTaskModel(nn.Layer):
    """Shared encoder + one head per task (at most `max_tasks`, default 16)."""

    def __init__(self, encoder: nn.Layer, tasks: Sequence[tuple[str, str, int]], dropout: float = 0.1,
                 max_tasks: int = 16):
        super().__init__()
        if not 1 <= len(tasks) <= max_tasks:
            raise ValueError(f"need 1..{max_tasks} tasks, got {len(tasks)}")
        self.encoder = encoder
        hidden = encoder.config.hidden_size
        self.heads = nn.LayerDict()
        self.task_kinds = {}
        for name, kind, num_labels in tasks:
            if kind not in HEADS:
                raise ValueError(f"task '{name}': unknown head kind '{kind}'; registered: {sorted(HEADS)}")
            self.heads[name] = HEADS[kind](hidden, int(num_labels), dropout)
            self.task_kinds[name] = kind

    def _unused_params(self, task: str) -> list:
        params = [p for name, head in self.heads.items() if name != task for p in head.parameters()]
        if not getattr(self.heads[task], "uses_pooled", True):
            params += list(self.encoder.pooler.parameters())
        return [p for p in params if not p.stop_gradient]

    def forward(self, input_ids, token_type_ids=None, task: str = None, output_hidden_states: bool = False,
                output_attentions: bool = False) -> dict:
        """Returns {"logits", and when asked "hidden_states" (emb + each layer), "attentions"}."""
        if task not in self.heads:
            raise KeyError(f"unknown task '{task}'; model has {list(self.heads.keys())}")
        out = self.encoder(input_ids, token_type_ids=token_type_ids, output_hidden_states=output_hidden_states,
                           output_attentions=output_attentions, return_dict=True)
        logits = self.heads[task](out.last_hidden_state, out.pooler_output)
        unused = self._unused_params(task)
        if self.training and unused:  # zero-valued anchor: every parameter gets a gradient (see module doc)
            logits = logits + 0.0 * paddle.add_n([p.sum() for p in unused])
        res = {"logits": logits}
        if output_hidden_states:
            res["hidden_states"] = list(out.hidden_states)
        if output_attentions:
            res["attentions"] = list(out.attentions)
        return res


# ----------------------------------------------------------------------------- sampling
class TaskSampler:
    """Which task each step trains on.

    strategy: "proportional" (p_i ~ n_i), "temperature" (p_i ~ n_i^(1/T), T=1 is proportional,
    T -> inf is uniform; default T=2.0), "round_robin" (tasks in a fixed cyclic order).
    The schedule depends only on (seed, epoch): identical on every rank.
    """

    STRATEGIES = ("proportional", "temperature", "round_robin")

    def __init__(self, sizes: dict[str, int], strategy: str = "temperature", temperature: float = 2.0, seed: int = 0):
        if strategy not in self.STRATEGIES:
            raise ValueError(f"unknown task sampling strategy '{strategy}'; choose one of {self.STRATEGIES}")
        if strategy == "temperature" and temperature <= 0:
            raise ValueError(f"sampling temperature must be > 0, got {temperature}")
        if not sizes or min(sizes.values()) <= 0:
            raise ValueError(f"every task needs a positive size, got {sizes}")
        self.names = list(sizes)
        self.sizes = np.asarray([sizes[n] for n in self.names], dtype="float64")
        self.strategy, self.temperature, self.seed = strategy, float(temperature), int(seed)

    def probabilities(self) -> dict[str, float]:
        if self.strategy == "round_robin":
            w = np.ones_like(self.sizes)
        elif self.strategy == "proportional":
            w = self.sizes
        else:
            w = self.sizes ** (1.0 / self.temperature)
        w = w / w.sum()
        return dict(zip(self.names, w.tolist()))

    def schedule(self, num_steps: int, epoch: int = 0) -> list[str]:
        """Task names for the `num_steps` steps of `epoch`."""
        if self.strategy == "round_robin":
            start = epoch * num_steps
            return [self.names[(start + i) % len(self.names)] for i in range(num_steps)]
        rng = np.random.RandomState((self.seed * 1_000_003 + epoch) % (2 ** 32))
        p = np.asarray(list(self.probabilities().values()))
        return [self.names[i] for i in rng.choice(len(self.names), size=num_steps, p=p)]


class _Sized:
    def __init__(self, n: int):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


class MultiTaskLoader:
    """Yields one single-task batch per step: {"input_ids", "token_type_ids", "labels": Tensors, "task": name}.

    arrays: {task: {"input_ids": [N, L], "token_type_ids": [N, L], "labels": [N] | [N, L]}} (numpy).
    batch_size is per process. Each task has its own rank-sharded batch sampler
    (data.reproducible.build_batch_sampler); a task that runs out restarts with a new shuffle.
    Also acts as the Trainer's `batch_sampler` (set_epoch / skip_next for exact resume).
    """

    def __init__(self, arrays: dict, batch_size: int, sampler: TaskSampler, steps_per_epoch: int,
                 info: DistInfo | None = None, shuffle: bool = True):
        self.arrays, self.batch_size, self.sampler = arrays, int(batch_size), sampler
        self.steps_per_epoch, self.info = int(steps_per_epoch), info or DistInfo()
        missing = [n for n in sampler.names if n not in arrays]
        if missing:
            raise KeyError(f"no data for tasks {missing}")
        self.samplers = {}
        for name in sampler.names:
            n = len(arrays[name]["labels"])
            if n < self.batch_size * self.info.world_size:
                raise ValueError(f"task '{name}' has {n} examples, fewer than batch_size*world_size="
                                 f"{self.batch_size * self.info.world_size}")
            self.samplers[name] = build_batch_sampler(_Sized(n), self.batch_size, info=self.info,
                                                      shuffle=shuffle, drop_last=True)
        self.epoch, self._skip = 0, 0
        self.batch_sampler = self

    def __len__(self):
        return self.steps_per_epoch

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def skip_next(self, n_batches: int) -> None:
        self._skip = int(n_batches)

    def _task_batches(self, name: str, epoch: int):
        sub_epoch = epoch * 1000
        while True:  # restart the task's shard with a new shuffle when it runs out
            self.samplers[name].set_epoch(sub_epoch)
            yield from iter(self.samplers[name])
            sub_epoch += 1

    def __iter__(self):
        schedule = self.sampler.schedule(self.steps_per_epoch, self.epoch)
        iters = {name: self._task_batches(name, self.epoch) for name in self.sampler.names}
        skip, self._skip = self._skip, 0
        for i, name in enumerate(schedule):
            idx = next(iters[name])
            if i < skip:
                continue
            yield make_batch(self.arrays[name], idx, name)


def make_batch(arrays: dict, idx, task: str) -> dict:
    idx = np.asarray(idx, dtype="int64")
    return {"input_ids": paddle.to_tensor(arrays["input_ids"][idx]),
            "token_type_ids": paddle.to_tensor(arrays["token_type_ids"][idx]),
            "labels": paddle.to_tensor(arrays["labels"][idx]), "task": task}


# ----------------------------------------------------------------------------- step + loss
def task_loss(logits, labels) -> paddle.Tensor:
    """Cross-entropy; token logits [B, L, C] with labels [B, L] (IGNORE_INDEX skipped).
    Mean over labelled items; 0 when a batch has none (e.g. an unlabelled transfer-set batch)."""
    ce = F.cross_entropy(logits.astype("float32"), labels.unsqueeze(-1), ignore_index=IGNORE_INDEX,
                         reduction="none", axis=-1).squeeze(-1)
    valid = (labels != IGNORE_INDEX).astype("float32")
    return (ce * valid).sum() / paddle.clip(valid.sum(), min=1.0)


def make_multitask_step(loss_weights: Optional[dict] = None, with_hidden: bool = False,
                        with_attentions: bool = False) -> Callable:
    """Trainer train_step_fn(model, batch) -> {"loss" (weighted), "<task>_loss", "logits", "mask", ...}.

    loss_weights: {task: w} (default 1.0 each). "loss_weight" is returned too, so a
    distillation wrapper can weight its soft term the same way. Non-scalar entries (logits,
    mask, hidden_states, attentions) are ignored by the Trainer's logger.
    """
    weights = dict(loss_weights or {})

    def step(model, batch):
        task = batch["task"]
        out = model(batch["input_ids"], batch["token_type_ids"], task=task,
                    output_hidden_states=with_hidden, output_attentions=with_attentions)
        ce = task_loss(out["logits"], batch["labels"])
        w = float(weights.get(task, 1.0))
        res = dict(out)
        res["loss"] = ce * w
        res["loss_weight"] = w
        res[f"{task}_loss"] = ce.detach()
        labels = batch["labels"]
        # KD mask for token tasks: every real (non-pad) position, labelled or not
        real = batch["input_ids"] != 0
        res["mask"] = real if labels.ndim == 2 else None
        res["feature_mask"] = real  # for hidden-state / attention distillation
        return res

    return step


# ----------------------------------------------------------------------------- metrics
def bio_spans(tags: Sequence[int]) -> set[tuple[int, int, int]]:
    """Spans (type, start, end_exclusive) from BIO ids: 0 = O, 2t+1 = B-t, 2t+2 = I-t.
    An I-t that does not continue a t span starts a new one (lenient decoding)."""
    spans, start, cur = set(), None, None
    for i, tag in enumerate(list(tags) + [0]):
        tag = int(tag)
        t = (tag - 1) // 2 if tag > 0 else None
        is_begin = tag > 0 and tag % 2 == 1
        if cur is not None and (tag == 0 or is_begin or t != cur):
            spans.add((cur, start, i))
            cur = None
        if tag > 0 and cur is None:
            cur, start = t, i
    return spans


def span_f1(pred_rows, gold_rows) -> float:
    tp = n_pred = n_gold = 0
    for p, g in zip(pred_rows, gold_rows):
        ps, gs = bio_spans(p), bio_spans(g)
        tp += len(ps & gs)
        n_pred += len(ps)
        n_gold += len(gs)
    if n_pred == 0 and n_gold == 0:
        return 1.0
    prec = tp / max(n_pred, 1)
    rec = tp / max(n_gold, 1)
    return 0.0 if prec + rec == 0 else 2 * prec * rec / (prec + rec)


@paddle.no_grad()
def predict(model, arrays: dict, task: str, batch_size: int = 256) -> np.ndarray:
    """Argmax predictions [N] or [N, L] for one task (runs the unwrapped model in eval mode)."""
    net = unwrap(model)
    was_training = net.training
    net.eval()
    preds = []
    n = len(arrays["labels"])
    for s in range(0, n, batch_size):
        b = make_batch(arrays, np.arange(s, min(n, s + batch_size)), task)
        preds.append(net(b["input_ids"], b["token_type_ids"], task=task)["logits"].argmax(-1).numpy())
    if was_training:
        net.train()
    return np.concatenate(preds, axis=0)


def task_metrics(pred: np.ndarray, labels: np.ndarray, kind: str) -> dict:
    """seq_cls: {"acc"}; token_cls: {"acc" (token accuracy on labelled tokens), "f1" (span F1)}."""
    if kind == TOKEN_CLS:
        mask = labels != IGNORE_INDEX
        acc = float((pred[mask] == labels[mask]).mean()) if mask.any() else 0.0
        rows_p = [p[m] for p, m in zip(pred, mask)]
        rows_g = [g[m] for g, m in zip(labels, mask)]
        return {"acc": acc, "f1": span_f1(rows_p, rows_g)}
    return {"acc": float((pred == labels).mean())}


def primary_metric(kind: str) -> str:
    return "f1" if kind == TOKEN_CLS else "acc"


def evaluate_tasks(model, arrays: dict, kinds: dict, batch_size: int = 256) -> dict:
    """Per-task metrics "<task>/acc", "<task>/f1" and "avg_score" (mean of each task's primary metric:
    span F1 for token tasks, accuracy otherwise). Every rank evaluates the full (small) eval set."""
    out, primaries = {}, []
    for task, arr in arrays.items():
        m = task_metrics(predict(model, arr, task, batch_size), arr["labels"], kinds[task])
        for k, v in m.items():
            out[f"{task}/{k}"] = v
        primaries.append(m[primary_metric(kinds[task])])
    out["avg_score"] = float(np.mean(primaries))
    return out
