"""PaddleDetection interop through the det recipe CLI (smoke scale, no downloads):

(a) ``-o Global.pretrained_model=<ppdet-named checkpoint>`` of another class count trains, with the
    loaded count and the one-line class-head re-init in the log;
(b) ``-c`` a ppdet PP-YOLOE+ YAML (with its _BASE_ files) trains on the synthetic set, its report
    logged once, its normalisation and warm-up epochs in effect;
(c) ``--mode export -o Export.layout=ppdet`` writes ppdet's deploy files and Paddle Inference agrees
    with the dygraph model post-processed on the host.
"""
import json
from pathlib import Path

import yaml

import pytest

from conftest import REPO_ROOT, run_python

RECIPE = REPO_ROOT / "recipes" / "det_ppyoloe.py"
SMOKE = REPO_ROOT / "recipes" / "configs" / "det_ppyoloe_smoke.yml"
PPDET_YAML = REPO_ROOT / "tests" / "fixtures" / "ppdet_configs" / "ppyoloe" / "ppyoloe_plus_crn_s_80e_coco.yml"
SMOKE_SET = {"num_train": 32, "num_val": 8, "image_size": 96, "min_size": 16, "max_size": 40, "max_objects": 3}


@pytest.fixture(scope="module")
def fake_ppdet_ckpt(tmp_path_factory):
    """Random PP-YOLOE tiny weights (reg_max 8, 5 classes) saved under ppdet's names."""
    from paddle_recipes.tasks.det_ppyoloe.model import build_ppyoloe
    from paddle_recipes.tasks.det_ppyoloe.ppdet_weights import save_ppdet_weights

    model = build_ppyoloe("tiny", 5, reg_max=8)
    path = save_ppdet_weights(model, tmp_path_factory.mktemp("ppdet") / "ppyoloe_plus_fake")
    return path, len(model.state_dict())


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory, fake_ppdet_ckpt):
    root = tmp_path_factory.mktemp("det_ppdet_ft")
    out, data = root / "run", root / "data"
    run_python([RECIPE, "-c", SMOKE, "-o", f"Global.output_dir={out}", f"Synthetic.root={data}",
                f"Global.pretrained_model={fake_ppdet_ckpt[0]}", "Architecture.normalize=ppyoloe_plus",
                "Global.epochs=1", "Global.max_steps=2"])
    return {"out": out, "data": data, "log": (out / "train.log").read_text()}


def test_finetune_from_ppdet_checkpoint_reinitialises_class_head(finetuned, fake_ppdet_ckpt):
    log, n_tensors = finetuned["log"], fake_ppdet_ckpt[1]
    # every tensor but the 3 levels x (weight, bias) of the 5-class conv is loaded
    assert f"{n_tensors - 6} tensors loaded" in log, log[-3000:]
    reinit = [ln for ln in log.splitlines() if "class head re-initialised" in ln]
    assert len(reinit) == 1 and "checkpoint has 5 classes, model 3" in reinit[0]
    summary = json.loads((finetuned["out"] / "summary.json").read_text())
    assert summary["global_step"] == 2
    assert summary["config"]["Architecture"]["normalize"] == {"mean": [0.0] * 3, "std": [1.0] * 3, "is_scale": True}


def test_ppdet_yaml_trains_and_reports_once(tmp_path, finetuned):
    from paddle_recipes.tasks.det_ppyoloe.synth import ShapesSpec, make_shapes_dataset

    paths = make_shapes_dataset(finetuned["data"], ShapesSpec(**SMOKE_SET))
    out = tmp_path / "run"
    run_python([RECIPE, "-c", PPDET_YAML, "-o", f"Global.output_dir={out}", "Global.pretrained_model=",
                f"Train.dataset.ann_file={paths['train']['ann_file']}",
                f"Train.dataset.image_dir={paths['train']['image_dir']}",
                f"Eval.dataset.ann_file={paths['val']['ann_file']}", f"Eval.dataset.image_dir={paths['val']['image_dir']}",
                "Architecture.size=tiny", "Train.sizes=[64]", "Eval.size=64", "Train.loader.batch_size_per_card=4",
                "Train.loader.num_workers=0", "Eval.loader.num_workers=0", "Global.epochs=1", "Global.max_steps=2",
                "Global.log_every=1", "Global.eval_every_epochs=0", "Global.save_every_epochs=0"])
    log = (out / "train.log").read_text()
    assert sum("no effect here" in ln for ln in log.splitlines()) == 1, log[-3000:]
    assert sum(": approximated: " in ln for ln in log.splitlines()) == 1
    # 32 images / 4 = 8 steps per epoch; ppdet's LinearWarmup epochs 5 -> 40 steps
    assert "Optimizer.warmup_epochs 5 = 40 optimizer steps (8 per epoch)" in log
    cfg = yaml.safe_load((out / "config.yml").read_text())
    assert cfg["Architecture"]["normalize"]["std"] == [1.0, 1.0, 1.0]
    assert (cfg["Optimizer"]["name"], cfg["Optimizer"]["warmup_epochs"]) == ("momentum", 5.0)
    assert cfg["Export"]["layout"] == "ppdet"  # a ppdet config exports in ppdet's deploy layout
    assert json.loads((out / "summary.json").read_text())["global_step"] == 2


