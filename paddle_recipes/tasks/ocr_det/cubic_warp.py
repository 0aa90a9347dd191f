"""The perspective warp of a text crop (cubic, replicated border) with OpenCV 4.x's exact arithmetic, in numpy.

Why: paddleocr 2.x and paddlex 3.x cut each text line with ``cv2.warpPerspective(..., INTER_CUBIC,
BORDER_REPLICATE)`` and pin OpenCV 4.x (paddlex: opencv-contrib-python 4.10). OpenCV 5.x changed the warp's
interpolation (about 5 % of a crop's pixels one grey level off), which turned 5 of 247 near-tie readings on photo
pages (docs/official_models.md). This module computes the bytes OpenCV 4.10-4.14 compute, whatever OpenCV is
installed, so that our crops equal paddleocr's.

The arithmetic (facts of OpenCV 4.x's ``warpPerspective`` + ``remap``, written here in numpy):

* the 3x3 matrix is inverted by the adjugate over the determinant (double);
* the destination is walked in blocks (``bh0 = min(16, h)``, ``bw0 = min(1024 // bh0, w)``); per row of a block
  ``X0 = M0*x + M1*y + M2`` with ``x`` the block's first column, then per pixel ``W = 32 / (W0 + M6*x1)`` and
  ``X = round_half_even((X0 + M0*x1) * W)`` (clamped to int32): the source pixel is ``X >> 5`` and ``X & 31``
  indexes 32 sub-pixel positions (same for Y);
* each of the 32 x 32 sub-pixel positions has 16 int16 weights: float32 Keys cubic (A = -0.75) products times
  2**15, rounded, the sum corrected to 2**15 at the largest / smallest of taps (2..3, 2..3);
* a pixel is ``(sum(src * w) + 2**14) >> 15`` saturated to 0..255 over the 4 x 4 taps, indices clamped (replicate).

Checked byte for byte against OpenCV 4.10 (``tests/ocr_system/test_cubic_warp.py`` keeps the references it wrote).
Input: uint8 HxW or HxWxC. Cost: about 10x OpenCV's C++ warp (15 ms vs 1.5 ms per crop of up to 300 x 80 px at
load 15 on 2 cores), small beside the recognizer's forward pass.
"""
from __future__ import annotations

import numpy as np

TAB_BITS = 5  # OpenCV's INTER_BITS: 32 sub-pixel positions per axis
TAB_SIZE = 1 << TAB_BITS
COEF_BITS = 15  # OpenCV's INTER_REMAP_COEF_BITS
BLOCK = 32  # OpenCV's BLOCK_SZ of warpPerspective


def _cubic_weights_1d() -> np.ndarray:
    """[32, 4] float32 Keys cubic weights (A = -0.75) at x = i / 32, in float32 arithmetic."""
    f = np.float32
    a = f(-0.75)
    out = np.zeros((TAB_SIZE, 4), np.float32)
    for i in range(TAB_SIZE):
        x = f(i) * (f(1.0) / f(TAB_SIZE))
        x1 = x + f(1)
        c0 = ((a * x1 - f(5) * a) * x1 + f(8) * a) * x1 - f(4) * a
        c1 = ((a + f(2)) * x - (a + f(3))) * x * x + f(1)
        y = f(1) - x
        c2 = ((a + f(2)) * y - (a + f(3))) * y * y + f(1)
        c3 = f(1) - c0 - c1 - c2
        out[i] = (c0, c1, c2, c3)
    return out


def _cubic_table() -> np.ndarray:
    """[1024, 16] int32 fixed-point weights, row = (sub-pixel y) * 32 + (sub-pixel x), summing to 2**15 each."""
    w1 = _cubic_weights_1d()
    scale = np.float32(1 << COEF_BITS)
    tab = np.zeros((TAB_SIZE * TAB_SIZE, 16), np.int32)
    for i in range(TAB_SIZE):
        for j in range(TAB_SIZE):
            v = (w1[i][:, None] * w1[j][None, :]) * scale  # float32, [4 (y), 4 (x)]
            t = np.clip(np.rint(v), -32768, 32767).astype(np.int32).reshape(16)
            diff = int(t.sum()) - (1 << COEF_BITS)
            if diff:
                centre = [10, 11, 14, 15]  # taps (2,2) (2,3) (3,2) (3,3): OpenCV starts at ksize / 2
                lo = hi = 10
                for k in centre:
                    if t[k] < t[lo]:
                        lo = k
                    elif t[k] > t[hi]:
                        hi = k
                if diff < 0:
                    t[hi] -= diff
                else:
                    t[lo] -= diff
            tab[i * TAB_SIZE + j] = t
    return tab


_TABLE = _cubic_table()


