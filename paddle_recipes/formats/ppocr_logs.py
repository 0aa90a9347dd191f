"""PaddleOCR's log line conventions, so log parsers written for PaddleOCR read our runs.

Message bodies as PaddleOCR's tools/program.py and tools/infer_rec.py print them (their logger adds
``[%Y/%m/%d %H:%M:%S] root INFO: `` in front, see PPOCR_LOG_FORMAT)::

    cur metric, acc: 0.8125, norm_edit_dis: 0.95, fps: 812.3
    best metric, acc: 0.8125, norm_edit_dis: 0.95, fps: 812.3, best_epoch: 3
    infer_img: imgs/word_1.png
    \t result: 韩国小馆\t0.9987263

    Trainer(..., options=TrainerOptions(eval_log=PPOCREvalLog(cur_metric)))   # the two eval lines after every evaluation
    logger.info(format_cur_metric(rec_cur_metric(evaluate(...), num_samples=n, seconds=t)))
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

__all__ = ["PPOCR_LOG_FORMAT", "PPOCR_DATE_FORMAT", "format_metric_line", "format_cur_metric", "rec_cur_metric",
           "PPOCREvalLog", "format_infer_rec", "format_rec_result_line"]

PPOCR_LOG_FORMAT = "[%(asctime)s] %(name)s %(levelname)s: %(message)s"  # logging.Formatter(fmt, datefmt)
PPOCR_DATE_FORMAT = "%Y/%m/%d %H:%M:%S"


def _plain(v):
    """numpy / paddle scalars -> Python numbers (PaddleOCR's values are Python floats and ints)."""
    if isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "item"):
        return v.item()
    return v


def format_metric_line(prefix: str, metrics: Mapping[str, object]) -> str:
    """``"<prefix>, k1: v1, k2: v2"`` with each value printed by ``str`` (full float precision, as PaddleOCR)."""
    return "{}, {}".format(prefix, ", ".join("{}: {}".format(k, _plain(v)) for k, v in metrics.items()))


def format_cur_metric(metrics: Mapping[str, object]) -> str:
    """PaddleOCR's eval line: ``cur metric, acc: ..., norm_edit_dis: ..., fps: ...``."""
    return format_metric_line("cur metric", metrics)


def rec_cur_metric(metrics: Mapping[str, object], num_samples: float | None = None,
                   seconds: float | None = None) -> dict:
    """PaddleOCR's recognition ``cur_metric`` dict from ours (RecMetric.from_state output):
    ``{"acc", "norm_edit_dis"}`` in that order, plus ``fps`` = samples per second of model + decoding time
    when ``num_samples`` and ``seconds`` are given (PaddleOCR times the forward and post-processing, not
    data loading). Our bookkeeping keys (``num_samples``, ...) are left out."""
    for k in ("acc", "norm_edit_dis"):
        if k not in metrics:
            raise KeyError(f"rec_cur_metric: metrics lack {k!r} (got {sorted(metrics)})")
    out = {"acc": float(_plain(metrics["acc"])), "norm_edit_dis": float(_plain(metrics["norm_edit_dis"]))}
    if num_samples is not None and seconds is not None:
        out["fps"] = float(num_samples) / max(float(seconds), 1e-12)
    return out


class PPOCREvalLog:
    """The trainer's eval lines in PaddleOCR's form (a trainer.EvalLog): ``cur metric, ...`` for this eval,
    then ``best metric, ..., best_epoch: N`` for the best so far (trainer.BestMetric: PaddleOCR's tie rule).

    cur_metric(metrics) -> dict: what both lines show of an eval's metrics (default: its scalar metrics;
    recognition: rec_cur_metric's acc, norm_edit_dis, fps).
    """

    def __init__(self, cur_metric=None):
        self.cur_metric = cur_metric or (lambda m: {k: v for k, v in m.items() if not isinstance(v, dict)})

    def lines(self, metrics: Mapping[str, object], best) -> list[str]:
        out = [format_cur_metric(self.cur_metric(dict(metrics)))]
        if best.epoch is not None:
            out.append(format_metric_line("best metric", {**self.cur_metric(dict(best.metrics)),
                                                          "best_epoch": best.epoch}))
        return out


def _score_str(score) -> str:
    """PaddleOCR's score is a numpy float32 mean: its ``str`` (shortest float32 repr, e.g. 0.9987263)."""
    return str(np.float32(score))


def format_infer_rec(img_path: str, text: str, score: float) -> tuple[str, str]:
    """The two lines PaddleOCR's tools/infer_rec.py logs per image:
    ``infer_img: <path>`` and ``\\t result: <text>\\t<score>``."""
    return "infer_img: {}".format(img_path), "\t result: {}\t{}".format(text, _score_str(score))


def format_rec_result_line(img_path: str, text: str, score: float) -> str:
    """One line of infer_rec.py's ``Global.save_res_path`` file: ``<path>\\t<text>\\t<score>\\n``."""
    return "{}\t{}\t{}\n".format(img_path, text, _score_str(score))
