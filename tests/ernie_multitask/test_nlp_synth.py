"""NLP data: char vocab for ErnieTokenizer, deterministic synthetic Chinese tasks, encoding."""
import numpy as np
import pytest

from paddle_recipes.tasks.ernie_multitask.synth_tasks import (MAX_TASKS, SEQ_CLS, TOKEN_CLS, build_arrays, encode,
                                                              generate, make_task_specs)
from paddle_recipes.tasks.ernie_multitask.vocab import (DEFAULT_VOCAB, SPECIAL_TOKENS, build_vocab_tokens,
                                                        gb2312_level1, load_tokenizer)


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


def test_vocab_layout_and_shipped_file():
    hanzi = gb2312_level1()
    assert len(hanzi) == 3755 and hanzi[0] == "啊" and hanzi[-1] == "座"
    tokens = build_vocab_tokens()
    assert tokens[:5] == SPECIAL_TOKENS and len(set(tokens)) == len(tokens)
    assert DEFAULT_VOCAB.read_text(encoding="utf-8").splitlines() == tokens  # shipped file is up to date


def test_tokenizer_on_shipped_vocab(tok):
    enc = tok("我爱北京", "天气很好")
    toks = tok.convert_ids_to_tokens(enc["input_ids"])
    assert toks == ["[CLS]", "我", "爱", "北", "京", "[SEP]", "天", "气", "很", "好", "[SEP]"]
    assert enc["token_type_ids"] == [0] * 6 + [1] * 5
    assert tok.convert_ids_to_tokens(tok("龘")["input_ids"])[1] == "[UNK]"  # not in level 1


def test_sixteen_distinct_deterministic_tasks():
    specs = make_task_specs(16)
    assert len(specs) == MAX_TASKS == 16 and len({s.name for s in specs}) == 16
    assert {s.template for s in specs} == {"keyword_cls", "topic_cls", "ner_tag", "pair_match", "count_cls", "order_cls"}
    assert {s.kind for s in specs} == {SEQ_CLS, TOKEN_CLS}
    a, b = generate(specs[3], "train", 50), generate(make_task_specs(16)[3], "train", 50)
    assert a == b                                                   # same spec -> same data
    assert generate(specs[3], "eval", 50) != a                      # splits differ
    other = make_task_specs(16, base_seed=1)[3]
    assert generate(other, "train", 50) != a                        # seeds differ
    with pytest.raises(ValueError, match="num_tasks"):
        make_task_specs(17)
    with pytest.raises(ValueError, match="unknown split"):
        generate(specs[0], "dev")


@pytest.mark.parametrize("idx", range(16))
def test_task_labels_are_valid_and_learnable_signal(idx):
    spec = make_task_specs(16)[idx]
    exs = generate(spec, "train", 120)
    if spec.kind == TOKEN_CLS:
        for ex in exs:
            tags = ex["label"]
            assert len(tags) == len(ex["text"]) and max(tags) < spec.num_labels == len(spec.label_names)
            for prev, cur in zip([0] + tags, tags):   # valid BIO: I-t follows B-t or I-t
                if cur > 0 and cur % 2 == 0:
                    assert prev in (cur - 1, cur)
    else:
        labels = [ex["label"] for ex in exs]
        assert set(labels) == set(range(spec.num_labels))  # every class occurs
    if spec.template == "count_cls":
        target = max(set("".join(e["text"] for e in exs)), key=lambda c: sum(e["text"].count(c) for e in exs))
        for ex in exs:
            assert min(ex["text"].count(target), 3) == ex["label"]
    if spec.template == "keyword_cls" and spec.params.get("sentiment"):
        pos = [e for e in exs if e["label"] == 0]
        assert all(any(c in e["text"] for c in "好棒赞喜爱乐美优") for e in pos)


def test_fast_encoding_equals_tokenizer_call(tok):
    for spec in make_task_specs(16):
        exs = generate(spec, "eval", 40)
        fast, slow = encode(exs, tok, spec.kind, 32), encode(exs, tok, spec.kind, 32, fast=False)
        for k in fast:
            np.testing.assert_array_equal(fast[k], slow[k], err_msg=f"{spec.name}:{k}")
    # truncation path: long texts go through the tokenizer and are cut to max_len
    long = [{"text": "天" * 40, "text_pair": "地" * 40, "label": 1}]
    enc = encode(long, tok, SEQ_CLS, 16)
    assert enc["input_ids"].shape == (1, 16) and (enc["input_ids"] != 0).all()


def test_token_task_alignment(tok):
    spec = make_task_specs(3)[2]
    exs = generate(spec, "train", 20)
    arr = build_arrays([spec], tok, "train", 32, n=20)[spec.name]
    for i, ex in enumerate(exs):
        n = min(len(ex["text"]), 30)
        assert arr["input_ids"][i, 0] == tok.cls_token_id and arr["input_ids"][i, n + 1] == tok.sep_token_id
        assert tok.convert_ids_to_tokens(arr["input_ids"][i, 1:n + 1].tolist()) == list(ex["text"][:n])
        assert arr["labels"][i, 1:n + 1].tolist() == ex["label"][:n]
        assert (arr["labels"][i, n + 1:] == -100).all() and arr["labels"][i, 0] == -100
