"""Signed-distance shapes and a canvas that paints them anti-aliased.

A shape is a function from points to their signed distance to its outline (negative inside)
plus a box outside which it is certainly empty, so the canvas evaluates each shape only where
it can show. Coverage is the distance converted to a one-pixel ramp, which is what makes edges
smooth at any size.

Determinism: everything here uses only +, -, *, /, sqrt, min, max, abs and floor on float32,
all of which IEEE 754 rounds exactly, so the same shapes give the same pixels on every CPU
(numpy's sin/exp may differ in the last bit between SIMD variants; nothing here calls them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Point = tuple[float, float]
Colour = tuple[float, float, float]
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in figure units
Field = Callable[[np.ndarray, np.ndarray], np.ndarray]
# How a layer is coloured: one colour, or a colour per point (an array ending in 3).
Paint = Colour | Callable[[np.ndarray, np.ndarray], np.ndarray]

EVERYWHERE: Box = (-np.inf, -np.inf, np.inf, np.inf)
F32 = np.float32


def _length(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.sqrt(x * x + y * y)


@dataclass(frozen=True)
class Shape:
    sdf: Field
    box: Box = EVERYWHERE

    def __or__(self, other: Shape) -> Shape:
        box = (
            min(self.box[0], other.box[0]),
            min(self.box[1], other.box[1]),
            max(self.box[2], other.box[2]),
            max(self.box[3], other.box[3]),
        )
        return Shape(lambda x, y: np.minimum(self.sdf(x, y), other.sdf(x, y)), box)

    def __and__(self, other: Shape) -> Shape:
        box = (
            max(self.box[0], other.box[0]),
            max(self.box[1], other.box[1]),
            min(self.box[2], other.box[2]),
            min(self.box[3], other.box[3]),
        )
        return Shape(lambda x, y: np.maximum(self.sdf(x, y), other.sdf(x, y)), box)

    def __sub__(self, other: Shape) -> Shape:
        return Shape(lambda x, y: np.maximum(self.sdf(x, y), -other.sdf(x, y)), self.box)

    def grown(self, by: float) -> Shape:
        """The shape's outline moved outwards by `by` (inwards when negative)."""
        x0, y0, x1, y1 = self.box
        return Shape(lambda x, y: self.sdf(x, y) - F32(by), (x0 - by, y0 - by, x1 + by, y1 + by))

    def outline(self, thickness: float) -> Shape:
        """A band `thickness` wide either side of the outline."""
        x0, y0, x1, y1 = self.box
        t = F32(thickness)
        box = (x0 - thickness, y0 - thickness, x1 + thickness, y1 + thickness)
        return Shape(lambda x, y: np.abs(self.sdf(x, y)) - t, box)

    def moved(self, dx: float, dy: float) -> Shape:
        x0, y0, x1, y1 = self.box
        return Shape(
            lambda x, y: self.sdf(x - F32(dx), y - F32(dy)), (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
        )


def smooth_union(a: Shape, b: Shape, k: float) -> Shape:
    """The union of `a` and `b` with the crease between them rounded over about `k`."""
    union = a | b
    kk = F32(k)

    def sdf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        da, db = a.sdf(x, y), b.sdf(x, y)
        h = np.clip(F32(0.5) + F32(0.5) * (db - da) / kk, 0, 1)
        return db + (da - db) * h - kk * h * (F32(1) - h)

    x0, y0, x1, y1 = union.box
    return Shape(sdf, (x0 - k, y0 - k, x1 + k, y1 + k))


def circle(c: Point, r: float) -> Shape:
    cx, cy, rr = F32(c[0]), F32(c[1]), F32(r)
    return Shape(
        lambda x, y: _length(x - cx, y - cy) - rr, (c[0] - r, c[1] - r, c[0] + r, c[1] + r)
    )


def ellipse(c: Point, r: Point) -> Shape:
    """An ellipse; the distance is an approximation that is exact on the outline, which is
    all anti-aliasing needs."""
    cx, cy = F32(c[0]), F32(c[1])
    rx, ry = F32(r[0]), F32(r[1])

    def sdf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        px, py = (x - cx) / rx, (y - cy) / ry
        k0 = _length(px, py)
        k1 = np.maximum(_length(px / rx, py / ry), F32(1e-6))
        return k0 * (k0 - F32(1)) / k1

    return Shape(sdf, (c[0] - r[0], c[1] - r[1], c[0] + r[0], c[1] + r[1]))


def rounded_box(c: Point, half: Point, radius: float) -> Shape:
    cx, cy = F32(c[0]), F32(c[1])
    hx, hy, rr = F32(half[0] - radius), F32(half[1] - radius), F32(radius)

    def sdf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        qx, qy = np.abs(x - cx) - hx, np.abs(y - cy) - hy
        outside = _length(np.maximum(qx, 0), np.maximum(qy, 0))
        return outside + np.minimum(np.maximum(qx, qy), 0) - rr

    return Shape(sdf, (c[0] - half[0], c[1] - half[1], c[0] + half[0], c[1] + half[1]))


def capsule(a: Point, b: Point, r: float) -> Shape:
    """A stroke from `a` to `b`, `r` thick on each side, with round ends."""
    ax, ay, rr = F32(a[0]), F32(a[1]), F32(r)
    bax, bay = F32(b[0] - a[0]), F32(b[1] - a[1])
    inv = F32(1.0 / max(float(bax * bax + bay * bay), 1e-12))

    def sdf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        pax, pay = x - ax, y - ay
        h = np.clip((pax * bax + pay * bay) * inv, 0, 1)
        return _length(pax - bax * h, pay - bay * h) - rr

    box = (min(a[0], b[0]) - r, min(a[1], b[1]) - r, max(a[0], b[0]) + r, max(a[1], b[1]) + r)
    return Shape(sdf, box)


def arc(c: Point, r: float, opening: float, thickness: float, *, down: bool = True) -> Shape:
    """A stroke along a circle, symmetric about the downward (`down`) or upward axis, with
    round ends. `opening` in (0, 1] sets how far it reaches: the tangent of a quarter of its
    angle (0.41 is a right angle each side). Sine and cosine come from that rational form, so
    no trigonometric function is needed."""
    t2 = opening * opening
    sin_a, cos_a = 2 * opening / (1 + t2), (1 - t2) / (1 + t2)
    cx, cy, rr, th = F32(c[0]), F32(c[1]), F32(r), F32(thickness)
    sa, ca = F32(sin_a), F32(cos_a)
    sign = F32(1 if down else -1)

    def sdf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        px, py = np.abs(x - cx), (y - cy) * sign
        beyond = ca * px > sa * py  # past the end of the arc: measure to its end point
        to_end = _length(px - sa * rr, py - ca * rr)
        to_arc = np.abs(_length(px, py) - rr)
        return np.where(beyond, to_end, to_arc) - th

    reach = r + thickness
    return Shape(sdf, (c[0] - reach, c[1] - reach, c[0] + reach, c[1] + reach))


def below(y0: float, slope: float = 0.0) -> Shape:
    """Everything below the line through (0, y0) rising by `slope` per unit of x."""
    norm = F32(1.0 / np.sqrt(1.0 + slope * slope))
    a, b = F32(y0), F32(slope)
    return Shape(lambda x, y: (a + b * x - y) * norm)


def above(y0: float, slope: float = 0.0) -> Shape:
    line = below(y0, slope)
    return Shape(lambda x, y: -line.sdf(x, y))


def to_pixels(x: float, y: float, width: int, height: int) -> tuple[float, float]:
    """A point in figure units as pixel coordinates of a `Canvas(width, height)` (origin at the
    image's top left corner, so pixel i's centre is at i + 0.5)."""
    scale = min(width, height)
    return x * scale + width / 2, y * scale + (height - scale)


class Canvas:
    """An RGB float32 image in figure units: x across with 0 at the centre, y down with 0 at
    the top of the bottom square of side min(width, height), where the figure stands (a taller
    image has more sky above it, a wider one more room either side). One unit is that side."""

    def __init__(self, width: int, height: int, background: Paint) -> None:
        self.scale = float(min(width, height))
        self.pixel = 1.0 / self.scale
        self._xs = ((np.arange(width) + 0.5 - width / 2) / self.scale).astype(F32)[None, :]
        self._ys = ((np.arange(height) + 0.5 - (height - self.scale)) / self.scale).astype(F32)
        self._ys = self._ys[:, None]
        self.rgb = np.empty((height, width, 3), F32)
        # Broadcast, so a background that varies along one axis costs one row or column.
        self.rgb[:] = background(self._xs, self._ys) if callable(background) else background

    def _window(self, box: Box, margin: float) -> tuple[slice, slice] | None:
        x0, y0, x1, y1 = box
        cols = np.searchsorted(self._xs[0], [x0 - margin, x1 + margin])
        rows = np.searchsorted(self._ys[:, 0], [y0 - margin, y1 + margin])
        if cols[0] >= cols[1] or rows[0] >= rows[1]:
            return None
        return slice(rows[0], rows[1]), slice(cols[0], cols[1])

    def fill(
        self,
        shape: Shape,
        paint: Paint,
        opacity: float = 1.0,
        soften: float = 0.0,
        within: Shape | None = None,
    ) -> None:
        """Paint `shape` over what is there; `soften` widens the edge ramp beyond one pixel
        (in figure units); `within` clips the layer to another shape, anti-aliased too."""
        ramp = max(self.pixel, soften)
        window = self._window(shape.box, 2 * ramp)
        if window is None:
            return
        rows, cols = window
        x, y = self._xs[:, cols], self._ys[rows, :]
        distance = shape.sdf(x, y)
        if within is not None:
            distance = np.maximum(distance, within.sdf(x, y))
        alpha = np.clip(F32(0.5) - distance / F32(ramp), 0, 1) * F32(opacity)
        self._blend(rows, cols, x, y, alpha, paint)

    def glow(self, c: Point, r: float, colour: Colour, strength: float) -> None:
        """A soft light falling off from `c` to nothing at distance `r`."""
        window = self._window((c[0] - r, c[1] - r, c[0] + r, c[1] + r), 0)
        if window is None:
            return
        rows, cols = window
        x, y = self._xs[:, cols], self._ys[rows, :]
        fall = np.clip(F32(1) - _length(x - F32(c[0]), y - F32(c[1])) / F32(r), 0, 1)
        self._blend(rows, cols, x, y, fall * fall * F32(strength), colour)

    def _blend(self, rows: slice, cols: slice, x, y, alpha: np.ndarray, paint: Paint) -> None:
        alpha = np.broadcast_to(alpha, (y.shape[0], x.shape[1]))[..., None]
        target = self.rgb[rows, cols]
        colour = paint(x, y) if callable(paint) else np.asarray(paint, F32)
        target += (colour - target) * alpha

    def to_uint8(self) -> np.ndarray:
        return (np.clip(self.rgb, 0, 1) * F32(255) + F32(0.5)).astype(np.uint8)


def vertical_gradient(top: Colour, bottom: Colour, y_top: float, y_bottom: float) -> Paint:
    """A colour that runs from `top` at `y_top` to `bottom` at `y_bottom` (flat beyond)."""
    t0, t1 = np.asarray(top, F32), np.asarray(bottom, F32)
    span = F32(y_bottom - y_top)

    def paint(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        t = np.clip((y - F32(y_top)) / span, 0, 1)[..., None]
        return t0 + (t1 - t0) * t

    return paint


def vee(tip: Point, slope: float) -> Shape:
    """The region above a V whose point is `tip` and whose arms rise `slope` per unit of x."""
    tx, ty, k = F32(tip[0]), F32(tip[1]), F32(slope)
    norm = F32(1.0 / np.sqrt(1.0 + slope * slope))
    return Shape(
        lambda x, y: (y - ty + k * np.abs(x - tx)) * norm, (-np.inf, -np.inf, np.inf, tip[1])
    )


def bands(distance: Field, period: float, duty: float) -> Field:
    """Stripes along the level sets of `distance`: `duty` of each `period` is inside."""
    p, half = F32(period), F32(period * duty / 2)

    def sdf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        u = distance(x, y) / p
        return np.abs(u - np.floor(u) - F32(0.5)) * p - half

    return sdf


def unit_vector(t: float) -> Point:
    """The direction at angle 2*atan(t) from +x, from the rational form (no trigonometry)."""
    return ((1 - t * t) / (1 + t * t), 2 * t / (1 + t * t))
