"""Fine-tuning PaddleOCR-format weights: load_pretrained (PaddleOCR file layout and names, prefix and
checkpoint-folder forms, dict change, errors), MultiLoss training steps, export + Paddle Inference,
NRTR labels, and the multi-scale sampler."""
import json
import logging
from pathlib import Path

import numpy as np
import paddle
import pytest
from paddle.static import InputSpec

from paddle_recipes.checkpoint.format import CheckpointError, save_checkpoint
from paddle_recipes.weights.load import load_weights
from paddle_recipes.export import create_predictor, export_model, predict
from paddle_recipes.weights.pretrained import load_pretrained
from paddle_recipes.tasks.ocr_rec.multiscale import MultiScaleBatchSampler, MultiScaleDataset, scale_plan
from paddle_recipes.tasks.ocr_rec.ppocr_losses import MultiLoss, nrtr_labels
from paddle_recipes.tasks.ocr_rec.ppocr_models import PPOCR_CRNN_R34_ARCH, PPOCR_MOBILE_REC_ARCH, build_ppocr_rec_model

FIXTURES = Path(__file__).parent.parent / "fixtures" / "ppocr_manifests"


def mobile(num_classes, seed=0):
    paddle.seed(seed)
    return build_ppocr_rec_model(PPOCR_MOBILE_REC_ARCH, num_classes)


def random_paddleocr_file(model, path, seed=1):
    """A 'best_accuracy.pdparams' as PaddleOCR writes it: paddle.save(state_dict) with its names."""
    rng = np.random.RandomState(seed)
    sd = {k: paddle.to_tensor(rng.uniform(-0.1, 0.1, v.shape).astype("float32") +
                              (1.0 if k.endswith("_variance") else 0.0))
          for k, v in model.state_dict().items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    paddle.save(sd, str(path))
    return {k: v.numpy() for k, v in sd.items()}


def tiny_batch(num_classes, rng):
    lengths = np.array([3, 5])
    label = np.zeros([2, 6], dtype="int32")
    for i, n in enumerate(lengths):
        label[i, :n] = rng.randint(1, num_classes, n)
    image = rng.uniform(-1, 1, [2, 3, 48, 160]).astype("float32")
    return image, label, lengths, nrtr_labels(label, lengths, 25)


@pytest.mark.slow  # 50 s; the default suite starts PaddleOCR networks from weights in test_ppocr_v6 and test_ppocr_import
def test_paddleocr_file_loads_finetunes_exports(tmp_path, caplog):
    """PaddleOCR layout/names -> load via prefix -> 3 MultiLoss steps -> export -> inference == dygraph."""
    n = 30
    model = mobile(n)
    ref = random_paddleocr_file(model, tmp_path / "PP-OCRv5_mobile_rec_train" / "best_accuracy.pdparams")
    with caplog.at_level(logging.INFO, logger="paddle_recipes.weights.pretrained"):
        rep = load_pretrained(model, tmp_path / "PP-OCRv5_mobile_rec_train" / "best_accuracy")  # prefix form
    assert len(rep.loaded) == len(ref) and not (rep.reinitialized or rep.skipped or rep.missing or rep.unexpected)
    assert any("loaded 968/968 tensors" in r.message for r in caplog.records)
    sd = model.state_dict()
    assert all(np.array_equal(sd[k].numpy(), v) for k, v in ref.items())

    rng = np.random.RandomState(0)
    image, label, lengths, label_gtc = tiny_batch(n, rng)
    loss_fn = MultiLoss()
    opt = paddle.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    model.train()
    losses = []
    for _ in range(3):
        targets = [paddle.to_tensor(label), paddle.to_tensor(label_gtc), paddle.to_tensor(lengths)]
        out = model(paddle.to_tensor(image), targets)
        loss = loss_fn(out, targets[0], targets[2], targets[1])
        loss["loss"].backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss["loss"]))
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]
    changed = model.state_dict()
    assert not np.array_equal(changed["head.ctc_head.fc.weight"].numpy(), ref["head.ctc_head.fc.weight"])
    assert not np.array_equal(changed["head.gtc_head.tgt_word_prj.weight"].numpy(),
                              ref["head.gtc_head.tgt_word_prj.weight"])

    model.eval()
    with paddle.no_grad():
        want = model(paddle.to_tensor(image)).numpy()
    assert want.shape == (2, 20, n)  # eval: 3x2 average pool -> W/16 steps
    np.testing.assert_allclose(want.sum(-1), 1.0, rtol=1e-5)  # eval/export output = CTC softmax
    exp = export_model(model, [InputSpec([None, 3, 48, None], "float32", "x")], tmp_path / "infer" / "inference")
    got = predict(create_predictor(exp.prefix, threads=1), image)
    assert len(got) == 1
    np.testing.assert_allclose(got[0], want, atol=1e-4)


