"""The Numba kernel: the native algorithm in Python, compiled with @njit(parallel=True).

It applies the very weight tables the native kernel builds (`_native.weight_table`) with
the same float32 arithmetic in the same order: horizontal pass first into an unclamped
float32 intermediate, then the vertical pass, each output a sum over taps in tap order
starting from 0.0f, rounded once as clamp(trunc(sum + (0.5f + 2^-14)), 0, 255). LLVM here does not
fuse multiply-adds (no fastmath), so the result equals the native scalar variant exactly.

Compiled functions are cached on disk (cache=True) next to this module; where that
folder is read-only Numba falls back to its user-wide cache, and where no cache can be
written at all the functions still compile, once per process.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings

import numba
import numpy as np

from engine import _native

# Half plus 2^-14: float32 sums miss exact ties by a few ulps (native passes.hpp).
_ROUNDING_OFFSET = np.float32(0.5 + 1.0 / 16384.0)


def _jit(function=None, *, parallel=True):
    if function is None:
        return lambda f: _jit(f, parallel=parallel)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaWarning)
            return numba.njit(parallel=parallel, cache=True)(function)
    except RuntimeError:  # no writable cache location
        return numba.njit(parallel=parallel)(function)


@_jit(parallel=False)
def _widen(plane, y, reach, line):  # pragma: no cover - compiled
    in_w = plane.shape[1]
    row = plane[y]
    for i in range(in_w):
        line[i] = np.float32(row[i])
    line[in_w:reach] = np.float32(row[in_w - 1])


@_jit(parallel=False)
def _generic(line, first, weights, x_from, x_to, out_row):  # pragma: no cover - compiled
    for x in range(x_from, x_to):
        acc = np.float32(0.0)
        for k in range(weights.shape[1]):
            acc += weights[x, k] * line[first[x] + k]
        out_row[x] = acc


@_jit(parallel=False)
def _periodic(line, first, weights, period, step, start, count, out_row):  # pragma: no cover
    # Phase p holds outputs start + p + period * j, reading first[start + p] + step * j + k.
    acc = np.zeros((period, count), dtype=np.float32)
    for p in range(period):
        base = first[start + p]
        phase = acc[p]
        for k in range(weights.shape[1]):
            w = weights[start + p, k]
            # Slices, not line[base + step * j + k], and a contiguous one of its own
            # type for step 1: LLVM then vectorises these loops.
            if step == 1:
                contiguous = line[base + k : base + k + count]
                for j in range(count):
                    phase[j] += w * contiguous[j]
            else:
                strided = line[base + k : base + k + step * (count - 1) + 1 : step]
                for j in range(count):
                    phase[j] += w * strided[j]
    segment = out_row[start : start + period * count]
    if period == 2:
        for j in range(count):
            segment[2 * j] = acc[0, j]
            segment[2 * j + 1] = acc[1, j]
    else:
        for j in range(count):
            for p in range(period):
                segment[j * period + p] = acc[p, j]


@_jit
def _horizontal(plane, first, weights, period, step, start, count, out):  # pragma: no cover
    in_h, in_w = plane.shape
    out_w, taps = weights.shape
    reach = in_w + taps + step * period
    stop = start + period * count
    for y in numba.prange(in_h):
        line = np.empty(reach, dtype=np.float32)
        _widen(plane, y, reach, line)
        _generic(line, first, weights, 0, start, out[y])
        _generic(line, first, weights, stop, out_w, out[y])
        if count > 0:
            _periodic(line, first, weights, period, step, start, count, out[y])


@_jit
def _vertical(mid, first, weights, out):  # pragma: no cover - compiled
    in_h, width = mid.shape
    out_h, taps = weights.shape
    for y in numba.prange(out_h):
        acc = np.zeros(width, dtype=np.float32)
        for k in range(taps):
            source = mid[min(first[y] + k, in_h - 1)]
            w = weights[y, k]
            for x in range(width):
                acc[x] += w * source[x]
        for x in range(width):
            # The native rounding for finite sums: clamp(trunc(sum + offset), 0, 255).
            shifted = min(max(acc[x] + _ROUNDING_OFFSET, np.float32(0.0)), np.float32(255.0))
            out[y, x] = np.uint8(np.int32(shifted))


def _phases(first: np.ndarray, weights: np.ndarray, in_size: int) -> tuple[int, int, int, int]:
    """(period, step, start, count): the longest run of whole periods in which output
    x + period reads `step` source pixels further than x with bit-identical weights
    (the native tables are exactly periodic away from the edges)."""
    out_size = len(first)
    common = math.gcd(in_size, out_size)
    period, step = out_size // common, in_size // common
    if 2 * period > out_size:
        return 1, 0, 0, 0
    shifted = first[period:] == first[:-period] + step
    same = shifted & (weights[period:] == weights[:-period]).all(axis=1)
    best_start, best_len, run_start = 0, 0, None
    for x, ok in enumerate(np.append(same, False)):
        if ok and run_start is None:
            run_start = x
        elif not ok and run_start is not None:
            if x - run_start > best_len:
                best_start, best_len = run_start, x - run_start
            run_start = None
    # Outputs run_start .. run_start + len + period - 1 all repeat the run's first period.
    count = (best_len + period) // period
    return period, step, best_start, count if count >= 2 else 0


@functools.lru_cache(maxsize=32)
def _axis(in_size: int, out_size: int, filter_name: str, shift: float):
    first, weights = _native.weight_table(in_size, out_size, filter_name, shift)
    return first, weights, _phases(first, weights, in_size)


_scratch = threading.local()


def _intermediate(rows: int, cols: int) -> np.ndarray:
    """A reused per-thread float32 buffer: a fresh one would page-fault on every call."""
    buffer = getattr(_scratch, "buffer", None)
    if buffer is None or buffer.size < rows * cols:
        buffer = _scratch.buffer = np.empty(rows * cols, dtype=np.float32)
    return buffer[: rows * cols].reshape(rows, cols)


def resample(
    plane: np.ndarray,
    out_w: int,
    out_h: int,
    filter_name: str,
    offset: tuple[float, float],
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Resample a 2-D uint8 plane into `out` (any strides) or a new array; the
    arguments were checked by engine.resample."""
    in_h, in_w = plane.shape
    first_x, weights_x, phases_x = _axis(in_w, out_w, filter_name, offset[0])
    first_y, weights_y, _ = _axis(in_h, out_h, filter_name, offset[1])
    mid = _intermediate(in_h, out_w)
    _horizontal(plane, first_x, weights_x, *phases_x, mid)
    if out is None:
        out = np.empty((out_h, out_w), dtype=np.uint8)
    _vertical(mid, first_y, weights_y, out)
    return out
