"""PaddleOCR rec YAMLs through the OCR recipe's CLI (-c <PaddleOCR yml> -o <PaddleOCR keys>): each of the five
fixture files trains 2 steps on a 16-line label-file set, evaluates and exports; and the dict-change fine-tune
path (pretrain with dict A, fine-tune with dict B through Global.pretrained_model)."""
from __future__ import annotations

import gc
import json
import logging
import os
import random
import re
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from paddle_recipes.data import write_lmdb
from paddle_recipes.recipes.ocr_rec import OcrRec

REPO = Path(__file__).resolve().parents[2]
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
    write_lmdb(root / "lmdb", [((root / p).read_bytes(), t) for p, t in (ln.split("\t") for ln in lines)])
    return root


WIDTH = 96  # input width of the train-evaluate-export tests (PaddleOCR's files say 320)
EXPECTED = yaml.safe_load((REPO / "tests" / "fixtures" / "paddleocr_rec_expected.yml").read_text(encoding="utf-8"))
TRAINS = [n for n, v in EXPECTED.items() if v == "trains"]
FAILS = [n for n, v in EXPECTED.items() if v != "trains"]


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
        opts.append(f"Train.sampler.scales=[[{WIDTH},32],[{WIDTH},48]]")
    return opts


def data_opts(data: Path, out: Path, name: str, steps: int = 2) -> list[str]:
    """-o in PaddleOCR's own keys that change only where data, weights and outputs are and how long it runs: our
    16-line set (label file, or LMDB for an LMDB dataset) and dict (where the file names one), no init weights,
    `steps` steps of 4 lines, no worker processes."""
    raw = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
    opts = [f"Global.save_model_dir={out}", "Global.epoch_num=1", f"Global.max_steps={steps}",
            "Global.print_batch_step=1", f"Global.eval_batch_step=[0,{steps}]", f"Global.save_inference_dir={out}"]
    if raw["Global"].get("character_dict_path"):
        opts.append(f"Global.character_dict_path={data / 'dict.txt'}")
    if raw["Global"].get("pretrained_model"):
        opts.append("Global.pretrained_model=")
    for split in ("Train", "Eval"):
        lmdb = raw[split]["dataset"]["name"].startswith("LMDB")
        opts += [f"{split}.dataset.data_dir={data / 'lmdb' if lmdb else data}",
                 f"{split}.loader.batch_size_per_card={4 if split == 'Train' else 8}", f"{split}.loader.num_workers=0"]
        if not lmdb:
            opts.append(f"{split}.dataset.label_file_list=[{data / 'train.txt'}]")
    if raw["Train"].get("sampler"):
        opts.append("Train.sampler.first_bs=4")
    return opts


def paddleocr_opts(data: Path, out: Path, name: str) -> list[str]:
    """data_opts plus narrow inputs (width WIDTH) and Global.use_gpu=false (-> Global.device cpu)."""
    return data_opts(data, out, name) + ["Global.use_gpu=false"] + narrow(name)


