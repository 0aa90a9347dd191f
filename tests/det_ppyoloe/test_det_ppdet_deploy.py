"""The legacy ppdet deploy export (model.pdmodel + model.pdiparams + infer_cfg.yml) in Paddle Inference configured as
ppdet's deploy loader configures it, and in PaddleDetection's own deploy ``Detector`` (release/2.6
deploy/python/infer.py, unchanged), against our predict path on the same images.

deploy/python is not part of the paddledet wheel (nor anything else on PyPI): the Detector test runs when
PPDET_DEPLOY_DIR points at a PaddleDetection release/2.6 checkout's deploy/python, e.g.
    git clone -b release/2.6 --depth 1 https://github.com/PaddlePaddle/PaddleDetection /tmp/PaddleDetection
    PPDET_DEPLOY_DIR=/tmp/PaddleDetection/deploy/python python -m pytest -q tests/det_ppyoloe/test_det_ppdet_deploy.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from conftest import REPO_ROOT, run_python
from test_det_ppdet import _model_with_varied_scores

from paddle_recipes.tasks.det_ppyoloe.deploy import export_ppdet_deploy
from paddle_recipes.tasks.det_ppyoloe.normalize import NORMALIZE_PRESETS
from paddle_recipes.tasks.det_ppyoloe.predict_export import detect_images

NMS = {"score_threshold": 0.05, "nms_top_k": 1000, "keep_top_k": 300, "iou_threshold": 0.6}
LABELS = ["rect", "ellipse", "triangle"]
SIZE = 96
MARGIN = 1e-4  # scores this close to the threshold may land on either side in the two float paths: left out
BOX_TOL, SCORE_TOL = 2e-3, 1e-4  # px / score: BN folding + RepVGG fusion reassociate float32 sums (~1e-5 px seen)


@pytest.fixture(scope="module")
def legacy_export(tmp_path_factory):
    root = tmp_path_factory.mktemp("ppdet_legacy")
    model = _model_with_varied_scores()
    norm = NORMALIZE_PRESETS["ppyoloe_plus"]
    out = export_ppdet_deploy(model, root / "deploy", LABELS, input_size=SIZE, norm=norm, nms=NMS, legacy_ir=True)
    rng = np.random.default_rng(3)
    files = []
    for i, shape in enumerate([(120, 80, 3), (70, 150, 3)]):
        files.append(str(root / f"im{i}.png"))
        cv2.imwrite(files[-1], rng.integers(0, 256, shape, dtype=np.uint8))
    ours = [det for _, _, det in detect_images(model, files, SIZE, NMS, norm)]
    return {"dir": root / "deploy", "out": out, "files": files, "ours": ours}


def _assert_same(got_all: list, ours: list):
    floor = NMS["score_threshold"] + MARGIN
    for got, ref in zip(got_all, ours):
        got, ref = got[got[:, 1] >= floor], ref[ref[:, 1] >= floor]
        assert len(got) == len(ref) > 10
        got, ref = got[np.lexsort((got[:, 0], -got[:, 1]))], ref[np.lexsort((ref[:, 0], -ref[:, 1]))]
        np.testing.assert_array_equal(got[:, 0], ref[:, 0])
        np.testing.assert_allclose(got[:, 1], ref[:, 1], atol=SCORE_TOL)
        np.testing.assert_allclose(got[:, 2:], ref[:, 2:], atol=BOX_TOL)


def test_legacy_layout_files_and_ppdet_style_predictor(legacy_export):
    """The files release/2.6's loader looks for, run with its Paddle Inference settings (IR optim, memory optim,
    zero-copy) on ppdet-style inputs, give our predict path's detections."""
    import paddle.inference as pi
    import yaml

    from paddle_recipes.tasks.det_ppyoloe.deploy import preprocess_like_deploy

    d = legacy_export["dir"]
    assert sorted(p.name for p in d.iterdir()) == ["infer_cfg.yml", "model.pdiparams", "model.pdiparams.info",
                                                    "model.pdmodel"]
    assert legacy_export["out"]["format"] == "pdmodel"
    cfg = yaml.safe_load((d / "infer_cfg.yml").read_text())
    config = pi.Config(str(d / "model.pdmodel"), str(d / "model.pdiparams"))
    config.disable_gpu()
    config.set_cpu_math_library_num_threads(1)
    config.disable_glog_info()
    config.enable_memory_optim()
    config.switch_use_feed_fetch_ops(False)
    pred = pi.create_predictor(config)
    got_all = []
    for f in legacy_export["files"]:
        im, scale = preprocess_like_deploy(cv2.cvtColor(cv2.imread(f), cv2.COLOR_BGR2RGB), cfg)
        for name, arr in (("image", im[None]), ("scale_factor", scale[None])):
            h = pred.get_input_handle(name)
            h.reshape(list(arr.shape))
            h.copy_from_cpu(arr)
        pred.run()
        bbox, num = [pred.get_output_handle(n).copy_to_cpu() for n in pred.get_output_names()]
        assert num.tolist() == [len(bbox)]
        got_all.append(bbox)
    _assert_same(got_all, legacy_export["ours"])


DEPLOY_DIR = os.environ.get("PPDET_DEPLOY_DIR", "")


@pytest.mark.skipif(not (DEPLOY_DIR and (Path(DEPLOY_DIR) / "infer.py").is_file()),
                    reason="PPDET_DEPLOY_DIR does not point at PaddleDetection's deploy/python (not on PyPI; "
                           "see this file's docstring)")
def test_ppdet_own_deploy_detector_runs_the_legacy_export(legacy_export):
    proc = run_python([REPO_ROOT / "tests" / "scripts" / "ppdet_deploy_detect.py", DEPLOY_DIR, legacy_export["dir"],
                       *legacy_export["files"]])
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    boxes = np.asarray(res["boxes"], np.float32).reshape(-1, 6)
    got_all = np.split(boxes, np.cumsum(res["boxes_num"])[:-1])
    assert len(got_all) == len(legacy_export["files"])
    _assert_same(got_all, legacy_export["ours"])
