"""The weights rule end to end, per recipe: two weight files that score differently, named by each key in each
mode; the figure is the named file's, never output_dir's `best` (issue 38 item 2: det evaluated best/ema.pdparams
when asked for Global.checkpoints=DIR/step_00000074). Also the one-line exits of eval / predict with nothing to do
and of inf/nan weights."""
from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import cv2
import numpy as np
import paddle
import pytest

from paddle_recipes.checkpoint.format import save_checkpoint
from paddle_recipes.config import load_config
from paddle_recipes.recipes.ocr_det import OcrDet
from paddle_recipes.recipes.ocr_rec import OcrRec
from paddle_recipes.recipes.ocr_system import OcrSystem
from paddle_recipes.checkpoint.serialization import save_safetensors

from test_paddleocr_det_config import FIXTURES as DET_FIXTURES, tiny_opts
from test_paddleocr_recipe import DICT_A, FIXTURES as REC_FIXTURES, V5M, paddleocr_opts, write_label_set

DET_YAML = "PP-OCRv5/PP-OCRv5_mobile_det.yml"


def fresh_logging() -> None:
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_paddle_recipes", False)]:
        root.removeHandler(h)
        h.close()


@pytest.fixture(autouse=True)
def no_handler_left_behind():
    """The in-process runs' log handlers write to this test's captured streams: drop them after each test."""
    yield
    fresh_logging()


def one_line_exit(cls, argv, capsys) -> str:
    fresh_logging()
    with pytest.raises(SystemExit) as exc:
        cls.cli(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip() and "Warning" not in ln
           and "warnings.warn" not in ln]
    assert exc.value.code == 2 and len(err) == 1 and "Traceback" not in err[0], "\n".join(err)
    return err[0]


def page_set(root, n: int = 2):
    """n 96x96 pages, each one text region covering the page: a detector whose map is all text finds it
    (hmean 1), one whose map is empty finds nothing (hmean 0)."""
    (root / "img").mkdir(parents=True)
    box = [{"transcription": "a", "points": [[0, 0], [95, 0], [95, 95], [0, 95]]}]
    for i in range(n):
        cv2.imwrite(str(root / "img" / f"{i}.png"), np.full((96, 96, 3), 128, np.uint8))
    (root / "label.txt").write_text("".join(f"img/{i}.png\t{json.dumps(box)}\n" for i in range(n)))
    return root


def det_weights(model, logit: float) -> dict:
    """The model's weights with a constant text-probability map sigmoid(logit)."""
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    sd["head.binarize.conv3.weight"] = paddle.zeros_like(sd["head.binarize.conv3.weight"])
    sd["head.binarize.conv3.bias"] = paddle.full_like(sd["head.binarize.conv3.bias"], logit)
    return sd


@pytest.fixture(scope="module")
def det(tmp_path_factory):
    fresh_logging()
    tmp = tmp_path_factory.mktemp("det_weights")
    data, out = page_set(tmp / "data"), tmp / "out"
    opts = ["-c", str(DET_FIXTURES / DET_YAML), "-o", f"Eval.dataset.data_dir={data}", f"Global.save_res_path={tmp}/res.txt",
            f"Eval.dataset.label_file_list=[{data / 'label.txt'}]", *tiny_opts(DET_YAML, out)]
    cfg = load_config(str(DET_FIXTURES / DET_YAML), opts[3:], OcrDet.Config, translators=OcrDet.config_translators)
    model = OcrDet(cfg, None).build_model()
    text, empty = det_weights(model, 10.0), det_weights(model, -10.0)
    runs, mine = tmp / "runs" / "checkpoints", tmp / "mine"
    save_checkpoint(runs, {"model": text}, "step_00000074")
    save_checkpoint(runs, {"model": empty}, "step_00000080")
    save_checkpoint(out / "checkpoints", {"model": empty}, "best")
    mine.mkdir()
    paddle.save(empty, str(mine / "best_accuracy.pdparams"))
    save_safetensors(text, mine / "text.safetensors")
    nan = dict(text)
    nan["head.binarize.conv3.bias"] = paddle.full_like(text["head.binarize.conv3.bias"], float("nan"))
    paddle.save(nan, str(mine / "nan.pdparams"))
    return {"opts": opts, "runs": runs, "mine": mine, "out": out, "data": data}