def invert3x3(m: np.ndarray) -> np.ndarray:
    """The inverse of a 3x3 matrix as OpenCV's ``invert`` (DECOMP_LU, n = 3) computes it: adjugate * (1 / det)."""
    s = [[float(v) for v in row] for row in np.asarray(m, np.float64)]
    det = (s[0][0] * (s[1][1] * s[2][2] - s[1][2] * s[2][1])
           - s[0][1] * (s[1][0] * s[2][2] - s[1][2] * s[2][0])
           + s[0][2] * (s[1][0] * s[2][1] - s[1][1] * s[2][0]))
    if det == 0.0:
        return np.zeros((3, 3), np.float64)  # OpenCV leaves a zero matrix for a singular one
    d = 1.0 / det
    t = [(s[1][1] * s[2][2] - s[1][2] * s[2][1]) * d, (s[0][2] * s[2][1] - s[0][1] * s[2][2]) * d,
         (s[0][1] * s[1][2] - s[0][2] * s[1][1]) * d, (s[1][2] * s[2][0] - s[1][0] * s[2][2]) * d,
         (s[0][0] * s[2][2] - s[0][2] * s[2][0]) * d, (s[0][2] * s[1][0] - s[0][0] * s[1][2]) * d,
         (s[1][0] * s[2][1] - s[1][1] * s[2][0]) * d, (s[0][1] * s[2][0] - s[0][0] * s[2][1]) * d,
         (s[0][0] * s[1][1] - s[0][1] * s[1][0]) * d]
    return np.array(t, np.float64).reshape(3, 3)


def source_coords(m_inv: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Per destination pixel the fixed-point source position (int64 [H, W] each, 1/32 px), as OpenCV 4.x walks it."""
    m = [float(v) for v in np.asarray(m_inv, np.float64).reshape(9)]
    bh0 = min(BLOCK // 2, height)
    bw0 = min(BLOCK * BLOCK // bh0, width)
    xs = np.arange(width)
    block_x = (xs // bw0) * bw0  # first column of each pixel's block
    x_in = (xs - block_x).astype(np.float64)
    ys = np.arange(height, dtype=np.float64)[:, None]
    bx = block_x.astype(np.float64)[None, :]
    x0 = m[0] * bx + m[1] * ys + m[2]
    y0 = m[3] * bx + m[4] * ys + m[5]
    w0 = m[6] * bx + m[7] * ys + m[8]
    w = w0 + m[6] * x_in[None, :]
    with np.errstate(divide="ignore"):
        w = np.where(w != 0, TAB_SIZE / np.where(w != 0, w, 1.0), 0.0)
    lim = (-2147483648.0, 2147483647.0)
    fx = np.clip((x0 + m[0] * x_in[None, :]) * w, *lim)
    fy = np.clip((y0 + m[3] * x_in[None, :]) * w, *lim)
    return np.rint(fx).astype(np.int64), np.rint(fy).astype(np.int64)


def warp_perspective_cubic(img: np.ndarray, m: np.ndarray, width: int, height: int) -> np.ndarray:
    """``cv2.warpPerspective(img, m, (width, height), flags=INTER_CUBIC, borderMode=BORDER_REPLICATE)`` as
    OpenCV 4.x computes it. ``m`` maps source to destination (3x3); width, height > 0 (pixels); img uint8."""
    if img.dtype != np.uint8:
        raise ValueError(f"warp_perspective_cubic: uint8 image expected, got {img.dtype}")
    if width <= 0 or height <= 0:
        raise ValueError(f"warp_perspective_cubic: output size {width}x{height} must be positive")
    src = img if img.ndim == 3 else img[:, :, None]
    fx, fy = source_coords(invert3x3(m), width, height)
    sx = np.clip(fx >> TAB_BITS, -32768, 32767) - 1  # first of the 4 taps (int16 in OpenCV)
    sy = np.clip(fy >> TAB_BITS, -32768, 32767) - 1
    weights = _TABLE[(fy & (TAB_SIZE - 1)) * TAB_SIZE + (fx & (TAB_SIZE - 1))]  # [H, W, 16]
    h_src, w_src = src.shape[:2]
    taps = np.arange(4)
    ix = np.clip(sx[..., None] + taps, 0, w_src - 1)  # [H, W, 4]
    iy = np.clip(sy[..., None] + taps, 0, h_src - 1)
    acc = np.zeros((height, width, src.shape[2]), np.int32)  # |sum| <= 255 * sum|w| < 2**24
    for ky in range(4):
        for kx in range(4):
            acc += src[iy[:, :, ky], ix[:, :, kx]].astype(np.int32) * weights[:, :, ky * 4 + kx, None]
    out = np.clip((acc + (1 << (COEF_BITS - 1))) >> COEF_BITS, 0, 255).astype(np.uint8)
    return out if img.ndim == 3 else out[:, :, 0]