def test_dict_change_reinitialises_heads_only(tmp_path, caplog):
    src = mobile(50)
    ref = random_paddleocr_file(src, tmp_path / "best_accuracy.pdparams")
    model = mobile(20, seed=3)
    fresh = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    with caplog.at_level(logging.INFO, logger="paddle_recipes.weights.pretrained"):
        rep = load_pretrained(model, tmp_path / "best_accuracy.pdparams")
    heads = {"head.ctc_head.fc.weight": ([120, 50], [120, 20]), "head.ctc_head.fc.bias": ([50], [20]),
             "head.gtc_head.embedding.embedding.weight": ([54, 384], [24, 384]),
             "head.gtc_head.tgt_word_prj.weight": ([384, 54], [384, 24])}
    assert {k: tuple(v) for k, v in rep.reinitialized.items()} == heads
    assert model.class_dependent_params() == ["head.ctc_head.fc.", "head.gtc_head.embedding.",
                                              "head.gtc_head.tgt_word_prj."]
    sd = model.state_dict()
    for k in sd:
        if k in heads:
            assert np.array_equal(sd[k].numpy(), fresh[k]), k  # kept the fresh init
        else:
            assert np.array_equal(sd[k].numpy(), ref[k]), k  # backbone/necks equal the file
    lines = [r.message for r in caplog.records if "re-initialised 4 class-dependent" in r.message]
    assert len(lines) == 1 and all(k in lines[0] for k in heads)
    assert any("loaded 964/968 tensors, re-initialised 4, skipped 0" in r.message for r in caplog.records)

    # a non-head mismatch (other backbone scale) is a one-line error naming the tensor
    other = build_ppocr_rec_model({**PPOCR_MOBILE_REC_ARCH, "Backbone": {"name": "PPLCNetV3", "scale": 0.5}}, 50)
    paddle.save(other.state_dict(), str(tmp_path / "other.pdparams"))
    with pytest.raises(CheckpointError, match=r"shape mismatch for backbone\.blocks2\.0\.pw_conv\.conv_kxk\.0\.conv\.weight \[16, 16, 1, 1\]->\[32, 16, 1, 1\].* \(703 in all") as err:
        load_pretrained(src, tmp_path / "other.pdparams")
    assert "\n" not in str(err.value)
    rep = load_pretrained(src, tmp_path / "other.pdparams", allow_shape_mismatch=True, strict=False)
    assert len(rep.skipped) == 703 and "backbone.blocks2.0.pw_conv.conv_kxk.0.conv.weight" in rep.skipped and len(rep.loaded) + len(rep.skipped) == 968


def test_missing_and_unexpected_keys(tmp_path):
    model = mobile(20)
    sd = model.state_dict()
    partial = {k: v for k, v in sd.items() if not k.startswith("head.gtc_head.decoder.3.")}
    partial["extra.weight"] = paddle.zeros([2])
    paddle.save(partial, str(tmp_path / "p.pdparams"))
    with pytest.raises(CheckpointError, match=r"lacks head\.gtc_head\.decoder\.3\..*\(\d+ in all\)"):
        load_pretrained(model, tmp_path / "p.pdparams")
    rep = load_pretrained(model, tmp_path / "p.pdparams", strict=False)
    assert all(k.startswith("head.gtc_head.decoder.3.") for k in rep.missing) and rep.unexpected == ["extra.weight"]
    with pytest.raises(CheckpointError, match="pretrained weights not found"):
        load_pretrained(model, tmp_path / "nothing")


def test_checkpoint_folder_and_strict_load_weights(tmp_path):
    crnn = build_ppocr_rec_model(PPOCR_CRNN_R34_ARCH, 37)
    save_checkpoint(tmp_path / "ckpt", {"model": crnn.state_dict(), "epoch": 1}, "step_000001")
    other = build_ppocr_rec_model(PPOCR_CRNN_R34_ARCH, 37)
    rep = load_pretrained(other, tmp_path / "ckpt")  # a checkpoint root with 'latest'
    assert len(rep.loaded) == 229 and rep.source.endswith("model.pdparams")
    assert other.class_dependent_params() == ["head.fc."]
    # a PaddleOCR distillation checkpoint: tensors under Student. / Teacher.
    sd = crnn.state_dict()
    paddle.save({**{"Student." + k: v for k, v in sd.items()}, **{"Teacher." + k: v for k, v in sd.items()}},
                str(tmp_path / "distill.pdparams"))
    with pytest.raises(CheckpointError, match=r"sit under \['Student\.', 'Teacher\.'\].*source_prefix"):
        load_pretrained(other, tmp_path / "distill.pdparams")
    rep = load_pretrained(other, tmp_path / "distill.pdparams", source_prefix="Student.")
    assert len(rep.loaded) == 229 and not rep.unexpected
    # evaluation loading (load_weights) no longer "loads" a checkpoint of another dict size
    with pytest.raises(CheckpointError, match=r"shape mismatch for head\.fc\.weight \[512, 37\]->\[512, 12\]"):
        load_weights(build_ppocr_rec_model(PPOCR_CRNN_R34_ARCH, 12), tmp_path / "ckpt")