def det_eval(det, *extra) -> dict:
    fresh_logging()
    return OcrDet.main(["--mode", "eval", *det["opts"], *extra])


def test_det_eval_evaluates_the_named_weights(det):
    runs, mine, best = det["runs"], det["mine"], det["out"] / "checkpoints" / "best" / "model.pdparams"
    cases = {"Global.checkpoints": (runs / "step_00000074", 1.0, runs / "step_00000074" / "model.pdparams"),
             "Global.pretrained_model": (mine / "text.safetensors", 1.0, mine / "text.safetensors"),
             "Global.weights": (mine / "best_accuracy", 0.0, mine / "best_accuracy.pdparams")}
    for key, (value, hmean, file) in cases.items():
        m = det_eval(det, f"{key}={value}")
        assert (m["hmean"], m["weights"]) == (hmean, str(file)), (key, m)
    m = det_eval(det, f"Global.checkpoints={runs}", f"Global.pretrained_model={mine / 'text'}")  # root: its latest
    assert (m["hmean"], m["weights"]) == (0.0, str(runs / "step_00000080" / "model.pdparams"))
    m = det_eval(det)  # nothing named: output_dir's best
    assert (m["hmean"], m["weights"]) == (0.0, str(best))


def test_det_predict_uses_the_named_weights(det):
    def boxes(*extra):
        fresh_logging()
        results = OcrDet.main(["--mode", "predict", *det["opts"], f"Global.infer_img={det['data'] / 'img'}", *extra])
        return sum(len(r[1]) for r in results)

    assert boxes(f"Global.checkpoints={det['runs'] / 'step_00000074'}") == 2  # one page-sized box per page
    assert boxes(f"Global.pretrained_model={det['mine'] / 'text.safetensors'}") == 2
    assert boxes() == 0  # output_dir's best: an empty map


def test_det_one_line_exits(det, tmp_path, capsys):
    missing = det["runs"] / "step_00000099"
    line = one_line_exit(OcrDet, ["--mode", "eval", *det["opts"], f"Global.checkpoints={missing}"], capsys)
    assert line.startswith(f"ocr_det: error: Global.checkpoints={missing}: ") and "not found" in line
    nan = det["mine"] / "nan.pdparams"
    line = one_line_exit(OcrDet, ["--mode", "eval", *det["opts"], f"Global.weights={nan}"], capsys)
    assert f"{nan}: tensor 'head.binarize.conv3.bias' holds inf/nan" in line
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    line = one_line_exit(OcrDet, ["--mode", "eval", *det["opts"], f"Eval.dataset.label_file_list=[{empty}]"], capsys)
    assert f"eval ({empty}, data_dir {det['data']}): no usable sample" in line  # refused when the set is built
    from paddle_recipes.data import DataError
    from paddle_recipes.tasks.ocr_det.step import evaluate_det

    with pytest.raises(DataError, match="det evaluation saw 0 readable images"):  # every image skipped at eval time
        evaluate_det(paddle.nn.Linear(1, 1), [{"skipped": []}], None)
    (tmp_path / "none").mkdir()
    line = one_line_exit(OcrDet, ["--mode", "predict", *det["opts"], f"Global.infer_img={tmp_path / 'none'}"], capsys)
    assert f"ocr_det predict: no input could be read in '{tmp_path / 'none'}'" in line
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.jpg").write_bytes(b"not a jpeg")
    line = one_line_exit(OcrDet, ["--mode", "predict", *det["opts"], f"Global.infer_img={tmp_path / 'bad'}"], capsys)
    assert f"ocr_det predict: no input could be read in '{tmp_path / 'bad'}'" in line


def rec_weights(model, cls: int) -> dict:
    """The model's weights with CTC logits = the bias alone, high on class `cls` (1 + index of a char; 0 = blank)."""
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    sd["head.ctc_head.fc.weight"] = paddle.zeros_like(sd["head.ctc_head.fc.weight"])
    bias = np.full(sd["head.ctc_head.fc.bias"].shape, -10.0, np.float32)
    bias[cls] = 10.0
    sd["head.ctc_head.fc.bias"] = paddle.to_tensor(bias)
    return sd


