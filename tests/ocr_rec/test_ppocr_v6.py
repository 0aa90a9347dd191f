"""PP-OCRv6 recognition (tiny, small, medium, base): PPLCNetV4 layouts, PaddleOCR-named weights loading with no
renaming, PaddleOCR's v6 rec YAMLs run through the recipe's CLI, and our export read by paddleocr 3.7 under the
v6 model name. State-dict parity with PaddleOCR's code: tests/ocr_rec/test_ppocr_models.py (manifests)."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import paddle
import pytest
import yaml

from paddle_recipes.nn.lcnetv4 import PPLCNetV4
from paddle_recipes.weights.pretrained import load_pretrained
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.tasks.ocr_rec.ppocr_losses import MultiLoss, nrtr_labels
from paddle_recipes.tasks.ocr_rec.ppocr_models import build_ppocr_rec_model
from test_paddleocr_inference import (CHARS, _lines, _run_json, assert_paddleocr3_agrees,  # noqa: F401 (fixture)
                                      paddleocr_python)
from test_paddleocr_recipe import DICT_A, FIXTURES, fresh_logging, paddleocr_opts, run, write_label_set

MANIFESTS = Path(__file__).parent.parent / "fixtures" / "ppocr_manifests"
V6 = ["tiny", "small", "medium", "base"]
SLOW = pytest.mark.slow


def manifest(size: str) -> dict:
    return json.loads((MANIFESTS / f"PP-OCRv6_{size}_rec.json").read_text(encoding="utf-8"))


def yml(size: str) -> str:
    return f"PP-OCRv6/PP-OCRv6_{size}_rec.yml"


def paddleocr_file(m: dict, path: Path, num_classes: int, seed: int = 1) -> dict:
    """A best_accuracy.pdparams as PaddleOCR's code writes it for this preset (paddle.save of its state_dict:
    the manifest's names, order and shapes), with the class-dependent dimensions (CTC classes n, NRTR
    vocabulary n + 4) set for a ``num_classes`` dict so the file stays small. Random values."""
    n = m["num_classes_ctc"]
    resize = {n: num_classes, n + 4: num_classes + 4}
    rng = np.random.RandomState(seed)
    sd = {k: paddle.to_tensor(rng.uniform(-0.1, 0.1, [resize.get(d, d) for d in shape]).astype("float32")
                              + (1.0 if k.endswith("_variance") else 0.0))
          for k, shape in m["tensors"].items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    paddle.save(sd, str(path))
    return {k: v.numpy() for k, v in sd.items()}


# ------------------------------------------------------------------ backbone
def shapes(layer) -> dict:
    return {k: list(v.shape) for k, v in layer.state_dict().items()}


def test_earlier_paddleocr_form_builds_the_same_tiny_and_small():
    """PaddleOCR's earlier v6 YAMLs (use_rep, stem_type, config_name, stem_channels) name the same networks
    as model_size tiny / small: same state_dict names, order and shapes."""
    tiny = PPLCNetV4(use_rep=True, stem_type="simple", config_name="tiny", stem_channels=48)
    small = PPLCNetV4(use_rep=True, stem_type="branch")  # config_name defaults to small, stem_channels to 96
    assert list(shapes(tiny).items()) == list(shapes(PPLCNetV4(model_size="tiny")).items())
    assert list(shapes(small).items()) == list(shapes(PPLCNetV4(model_size="small")).items())
    plain = shapes(PPLCNetV4(use_rep=False, stem_type="branch"))  # no RepDWConv: one dw conv-BN per block
    assert not any(".rep_dw." in k for k in plain) and len(plain) < len(shapes(small))
    assert (tiny.out_channels, small.out_channels, PPLCNetV4(model_size="medium").out_channels) == (160, 384, 768)


@pytest.mark.parametrize("kwargs,message", [
    ({"model_size": "base"}, r"rec layout 'base' unknown; choose one of \['medium', 'small', 'tiny'\] "
                             r"\(PP-OCRv6 base is PaddleOCR's earlier form: config_name: base\)"),
    ({"model_size": "tiny", "use_rep": True}, r"model_size='tiny' and the earlier form's \['use_rep'\] cannot"),
    ({"config_name": "large"}, r"config_name layout 'large' unknown; choose one of \['base', 'small', 'tiny'\]"),
    ({"stem_type": "wide"}, r"stem_type must be simple or branch, got 'wide'"),
    ({"det": True, "stem_channels": 48}, r"det=True\): \['stem_channels'\] are rec-only"),
])
def test_bad_layouts_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        PPLCNetV4(**kwargs)
    assert "\n" not in str(err.value)


def test_rec_shapes_and_eval_height_rule():
    net = PPLCNetV4(model_size="tiny")
    x = paddle.rand([2, 3, 48, 96])
    net.train()
    assert net(x).shape == [2, 160, 1, 40]  # train: adaptive pool to [1, 40], as PaddleOCR
    net.eval()
    assert net(x).shape == [2, 160, 1, 12]  # eval: 3x2 average pool of the H/16 x W/4 map -> W/8
    with pytest.raises(ValueError, match="feature height 2 < 3; eval needs input height 48"):
        net(paddle.rand([1, 3, 32, 96]))


@pytest.mark.parametrize("size", ["tiny", "small", "medium"])
def test_det_layout_equals_paddleocr(size):
    """Detection layout (shared with PP-OCRv6 det): state_dict names, order and shapes of PaddleOCR's
    PPLCNetV4(det=True) and, in float64 on the same weights, its 4 feature maps (strides 4, 8, 16, 32) in eval and
    train mode (tests/scripts/make_lcnetv4_det_fixture.py ran PaddleOCR's code): per-channel sums and sums of
    squares equal to 1e-9 of their scale (float64 noise ~1e-15)."""
    from ppocr_parity import det_value, fixed_input

    ref = json.loads((MANIFESTS / "PPLCNetV4_det.json").read_text(encoding="utf-8"))
    want = ref["sizes"][size]
    net = PPLCNetV4(model_size=size, det=True)
    assert list(shapes(net).items()) == list(want["tensors"].items()) and net.out_channels == want["out_channels"]
    net.to(dtype="float64")
    net.set_state_dict({k: paddle.to_tensor(det_value(k, v.shape)) for k, v in net.state_dict().items()})
    x = paddle.to_tensor(fixed_input(ref["input_shape"]))
    for mode in ("eval", "train"):
        getattr(net, mode)()
        with paddle.no_grad():
            outs = net(x)
        for i, (o, w) in enumerate(zip(outs, want[mode])):
            assert list(o.shape) == w["shape"], (mode, i)
            flat = o.numpy().reshape(o.shape[1], -1)
            for key, got in (("sum", flat.sum(-1)), ("sumsq", (flat ** 2).sum(-1))):
                scale = float(np.abs(w[key]).max())
                np.testing.assert_allclose(got, w[key], rtol=0, atol=1e-9 * scale, err_msg=f"{mode} map {i} {key}")


# ------------------------------------------------------------------ weights
@pytest.mark.parametrize("size", V6)
def test_paddleocr_v6_file_loads_with_no_renaming(tmp_path, size, caplog):
    """A PaddleOCR-written v6 file (names from PaddleOCR's own model, via the manifest) -> load_pretrained (prefix
    form, as Global.pretrained_model): every tensor loaded, none renamed, re-initialised or skipped; values equal."""
    m = manifest(size)
    ref = paddleocr_file(m, tmp_path / f"PP-OCRv6_{size}_rec_train" / "best_accuracy.pdparams", 40)
    model = build_ppocr_rec_model(m["architecture"], 40)
    with caplog.at_level(logging.INFO, logger="paddle_recipes.weights.pretrained"):
        rep = load_pretrained(model, tmp_path / f"PP-OCRv6_{size}_rec_train" / "best_accuracy")
    assert len(rep.loaded) == m["num_tensors"]
    assert not (rep.reinitialized or rep.skipped or rep.missing or rep.unexpected)
    assert any(f"loaded {m['num_tensors']}/{m['num_tensors']} tensors" in r.message for r in caplog.records)
    sd = model.state_dict()
    assert all(np.array_equal(sd[k].numpy(), v) for k, v in ref.items())


# ------------------------------------------------------------------ YAMLs as written
def test_v6_yaml_fixtures_are_the_manifest_architectures():
    """The YAML fixtures (PaddleOCR's files' keys and values) hold exactly the manifests' Architecture sections."""
    for size in V6:
        data = yaml.safe_load((FIXTURES / yml(size)).read_text(encoding="utf-8"))
        assert data["Architecture"] == manifest(size)["architecture"], size
        assert data["Global"]["model_name"] == f"PP-OCRv6_{size}_rec"


@pytest.mark.parametrize("size", ["tiny", pytest.param("small", marks=SLOW)])  # ~25-35 s each on 2 shared cores
def test_v6_yaml_trains_evaluates_exports_with_pretrained(tmp_path, size):
    """PaddleOCR's PP-OCRv6 tiny/small rec YAML as written (data paths, tiny run length and width 96 overridden):
    Global.pretrained_model = a PaddleOCR-named file loads every tensor, 2 MultiLoss steps, eval, export with
    Global.model_name in inference.yml (the name paddleocr 3.x's TextRecognition(model_name=...) needs)."""
    data = write_label_set(tmp_path / "data", DICT_A)
    m = manifest(size)
    paddleocr_file(m, tmp_path / "pre" / "best_accuracy.pdparams", len(DICT_A) + 2)  # + space + blank
    out = tmp_path / "out"
    argv = ["-c", str(FIXTURES / yml(size)), "-o", *paddleocr_opts(data, out, yml(size))]
    summary = run([*argv, f"Global.pretrained_model={tmp_path / 'pre' / 'best_accuracy'}"])
    assert summary["global_step"] == 2 and all(np.isfinite(h["loss"]) for h in summary["history"])
    log = (out / "train.log").read_text(encoding="utf-8")
    assert f"loaded {m['num_tensors']}/{m['num_tensors']} tensors, re-initialised 0" in log
    assert "NRTRLoss" in log and "CTCLoss" in log
    assert run(["--mode", "eval", *argv])["num_samples"] == 16
    report = run(["--mode", "export", *argv])
    assert report["same_decoded_text"] is True and report["max_abs_diff"] < 1e-4
    inference = yaml.safe_load((out / "inference.yml").read_text(encoding="utf-8"))
    assert inference["Global"]["model_name"] == f"PP-OCRv6_{size}_rec"


@pytest.mark.parametrize("size", ["medium", "base"])
def test_v6_medium_base_networks_take_a_multiloss_step(size):
    """The medium/base Architecture sections (from the YAML fixtures) build and take a MultiLoss forward/backward
    step in which every parameter gets a finite gradient (base's use_guide neck: the backbone's comes from the
    NRTR branch only)."""
    arch = yaml.safe_load((FIXTURES / yml(size)).read_text(encoding="utf-8"))["Architecture"]
    paddle.seed(0)
    model = build_ppocr_rec_model(arch, 18)
    model.train()
    label = np.array([[1, 2, 3, 0], [4, 5, 0, 0]], "int64")
    length = np.array([3, 2], "int64")
    targets = [paddle.to_tensor(label), paddle.to_tensor(nrtr_labels(label, length, 25).astype("int64")),
               paddle.to_tensor(length)]
    out = model(paddle.rand([2, 3, 48, 96]), targets)
    loss = MultiLoss()(out, targets[0], targets[2], targets[1])["loss"]
    loss.backward()
    grads = {k: p.grad for k, p in model.named_parameters() if not p.stop_gradient}
    assert np.isfinite(float(loss)) and out["ctc"].shape == [2, 40, 18]
    assert [k for k, g in grads.items() if g is None] == []
    assert all(np.isfinite(g.numpy()).all() for g in grads.values())


@SLOW  # ~15-25 s each on 2 shared cores
@pytest.mark.parametrize("size", ["medium", "base"])
def test_v6_medium_base_yaml_trains_as_written(tmp_path, size):
    """medium/base as written (data paths, run length, width 96 overridden): Train.dataset.ratio_list [0.5] draws
    a fresh half of the 16 lines each epoch; base's Global.model_name PP-OCRv6_base_rec (no released base,
    unknown to paddlex) only names the export: reported as no effect."""
    data = write_label_set(tmp_path / "data", DICT_A)
    out = tmp_path / "out"
    summary = run(["-c", str(FIXTURES / yml(size)), "-o", *paddleocr_opts(data, out, yml(size))])
    assert summary["global_step"] == 2 and all(np.isfinite(h["loss"]) for h in summary["history"])
    line = next(ln for ln in (out / "train.log").read_text(encoding="utf-8").splitlines() if "no effect here:" in ln)
    assert ("Global.model_name" in line) == (size == "base")


def test_ratio_list_draws_a_fresh_fraction_of_each_label_file_per_epoch():
    from paddle_recipes.tasks.ocr_rec.multiscale import MultiScaleBatchSampler

    spans = [(0, 10, 0.5), (10, 40, 0.2)]  # two label files: 10 and 30 samples -> 5 + 6 per epoch
    s = MultiScaleBatchSampler(40, scales=[[96, 32]], first_bs=4, seed=3, ratio_spans=spans, with_epoch=False)
    assert s.num_samples == 11 and len(s) == 3
    pools = [s.epoch_pool(e) for e in range(4)]
    assert all(len([i for i in p if i < 10]) == 5 and len([i for i in p if i >= 10]) == 6 for p in pools)
    assert len({tuple(p) for p in pools}) == 4  # a fresh draw every epoch
    again = MultiScaleBatchSampler(40, scales=[[96, 32]], first_bs=4, seed=3, ratio_spans=spans, with_epoch=False)
    assert again.epoch_pool(2) == pools[2]  # a function of (seed, epoch)
    s.set_epoch(2)
    batches = list(s)
    assert {k[0] for b in batches for k in b} == set(pools[2])  # every drawn sample, no other
    again.set_epoch(2)
    again.skip_next(1)
    assert list(again) == batches[1:]  # exact resume


def test_ratio_list_outside_train_with_a_sampler_is_one_line(tmp_path, capsys):
    data = write_label_set(tmp_path / "data", DICT_A)
    for extra, message in ((["Eval.dataset.ratio_list=[0.5]"], "Eval.dataset.ratio_list"),
                           (["Train.sampler=null"], "Train.dataset.ratio_list: [0.5]: sampling a fraction of each "
                            "label file is supported for Train label files with a MultiScaleSampler only")):
        fresh_logging()
        with pytest.raises(SystemExit) as exc:
            OcrRec.cli(["-c", str(FIXTURES / yml("medium")), "-o",
                        *paddleocr_opts(data, tmp_path / "out", yml("medium")), *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert exc.value.code == 2 and len(err) == 1 and message in err[0], err


# ------------------------------------------------------------------ paddleocr 3.7 reads our v6 export
def _image_dependent(model, files, shape):
    """Untrained v6 recognizer whose texts depend on the image: batch-norm statistics taken from the test lines
    (one train-mode pass of the CTC branch with momentum 0), CTC classifier scaled x3 so logits spread."""
    from paddle_recipes.tasks.ocr_rec.transforms import decode_image, pad_batch, resize_norm_infer

    bns = [m for m in model.sublayers() if isinstance(m, (paddle.nn.BatchNorm1D, paddle.nn.BatchNorm2D))]
    for bn in bns:
        bn._momentum = 0.0
    imgs = [resize_norm_infer(decode_image(Path(f).read_bytes()), shape) for f in files]
    head = model.head
    model.train()
    with paddle.no_grad():
        head.ctc_head(head.ctc_encoder(model.backbone(paddle.to_tensor(pad_batch([a[:, :, :640] for a in imgs])))))
        for bn in bns:
            bn._momentum = 0.9
        fc = getattr(head.ctc_head, head.ctc_head.class_layer)
        fc.weight.set_value(fc.weight.numpy() * 3.0)
    model.eval()
    return model


@pytest.mark.parametrize("size", ["tiny", pytest.param("medium", marks=SLOW)])
def test_paddleocr3_reads_v6_export_under_the_v6_model_name(paddleocr_python, tmp_path, size):
    """export_rec_for_paddleocr(model_name="PP-OCRv6_<size>_rec") -> paddleocr 3.7
    TextRecognition(model_name="PP-OCRv6_<size>_rec", model_dir=...) == our recognize_files on 20 lines of
    widths 60..2400 px: same texts, scores within 1e-4."""
    from paddle_recipes.tasks.ocr_rec.charset import CharDict
    from paddle_recipes.tasks.ocr_rec.export_paddleocr import export_rec_for_paddleocr

    files = _lines(tmp_path)
    charset = CharDict(CHARS)
    shape = [3, 48, 320]
    paddle.seed(0)
    model = _image_dependent(build_ppocr_rec_model(manifest(size)["architecture"], charset.num_classes), files, shape)
    report = export_rec_for_paddleocr(model, CHARS, shape, tmp_path / "inference", model_name=f"PP-OCRv6_{size}_rec")
    assert yaml.safe_load(Path(report["out_dir"], "inference.yml").read_text())["Global"]["model_name"] == \
        f"PP-OCRv6_{size}_rec"
    assert_paddleocr3_agrees(paddleocr_python, model, files, charset, shape, report, tmp_path)


# ------------------------------------------------------------------ PaddleX's own v6 inference network
@pytest.mark.parametrize("size", ["tiny", pytest.param("small", marks=SLOW), pytest.param("medium", marks=SLOW)])
def test_paddlex_v6_inference_network_equals_ours(paddleocr_python, tmp_path, size):
    """Independent of our PaddleOCR reading: PaddleX 3.7.2 ships its own PP-OCRv6 rec inference network and the
    steps that bring PaddleOCR's released training checkpoints into it (RepDWConv fusion, name mapping). Our
    PaddleOCR-named weights through those steps give PaddleX's network the same probabilities as ours, in
    float64 (fusion rounding ~1e-12): the names, the RepDWConv branches and the tiny guide layer are the
    released ones. PaddleX's SVTR LayerNorms use epsilon 1e-6 where PaddleOCR's blocks use 1e-5 (ours):
    compared with PaddleOCR's 1e-5; with PaddleX's own 1e-6 the difference is real (> 1e-5 in log-probability)."""
    from ppocr_parity import det_value, fixed_input

    model = build_ppocr_rec_model(manifest(size)["architecture"], 40)
    model.to(dtype="float64")
    model.set_state_dict({k: (v if k.endswith(".pe") else paddle.to_tensor(det_value(k, v.shape)))
                          for k, v in model.state_dict().items()})
    model.eval()
    x = fixed_input([2, 3, 48, 320])
    with paddle.no_grad():
        ours = model(paddle.to_tensor(x)).numpy()
    paddle.save(model.state_dict(), str(tmp_path / "w.pdparams"))
    np.save(tmp_path / "x.npy", x)
    name = f"PP-OCRv6_{size}_rec"
    eps = [] if size == "tiny" else ["1e-5"]
    _run_json(paddleocr_python, "paddlex_v6_rec_probs.py", [name, tmp_path / "w.pdparams", tmp_path / "x.npy",
                                                             tmp_path / "px.npy", *eps], tmp_path)
    theirs = np.load(tmp_path / "px.npy")
    assert theirs.shape == ours.shape == (2, 40, 40)
    print(f"PaddleX {name} vs ours (float64): max |log p diff| {np.abs(np.log(theirs) - np.log(ours)).max():.2e}")
    np.testing.assert_allclose(np.log(theirs), np.log(ours), rtol=0, atol=1e-9)
    if size != "tiny":
        _run_json(paddleocr_python, "paddlex_v6_rec_probs.py", [name, tmp_path / "w.pdparams", tmp_path / "x.npy",
                                                                 tmp_path / "px6.npy"], tmp_path)
        eps6 = np.abs(np.log(np.load(tmp_path / "px6.npy")) - np.log(ours)).max()
        print(f"... with PaddleX's LayerNorm epsilon 1e-6: {eps6:.2e}")
        assert eps6 > 1e-5