def test_nrtr_labels_and_multiloss_match_paddleocr():
    ref = json.loads((FIXTURES / "PP-OCRv4_mobile_rec.outputs.json").read_text())
    gtc = nrtr_labels(np.array(ref["train_label_ctc"]), ref["train_length"], 25)
    assert gtc.tolist() == ref["train_label_gtc"]
    with pytest.raises(ValueError, match="row 1: length 24"):
        nrtr_labels(np.ones([2, 24], "int32"), [3, 24], 25)


def test_multiscale_plan_determinism_and_resume():
    assert scale_plan([[320, 32], [320, 48], [320, 64]], 128) == [(320, 32, 128), (320, 48, 85), (320, 64, 64)]
    assert scale_plan([[320, 32], [320, 48]], 8, fix_bs=True) == [(320, 32, 8), (320, 48, 8)]
    assert scale_plan([[320, 32], [320, 48]], 8, is_training=False) == [(320, 32, 8)]
    s = MultiScaleBatchSampler(100, scales=[[320, 32], [320, 48], [320, 64]], first_bs=12, seed=7)
    s.set_epoch(3)
    e3 = list(s)
    assert len(e3) == len(s)
    assert {(b[0][2], b[0][3], len(b)) for b in e3} == {(32, 320, 12), (48, 320, 8), (64, 320, 6)}
    assert all(len({(k[2], k[3]) for k in b}) == 1 and all(k[0] == 3 for k in b) for b in e3)
    assert set(k[1] for b in e3 for k in b) == set(range(100))  # every sample, last batch topped up
    again = MultiScaleBatchSampler(100, scales=[[320, 32], [320, 48], [320, 64]], first_bs=12, seed=7)
    again.set_epoch(3)
    again.skip_next(4)
    assert list(again) == e3[4:]  # exact resume
    again.set_epoch(4)
    assert list(again) != e3 and len(list(again)) == len(e3)  # next epoch reshuffles; skip was one-shot
    r0 = MultiScaleBatchSampler(100, first_bs=12, seed=7, num_replicas=2, rank=0)
    r1 = MultiScaleBatchSampler(100, first_bs=12, seed=7, num_replicas=2, rank=1)
    ids0 = {k[1] for b in r0 for k in b}
    ids1 = {k[1] for b in r1 for k in b}
    assert not ids0 & ids1 and len(r0) == len(r1)

    class Sized:
        def __len__(self):
            return 100

        def get_scaled(self, index, h, w):
            return index, h, w, float(np.random.rand())

    class Images:
        def __len__(self):
            return 50

        def get_scaled(self, index, h, w):
            return np.full([3, h, w], index, "float32")

    loader = paddle.io.DataLoader(MultiScaleDataset(Images()), batch_sampler=MultiScaleBatchSampler(50, first_bs=4))
    assert {tuple(b.shape) for b in loader} == {(4, 3, 32, 320), (2, 3, 48, 320), (2, 3, 64, 320)}

    ds = MultiScaleDataset(Sized(), seed=1)
    assert ds[(3, 5, 48, 320)] == ds[(3, 5, 48, 320)] and ds[(3, 5, 48, 320)][:3] == (5, 48, 320)
    assert ds[(3, 5, 48, 320)][3] != ds[(4, 5, 48, 320)][3]


def test_paddleocr_v5_dict_flag_entries_keep_their_class(tmp_path):
    """ppocrv5_dict.txt has 10 two-code-point flag lines; PaddleOCR counts them as classes (18,385 in all)."""
    from paddle_recipes.tasks.ocr_rec.charset import CharDict, CharDictError

    (tmp_path / "d.txt").write_text("中\n🇩🇪\n🇨🇳\nA\n", encoding="utf-8")
    d = CharDict.from_file(tmp_path / "d.txt", use_space_char=True)
    assert d.num_classes == 6 and d.decode_ids([2, 1]) == "🇩🇪中"
    assert d.check("中A", 25).ids == [1, 4]
    # PaddleOCR's encoder walks code points, so it drops such labels; ours splits labels into dict entries
    # (longest match), so a flag label trains as its one class instead of being skipped.
    assert d.check("🇩🇪", 25).ids == [2]
    (tmp_path / "bad.txt").write_text("中\nab\n", encoding="utf-8")
    with pytest.raises(CharDictError, match=r"bad.txt:2: expected one character per line, got 'ab'"):
        CharDict.from_file(tmp_path / "bad.txt")