def test_system_reads_with_the_named_det_and_rec_weights(det, tmp_path):
    """e2e on pages holding one page-sized line "a": det named by Det.opt's Global.checkpoints (a step folder),
    rec by Rec.opt's Global.checkpoints / pretrained_model or Rec.weights; a rec reading "a" scores f 1, one
    reading nothing f 0, and the metrics name the files used."""
    fresh_logging()
    data = write_label_set(tmp_path / "rec_data", DICT_A, n=4)
    rec_opts = paddleocr_opts(data, tmp_path / "rec_out", V5M)
    cfg = load_config(str(REC_FIXTURES / V5M), rec_opts, OcrRec.Config, translators=OcrRec.config_translators)
    rec = OcrRec(cfg, None)
    model = rec.build_model()
    paddle.save(rec_weights(model, 1 + DICT_A.index("a")), str(tmp_path / "reads_a.pdparams"))
    save_checkpoint(tmp_path / "rec_runs", {"model": rec_weights(model, 0)}, "step_00000010")
    det_step = det["runs"] / "step_00000074"

    def e2e(rec_opt, rec_weights=""):
        fresh_logging()
        argv = ["--mode", "eval", "-o", f"Global.output_dir={tmp_path / 'sys'}", f"Det.config={DET_FIXTURES / DET_YAML}",
                f"Det.opt={json.dumps([*det['opts'][3:], f'Global.checkpoints={det_step}'])}",
                f"Rec.config={REC_FIXTURES / V5M}", f"Rec.opt={json.dumps([*rec_opts, *rec_opt])}",
                f"Rec.weights={rec_weights}", f"Eval.dataset.data_dir={det['data']}",
                f"Eval.dataset.label_file_list=[{det['data'] / 'label.txt'}]", "Global.drop_score=0"]
        return OcrSystem.main(argv)

    m = e2e([f"Global.checkpoints={tmp_path / 'reads_a'}"])
    assert (m["f"], m["rec_weights"]) == (1.0, str(tmp_path / "reads_a.pdparams")), m
    assert m["det_weights"] == str(det_step / "model.pdparams")
    m = e2e([f"Global.pretrained_model={tmp_path / 'rec_runs' / 'step_00000010'}"])
    assert (m["f"], m["rec_weights"]) == (0.0, str(tmp_path / "rec_runs" / "step_00000010" / "model.pdparams")), m
    m = e2e([f"Global.checkpoints={tmp_path / 'rec_runs'}"], rec_weights=str(tmp_path / "reads_a.pdparams"))
    assert (m["f"], m["rec_weights"]) == (1.0, str(tmp_path / "reads_a.pdparams")), m  # Global.weights first


def test_ppyoloe_eval_scores_the_named_weights(tmp_path):
    """PP-YOLOE: the init weights and the same with every class logit raised by 4 give different mean top scores;
    each key, in each form, gives the named file's figure; output_dir's best is used only when nothing is named."""
    from paddle_recipes.recipes.det_ppyoloe import DetPPYOLOE

    smoke = "paddle_recipes/configs/det_ppyoloe_smoke.yml"
    out = tmp_path / "out"
    opts = [f"Global.output_dir={out}", f"Synthetic.root={tmp_path / 'shapes'}", "Synthetic.num_val=2"]
    cfg = load_config(smoke, opts, DetPPYOLOE.Config)
    paddle.seed(0)
    model = DetPPYOLOE(cfg, SimpleNamespace(is_main=True, rank=0, world_size=1)).build_model()
    init = {k: v.clone() for k, v in model.state_dict().items()}
    sure = {k: v + 4.0 if k.startswith("head.pred_cls.") and k.endswith(".bias") else v for k, v in init.items()}
    save_checkpoint(tmp_path / "runs", {"model": sure}, "step_00000074")
    save_checkpoint(out / "checkpoints", {"model": init}, "best")
    save_safetensors(sure, tmp_path / "sure.safetensors")
    paddle.save(init, str(tmp_path / "init.pdparams"))

    def score(*extra):
        fresh_logging()
        m = DetPPYOLOE.main(["--mode", "eval", "-c", smoke, "-o", *opts, *extra])
        return m["mean_top_score"], m["weights"]

    low, high = score(f"Global.weights={tmp_path / 'init'}")[0], score(f"Global.weights={tmp_path / 'sure'}")[0]
    assert high > low + 0.1, (low, high)
    step = tmp_path / "runs" / "step_00000074"
    assert score(f"Global.checkpoints={step}") == (high, str(step / "model.pdparams"))
    assert score(f"Global.pretrained_model={tmp_path / 'sure.safetensors'}") == (high, str(tmp_path / "sure.safetensors"))
    assert score(f"Global.weights={tmp_path / 'init.pdparams'}", f"Global.checkpoints={step}")[0] == low
    assert score() == (low, str(out / "checkpoints" / "best" / "model.pdparams"))


