"""The learned `detail` filter in numpy: what training fits, and a mirror of the native scalar
passes (native/detail/detail_scalar.cpp, the specification) for tests.

The filter doubles both sides of a uint8 plane S (RAISR-style: one small filter per bucket of
local structure and per output phase). S is padded by 2 pixels with edge replication; for each
source pixel p:

- gradients at each q: gx = S[q + (0, 1)] - S[q - (0, 1)], gy = S[q + (1, 0)] - S[q - (1, 0)];
- the structure tensor at p sums gx*gx, gy*gy and gx*gy over the 3 x 3 q around p, row by row
  and left to right, in float32 (exact: every partial sum is an integer below 2**24);
- the angle bucket (0..7) is the 45-degree sector of (gxx - gyy, 2 gxy), whose angle is twice
  the gradient's: sector 0 is centred on 0 degrees, sector 2 on 90 (see `angle_sector`);
- strength is 1 when the trace t = gxx + gyy reaches the model's level (thresholds[0]);
- coherence is 1 when the edge is clear, (gxx - gyy)**2 + (2 gxy)**2 > (c t)**2 with
  c = thresholds[1], every product and sum rounded to float32 on its own;
- output pixel (2 y + py, 2 x + px) is the 5 x 5 window of S around p, times the weights of
  bucket 4 * angle + 2 * strength + coherence and phase 2 * py + px, summed tap by tap (row by
  row) in float32 from 0, plus 0.5, clamped to 0..255 and truncated.
"""

from __future__ import annotations

import numpy as np

ANGLES = 8
STRENGTHS = 2
COHERENCES = 2
BUCKETS = ANGLES * STRENGTHS * COHERENCES
PHASES = 4
RADIUS = 2
TAPS = (2 * RADIUS + 1) ** 2
# tan(22.5 degrees) in float32: the sector boundaries (products rounded once, never fused).
TAN_22_5 = np.float32(0.41421356237309503)


def padded(plane: np.ndarray) -> np.ndarray:
    return np.pad(plane, RADIUS, mode="edge").astype(np.float32)


def angle_sector(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sector 0..7 of (a, b): sector k spans 45 k +- 22.5 degrees; ties go to the axes."""
    abs_a, abs_b = np.abs(a), np.abs(b)
    near_a = abs_b <= TAN_22_5 * abs_a
    near_b = abs_a <= TAN_22_5 * abs_b
    diagonal = np.where(a > 0, np.where(b > 0, 1, 7), np.where(b > 0, 3, 5))
    axis_b = np.where(b >= 0, 2, 6)
    return np.where(near_a, np.where(a >= 0, 0, 4), np.where(near_b, axis_b, diagonal))


def tensor(plane: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gxx, gyy, gxy) of every pixel, float32, exactly as the native passes sum them."""
    p = padded(plane)
    gx = p[1:-1, 2:] - p[1:-1, :-2]
    gy = p[2:, 1:-1] - p[:-2, 1:-1]

    def box(values: np.ndarray) -> np.ndarray:
        rows = values[:-2] + values[1:-1] + values[2:]  # q rows y - 1, y, y + 1
        return rows[:, :-2] + rows[:, 1:-1] + rows[:, 2:]

    return box(gx * gx), box(gy * gy), box(gx * gy)


def buckets(plane: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Bucket (0..BUCKETS-1) of every pixel of the uint8 plane."""
    gxx, gyy, gxy = tensor(plane)
    a, b = gxx - gyy, gxy + gxy
    trace = gxx + gyy
    strength = (trace >= thresholds[0]).astype(np.int64)
    spread = thresholds[1] * trace
    coherence = (a * a + b * b > spread * spread).astype(np.int64)
    return (angle_sector(a, b) * STRENGTHS + strength) * COHERENCES + coherence


def windows(plane: np.ndarray) -> np.ndarray:
    """(h, w, TAPS) float32: the 5 x 5 window around each pixel, row by row."""
    p = padded(plane)
    h, w = plane.shape
    size = 2 * RADIUS + 1
    return np.stack([p[i : i + h, j : j + w] for i in range(size) for j in range(size)], axis=-1)


def upscale2x(plane: np.ndarray, weights: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """The (2 h, 2 w) output; weights has shape (BUCKETS, PHASES, TAPS)."""
    which = buckets(plane, thresholds)
    win = windows(plane)
    h, w = plane.shape
    out = np.empty((2 * h, 2 * w), np.uint8)
    for phase in range(PHASES):
        taps = weights[which, phase]
        sums = np.zeros((h, w), np.float32)
        for k in range(TAPS):  # tap order, as the native sum
            sums += taps[..., k] * win[..., k]
        out[phase // 2 :: 2, phase % 2 :: 2] = np.clip(sums + np.float32(0.5), 0, 255)
    return out
