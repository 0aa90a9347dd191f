"""PaddleOCR rec YAMLs through the OCR recipe's CLI (-c <PaddleOCR yml> -o <PaddleOCR keys>): each of the five
fixture files trains 2 steps on a 16-line label-file set, evaluates and exports; and the dict-change fine-tune
path (pretrain with dict A, fine-tune with dict B through Global.pretrained_model)."""
from __future__ import annotations

import logging
import random
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from paddle_recipes.recipes.ocr_rec import OcrRec

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "paddleocr_configs"
DICT_A = "0123456789abcdef"


def write_label_set(root: Path, chars: str, n: int = 16, seed: int = 0) -> Path:
    """n BGR line images of 1-6 random `chars` (cv2.putText) + train.txt (PaddleOCR's `path<TAB>label`)."""
    rng = random.Random(seed)
    (root / "img").mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        text = "".join(rng.choice(chars) for _ in range(rng.randint(1, 6)))
        img = np.full((32, 20 * len(text) + 12, 3), 255, np.uint8)
        cv2.putText(img, text, (4, 24), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (0, 0, 0), 2)
        cv2.imwrite(str(root / "img" / f"{i}.png"), img)
        lines.append(f"img/{i}.png\t{text}")
    (root / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "dict.txt").write_text("\n".join(chars) + "\n", encoding="utf-8")
    return root


WIDTH = 96  # input width for the tests (PaddleOCR's files say 320)


def narrow(name: str) -> list[str]:
    """-o of every RecResizeImg image_shape (a list index in the key) to width WIDTH, and of the sampler scales."""
    data = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
    opts = []
    for split in ("Train", "Eval"):
        for i, op in enumerate(data[split]["dataset"]["transforms"]):
            if "RecResizeImg" in op:
                c, h, _ = op["RecResizeImg"]["image_shape"]
                opts.append(f"{split}.dataset.transforms.{i}.RecResizeImg.image_shape=[{c},{h},{WIDTH}]")
    if "sampler" in data["Train"]:
        opts += ["Train.sampler.first_bs=4", f"Train.sampler.scales=[[{WIDTH},32],[{WIDTH},48]]"]
    return opts


def paddleocr_opts(data: Path, out: Path, name: str) -> list[str]:
    """-o in PaddleOCR's own keys: tiny data, 2 steps, our dict, CPU, narrow inputs."""
    opts = [f"Global.save_model_dir={out}", "Global.epoch_num=1", "Global.max_steps=2", "Global.print_batch_step=1",
            "Global.use_gpu=false", f"Global.character_dict_path={data / 'dict.txt'}", "Global.eval_batch_step=[0,2]",
            f"Global.save_inference_dir={out}", "Global.device=cpu",
            f"Train.dataset.data_dir={data}", f"Train.dataset.label_file_list=[{data / 'train.txt'}]",
            f"Eval.dataset.data_dir={data}", f"Eval.dataset.label_file_list=[{data / 'train.txt'}]",
            "Train.loader.batch_size_per_card=4", "Train.loader.num_workers=0",
            "Eval.loader.batch_size_per_card=8", "Eval.loader.num_workers=0"]
    return opts + narrow(name)


