"""Write PaddleOCR's MobileNetV1Enhance state_dict manifest (PP-OCRv3 rec backbone), derived by READING its code.

    python tests/scripts/make_mv1_enhance_manifest.py

No PaddleOCR checkout with ``ppocr/modeling`` is on this machine (the paddleocr 2.10 wheel ships no modeling code),
so unlike make_ppocr_rec_fixtures.py this script does not run PaddleOCR: it transcribes the constructor calls of
``ppocr/modeling/backbones/rec_mv1_enhance.py`` (PaddleOCR release/2.6+: ``MobileNetV1Enhance.__init__`` with
``last_conv_stride`` / ``last_pool_type`` / ``last_pool_kernel_size``) and applies the shape rules of the layers it
uses (``ConvBNLayer`` = ``_conv`` Conv2D without bias + ``_batch_norm`` BatchNorm; ``SEModule`` = ``conv1`` /
``conv2`` 1x1 with bias; ``DepthwiseSeparable`` = ``_depthwise_conv`` with ``num_groups * scale`` groups, ``_se``,
``_pointwise_conv``). It imports nothing of paddle_recipes, so the test compares our network with an independent
account. Output shapes follow the conv / pool arithmetic of those calls. Writes
``tests/fixtures/ppocr_manifests/MobileNetV1Enhance_rec.json``.
"""
from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "ppocr_manifests" / "MobileNetV1Enhance_rec.json"

# PaddleOCR's DepthwiseSeparable calls in order:
# (num_channels before scale, num_filters1, num_filters2, num_groups, stride, dw_size, padding, use_se)
CALLS = [(32, 32, 64, 32, 1, 3, 1, False), (64, 64, 128, 64, 1, 3, 1, False),            # conv2_1, conv2_2
         (128, 128, 128, 128, 1, 3, 1, False), (128, 128, 256, 128, (2, 1), 3, 1, False),  # conv3_1, conv3_2
         (256, 256, 256, 256, 1, 3, 1, False), (256, 256, 512, 256, (2, 1), 3, 1, False),  # conv4_1, conv4_2
         *[(512, 512, 512, 512, 1, 5, 2, False)] * 5,                                      # conv5 x5
         (512, 512, 1024, 512, (2, 1), 5, 2, True),                                        # conv5_6
         (1024, 1024, 1024, 1024, "last_conv_stride", 5, 2, True)]                         # conv6
SETTINGS = {  # name -> (MobileNetV1Enhance kwargs, input shape)
    "PP-OCRv3": ({"scale": 0.5, "last_conv_stride": [1, 2], "last_pool_type": "avg", "last_pool_kernel_size": [2, 2]},
                 [1, 3, 48, 320]),
    "default": ({}, [1, 3, 32, 100]),
}
DEFAULTS = {"scale": 0.5, "last_conv_stride": 1, "last_pool_type": "max", "last_pool_kernel_size": [3, 2]}


def conv_bn(prefix: str, cin: int, cout: int, k: int, groups: int = 1) -> dict:
    return {f"{prefix}._conv.weight": [cout, cin // groups, k, k],
            **{f"{prefix}._batch_norm.{n}": [cout] for n in ("weight", "bias", "_mean", "_variance")}}


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def out_size(size, k, s, p):
    return [(n + 2 * pp - kk) // ss + 1 for n, kk, ss, pp in zip(size, pair(k), pair(s), pair(p))]


def manifest(kwargs: dict, input_shape: list) -> dict:
    a = {**DEFAULTS, **kwargs}
    scale = a["scale"]
    tensors = conv_bn("backbone.conv1", 3, int(32 * scale), 3)
    hw = out_size(input_shape[2:], 3, 2, 1)
    for i, (cin, f1, f2, groups, stride, k, pad, se) in enumerate(CALLS):
        stride = a["last_conv_stride"] if stride == "last_conv_stride" else stride
        p = f"backbone.block_list.{i}"
        tensors.update(conv_bn(f"{p}._depthwise_conv", int(cin * scale), int(f1 * scale), k, int(groups * scale)))
        if se:
            c = int(f1 * scale)
            tensors.update({f"{p}._se.conv1.weight": [c // 4, c, 1, 1], f"{p}._se.conv1.bias": [c // 4],
                            f"{p}._se.conv2.weight": [c, c // 4, 1, 1], f"{p}._se.conv2.bias": [c]})
        tensors.update(conv_bn(f"{p}._pointwise_conv", int(f1 * scale), int(f2 * scale), 1))
        hw = out_size(hw, k, stride, pad)
    if a["last_pool_type"] == "avg":
        hw = out_size(hw, a["last_pool_kernel_size"], a["last_pool_kernel_size"], 0)
    else:
        hw = out_size(hw, 2, 2, 0)
    return {"kwargs": kwargs, "input_shape": input_shape, "output_shape": [input_shape[0], int(1024 * scale), *hw],
            "num_tensors": len(tensors), "tensors": tensors}


def main():
    out = {"source": "derived by reading PaddleOCR ppocr/modeling/backbones/rec_mv1_enhance.py (not run: no "
                     "PaddleOCR modeling code on this machine); tests/scripts/make_mv1_enhance_manifest.py",
           "settings": {name: manifest(kw, shape) for name, (kw, shape) in SETTINGS.items()}}
    OUT.write_text(json.dumps(out, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: " + ", ".join(f"{n} {m['num_tensors']} tensors -> {m['output_shape']}"
                                         for n, m in out["settings"].items()))


if __name__ == "__main__":
    main()
