"""Deterministic synthetic Chinese NLP tasks (no download).

Six templates; `make_task_specs(n)` derives up to 16 task definitions from them with different
seeds, label counts and char pools. Same spec + split + size -> same examples on every machine
(numpy RandomState seeded from the spec seed and the split).

Templates (kind):
- keyword_cls (seq_cls): sentiment-like; each label owns a keyword set, 1-3 keywords of the
  true label are planted in random filler (task 0 uses real sentiment words 好/棒/... vs 差/坏/...).
- topic_cls (seq_cls): each topic owns a 12-char vocabulary; a fraction `topic_frac` of the
  chars come from the topic, the rest from shared filler.
- ner_tag (token_cls): BIO tagging of planted entities of 1-3 types (PER: surname + given name,
  LOC: chars + suffix 省/市/县/..., ORG: chars + 公司/大学/...).
- pair_match (seq_cls, sentence pair): text_b is a shuffled copy of text_a with a few chars
  replaced (label 1) or an unrelated text sharing a few chars (label 0).
- count_cls (seq_cls): how often a target char occurs (0, 1, 2, 3+).
- order_cls (seq_cls): whether char X occurs before char Y (both planted once).

Examples are dicts: {"text": str, "text_pair": str | None, "label": int | list[int] (per char)}.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .vocab import gb2312_level1

SEQ_CLS, TOKEN_CLS = "seq_cls", "token_cls"
_SPLIT_OFFSET = {"train": 0, "eval": 1_000_003, "test": 2_000_003, "transfer": 3_000_017}

POS_WORDS = list("好棒赞喜爱乐美优")
NEG_WORDS = list("差坏烂恨怒悲糟劣")
SURNAMES = list("王李张刘陈杨赵黄周吴徐孙胡朱高林何郭马罗")
LOC_SUFFIX = list("省市县村山河湖镇")
ORG_SUFFIX = ["公司", "大学", "银行", "医院", "集团"]


@dataclass
class TaskSpec:
    """One synthetic task. `params` are template knobs; sizes are numbers of examples."""
    name: str
    template: str
    num_labels: int
    seed: int
    train_size: int = 2000
    eval_size: int = 400
    params: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return TOKEN_CLS if self.template == "ner_tag" else SEQ_CLS

    @property
    def label_names(self) -> list[str]:
        if self.template == "ner_tag":
            names = ["O"]
            for t in ["PER", "LOC", "ORG"][: self.params.get("num_types", 1)]:
                names += [f"B-{t}", f"I-{t}"]
            return names
        return [str(i) for i in range(self.num_labels)]


# ----------------------------------------------------------------------------- char pools
_HANZI = gb2312_level1()
_RESERVED = set(POS_WORDS + NEG_WORDS + SURNAMES + LOC_SUFFIX + list("".join(ORG_SUFFIX)))
_FREE = [c for c in _HANZI if c not in _RESERVED]


def _pools(rng: np.random.RandomState, sizes: list[int]) -> list[list[str]]:
    """Disjoint char pools of the given sizes drawn from the free hanzi."""
    idx = rng.permutation(len(_FREE))
    out, start = [], 0
    for n in sizes:
        out.append([_FREE[i] for i in idx[start:start + n]])
        start += n
    return out


# ----------------------------------------------------------------------------- templates
def _gen_keyword(spec, rng, task_rng, n):
    k = spec.num_labels
    kw_size = 8
    pools = _pools(task_rng, [kw_size] * k + [400])
    if spec.params.get("sentiment") and k == 2:
        pools[0], pools[1] = POS_WORDS, NEG_WORDS
    filler = pools[-1]
    out = []
    for _ in range(n):
        label = int(rng.randint(k))
        length = int(rng.randint(8, 25))
        chars = [filler[i] for i in rng.randint(len(filler), size=length)]
        for pos in rng.choice(length, size=int(rng.randint(1, 4)), replace=False):
            chars[pos] = pools[label][rng.randint(kw_size)]
        out.append({"text": "".join(chars), "text_pair": None, "label": label})
    return out


def _gen_topic(spec, rng, task_rng, n):
    k = spec.num_labels
    frac = float(spec.params.get("topic_frac", 0.3))
    pools = _pools(task_rng, [12] * k + [300])
    filler = pools[-1]
    out = []
    for _ in range(n):
        label = int(rng.randint(k))
        length = int(rng.randint(10, 25))
        chars = []
        for _ in range(length):
            src = pools[label] if rng.rand() < frac else filler
            chars.append(src[rng.randint(len(src))])
        out.append({"text": "".join(chars), "text_pair": None, "label": label})
    return out


def _gen_ner(spec, rng, task_rng, n):
    num_types = int(spec.params.get("num_types", 1))
    given, loc_body, org_body, filler = _pools(task_rng, [60, 60, 60, 400])

    def entity(t):
        if t == 0:  # PER: surname + 1-2 given-name chars
            return [SURNAMES[rng.randint(len(SURNAMES))]] + [given[rng.randint(60)] for _ in range(rng.randint(1, 3))]
        if t == 1:  # LOC: 1-2 body chars + suffix
            return [loc_body[rng.randint(60)] for _ in range(rng.randint(1, 3))] + [LOC_SUFFIX[rng.randint(len(LOC_SUFFIX))]]
        return [org_body[rng.randint(60)] for _ in range(rng.randint(1, 3))] + list(ORG_SUFFIX[rng.randint(len(ORG_SUFFIX))])

    out = []
    for _ in range(n):
        chars, tags = [], []
        for _ in range(int(rng.randint(1, 4))):
            for _ in range(int(rng.randint(1, 5))):
                chars.append(filler[rng.randint(len(filler))])
                tags.append(0)
            t = int(rng.randint(num_types))
            ent = entity(t)
            chars += ent
            tags += [1 + 2 * t] + [2 + 2 * t] * (len(ent) - 1)
        for _ in range(int(rng.randint(0, 4))):
            chars.append(filler[rng.randint(len(filler))])
            tags.append(0)
        out.append({"text": "".join(chars), "text_pair": None, "label": tags})
    return out


def _gen_pair(spec, rng, task_rng, n):
    (filler,) = _pools(task_rng, [500])
    replace = int(spec.params.get("replace", 2))
    out = []
    for _ in range(n):
        length = int(rng.randint(6, 13))
        a = [filler[i] for i in rng.randint(len(filler), size=length)]
        label = int(rng.randint(2))
        if label == 1:
            b = [a[i] for i in rng.permutation(length)]
            for pos in rng.choice(length, size=min(replace, length - 1), replace=False):
                b[pos] = filler[rng.randint(len(filler))]
        else:
            b = [filler[i] for i in rng.randint(len(filler), size=length)]
            for pos in rng.choice(length, size=min(replace, length - 1), replace=False):
                b[pos] = a[rng.randint(length)]
        out.append({"text": "".join(a), "text_pair": "".join(b), "label": label})
    return out


def _gen_count(spec, rng, task_rng, n):
    target_pool, filler = _pools(task_rng, [1, 300])
    target = target_pool[0]
    out = []
    for _ in range(n):
        label = int(rng.randint(4))
        count = label if label < 3 else int(rng.randint(3, 6))
        length = int(rng.randint(max(8, count + 1), 21))
        chars = [filler[i] for i in rng.randint(len(filler), size=length)]
        for pos in rng.choice(length, size=count, replace=False):
            chars[pos] = target
        out.append({"text": "".join(chars), "text_pair": None, "label": label})
    return out


def _gen_order(spec, rng, task_rng, n):
    xy, filler = _pools(task_rng, [2, 300])
    out = []
    for _ in range(n):
        length = int(rng.randint(8, 21))
        chars = [filler[i] for i in rng.randint(len(filler), size=length)]
        i, j = rng.choice(length, size=2, replace=False)
        chars[i], chars[j] = xy[0], xy[1]
        out.append({"text": "".join(chars), "text_pair": None, "label": int(i < j)})
    return out


_TEMPLATES = {"keyword_cls": _gen_keyword, "topic_cls": _gen_topic, "ner_tag": _gen_ner,
              "pair_match": _gen_pair, "count_cls": _gen_count, "order_cls": _gen_order}

# (template, num_labels, params) for the 16 default tasks, in order.
_DEFAULT_PLAN = [
    ("keyword_cls", 2, {"sentiment": True}),
    ("topic_cls", 4, {"topic_frac": 0.3}),
    ("ner_tag", 3, {"num_types": 1}),
    ("pair_match", 2, {"replace": 2}),
    ("count_cls", 4, {}),
    ("order_cls", 2, {}),
    ("keyword_cls", 3, {}),
    ("topic_cls", 3, {"topic_frac": 0.25}),
    ("ner_tag", 5, {"num_types": 2}),
    ("keyword_cls", 4, {}),
    ("topic_cls", 5, {"topic_frac": 0.35}),
    ("ner_tag", 7, {"num_types": 3}),
    ("pair_match", 2, {"replace": 4}),
    ("count_cls", 4, {}),
    ("order_cls", 2, {}),
    ("topic_cls", 6, {"topic_frac": 0.3}),
]
MAX_TASKS = len(_DEFAULT_PLAN)


def make_task_specs(num_tasks: int = 16, base_seed: int = 0, train_size: int = 2000,
                    eval_size: int = 400) -> list[TaskSpec]:
    """The first `num_tasks` (1..16) default task definitions; names like 't03_pair_match'."""
    if not 1 <= num_tasks <= MAX_TASKS:
        raise ValueError(f"num_tasks must be in [1, {MAX_TASKS}], got {num_tasks}")
    specs = []
    for i, (template, k, params) in enumerate(_DEFAULT_PLAN[:num_tasks]):
        specs.append(TaskSpec(name=f"t{i:02d}_{template}", template=template, num_labels=k,
                              seed=base_seed * 1000 + 17 * i + 1, train_size=train_size,
                              eval_size=eval_size, params=dict(params)))
    return specs


def generate(spec: TaskSpec, split: str = "train", n: int | None = None) -> list[dict]:
    """Examples of `spec` for split train/eval/test/transfer (n defaults to the spec size)."""
    if spec.template not in _TEMPLATES:
        raise ValueError(f"unknown template '{spec.template}' in task '{spec.name}'; "
                         f"choose one of {sorted(_TEMPLATES)}")
    if split not in _SPLIT_OFFSET:
        raise ValueError(f"unknown split '{split}'; choose one of {sorted(_SPLIT_OFFSET)}")
    if n is None:
        n = spec.train_size if split in ("train", "transfer") else spec.eval_size
    task_rng = np.random.RandomState(spec.seed)  # task-level pools: same for every split
    rng = np.random.RandomState((spec.seed * 7919 + _SPLIT_OFFSET[split]) % (2 ** 32))
    return _TEMPLATES[spec.template](spec, rng, task_rng, n)


def encode(examples: list[dict], tokenizer, kind: str, max_len: int = 32, fast: bool = True) -> dict:
    """Tokenize with the ErnieTokenizer into numpy arrays.

    Returns {"input_ids": int64 [N, L], "token_type_ids": int64 [N, L], "labels": int64 [N] or
    [N, L] (token_cls: -100 at [CLS]/[SEP]/padding and truncated chars)}.
    fast=True: the synthetic texts are hanzi only, which the ErnieTokenizer splits into one token
    per char, so ids are looked up in `tokenizer.vocab` directly ([CLS] a [SEP] b [SEP], padded);
    examples that would need truncation or hold non-hanzi use the full tokenizer call.
    (tests/ernie_multitask/test_nlp_synth.py checks the fast path equals the tokenizer call.)
    """
    n = len(examples)
    ids = np.zeros((n, max_len), dtype="int64")
    tt = np.zeros((n, max_len), dtype="int64")
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    if kind == TOKEN_CLS:
        labels = np.full((n, max_len), -100, dtype="int64")
        for i, ex in enumerate(examples):
            chars = list(ex["text"])[: max_len - 2]
            tok = tokenizer.convert_tokens_to_ids(chars)
            row = [cls_id] + tok + [sep_id]
            ids[i, : len(row)] = row
            labels[i, 1: 1 + len(chars)] = ex["label"][: len(chars)]
        return {"input_ids": ids, "token_type_ids": tt, "labels": labels}
    vocab = tokenizer.vocab.token_to_idx if fast else None
    slow = []
    for i, ex in enumerate(examples):
        a, b = ex["text"], ex["text_pair"]
        total = len(a) + 2 + (len(b) + 1 if b is not None else 0)
        if not fast or total > max_len or not all(_is_hanzi(c) and c in vocab for c in a + (b or "")):
            slow.append(i)
            continue
        row = [cls_id] + [vocab[c] for c in a] + [sep_id]
        ids[i, : len(row)] = row
        if b is not None:
            row_b = [vocab[c] for c in b] + [sep_id]
            ids[i, len(row): len(row) + len(row_b)] = row_b
            tt[i, len(row): len(row) + len(row_b)] = 1
    if slow:
        sub = [examples[i] for i in slow]
        pairs = [ex["text_pair"] for ex in sub]
        enc = tokenizer([ex["text"] for ex in sub], text_pair=pairs if pairs[0] is not None else None,
                        max_length=max_len, padding="max_length", truncation=True, return_attention_mask=False)
        ids[slow] = np.asarray(enc["input_ids"], dtype="int64")
        tt[slow] = np.asarray(enc["token_type_ids"], dtype="int64")
    labels = np.asarray([ex["label"] for ex in examples], dtype="int64")
    return {"input_ids": ids, "token_type_ids": tt, "labels": labels}


def _is_hanzi(c: str) -> bool:
    return "\u4e00" <= c <= "\u9fff"


def build_arrays(specs: list[TaskSpec], tokenizer, split: str = "train", max_len: int = 32,
                 n: int | None = None) -> dict:
    """{task name: encode(generate(spec, split, n))} for every spec."""
    return {s.name: encode(generate(s, split, n), tokenizer, s.kind, max_len) for s in specs}