def test_ppdet_yaml_pretrained_url_is_a_one_line_error(tmp_path, finetuned):
    proc = run_python([RECIPE, "-c", PPDET_YAML, "-o", f"Global.output_dir={tmp_path}", "Architecture.size=tiny",
                       "Train.dataset.ann_file=", "Eval.dataset.ann_file=", f"Synthetic.root={finetuned['data']}",
                       *[f"Synthetic.{k}={v}" for k, v in SMOKE_SET.items()], "Train.sizes=[64]", "Eval.size=64",
                       "Train.loader.num_workers=0", "Eval.loader.num_workers=0"], check=False)
    assert proc.returncode == 2
    assert "ppyoloe_crn_s_obj365_pretrained.pdparams is a URL: download it" in proc.stderr.strip().splitlines()[-1]


def test_export_ppdet_layout_with_inference_parity(finetuned):
    proc = run_python([RECIPE, "-c", SMOKE, "--mode", "export", "-o", f"Global.output_dir={finetuned['out']}",
                       f"Synthetic.root={finetuned['data']}", "Architecture.normalize=ppyoloe_plus",
                       "Export.layout=ppdet", "Eval.nms.score_threshold=0.001"])  # 2 steps: scores sit at the 0.01 prior
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    inf = Path(finetuned["out"]) / "inference"
    assert {"model.json", "model.pdiparams", "infer_cfg.yml", "export_report.json"} <= {p.name for p in inf.iterdir()}
    assert report["same_detections"] is True and report["compared_boxes"] == report["host_compared_boxes"], report
    assert report["parity_images"] == 2 and "checkpoints/best/" in report["weights"]
    assert min(report["compared_boxes"]) > 0  # boxes were compared, not two empty outputs
    cfg = yaml.safe_load((inf / "infer_cfg.yml").read_text())
    assert cfg["label_list"] == ["rectangle", "ellipse", "triangle"]
    assert cfg["Preprocess"][1]["norm_type"] == "none"  # the PP-YOLOE+ normalisation the model was trained with


def test_ppyoloe_plus_finetune_preset_is_the_plus_family():
    from paddle_recipes.config import load_config
    from paddle_recipes.tasks.det_ppyoloe.config import DetConfig

    cfg = load_config(REPO_ROOT / "recipes" / "configs" / "det_ppyoloe_plus_s_finetune.yml", [], DetConfig)
    assert (cfg.Architecture.size, cfg.Architecture.reg_max) == ("s", 16)
    assert (cfg.Architecture.normalize.mean, cfg.Architecture.normalize.std) == ([0.0] * 3, [1.0] * 3)
    assert cfg.Global.pretrained_model.endswith("ppyoloe_plus_crn_s_80e_coco.pdparams")
    assert (cfg.Optimizer.warmup_epochs, cfg.Optimizer.warmup_steps, cfg.Export.layout) == (5.0, 0, "ppdet")