def fresh_logging() -> None:
    """Drop the handlers an earlier in-process run installed (their stdout may be a closed pytest capture)."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_paddle_recipes", False)]:
        root.removeHandler(h)
        h.close()


def run(argv: list[str]):
    fresh_logging()
    gc.collect()  # an earlier in-process run's LMDB environment closes when collected (lmdb opens a path once)
    return OcrRec.main(argv)


SLOW = pytest.mark.slow  # the CI script runs these too (`pytest -q -m slow`); the default suite keeps one of each kind
V2, R34, V4, V5M, V5S = ("ch_ppocr_v2.0/rec_chinese_common_train_v2.0.yml", "rec_r34_vd_none_bilstm_ctc.yml",
                         "PP-OCRv4/PP-OCRv4_mobile_rec.yml", "PP-OCRv5/PP-OCRv5_mobile_rec.yml",
                         "PP-OCRv5/PP-OCRv5_server_rec.yml")
CASES = [pytest.param(V2, False, [], marks=SLOW),  # the default suite keeps v5 mobile (MultiHead, multi-scale)
         # the file's empty dict path is PaddleOCR's built-in dict (an error here, see EXPECTED): give one; it reads LMDBs
         pytest.param(R34, False, [], marks=SLOW),
         pytest.param(V4, True, [], marks=SLOW),
         pytest.param(V5M, True, [], marks=SLOW),  # 48 s: the default suite's PaddleOCR-YAML train/eval/export is
         # test_ppocr_v6's tiny case (with pretrained weights); test_real_yaml_trains_as_written keeps a v5 file
         pytest.param(V5S, True, [], marks=SLOW)]  # ~25-40 s each on 2 shared cores (small dict, width 96)


@pytest.mark.parametrize("name,multiscale,extra", CASES)
def test_paddleocr_yaml_trains_evaluates_exports(tmp_path, capsys, name, multiscale, extra):
    data = write_label_set(tmp_path / "data", DICT_A)
    out = tmp_path / "out"
    argv = ["-c", str(FIXTURES / name), "-o", *paddleocr_opts(data, out, name), *extra]
    if name == R34:
        argv.append(f"Global.character_dict_path={data / 'dict.txt'}")
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
    assert report["model_name"] == EXPORT_NAMES[name]  # follows the exported network
    if name == V2:  # its name (PP-OCRv5_server_rec) is read by paddleocr in the V5S case and in
        return          # tests/paddleocr/test_paddleocr_inference.py: the default suite runs the side venv once (V5M)
    rows = run(["--mode", "predict", *argv, f"Global.infer_img={data / 'img'}"])
    folder = Path(report["prefix"]).parent  # Global.save_inference_dir: out -> out/inference.json, ...
    theirs = paddleocr3_results(folder, report["model_name"], [f for f, _, _ in rows], tmp_path)
    assert [t for t, _ in theirs] == [t for _, t, _ in rows]
    diff = max(abs(s - c) for (_, s), (_, _, c) in zip(theirs, rows))
    print(f"{name}: paddleocr 3.x TextRecognition(model_name={report['model_name']!r}) vs --mode predict on "
          f"{len(rows)} lines: texts equal, max score diff {diff:.2e}")
    assert diff < SCORE_TOL


# Global.model_name of each export (Export.model_name ""): the file's own, else PaddleOCR's model of the network
# (PPLCNetV3 -> PP-OCRv5_mobile_rec), else PP-OCRv5_server_rec (no PaddleX name for the ResNet CRNN)
EXPORT_NAMES = {V2: "PP-OCRv5_server_rec", R34: "PP-OCRv5_server_rec", V4: "PP-OCRv4_mobile_rec",
                V5M: "PP-OCRv5_mobile_rec", V5S: "PP-OCRv5_server_rec"}
# Scores of paddleocr 3.x on our export vs --mode predict (dygraph; both float32 softmax means): the bound the README
# states. Measured: <= 3.5e-6 (issue 19, 200 lines of PP-OCRv5), 8.9e-7 (tests/paddleocr/test_paddleocr_inference.py).
SCORE_TOL = 1e-5
VENV_PY = Path(os.environ.get("PADDLEOCR_VENV", REPO / ".venv-paddleocr")) / "bin" / "python"


def paddleocr3_results(model_dir: Path, model_name: str, files: list, cwd: Path) -> list:
    """[(text, score)] of paddleocr 3.x TextRecognition(model_name=..., model_dir=...) at batch 1, run in the side
    venv (.ci/setup_paddleocr_venv.sh); skips without it, fails without it under CI=true."""
    if not VENV_PY.is_file():
        msg = f"no paddleocr venv at {VENV_PY.parent.parent}: run .ci/setup_paddleocr_venv.sh to enable this check"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg)
        pytest.skip(msg)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(OMP_NUM_THREADS="1", PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK="True")
    proc = subprocess.run([str(VENV_PY), str(REPO / "tests" / "scripts" / "paddleocr_rec_predict.py"), str(model_dir),
                           model_name, "1", *files], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])["results"]


# ----------------------------------------------------------------------------- every real rec YAML, as written
def test_the_expectation_table_covers_every_fixture():
    files = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*") if p.suffix in (".yml", ".yaml"))
    assert files == sorted(EXPECTED) and len(files) >= 40


@pytest.mark.parametrize("name", FAILS)
def test_real_yaml_this_version_does_not_build_exits_with_one_line(tmp_path, capsys, name):
    data = write_label_set(tmp_path / "data", DICT_A, n=2)
    fresh_logging()
    with pytest.raises(SystemExit) as exc:
        OcrRec.cli(["-c", str(FIXTURES / name), "-o", *data_opts(data, tmp_path / "out", name)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ocr_rec: error: "), err
    assert re.search(EXPECTED[name]["error"], err[0]), err[0]


def _networks() -> dict:
    """{first file: [files]} of the files that train, grouped by translated Architecture + input shape: 3 networks
    (PP-OCRv4/v5 mobile and the multi_language files are one PPLCNetV3 network with other dicts; v5 server; v2.0)."""
    from paddle_recipes.compat.paddleocr import translate_rec_config

    groups: dict = {}
    for n in TRAINS:
        ours, _ = translate_rec_config(yaml.safe_load((FIXTURES / n).read_text(encoding="utf-8")), n)
        groups.setdefault(json.dumps([ours["Architecture"], ours["Global"]["image_shape"]], sort_keys=True), []).append(n)
    return {files[0]: files for files in groups.values()}


NETWORKS = _networks()


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_real_yaml_builds_its_network(tmp_path, name):
    """Every network of the files that train (each distinct Architecture + input shape once): its config (through
    the recipe's translator) builds it, and its eval output is [N, T, classes of our dict] probabilities at the
    file's input shape (the training runs are below)."""
    assert sum(len(v) for v in NETWORKS.values()) == len(TRAINS) >= 18 and len(NETWORKS) >= 3  # v4 mobile = v5 mobile
    import paddle

    from paddle_recipes.compat.paddleocr import paddleocr_rec_translator
    from paddle_recipes.config import load_config
    from paddle_recipes.tasks.ocr_rec.config import RecConfig
    from paddle_recipes.tasks.ocr_rec.models import build_rec_model

    data = write_label_set(tmp_path / "data", DICT_A, n=2)
    cfg = load_config(FIXTURES / name, data_opts(data, tmp_path / "out", name), RecConfig,
                      translators=(paddleocr_rec_translator(RecConfig),))
    model = build_rec_model(cfg.Architecture, len(DICT_A) + 1 + cfg.Global.use_space_char, cfg.Global.image_shape[0])
    model.eval()
    with paddle.no_grad():
        y = model(paddle.rand([1, *cfg.Global.image_shape]))
    assert y.shape[0] == 1 and y.shape[2] == len(DICT_A) + 1 + cfg.Global.use_space_char
    np.testing.assert_allclose(y.sum(-1).numpy(), 1.0, rtol=1e-5)


# In the default suite: v4 mobile (en dict, profiler_options) and v5 mobile (a file without Global.max_text_length);
# the rest (the same networks with other dicts, AMP, the v2.0 CRNN trained above) are slow.
CHEAP = {"PP-OCRv5/multi_language/latin_PP-OCRv5_mobile_rec.yml"}  # the others run with -m slow


@pytest.mark.parametrize("name", [n if n in CHEAP else pytest.param(n, marks=SLOW) for n in TRAINS])
def test_real_yaml_trains_as_written(tmp_path, name):
    """The file as written, only data / dict / weights / output paths and the run length overridden: 2 steps of
    4 lines at the file's own input shape (8 lines per epoch, ratio_list included), one eval; the keys PaddleOCR does not read (profiler_options,
    character_type, d2s_train_image_shape) are each reported in the one no-effect line."""
    ratio = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))["Train"]["dataset"].get("ratio_list")
    n = int(np.ceil(8 / min(ratio if isinstance(ratio, list) else [ratio or 1.0])))  # 8 lines per epoch
    data = write_label_set(tmp_path / "data", DICT_A, n=n)
    out = tmp_path / "out"
    summary = run(["-c", str(FIXTURES / name), "-o", *data_opts(data, out, name)])
    assert summary["global_step"] == 2 and all(np.isfinite(h["loss"]) for h in summary["history"])
    assert summary["final_eval"]["num_samples"] == n
    log = (out / "train.log").read_text(encoding="utf-8")
    no_effect = [ln for ln in log.splitlines() if "no effect here: " in ln]
    assert len(no_effect) == 1
    raw = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
    for key in ("profiler_options", "Global.character_type", "Global.d2s_train_image_shape"):
        top, _, sub = key.partition(".")
        if (sub in raw[top]) if sub else (top in raw):
            assert re.search(rf"[:,] {re.escape(key)}[,(]", no_effect[0]), (key, no_effect[0])


