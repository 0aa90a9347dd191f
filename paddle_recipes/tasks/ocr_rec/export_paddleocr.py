"""Export a CTC recognizer in the layout PaddleOCR's inference reads.

    report = export_rec_for_paddleocr(model, charset.chars, [3, 48, 320], "output/rec/inference")
    # paddleocr 3.x / PaddleX:
    #   TextRecognition(model_name=report["model_name"], model_dir="output/rec/inference").predict("line.jpg")
    report = export_rec_for_paddleocr(model, chars, [3, 48, 320], "output/rec/inference_v2", legacy=True)
    # paddleocr 2.x: tools/infer/predict_rec.py --rec_model_dir output/rec/inference_v2 \\
    #   --rec_char_dict_path output/rec/inference_v2/character_dict.txt --rec_image_shape 3,48,320

Files written to ``out_dir``:

* ``inference.json`` (paddle 3.x PIR program) or, with ``legacy=True``, ``inference.pdmodel``
  (the old program format, the only one paddleocr 2.x ``predict_rec`` reads);
* ``inference.pdiparams``: weights;
* ``inference.yml``: PaddleX's model config (``Global.model_name``, ``PreProcess.transform_ops``
  DecodeImage BGR / RecResizeImg / KeepKeys, ``PostProcess`` CTCLabelDecode with the character list);
* ``character_dict.txt``: one character per line (``--rec_char_dict_path`` for paddleocr 2.x).

The graph takes ``x: float32 [N, 3, H, W]`` with N and W free and returns softmax probabilities
``[N, T, num_classes]`` (class 0 = CTC blank), which is what PaddleOCR's CTCLabelDecode expects
(its score is the mean max-probability of the kept steps).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

from ...export import create_predictor, predict
from ...nn import catalog
from ...formats.ppocr_inference import folder_files, write_inference_dir
from .charset import CharDict
from .postprocess import ctc_greedy_decode

__all__ = ["PADDLEX_REC_MODEL_NAMES", "DEFAULT_MODEL_NAME", "SoftmaxOutput", "resolve_model_name", "model_name_for",
           "paddlex_rec_config", "export_rec_for_paddleocr"]

# Global.model_name values paddlex 3.7 accepts for a text-recognition model_dir (its
# modules/text_recognition/model_list.py). paddleocr's TextRecognition(model_dir=...) raises
# "Model name mismatch" unless model_name= is the same name (its default is PP-OCRv6_medium_rec in 3.7,
# PP-OCRv5_server_rec in 3.0-3.3). The name picks no weights; it only selects the predictor class,
# the visualisation font and, for arabic_* names, right-to-left text reversal (avoid those).
PADDLEX_REC_MODEL_NAMES = (
    "PP-OCRv6_medium_rec", "PP-OCRv6_small_rec", "PP-OCRv6_tiny_rec",
    "PP-OCRv3_mobile_rec", "en_PP-OCRv3_mobile_rec", "korean_PP-OCRv3_mobile_rec", "japan_PP-OCRv3_mobile_rec",
    "chinese_cht_PP-OCRv3_mobile_rec", "te_PP-OCRv3_mobile_rec", "ka_PP-OCRv3_mobile_rec", "ta_PP-OCRv3_mobile_rec",
    "latin_PP-OCRv3_mobile_rec", "arabic_PP-OCRv3_mobile_rec", "cyrillic_PP-OCRv3_mobile_rec",
    "devanagari_PP-OCRv3_mobile_rec", "PP-OCRv4_mobile_rec", "PP-OCRv4_server_rec", "en_PP-OCRv4_mobile_rec",
    "PP-OCRv4_server_rec_doc", "ch_SVTRv2_rec", "ch_RepSVTR_rec", "PP-OCRv5_server_rec", "PP-OCRv5_mobile_rec",
    "latin_PP-OCRv5_mobile_rec", "eslav_PP-OCRv5_mobile_rec", "korean_PP-OCRv5_mobile_rec",
    "en_PP-OCRv5_mobile_rec", "el_PP-OCRv5_mobile_rec", "th_PP-OCRv5_mobile_rec", "arabic_PP-OCRv5_mobile_rec",
    "cyrillic_PP-OCRv5_mobile_rec", "devanagari_PP-OCRv5_mobile_rec", "ta_PP-OCRv5_mobile_rec",
    "te_PP-OCRv5_mobile_rec",
)
# For our own (non PaddleOCR-fidelity) presets: a name every paddleocr 3.x release knows.
DEFAULT_MODEL_NAME = "PP-OCRv5_server_rec"


def resolve_model_name(name: str | None) -> str:
    """``Global.model_name`` for the yml: "" / None -> DEFAULT_MODEL_NAME; a name paddlex knows -> itself;
    anything else -> ValueError listing the accepted names (e.g. a PaddleOCR YAML's ``Global.model_name``
    such as "PP-OCRv5_mobile_rec" passes through; "rec_chinese_common_v2.0" has no paddlex name: pass "")."""
    if not name:
        return DEFAULT_MODEL_NAME
    if name not in PADDLEX_REC_MODEL_NAMES:
        raise ValueError(f"model_name {name!r} is not a text-recognition model paddlex 3.x accepts; "
                         f"use one of {list(PADDLEX_REC_MODEL_NAMES)} (or '' for {DEFAULT_MODEL_NAME!r})")
    return name


def model_name_for(backbone: str, requested: str | None = "") -> str:
    """``Global.model_name`` of the inference.yml of an exported network whose Architecture.Backbone.name is
    `backbone`. A network PaddleX has names for (nn.catalog's ``paddlex``: PPLCNetV3, PPHGNetV2_B4, ...): `requested`
    must be one of them (ValueError naming both otherwise); "" = PaddleOCR's model of it (the catalogue's
    ``export_name``). Other networks (our presets, the v2.0 CRNN): any name paddlex accepts (resolve_model_name);
    "" = DEFAULT_MODEL_NAME. The name selects no weights: paddleocr's TextRecognition(model_name=...) must equal it."""
    network = catalog.lookup(backbone, catalog.REC)
    if not requested:
        return catalog.export_name(backbone, catalog.REC) or DEFAULT_MODEL_NAME
    name = resolve_model_name(requested)
    named = catalog.paddlex_network(name, catalog.REC)
    if network is not None and catalog.REC in network.paddlex and named is not network:
        raise ValueError(f"model_name {name!r} is PaddleX's name of a {named.name if named else 'different'} network, "
                         f"but this export is a {network.name}; use '' (= {model_name_for(backbone)!r}) or another "
                         f"{network.name} name")
    return name


