"""Record PaddleOCR's PPLCNetV4 detection layout (PP-OCRv6 det backbone) for our shared backbone's test.

    python tests/scripts/make_lcnetv4_det_fixture.py --ppocr-src /path/to/PaddleOCR

Builds ``ppocr.modeling.backbones.rec_lcnetv4.PPLCNetV4(det=True, model_size=...)`` with **PaddleOCR's** code
(tiny, small, medium), records its state_dict names and shapes, casts it to float64, sets the deterministic
weights of ``tests/ppocr_parity.det_value`` and records its 4 feature maps for ``fixed_input([1, 3, 64, 96])``
in eval and in train mode (per map: shape, per-channel sum and sum of squares). Writes
``tests/fixtures/ppocr_manifests/PPLCNetV4_det.json``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from ppocr_parity import det_value, fixed_input  # noqa: E402

OUT = HERE.parent / "fixtures" / "ppocr_manifests" / "PPLCNetV4_det.json"
SIZES = ("tiny", "small", "medium")
INPUT_SHAPE = [1, 3, 64, 96]


def channel_stats(arr) -> dict:
    """shape, per-channel sum and sum of squares of a [1, C, H, W] map (float64)."""
    flat = arr.reshape(arr.shape[1], -1).astype("float64")
    return {"shape": list(arr.shape), "sum": flat.sum(-1).tolist(), "sumsq": (flat ** 2).sum(-1).tolist()}


def feature_maps(net, x, mode):
    import paddle

    getattr(net, mode)()
    with paddle.no_grad():
        return [channel_stats(o.numpy()) for o in net(x)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ppocr-src", required=True, help="a PaddleOCR source checkout with rec_lcnetv4.py")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(args.ppocr_src).resolve()))
    import paddle
    from ppocr.modeling.backbones.rec_lcnetv4 import PPLCNetV4

    out = {"source": "PaddleOCR ppocr/modeling/backbones/rec_lcnetv4.py PPLCNetV4(det=True, model_size) built with "
                     "PaddleOCR's code, float64, deterministic weights (tests/ppocr_parity.det_value)",
           "input_shape": INPUT_SHAPE, "sizes": {}}
    for size in SIZES:
        net = PPLCNetV4(det=True, model_size=size)
        tensors = {k: list(v.shape) for k, v in net.state_dict().items()}
        net.to(dtype="float64")
        net.set_state_dict({k: paddle.to_tensor(det_value(k, v.shape)) for k, v in net.state_dict().items()})
        x = paddle.to_tensor(fixed_input(INPUT_SHAPE))
        out["sizes"][size] = {"out_channels": list(net.out_channels), "num_tensors": len(tensors), "tensors": tensors,
                              "eval": feature_maps(net, x, "eval"), "train": feature_maps(net, x, "train")}
        print(size, len(tensors), "tensors")
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