def test_eval_takes_a_ppdet_checkpoint_as_global_weights(finetuned, tmp_path):
    """--mode eval -o Global.weights=<ppdet-named .pdparams> scores exactly like our own checkpoint it was
    written from; a ppdet checkpoint of another class count is a one-line error (no random class head)."""
    from paddle_recipes.weights.load import load_weights
    from paddle_recipes.tasks.det_ppyoloe.model import build_ppyoloe
    from paddle_recipes.tasks.det_ppyoloe.ppdet_weights import save_ppdet_weights

    common = ["-c", SMOKE, "--mode", "eval", "-o", f"Global.output_dir={finetuned['out']}",
              f"Synthetic.root={finetuned['data']}", "Architecture.normalize=ppyoloe_plus"]
    ours = json.loads(run_python([RECIPE, *common]).stdout.strip().splitlines()[-1])
    cfg = yaml.safe_load((finetuned["out"] / "config.yml").read_text())["Architecture"]
    model = build_ppyoloe(cfg["size"], 3, reg_max=cfg["reg_max"])
    src = load_weights(model, finetuned["out"] / "checkpoints" / "best")
    assert src.endswith("ema.pdparams")
    ppdet_file = save_ppdet_weights(model, tmp_path / "as_ppdet")
    theirs = json.loads(run_python([RECIPE, *common, f"Global.weights={ppdet_file}"]).stdout.strip().splitlines()[-1])
    assert theirs["weights"] == str(ppdet_file)
    metric_keys = [k for k, v in ours.items() if isinstance(v, float)]
    # after 2 steps mAP is 0; mean_top_score depends on every weight: the raw (non-EMA) weights move it
    raw = json.loads(run_python([RECIPE, *common, "Global.use_ema_weights=false"]).stdout.strip().splitlines()[-1])
    assert raw["mean_top_score"] != ours["mean_top_score"]
    assert "mean_top_score" in metric_keys and {k: theirs[k] for k in metric_keys} == {k: ours[k] for k in metric_keys}

    other = save_ppdet_weights(build_ppyoloe(cfg["size"], 5, reg_max=cfg["reg_max"]), tmp_path / "five_classes")
    proc = run_python([RECIPE, *common, f"Global.weights={other}"], check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("det_ppyoloe: error:"), proc.stderr[-2000:]
    assert "5" in proc.stderr.strip().splitlines()[-1]


def test_ppdet_yaml_with_weights_for_eval_predict_export(finetuned, tmp_path):
    """A real-structured ppdet YAML sets pretrain_weights (a URL): that training-time init must not block
    eval / predict / export weights, in our spelling (-o Global.weights=..., Global.pretrained_model=null) or
    ppdet's (-o weights=..., pretrain_weights=null). Eval equals our own config's eval of the same file."""
    from paddle_recipes.weights.load import load_weights
    from paddle_recipes.tasks.det_ppyoloe.model import build_ppyoloe
    from paddle_recipes.tasks.det_ppyoloe.ppdet_weights import save_ppdet_weights
    from paddle_recipes.tasks.det_ppyoloe.synth import ShapesSpec, make_shapes_dataset

    model = build_ppyoloe("tiny", 3, reg_max=8)
    load_weights(model, finetuned["out"] / "checkpoints" / "best")
    ppdet_file = save_ppdet_weights(model, tmp_path / "model_final")
    val = make_shapes_dataset(finetuned["data"], ShapesSpec(**SMOKE_SET))["val"]
    same = [f"Eval.dataset.ann_file={val['ann_file']}", f"Eval.dataset.image_dir={val['image_dir']}", "Eval.size=96",
            "Eval.loader.num_workers=0", "Eval.nms.score_threshold=0.001", "Eval.nms.keep_top_k=300"]
    ours = run_python([RECIPE, "-c", SMOKE, "--mode", "eval", "-o", f"Global.output_dir={tmp_path / 'a'}",
                       "Architecture.normalize=ppyoloe_plus", f"Global.weights={ppdet_file}", *same])
    ppdet_yaml = [RECIPE, "-c", PPDET_YAML, "-o", f"Global.output_dir={tmp_path / 'b'}", "Architecture.size=tiny",
                  "Architecture.reg_max=8", *same]
    theirs = run_python([*ppdet_yaml[:3], "--mode", "eval", *ppdet_yaml[3:], f"weights={ppdet_file}"])
    a, b = (json.loads(p.stdout.strip().splitlines()[-1]) for p in (ours, theirs))
    assert b["weights"] == str(ppdet_file)
    assert {k: v for k, v in a.items() if isinstance(v, float)} == {k: v for k, v in b.items() if isinstance(v, float)}
    pred = run_python([*ppdet_yaml[:3], "--mode", "predict", *ppdet_yaml[3:], f"Global.weights={ppdet_file}",
                       "Global.pretrained_model=null", f"Predict.out_dir={tmp_path / 'pred'}"])
    assert len(json.loads(pred.stdout.strip().splitlines()[-1])) == 4  # Predict.num_samples default
    exp = run_python([*ppdet_yaml[:3], "--mode", "export", *ppdet_yaml[3:], f"weights={ppdet_file}",
                      "pretrain_weights=null", "Export.legacy=true"])
    report = json.loads(exp.stdout.strip().splitlines()[-1])
    assert report["same_detections"] is True and report["format"] == "pdmodel", report
    assert report["weights"] == str(ppdet_file) and min(report["compared_boxes"]) > 0
    # training still refuses two init sources (the YAML's pretrain_weights and -o weights) in one line
    proc = run_python([*ppdet_yaml, f"weights={ppdet_file}"], check=False)
    assert proc.returncode == 2 and "both set init weights for training" in proc.stderr.strip().splitlines()[-1]
