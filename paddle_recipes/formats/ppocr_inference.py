"""PaddleOCR's inference folder, written once for every PaddleOCR task (rec, det).

    exp = write_inference_dir(net, [InputSpec(...)], "output/x/inference", infer_cfg, legacy=False)

``<dir>/inference.json`` (paddle 3.x PIR program; paddleocr 3.x / PaddleX) or, with ``legacy``,
``<dir>/inference.pdmodel`` (the old program format, the only one paddleocr 2.x ``tools/infer`` reads),
``<dir>/inference.pdiparams`` (weights) and ``<dir>/inference.yml`` (PaddleX's model config:
``Global.model_name``, ``PreProcess.transform_ops``, ``PostProcess``; the task builds the dict).
``PPOCRExportConfig`` is the recipes' ``Export`` section for that layout.
"""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import paddle
import yaml
from paddle import nn

from ..config import ConfigError
from ..export import ExportedModel, export_model
from ..export import ExportConfig

__all__ = ["PPOCR_FILE_STEM", "PPOCRExportConfig", "write_inference_dir", "folder_files"]

PPOCR_FILE_STEM = "inference"  # PaddleX / paddleocr load <model_dir>/inference.*


@dataclass
class PPOCRExportConfig(ExportConfig):
    """ExportConfig in PaddleOCR's inference layout: out_prefix "" = output_dir/inference/inference (the folder
    output_dir/inference); a given prefix must end in /inference (the file names paddleocr looks for).
    model_name: Global.model_name written to inference.yml, one paddlex accepts for the task ("" = the task's
    default; paddleocr's ``model_name=`` must equal it). legacy: write inference.pdmodel (paddleocr 2.x) instead
    of inference.json. Subclasses set ``resolve_model_name`` (name -> name, ValueError when unknown)."""
    model_name: str = ""
    legacy: bool = False

    @staticmethod
    def resolve_model_name(name: str) -> str:
        return name

    def __post_init__(self):
        try:
            self.resolve_model_name(self.model_name)
        except ValueError as exc:
            raise ConfigError(f"Export.model_name: {exc}") from None
        if self.out_prefix and Path(self.out_prefix).name != PPOCR_FILE_STEM:
            raise ConfigError(f"Export.out_prefix {self.out_prefix!r}: PaddleOCR's inference reads "
                              f"<folder>/{PPOCR_FILE_STEM}.*, so the prefix must end in /{PPOCR_FILE_STEM}")


def write_inference_dir(net: nn.Layer, input_spec: Sequence, out_dir: str | os.PathLike, infer_cfg: dict,
                        legacy: bool = False, note: str = "") -> ExportedModel:
    """Export ``net`` (eval mode) to ``out_dir/inference.{json|pdmodel}`` + ``.pdiparams`` (stale model files
    there are removed first) and write ``infer_cfg`` as ``out_dir/inference.yml`` (key order kept, UTF-8), after
    ``note``'s lines as YAML comments (for the reader; PaddleOCR's loaders skip them)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    exp = export_model(_with_initialized_buffers(net) if legacy else net, input_spec, out / PPOCR_FILE_STEM,
                       legacy_ir=legacy)
    comments = "".join(f"# {line}\n" for line in note.splitlines())
    (out / f"{PPOCR_FILE_STEM}.yml").write_text(
        comments + yaml.safe_dump(infer_cfg, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return exp


def folder_files(out_dir: str | os.PathLike) -> dict:
    """{file name: bytes} of the files in ``out_dir``."""
    return {p.name: p.stat().st_size for p in sorted(Path(out_dir).iterdir()) if p.is_file()}


def _with_initialized_buffers(net: nn.Layer) -> nn.Layer:
    """The legacy exporter of paddle 3.3 fails ("Unknown place type: Place(undefined:0)") on buffers never
    allocated, such as ``nn.LSTM``'s ``_dropout_state`` (used only by cuDNN dropout). Returns ``net`` itself when
    it has none, else a deep copy where each is a 1-element uint8 zero tensor (the model is not modified)."""
    def uninitialized(layer):
        return [k for k, b in layer._buffers.items() if b is not None and not b._is_initialized()]

    if not any(uninitialized(layer) for layer in net.sublayers(include_self=True)):
        return net
    clone = copy.deepcopy(net)
    for layer in clone.sublayers(include_self=True):
        for k in uninitialized(layer):
            layer._buffers[k] = paddle.zeros([1], dtype="uint8")
    clone.eval()
    return clone