YML = V5M


@SLOW  # 11 s; tests/paddleocr/test_ppocr_finetune.py checks the same re-initialisation in-process
def test_dict_change_finetune_through_the_cli(tmp_path, capsys):
    """Pretrain a PP-OCRv5-mobile-style config with dict A, fine-tune with dict B: the checkpoint carries its class
    names, so the CTC and NRTR class rows follow characters (0-3 and the space kept, x y z new, 12 dropped: one
    line), nothing is re-initialised; a backbone that differs is a one-line error (exit 2)."""
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
    line = next(ln for ln in log.splitlines() if "class rows follow characters" in ln)
    assert "(the checkpoint's class names)): kept 5 (5 moved), new 3 (xyz), dropped 12; 4 tensors re-indexed" in line
    assert "re-initialised 0" in log or "re-initialised" not in log, log[-2000:]
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
    data = yaml.safe_load((FIXTURES / V2).read_text(encoding="utf-8"))
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

    from paddle_recipes.weights.pretrained import resolve_weights_file

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
    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.dataset import DatasetConfig, RecDataset, collate_gtc
    from paddle_recipes.tasks.ocr_rec.evaluate import outputs_logits
    from paddle_recipes.tasks.ocr_rec.models import ArchitectureConfig, build_rec_model
    from paddle_recipes.tasks.ocr_rec.ppocr_models import PPOCR_MOBILE_REC_ARCH

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


