"""Shared rules of the PaddleOCR parity fixtures, rec and det (tests/ocr_rec/test_ppocr_models.py, tests/ocr_det/test_ocr_det_models.py
and tests/scripts/make_ppocr_rec_fixtures.py, make_ppocr_det_fixtures.py).

A parity fixture is produced once by running PaddleOCR's own code in **float64** on deterministic
weights (``det_value``) and a fixed input; the tests run our network on the same weights and input
and compare.  Why float64: float32 kernels differ between CPUs (AVX2 vs AVX-512, MKL-DNN paths),
and batch-norm in train mode amplifies those differences (1e-7 relative in a conv becomes 1e-4 in
the logits), so a float32 reference recorded on one CPU fails on another.  In float64 the same
amplification leaves ~1e-12, far below any real discrepancy.

Two comparisons per output (``assert_matches_reference``):
  * ours in float64 vs the float64 reference: tight (``RTOL64`` of the output's RMS scale), the real
    parity check; any wrong layer, name, order or epsilon shows as differences of 1e-4 or more;
  * ours in float32 vs the float64 reference, within a bound of float32 rounding for that kind of
    output, as a fraction of its RMS scale: ``EVAL_RTOL32`` in eval mode (measured here: <= 1.4e-6,
    so x70 margin) and ``TRAIN_RTOL32`` in train mode, where batch statistics amplify rounding with
    depth (measured here: <= 5.7e-4 for PP-OCRv5_server's CTC branch, so x17 margin; det: <= 1.8e-3 for
    det_r50_vd_db's train maps, whose binary map 1 / (1 + exp(-50 (P - T))) multiplies the error of P - T by up to
    12.5, so x5.7; det eval: <= 4.7e-7).
Argmax (the class for rec; the column of each image row's maximum for det) must equal the reference wherever
the top-2 margin is wider than 4x the bound of that dtype (saturated sigmoids tie at exactly 1.0).
"""
from __future__ import annotations

import zlib

import numpy as np

RTOL64 = 1e-6        # float64 parity, relative to the output's RMS scale: float64 noise is ~1e-12; the NRTR
                     # heads keep float32-precision constants (positional table, scale) on both sides (~1e-7)
EVAL_RTOL32 = 1e-4   # float32, eval mode (also for a float32 reference: models paddle cannot run in float64)
TRAIN_RTOL32 = 1e-2  # float32, train-mode batch-norm


def det_value(name, shape, dtype="float64"):
    """Deterministic tensor for a parameter name (the same rule is used on PaddleOCR's model)."""
    rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
    shape = list(shape)
    if name.endswith("_variance"):
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    n = rng.standard_normal(shape)
    if len(shape) <= 1:
        base = 1.0 if name.endswith((".weight", ".scale")) else 0.0
        return (base + 0.1 * n).astype(dtype)
    fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
    return (0.5 * n / np.sqrt(max(fan_in, 1))).astype(dtype)


def fixed_input(shape, dtype="float64"):
    """The parity input: uniform(-1, 1) from RandomState(0)."""
    return np.random.RandomState(0).uniform(-1, 1, shape).astype(dtype)


def summarize(arr):
    """What a fixture keeps of an output, per row of its last axis (rec [B, T, C]: each time step's classes; det
    [B, C, H, W]: each image row): the first 16 entries, the row's sum of squares, max and argmax."""
    arr = np.asarray(arr, dtype="float64")
    return {"shape": list(arr.shape), "slice_0_16": arr[..., :16].tolist(),
            "sumsq": (arr ** 2).sum(-1).tolist(), "argmax": arr.argmax(-1).tolist(),
            "max": arr.max(-1).tolist()}


def _scale(ref):
    return float(np.sqrt(np.mean(np.square(ref)))) or 1.0


def assert_matches_reference(name, ours64, ours32, ref, rtol32):
    """Our float64 and float32 outputs of one tensor against its float64 ``summarize`` record."""
    ours64 = np.asarray(ours64, dtype="float64")
    ours32 = np.asarray(ours32, dtype="float64")
    assert list(ours64.shape) == ref["shape"], f"{name}: shape {list(ours64.shape)} != {ref['shape']}"
    got64, got32 = summarize(ours64), summarize(ours32)
    for key in ("slice_0_16", "sumsq", "max"):
        want = np.asarray(ref[key])
        scale = _scale(want)
        err64 = np.abs(np.asarray(got64[key]) - want).max()
        assert err64 <= RTOL64 * scale, f"{name}.{key}: float64 differs from PaddleOCR by {err64:.3g} (scale {scale:.3g})"
        err32 = np.abs(np.asarray(got32[key]) - want).max()
        assert err32 <= rtol32 * scale, f"{name}.{key}: float32 differs from PaddleOCR by {err32:.3g} (scale {scale:.3g})"
    _assert_argmax_where_clear(f"{name} float64", ours64, ref, RTOL64)
    _assert_argmax_where_clear(f"{name} float32", ours32, ref, rtol32)


def _assert_argmax_where_clear(name, ours, ref, rtol):
    """argmax equals the reference wherever the top-2 margin is wider than 4x the bound ``rtol`` of its dtype."""
    top2 = np.sort(ours, axis=-1)[..., -2:]
    clear = (top2[..., 1] - top2[..., 0]) > 4 * rtol * _scale(np.asarray(ref["max"]))
    assert np.array_equal(ours.argmax(-1)[clear], np.asarray(ref["argmax"])[clear]), f"{name}: argmax differs"


def assert_matches_float32_reference(name, ours32, ref):
    """Eval-mode output against a float32 reference (recorded on another CPU): ``EVAL_RTOL32`` of the
    output's scale, the float32 rounding of a well-conditioned inference pass with a wide margin; argmax
    only where the top-2 margin is clearly wider than that."""
    ours32 = np.asarray(ours32, dtype="float64")
    assert list(ours32.shape) == ref["shape"], f"{name}: shape {list(ours32.shape)} != {ref['shape']}"
    got = summarize(ours32)
    for key in ("slice_0_16", "sumsq", "max"):
        want = np.asarray(ref[key])
        err = np.abs(np.asarray(got[key]) - want).max()
        assert err <= EVAL_RTOL32 * _scale(want), f"{name}.{key}: differs from PaddleOCR by {err:.3g}"
    _assert_argmax_where_clear(f"{name} float32", ours32, ref, EVAL_RTOL32)
