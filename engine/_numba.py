"""The Numba kernel: the native algorithm in Python, compiled with @njit(parallel=True).

It applies the very weight tables the native kernel builds (`_native.weight_table`) with
the same float32 arithmetic in the same order: horizontal pass first into an unclamped
float32 intermediate, then the vertical pass, each output a sum over taps in tap order
starting from 0.0f, rounded once as clamp(trunc(sum + 0.5f), 0, 255). LLVM here does not
fuse multiply-adds (no fastmath), so the result equals the native scalar variant exactly.

Compiled functions are cached on disk (cache=True) next to this module; where that
folder is read-only Numba falls back to its user-wide cache, and where no cache can be
written at all the functions still compile, once per process.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np

from engine import _native


def _jit(function):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaWarning)
            return numba.njit(parallel=True, cache=True)(function)
    except RuntimeError:  # no writable cache location
        return numba.njit(parallel=True)(function)


@_jit
def _horizontal(plane, first, weights_t, out):  # pragma: no cover - compiled
    in_h, in_w = plane.shape
    taps, out_w = weights_t.shape
    reach = in_w + taps
    for y in numba.prange(in_h):
        line = np.empty(reach, dtype=np.float32)
        for i in range(reach):
            line[i] = np.float32(plane[y, min(i, in_w - 1)])
        acc = np.zeros(out_w, dtype=np.float32)
        for k in range(taps):
            for x in range(out_w):
                acc[x] += weights_t[k, x] * line[first[x] + k]
        out[y, :] = acc


@_jit
def _vertical(mid, first, weights, out):  # pragma: no cover - compiled
    in_h, width = mid.shape
    out_h, taps = weights.shape
    for y in numba.prange(out_h):
        acc = np.zeros(width, dtype=np.float32)
        for k in range(taps):
            row = min(first[y] + k, in_h - 1)
            w = weights[y, k]
            for x in range(width):
                acc[x] += w * mid[row, x]
        for x in range(width):
            shifted = acc[x] + np.float32(0.5)
            if not shifted > 0:
                out[y, x] = 0
            elif shifted >= 255:
                out[y, x] = 255
            else:
                out[y, x] = np.uint8(int(shifted))


def resample(
    plane: np.ndarray, out_w: int, out_h: int, filter_name: str, offset: tuple[float, float]
) -> np.ndarray:
    """Resample a 2-D uint8 plane (arguments already checked by engine.resample)."""
    in_h, in_w = plane.shape
    first_x, weights_x = _native.weight_table(in_w, out_w, filter_name, offset[0])
    first_y, weights_y = _native.weight_table(in_h, out_h, filter_name, offset[1])
    mid = np.empty((in_h, out_w), dtype=np.float32)
    _horizontal(plane, first_x, np.ascontiguousarray(weights_x.T), mid)
    out = np.empty((out_h, out_w), dtype=np.uint8)
    _vertical(mid, first_y, weights_y, out)
    return out