@SLOW  # 36 s; the default suite checks the rec weights keys in tests/weights/test_weights_recipes.py
def test_eval_weights_the_paddleocr_way(tmp_path, capsys):
    """tools/eval.py's `-o Global.checkpoints=DIR/best_accuracy` (and Global.pretrained_model, our Global.weights)
    evaluate exactly that prefix or .pdparams file, not output_dir's checkpoints. Two weight files made from a trained
    tiny checkpoint: CTC bias on 'a' (reads every line as "a": acc 1.0 on lines labelled "a") and on the blank
    (reads "": acc 0.0), the CTC weights zeroed; checkpoints wins over pretrained_model as in PaddleOCR; in train mode a prefix cannot resume."""
    import paddle

    data = write_label_set(tmp_path / "data", DICT_A, n=4)
    (data / "a.txt").write_text("".join(f"img/{i}.png\ta\n" for i in range(4)), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["-c", str(FIXTURES / V5M), "-o", *paddleocr_opts(data, out, V5M)]
    run(argv)
    trained = paddle.load(str(out / "checkpoints" / "best" / "model.pdparams"))
    mine = tmp_path / "mine"
    mine.mkdir()
    for name, cls in (("best_accuracy", 1 + DICT_A.index("a")), ("blank", 0)):
        w = dict(trained)  # the CTC logits are the bias alone: one class at every time step
        w["head.ctc_head.fc.weight"] = paddle.zeros_like(w["head.ctc_head.fc.weight"])
        bias = np.full(w["head.ctc_head.fc.bias"].shape, -10.0, np.float32)
        bias[cls] = 10.0
        w["head.ctc_head.fc.bias"] = paddle.to_tensor(bias)
        paddle.save(w, str(mine / f"{name}.pdparams"))
    ev = argv + [f"Eval.dataset.label_file_list=[{data / 'a.txt'}]"]
    for opts, acc, file in (
            ([f"Global.checkpoints={mine / 'best_accuracy'}"], 1.0, "best_accuracy"),
            ([f"Global.pretrained_model={mine / 'best_accuracy'}"], 1.0, "best_accuracy"),
            ([f"Global.weights={mine / 'best_accuracy'}"], 1.0, "best_accuracy"),
            ([f"Global.weights={mine / 'best_accuracy.pdparams'}"], 1.0, "best_accuracy"),
            ([f"Global.checkpoints={mine / 'blank.pdparams'}"], 0.0, "blank"),
            ([f"Global.checkpoints={mine / 'best_accuracy'}", f"Global.pretrained_model={mine / 'blank'}"], 1.0,
             "best_accuracy")):
        metrics = run(["--mode", "eval", *ev, *opts])
        assert (metrics["acc"], metrics["num_samples"]) == (acc, 4), (opts, metrics)
        assert metrics["weights"] == str(mine / f"{file}.pdparams"), opts
    assert run(["--mode", "eval", *ev])["weights"] == str(out / "checkpoints" / "best" / "model.pdparams")
    fresh_logging()
    with pytest.raises(SystemExit) as exc:
        OcrRec.cli([*argv, f"Global.checkpoints={mine / 'best_accuracy'}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert f"Global.pretrained_model={mine / 'best_accuracy'}" in err[0] and "no optimizer or epoch state" in err[0]