def fresh_logging() -> None:
    """Drop the handlers an earlier in-process run installed (their stdout may be a closed pytest capture)."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_paddle_recipes", False)]:
        root.removeHandler(h)
        h.close()


def run(argv: list[str]):
    fresh_logging()
    return OcrRec.main(argv)


SLOW = pytest.mark.slow  # the CI script runs these too (`pytest -q -m slow`); the default suite keeps one of each kind
CASES = [("rec_chinese_common_train_v2.0.yml", False, []),
         pytest.param("rec_r34_vd_none_bilstm_ctc.yml", False, ["Global.character_type=ch", "Train.dataset.name=SimpleDataSet",
                      "Eval.dataset.name=SimpleDataSet"], marks=SLOW),  # the file reads LMDBs
         pytest.param("ch_PP-OCRv4_rec.yml", True, [], marks=SLOW),
         ("PP-OCRv5_mobile_rec.yml", True, []),
         pytest.param("PP-OCRv5_server_rec.yml", True, [], marks=SLOW)]  # ~25-40 s each on 2 shared cores (small dict, width 96)


@pytest.mark.parametrize("name,multiscale,extra", CASES)
def test_paddleocr_yaml_trains_evaluates_exports(tmp_path, capsys, name, multiscale, extra):
    data = write_label_set(tmp_path / "data", DICT_A)
    out = tmp_path / "out"
    argv = ["-c", str(FIXTURES / name), "-o", *paddleocr_opts(data, out, name), *extra]
    summary = run(argv)
    assert summary["global_step"] == 2
    assert all(np.isfinite(h["loss"]) for h in summary["history"])
    assert summary["final_eval"]["num_samples"] == 16
    log = (out / "train.log").read_text(encoding="utf-8")
    assert "no effect here: Global.use_gpu" not in log  # use_gpu false maps to Global.device
    assert "no effect here:" in log
    if multiscale:  # MultiHead: MultiLoss parts logged, batches of 4 at 32 px high (first_bs) then fewer at 48
        assert "NRTRLoss" in log and "CTCLoss" in log
        assert "not exactly as PaddleOCR" in log
    metrics = run(["--mode", "eval", *argv])
    assert metrics["num_samples"] == 16 and 0.0 <= metrics["acc"] <= 1.0
    report = run(["--mode", "export", *argv])
    assert report["same_decoded_text"] is True and report["max_abs_diff"] < 1e-4


YML = "PP-OCRv5_mobile_rec.yml"


def test_dict_change_finetune_through_the_cli(tmp_path, capsys):
    """Pretrain a PP-OCRv5-mobile-style config with dict A, fine-tune with dict B: the CTC and NRTR output layers
    are re-initialised and listed; a backbone that differs is a one-line error (exit 2)."""
    a = write_label_set(tmp_path / "a", DICT_A)
    b = write_label_set(tmp_path / "b", "xyz0123", seed=1)
    yml = str(FIXTURES / YML)
    run(["-c", yml, "-o", *paddleocr_opts(a, tmp_path / "pre", YML)])
    ckpt = tmp_path / "pre" / "checkpoints"
    assert ckpt.exists()
    out = tmp_path / "ft"
    summary = run(["-c", yml, "-o", *paddleocr_opts(b, out, YML), f"Global.pretrained_model={ckpt}"])
    assert summary["global_step"] == 2
    log = (out / "train.log").read_text(encoding="utf-8")
    line = next(ln for ln in log.splitlines() if "re-initialised 4 class-dependent tensors" in ln)
    for name in ("head.ctc_head.fc.weight", "head.ctc_head.fc.bias", "head.gtc_head.embedding.embedding.weight",
                 "head.gtc_head.tgt_word_prj.weight"):
        assert name.split(".weight")[0].split(".bias")[0] in line, name
    assert "loaded " in log and "pretrained " in log
    fresh_logging()
    with pytest.raises(SystemExit) as exc:
        OcrRec.cli(["-c", yml, "-o", *paddleocr_opts(b, tmp_path / "bad", YML), f"Global.pretrained_model={ckpt}",
                    "Architecture.Backbone.scale=0.5"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ocr_rec: error: ") and "shape mismatch for backbone." in err[0]


def test_paddleocr_key_this_version_lacks_is_a_one_line_error(tmp_path, capsys):
    """A key the translator maps to a schema key we do not have yet (compat.PROPOSED_KEYS) is rejected by name."""
    data = yaml.safe_load((FIXTURES / "rec_chinese_common_train_v2.0.yml").read_text(encoding="utf-8"))
    data["Optimizer"]["clip_norm"] = 10
    yml = tmp_path / "with_clip_norm.yml"
    yml.write_text(yaml.safe_dump(data), encoding="utf-8")
    fresh_logging()
    with pytest.raises(SystemExit) as exc:
        OcrRec.cli(["-c", str(yml), "-o", f"Global.save_model_dir={tmp_path / 'out'}"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Optimizer.clip_norm: not supported by this version" in err[0], err


def test_multiscale_training_resumes_exactly(tmp_path):
    """Our smoke preset with Train.sampler: 2 epochs straight == 1 epoch, then Global.resume -> 2 epochs
    (same weights bit for bit: the multi-scale plan depends only on (seed, epoch))."""
    import paddle

    from paddle_recipes.pretrained import resolve_weights_file

    data = write_label_set(tmp_path / "data", DICT_A)
    smoke = str(REPO / "recipes" / "configs" / "ocr_rec_smoke.yml")
    opts = [f"Global.character_dict_path={data / 'dict.txt'}", "Global.image_shape=[3,32,96]", "Global.log_every=1",
            "Train.dataset.format=label_file", f"Train.dataset.data_dir={data}",
            f"Train.dataset.label_file_list=[{data / 'train.txt'}]", "Eval.dataset.format=label_file",
            f"Eval.dataset.data_dir={data}", f"Eval.dataset.label_file_list=[{data / 'train.txt'}]",
            "Train.loader.batch_size_per_card=4", "Train.sampler.first_bs=4", "Train.sampler.scales=[[96,32],[96,48]]"]
    straight = run(["-c", smoke, "-o", *opts, f"Global.output_dir={tmp_path / 'a'}", "Global.epochs=2"])
    run(["-c", smoke, "-o", *opts, f"Global.output_dir={tmp_path / 'b'}", "Global.epochs=1"])
    resumed = run(["-c", smoke, "-o", *opts, f"Global.output_dir={tmp_path / 'b'}", "Global.epochs=2",
                   f"Global.resume={tmp_path / 'b' / 'checkpoints'}"])
    assert straight["global_step"] == resumed["global_step"] == 10  # 16 lines: batches 4, 2, 4, 2, 4 per epoch
    assert resumed["resumed_from"]
    a, b = (paddle.load(str(resolve_weights_file(tmp_path / d / "checkpoints", prefer_ema=False))) for d in "ab")
    assert a.keys() == b.keys() and all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


def test_nrtr_labels_that_do_not_fit_are_counted_skips_and_decoding_follows_the_output(tmp_path):
    """MultiLabelEncode keeps labels of at most max_text_length - 2 chars (NRTR's <s> text </s>); the rest are
    counted `too_long` skips. PaddleOCR's models output probabilities in eval, ours logits: decode accordingly."""
    from paddle_recipes.config import from_dict
    from paddle_recipes.tasks.ocr.charset import CharDict
    from paddle_recipes.tasks.ocr.dataset import DatasetConfig, RecDataset, collate_gtc
    from paddle_recipes.tasks.ocr.evaluate import outputs_logits
    from paddle_recipes.tasks.ocr.models import ArchitectureConfig, build_rec_model
    from paddle_recipes.tasks.ocr.ppocr_models import PPOCR_MOBILE_REC_ARCH

    data = write_label_set(tmp_path / "d", DICT_A)
    lengths = [len(ln.split("\t")[1]) for ln in (data / "train.txt").read_text().splitlines()]
    cfg = DatasetConfig(data_dir=str(data), label_file_list=[str(data / "train.txt")], label_encoder="MultiLabelEncode")
    ds = RecDataset(cfg, CharDict.from_file(data / "dict.txt"), (3, 32, 96), max_text_length=6, keep_max_length=4)
    assert len(ds) == sum(n <= 4 for n in lengths) and ds.stats.counts()["too_long"] == sum(n > 4 for n in lengths)
    batch = collate_gtc([ds[i] for i in range(len(ds))], max_text_length=6)
    n = int(batch["length"][0])
    assert batch["label_gtc"][0, 0] == 2 and batch["label_gtc"][0, n + 1] == 3  # <s> ids+3 </s>
    assert list(batch["label_gtc"][0, 1:n + 1]) == [int(v) + 3 for v in batch["label"][0, :n]]
    ppocr = build_rec_model(from_dict(ArchitectureConfig, PPOCR_MOBILE_REC_ARCH, "Architecture"), 10)
    ours = build_rec_model({"Backbone": {"name": "LCNetRec", "scale": 0.25}, "Head": {"name": "CTCHead"}}, 10)
    assert outputs_logits(ppocr) is False and outputs_logits(ours) is True