class SoftmaxOutput(nn.Layer):
    """Wrap a recognizer returning CTC logits [B, T, C] so that it returns softmax probabilities."""
    outputs_probabilities = True

    def __init__(self, model: nn.Layer):
        super().__init__()
        self.model = model

    def forward(self, x):
        return F.softmax(self.model(x), axis=-1)

def paddlex_rec_config(chars: Sequence[str], image_shape: Sequence[int], model_name: str = DEFAULT_MODEL_NAME) -> dict:
    """The ``inference.yml`` content (a dict) PaddleX's text-recognition predictor reads.

    chars: characters of classes 1..N in order (class 0 = blank is implied). PaddleX appends " " as
    one more class itself; that extra class is never predicted by an N+1-class model.
    image_shape: [C, H, W]; W is the minimum canvas width at inference.
    """
    model_name = resolve_model_name(model_name)
    c, h, w = (int(v) for v in image_shape)
    if c != 3:
        raise ValueError(f"image_shape {list(image_shape)}: PaddleOCR's inference feeds 3-channel BGR images, "
                         "export needs C=3")
    return {
        "Global": {"model_name": model_name},
        "PreProcess": {"transform_ops": [
            {"DecodeImage": {"channel_first": False, "img_mode": "BGR"}},
            {"MultiLabelEncode": {"gtc_encode": "NRTRLabelEncode"}},  # label-only op: skipped at inference
            {"RecResizeImg": {"image_shape": [c, h, w]}},
            {"KeepKeys": {"keep_keys": ["image", "label_ctc", "label_gtc", "length", "valid_ratio"]}},
        ]},
        "PostProcess": {"name": "CTCLabelDecode", "character_dict": list(chars)},
    }