@pytest.fixture
def rec(tmp_path):
    """A PaddleOCR rec YAML's argv on 4 lines labelled "a"; a step folder whose weights read "a" everywhere and
    output_dir's best, which reads nothing."""
    fresh_logging()
    data = write_label_set(tmp_path / "data", DICT_A, n=4)
    (data / "a.txt").write_text("".join(f"img/{i}.png\ta\n" for i in range(4)), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["-c", str(REC_FIXTURES / V5M), "-o", *paddleocr_opts(data, out, V5M),
            f"Eval.dataset.label_file_list=[{data / 'a.txt'}]", f"Global.save_res_path={tmp_path / 'res.txt'}"]
    cfg = load_config(str(REC_FIXTURES / V5M), argv[3:], OcrRec.Config, translators=OcrRec.config_translators)
    model = OcrRec(cfg, None).build_model()
    step = tmp_path / "runs" / "step_00000074"
    save_checkpoint(step.parent, {"model": rec_weights(model, 1 + DICT_A.index("a"))}, step.name)
    save_checkpoint(out / "checkpoints", {"model": rec_weights(model, 0)}, "best")

    def run(mode, *extra):
        fresh_logging()
        return OcrRec.main(["--mode", mode, *argv, *extra])

    return SimpleNamespace(argv=argv, step=step, data=data, run=run)


def test_rec_eval_and_predict_use_the_named_weights(rec, tmp_path, capsys):
    """Global.checkpoints naming a step folder: eval acc 1 (output_dir's best: 0), predict reads "a"; an empty
    predict folder exits 2 in one line."""
    assert (rec.run("eval")["acc"], rec.run("eval", f"Global.checkpoints={rec.step}")["acc"]) == (0.0, 1.0)
    texts = rec.run("predict", f"Global.checkpoints={rec.step}", f"Global.infer_img={rec.data / 'img'}")
    assert [t for _, t, _ in texts] == ["a"] * 4
    (tmp_path / "none").mkdir()
    line = one_line_exit(OcrRec, ["--mode", "predict", *rec.argv, f"Global.infer_img={tmp_path / 'none'}"], capsys)
    assert line == f"ocr_rec: error: ocr_rec predict: no input could be read in '{tmp_path / 'none'}' (the skipped " \
                   "files are listed above)"


@pytest.mark.slow
def test_rec_export_uses_the_named_weights(rec):
    report = rec.run("export", f"Global.checkpoints={rec.step}")
    assert report["weights"] == str(rec.step / "model.pdparams")


def test_ernie_eval_scores_the_named_weights(tmp_path, capsys):
    """ERNIE's eval mode (the student): <output_dir>/distill/checkpoints/best by default, a step folder named by
    Global.checkpoints, Global.weights over pretrained_model; training still refuses the keys."""
    from paddle_recipes.recipes.ernie_multitask import ErnieMultitask
    from paddle_recipes.tasks.ernie_multitask.config import build_model as build_ernie
    from paddle_recipes.tasks.ernie_multitask.phases import build_task_data

    fresh_logging()  # build_task_data logs: not through a handler an earlier test's main() left
    smoke, out = "recipes/configs/ernie_multitask_smoke.yml", tmp_path / "out"
    opts = [f"Global.output_dir={out}", "Data.num_tasks=4", "Data.eval_size=16"]
    cfg = load_config(smoke, opts, ErnieMultitask.Config)
    tok, specs, _, _ = build_task_data(cfg.Data, cfg.Architecture.max_len)
    init = build_ernie(cfg.Architecture.student, specs, len(tok), cfg.Architecture.max_len, 7).state_dict()
    other = build_ernie(cfg.Architecture.student, specs, len(tok), cfg.Architecture.max_len, 8).state_dict()
    save_checkpoint(tmp_path / "runs", {"model": other}, "step_00000074")
    save_safetensors(other, tmp_path / "other.safetensors")
    save_checkpoint(out / "distill" / "checkpoints", {"model": init}, "best")  # also what `latest` names

    def score(*extra):
        fresh_logging()
        m = ErnieMultitask.main(["--mode", "eval", "-c", smoke, "-o", *opts, *extra])
        return m["avg_score"], m["weights"]

    low, src = score()
    assert src == str(out / "distill" / "checkpoints" / "best" / "model.pdparams")
    step = tmp_path / "runs" / "step_00000074"
    high = score(f"Global.checkpoints={step}")
    assert high[1] == str(step / "model.pdparams") and high[0] != low
    assert score(f"Global.pretrained_model={tmp_path / 'other'}", f"Global.weights={out / 'distill' / 'checkpoints'}"
                 ) == (low, src)  # Global.weights first; a root: its latest (best here)
    line = one_line_exit(ErnieMultitask, ["-c", smoke, "-o", *opts, f"Global.checkpoints={step}"], capsys)
    assert "Global.pretrained_model/weights/checkpoints are not supported in train mode" in line


def test_cls_eval_and_predict_use_the_named_weights(tmp_path):
    """ocr_cls: lines labelled 0; weights whose logits say "0" (acc 1) in a step folder named by Global.checkpoints,
    weights saying "180" (acc 0) as output_dir's best and as a prefix named by Global.pretrained_model."""
    from paddle_recipes.recipes.ocr_cls import OcrCls

    fresh_logging()
    smoke, out, data = "recipes/configs/ocr_cls_smoke.yml", tmp_path / "out", tmp_path / "data"
    (data / "img").mkdir(parents=True)
    for i in range(4):
        cv2.imwrite(str(data / "img" / f"{i}.png"), np.full((32, 128, 3), 200, np.uint8))
    (data / "val.txt").write_text("".join(f"img/{i}.png\t0\n" for i in range(4)))
    opts = [f"Global.output_dir={out}", f"Eval.dataset.data_dir={data}", f"Eval.dataset.label_file_list=[{data / 'val.txt'}]"]
    model = OcrCls(load_config(smoke, opts, OcrCls.Config), None).build_model()

    def says(label: int) -> dict:
        sd = {k: v.clone() for k, v in model.state_dict().items()}
        sd["head.fc.weight"] = paddle.zeros_like(sd["head.fc.weight"])
        sd["head.fc.bias"] = paddle.to_tensor(np.array([10.0, -10.0] if label == 0 else [-10.0, 10.0], np.float32))
        return sd

    step = tmp_path / "runs" / "step_00000074"
    save_checkpoint(step.parent, {"model": says(0)}, step.name)
    save_checkpoint(out / "checkpoints", {"model": says(180)}, "best")
    paddle.save(says(180), str(tmp_path / "best_accuracy.pdparams"))

    def run(mode, *extra):
        fresh_logging()
        return OcrCls.main(["--mode", mode, "-c", smoke, "-o", *opts, *extra])

    m = run("eval", f"Global.checkpoints={step}", f"Global.pretrained_model={tmp_path / 'best_accuracy'}")
    assert (round(m["acc"], 6), m["weights"]) == (1.0, str(step / "model.pdparams"))
    m = run("eval", f"Global.pretrained_model={tmp_path / 'best_accuracy'}")
    assert (round(m["acc"], 6), m["weights"]) == (0.0, str(tmp_path / "best_accuracy.pdparams"))
    assert run("eval")["weights"] == str(out / "checkpoints" / "best" / "model.pdparams")
    labels = run("predict", f"Global.checkpoints={step}", f"Predict.images={data / 'img'}",
                 f"Predict.save_res_path={tmp_path / 'cls.txt'}")
    assert [label for _, label, _ in labels] == ["0"] * 4
    labels = run("predict", f"Predict.images={data / 'img'}", f"Predict.save_res_path={tmp_path / 'cls.txt'}")
    assert [label for _, label, _ in labels] == ["180"] * 4  # output_dir's best
