"""The float64 reference resampler: slow, plain and independent of the fast kernels.

It builds its own dense weight matrices from the filter definitions (it never reuses
the native or Numba tables), applies them with an unclamped float64 intermediate and
rounds once at the end. The tests hold every fast kernel to it within 1 LSB.
"""

from __future__ import annotations

import math

import numpy as np


def _lanczos3(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    return np.where(ax < 3.0, np.sinc(x) * np.sinc(x / 3.0), 0.0)


def _bicubic(x: np.ndarray) -> np.ndarray:
    a = -0.5  # Keys
    ax = np.abs(x)
    near = ((a + 2.0) * ax - (a + 3.0)) * ax * ax + 1.0
    far = ((a * ax - 5.0 * a) * ax + 8.0 * a) * ax - 4.0 * a
    return np.where(ax < 1.0, near, np.where(ax < 2.0, far, 0.0))


def _bilinear(x: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, 1.0 - np.abs(x))


FILTERS = {"lanczos3": (_lanczos3, 3.0), "bicubic": (_bicubic, 2.0), "bilinear": (_bilinear, 1.0)}


def weight_matrix(in_size: int, out_size: int, filter_name: str, shift: float) -> np.ndarray:
    """Dense (out_size, in_size) matrix mapping a source line to an output line.

    Output pixel x samples the source at (x + 0.5) * in/out - 0.5 + shift; when
    downscaling the filter is stretched by in/out. Taps past an edge fold onto the
    edge pixel (edge replication). Each row sums to one.

    The position is computed as the exact integer ((2x + 1) * in - out) over 2 * out,
    so it is the correctly rounded double (exactly k + 1/2 where the true position is):
    the naive (x + 0.5) * ratio - 0.5 lands a hair off such ties, and so does a
    "rounded" reference there.
    """
    kernel, support = FILTERS[filter_name]
    ratio = in_size / out_size
    stretch = max(ratio, 1.0)
    reach = support * stretch
    matrix = np.zeros((out_size, in_size), dtype=np.float64)
    for x in range(out_size):
        center = ((2 * x + 1) * in_size - out_size) / (2 * out_size) + shift
        taps = np.arange(math.floor(center - reach), math.ceil(center + reach) + 1)
        weights = kernel((taps - center) / stretch)
        weights /= weights.sum()
        np.add.at(matrix[x], np.clip(taps, 0, in_size - 1), weights)
    return matrix


def resample_float(
    plane: np.ndarray, out_w: int, out_h: int, filter_name: str, offset: tuple[float, float]
) -> np.ndarray:
    """The unrounded float64 result, for error statistics."""
    in_h, in_w = plane.shape
    wx = weight_matrix(in_w, out_w, filter_name, offset[0])
    wy = weight_matrix(in_h, out_h, filter_name, offset[1])
    return wy @ (plane.astype(np.float64) @ wx.T)


def resample(
    plane: np.ndarray, out_w: int, out_h: int, filter_name: str, offset: tuple[float, float]
) -> np.ndarray:
    """Resample a 2-D uint8 plane; round half up once, then clamp to 0..255."""
    return round_half_up(resample_float(plane, out_w, out_h, filter_name, offset))


# Weights such as 1/6 and 5/6 are inexact in binary, so a float64 sum that is exactly
# k + 1/2 in rational arithmetic lands ~1e-14 below it; such ties still round up.
TIE_TOLERANCE = 1e-9


def round_half_up(values: np.ndarray) -> np.ndarray:
    """Round half up (within TIE_TOLERANCE of a half counts as the half), clamp to uint8."""
    return np.clip(np.floor(values + (0.5 + TIE_TOLERANCE)), 0, 255).astype(np.uint8)