def export_rec_for_paddleocr(model: nn.Layer, chars: Sequence[str], image_shape: Sequence[int],
                             out_dir: str | os.PathLike, model_name: str = DEFAULT_MODEL_NAME,
                             legacy: bool = False, outputs_probabilities: bool | None = None,
                             check_widths: Sequence[int] = (0, 2), check_batch: int = 2, seed: int = 0) -> dict:
    """Write ``inference.{json|pdmodel}`` + ``inference.pdiparams`` + ``inference.yml`` +
    ``character_dict.txt`` to ``out_dir`` and check Paddle Inference against the dygraph model.

    model: recognizer returning CTC logits [B, T, len(chars) + 1] (or probabilities when
        ``outputs_probabilities``; None = the model's ``outputs_probabilities`` attribute, False when absent);
        exported in eval mode, its training flag is restored.
    chars: the characters of classes 1..N (``CharDict.chars``).
    image_shape: [3, H, W]; exported input spec is [None, 3, H, None].
    model_name: ``Global.model_name`` of the yml, one of PADDLEX_REC_MODEL_NAMES ("" = DEFAULT_MODEL_NAME);
        for a PaddleOCR-fidelity preset name its official model (e.g. "PP-OCRv5_mobile_rec").
    legacy: write the old ``inference.pdmodel`` program (paddleocr 2.x) instead of ``inference.json``.
    check_widths: widths compared after export, as multiples of W (0 = W itself, 2 = 2W).
    Returns a report: files, format, model_name, input/output description, and per checked width the
    max |softmax difference| and whether greedy decoding agrees.
    """
    from paddle.static import InputSpec

    c, h, w = (int(v) for v in image_shape)
    model_name = resolve_model_name(model_name)
    config = paddlex_rec_config(chars, [c, h, w], model_name)
    out = Path(out_dir)
    was_training = model.training
    if outputs_probabilities is None:
        outputs_probabilities = bool(getattr(model, "outputs_probabilities", False))
    net = model if outputs_probabilities else SoftmaxOutput(model)
    net.eval()  # a fresh wrapper is in train mode; export_model would restore that onto ``model``
    try:
        exp = write_inference_dir(net, [InputSpec([None, c, h, None], "float32", "x")], out, config, legacy=legacy)
        CharDict(list(chars), source="<export>").save(out / "character_dict.txt")
        checks = _check_inference(net, exp.prefix, CharDict(list(chars)), [c, h, w], check_widths, check_batch, seed)
    finally:
        if was_training:
            model.train()
        else:
            model.eval()
    files = folder_files(out)
    return {"out_dir": str(out), "format": exp.format, "model_name": model_name, "files": files,
            "input": {"name": "x", "shape": [None, c, h, None], "layout": "BGR, (x/255 - 0.5)/0.5"},
            "output": f"softmax probabilities [N, T, {len(chars) + 1}] (class 0 = CTC blank)",
            "checks": checks}

def _check_inference(net: nn.Layer, prefix: str, charset, image_shape: Sequence[int], widths: Sequence[int],
                     batch: int, seed: int) -> list:
    """Paddle Inference vs the eval-mode dygraph ``net`` on uniform [-1, 1] inputs of each width."""
    c, h, w = image_shape
    predictor = create_predictor(prefix, device="cpu", threads=1)
    rng = np.random.default_rng(seed)
    checks = []
    for mult in widths:
        width = w if mult == 0 else int(mult * w)
        x = rng.uniform(-1, 1, (batch, c, h, width)).astype("float32")
        with paddle.no_grad():
            ref = net(paddle.to_tensor(x)).numpy()
        (got,) = predict(predictor, {"x": x})
        same = ([t for t, _ in ctc_greedy_decode(ref, charset, is_logits=False)]
                == [t for t, _ in ctc_greedy_decode(got, charset, is_logits=False)])
        checks.append({"width": width, "output_shape": list(got.shape),
                       "max_abs_diff": float(np.abs(got - ref).max()), "same_decoded_text": bool(same)})
    return checks
