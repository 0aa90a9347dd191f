"""Record the PaddleOCR det fixtures in tests/fixtures/ppocr_det/ by running PaddleOCR's OWN code.

    python tests/scripts/make_ppocr_det_fixtures.py --ppocr-src /tmp/PaddleOCR [--only models|pieces]

Not run by the tests (they only read the JSON it writes). ``--ppocr-src`` is a PaddleOCR checkout
(release ~Dec 2025); use a scratch copy, PaddleOCR's import adds files next to its modules.

models: for each preset, the Architecture section of PaddleOCR's YAML, its state_dict manifest
    (names -> shapes, counts) and, in float64 with the deterministic weights of ``det_value``
    (tests/test_ppocr_models.py), eval and train outputs for a fixed input: slices and row sums of
    squares of the probability map and of the binarize branch's pre-sigmoid logits.
pieces: float64 inputs/outputs of PaddleOCR's pure numpy/python DB pieces (see ``pieces``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "fixtures" / "ppocr_det"
sys.path.insert(0, str(HERE.parent))  # det_value lives in tests/test_ppocr_models.py

PRESET_YAMLS = {
    "PP-OCRv5_mobile_det": "configs/det/PP-OCRv5/PP-OCRv5_mobile_det.yml",
    "PP-OCRv4_mobile_det": "configs/det/PP-OCRv4/PP-OCRv4_mobile_det.yml",
    "PP-OCRv5_server_det": "configs/det/PP-OCRv5/PP-OCRv5_server_det.yml",
    "ch_det_res18_db_v2.0": "configs/det/ch_ppocr_v2.0/ch_det_res18_db_v2.0.yml",
    "det_r50_vd_db": "configs/det/det_r50_vd_db.yml",
}
EVAL_SHAPE = [1, 3, 64, 64]
TRAIN_SHAPE = [2, 3, 64, 64]


def det_input(shape, seed):
    return np.random.RandomState(seed).uniform(-1, 1, shape)


def summarize(a):
    """Small float64 fingerprint of a [B, C, H, W] map: a strided slice and per-row sums of squares."""
    a = np.asarray(a, dtype="float64")
    return {"shape": list(a.shape), "slice": a[:, :, ::8, ::8].tolist(), "rowsumsq": (a ** 2).sum(-1).tolist()}


def run_det_model(model, x64, capture_name="head.binarize.conv3"):
    """Forward ``x64`` (cast to the model's dtype) through ``model``; returns (outputs, captured logits)."""
    import paddle
    x64 = x64.astype(str(model.parameters()[0].dtype).replace("paddle.", ""))
    captured = {}
    layer = dict(model.named_sublayers())[capture_name]
    hook = layer.register_forward_post_hook(lambda _l, _i, out: captured.__setitem__("logits", out.numpy()))
    with paddle.no_grad():
        out = model(paddle.to_tensor(x64))
    hook.remove()
    return {k: v.numpy() for k, v in out.items()}, captured["logits"]


def set_det_weights(model, dtype="float64"):
    """Cast ``model`` to ``dtype`` and give every tensor (BN statistics included) its ``det_value``."""
    import paddle
    from test_ppocr_models import det_value
    model.to(dtype=dtype)
    sd = model.state_dict()
    model.set_state_dict({k: paddle.to_tensor(det_value(k, v.shape).astype(dtype)) for k, v in sd.items()})


def output_fixture(model):
    """eval: batch 1; train (batch statistics): batch 2. Same recipe in the test for our model."""
    model.eval()
    out, logits = run_det_model(model, det_input(EVAL_SHAPE, 0))
    rec = {"eval_input": {"shape": EVAL_SHAPE, "seed": 0}, "eval_maps": summarize(out["maps"]),
           "eval_logits": summarize(logits)}
    model.train()
    out, logits = run_det_model(model, det_input(TRAIN_SHAPE, 1))
    rec.update({"train_input": {"shape": TRAIN_SHAPE, "seed": 1}, "train_maps": summarize(out["maps"]),
                "train_logits": summarize(logits)})
    return rec


def models(src: Path):
    import paddle
    import yaml
    paddle.set_default_dtype("float64")
    from ppocr.modeling.architectures import build_model
    for preset, rel in PRESET_YAMLS.items():
        arch = yaml.safe_load((src / rel).read_text(encoding="utf-8"))["Architecture"]
        model = build_model(dict(arch, Backbone=dict(arch["Backbone"]), Neck=dict(arch["Neck"]),
                                 Head=dict(arch["Head"])))
        model.to(dtype="float64")  # PaddleOCR's nn.BatchNorm layers ignore the default dtype
        sd = model.state_dict()
        manifest = {"preset": preset, "source": f"PaddleOCR {rel} built with PaddleOCR's code",
                    "architecture": arch, "num_tensors": len(sd),
                    "num_elements": int(sum(int(np.prod(v.shape)) for v in sd.values())),
                    "tensors": {k: list(v.shape) for k, v in sd.items()}}
        (OUT / f"{preset}.json").write_text(json.dumps(manifest, indent=0) + "\n", encoding="utf-8")
        set_det_weights(model)
        (OUT / f"{preset}.outputs.json").write_text(json.dumps(output_fixture(model)) + "\n", encoding="utf-8")
        print(preset, len(sd), "tensors")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ppocr-src", required=True, type=Path, help="PaddleOCR checkout (scratch copy)")
    ap.add_argument("--only", choices=["models", "pieces"], default=None)
    args = ap.parse_args()
    src = args.ppocr_src.resolve()
    sys.path.insert(0, str(src))
    OUT.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "models"):
        models(src)
    if args.only in (None, "pieces"):
        pieces()


if __name__ == "__main__":
    main()
