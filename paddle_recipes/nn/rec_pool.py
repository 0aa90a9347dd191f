"""The sequence pooling that ends PaddleOCR's PP-OCRv4/v5/v6 rec backbones (the PP-LCNetV3 / V4 and
PP-HGNetV2 families).

Training: an adaptive average pool to 1 x 40 columns, whatever the width. Eval and export: a [3, 2] average pool,
one column for every 2 feature columns (8 input pixels). The two agree only at 80 feature columns (input width
320, PaddleOCR's own YAMLs). At another training width the CTC head learns at one column density and is scored
and deployed at another; `rec_sequence_pool` says so once per backbone (measured in
benchmarks/results/cpu_vs_paddleocr_v5_reduced/: it is not what kept the reduced v5 runs on their plateau).
"""
from __future__ import annotations

import logging

import paddle
import paddle.nn.functional as F

TRAIN_COLUMNS = 40  # PaddleOCR's fixed training sequence length
AGREEING_COLUMNS = 2 * TRAIN_COLUMNS  # feature columns at which training and eval pool alike (input width 320)
_logger = logging.getLogger(__name__)
_warned: set[str] = set()


def rec_sequence_pool(x: paddle.Tensor, training: bool, backbone: str) -> paddle.Tensor:
    """[N, C, H, W] backbone features -> [N, C, 1, T]: T = 40 in training, W // 2 in eval (PaddleOCR's rule).
    Warns once per `backbone` name when a training batch has W != 80 feature columns."""
    if not training:
        return F.avg_pool2d(x, [3, 2])
    width = x.shape[3]
    if isinstance(width, int) and 0 < width != AGREEING_COLUMNS and backbone not in _warned:
        _warned.add(backbone)
        _logger.warning(
            "%s: training batch with %d feature columns (input width %d px), pooled to %d; eval, export and "
            "inference read one column per 2 (%d here): the CTC head trains at %.2fx the column density it is "
            "scored at. They agree only at input width %d (PaddleOCR's YAMLs); train at that width unless this "
            "is meant.", backbone, width, 4 * width, TRAIN_COLUMNS, width // 2, TRAIN_COLUMNS / (width / 2),
            4 * AGREEING_COLUMNS)
    return F.adaptive_avg_pool2d(x, [1, TRAIN_COLUMNS])
