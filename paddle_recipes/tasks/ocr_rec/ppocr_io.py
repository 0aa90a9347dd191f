"""The OCR recipe's PaddleOCR-facing outputs: Export / Predict config sections, the export in PaddleOCR's
inference layout and the `cur metric` dict (predict's infer_rec.py lines: evaluate.predict_images).

    cfg.Export  = RecExportConfig(model_name="", legacy=False)    # -> <out_dir>/inference.{json|pdmodel,pdiparams,yml}
    cfg.Predict = RecPredictConfig(images="imgs/", batch_size=1, save_res_path="out/predicts_rec.txt")
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Tuple

import numpy as np
import paddle

from ...config import ConfigError
from ...nn.reparam import fused_copy
from ...export import ExportedModel, inference_files
from ...formats.ppocr_logs import rec_cur_metric
from ...formats.ppocr_inference import PPOCR_FILE_STEM, PPOCRExportConfig
from ...train.config import PredictConfig
from .export_paddleocr import SoftmaxOutput, export_rec_for_paddleocr, model_name_for, resolve_model_name
from .postprocess import ctc_greedy_decode


@dataclass
class RecExportConfig(PPOCRExportConfig):
    """PPOCRExportConfig of the recognizer: the folder also holds character_dict.txt. model_name "" = PaddleOCR's
    model of the exported network (nn.catalog's export_name, e.g. PP-OCRv5_mobile_rec for PPLCNetV3;
    PP-OCRv5_server_rec for networks paddlex has no name for; export_paddleocr.model_name_for);
    paddleocr's TextRecognition(model_name=...) must equal it. legacy: inference.pdmodel for paddleocr 2.x predict_rec."""
    resolve_model_name = staticmethod(resolve_model_name)


@dataclass
class RecPredictConfig(PredictConfig):
    """PredictConfig as PaddleOCR's tools/infer_rec.py: batch_size 1 (its default; predictions depend on the
    batch because lines are padded to the widest of their batch), save_res_path: also write
    "<image>\\t<text>\\t<score>" lines to this file ("" = off)."""
    batch_size: int = 1
    save_res_path: str = ""

    def __post_init__(self):
        if self.batch_size < 1:
            raise ConfigError(f"Predict.batch_size must be >= 1, got {self.batch_size}")


def outputs_probabilities(model) -> bool:
    """True when `model` in eval mode returns softmax probabilities (PaddleOCR-faithful models, a SoftmaxOutput
    wrapper), False for logits (our RecModel). Read from the model's ``outputs_probabilities`` attribute."""
    return bool(getattr(model, "outputs_probabilities", False))


def probabilities_model(model):
    """`model` itself when it outputs probabilities, else a SoftmaxOutput wrapper (PaddleOCR's exported output)."""
    return model if outputs_probabilities(model) else SoftmaxOutput(model)


class PaddleOCRExport:
    """Recipe hooks of the OCR export (mix in before Recipe): the deploy model (rep blocks fused) outputs softmax
    probabilities, export_files writes PaddleOCR's layout (Export.model_name / Export.legacy), parity on random inputs of
    Global.image_shape, plus greedy-decoded texts equal. Needs ``self.charset`` and ``self.cfg``."""
    output_names, parity_after_deploy = ("probs",), True

    def deploy_model(self, model):
        fused, blocks = fused_copy(model)  # rep blocks re-parameterized, as PaddleOCR exports them
        return probabilities_model(fused), {"rep_blocks_fused": len(blocks)}

    def input_spec(self):
        c, h, _ = self.cfg.Global.image_shape
        return [paddle.static.InputSpec([None, c, h, None], "float32", "x")]

    def export_files(self, deploy, prefix: str):
        return export_paddleocr_layout(deploy, self.charset.chars, self.cfg.Global.image_shape, prefix, self.cfg.Export,
                                       self.cfg.Architecture.Backbone.name)

    def parity_inputs(self, model) -> dict:
        n = max(1, self.cfg.Export.parity_batch)
        return {"x": np.random.default_rng(0).uniform(-1, 1, (n, *self.cfg.Global.image_shape)).astype("float32")}

    def export_extras(self, ref, out, inputs, out_dir) -> dict:
        texts = [[t for t, _ in ctc_greedy_decode(o, self.charset, is_logits=False)] for o in (ref[0], out[0])]
        return {"same_decoded_text": texts[0] == texts[1]}


def export_paddleocr_layout(model, chars: Sequence[str], image_shape: Sequence[int], prefix: str,
                            export_cfg: RecExportConfig, backbone: str = "") -> Tuple[ExportedModel, dict]:
    """Write the PaddleOCR inference folder (parent of `prefix`) for `model`, whose Architecture.Backbone.name
    `backbone` picks the yml's model_name (model_name_for); returns (ExportedModel of <folder>/inference, report
    entries: format, model_name, files, free-width checks)."""
    out_dir = Path(prefix).parent
    rep = export_rec_for_paddleocr(model, chars, image_shape, out_dir,
                                   model_name=model_name_for(backbone, export_cfg.model_name),
                                   legacy=export_cfg.legacy, outputs_probabilities=outputs_probabilities(model))
    entries = {"layout": "paddleocr", "model_name": rep["model_name"], "files": rep["files"],
               "input": rep["input"], "output": rep["output"], "free_width_checks": rep["checks"]}
    return inference_files(out_dir / PPOCR_FILE_STEM), entries


def cur_metric(metrics: dict) -> dict:
    """PaddleOCR's eval dict {acc, norm_edit_dis, fps} from the recipe's metrics (num_samples, infer_seconds)."""
    return rec_cur_metric(metrics, metrics.get("num_samples"), metrics.get("infer_seconds"))
