"""engine.fit_box: worked examples of the API documentation, properties, and every size to 4096."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import engine
from engine import _native
from engine.fit import MAX_SCALE, box_size

BOXES = {"1080p": (1920, 1080), "2k": (2560, 1440), "4k": (3840, 2160)}


@pytest.mark.parametrize(
    ("size", "resolution", "expected"),
    [
        ((640, 360), "1080p", (1920, 1080)),
        ((720, 480), "1080p", (1620, 1080)),
        ((320, 240), "4k", (1280, 960)),
        ((1080, 1920), "2k", (1440, 2560)),
        ((639, 360), "1080p", (1916, 1080)),  # 1917 is a tie between 1916 and 1918
    ],
)
def test_spec_examples(size, resolution, expected):
    assert engine.fit_box(*size, resolution) == expected


@pytest.mark.parametrize(
    ("size", "resolution"),
    [((1920, 1080), "1080p"), ((1080, 1920), "1080p"), ((3840, 2160), "4k"), ((4000, 100), "2k")],
)
def test_refuses_when_not_larger(size, resolution):
    with pytest.raises(engine.TargetNotLarger, match="not smaller"):
        engine.fit_box(*size, resolution)


@pytest.mark.parametrize(
    "bad", [(0, 10, "1080p"), (10, -1, "4k"), (10, 10, "8k"), (True, 10, "2k")]
)
def test_rejects_bad_arguments(bad):
    with pytest.raises(ValueError):
        engine.fit_box(*bad)


def _box(width: int, height: int, resolution: str) -> tuple[int, int]:
    long_side, short_side = BOXES[resolution]
    return (long_side, short_side) if width >= height else (short_side, long_side)


@given(st.integers(1, 4096), st.integers(1, 4096), st.sampled_from(sorted(BOXES)))
def test_properties(width, height, resolution):
    box_w, box_h = _box(width, height, resolution)
    scale = min(Fraction(box_w, width), Fraction(box_h, height), Fraction(4))
    if scale <= 1:
        with pytest.raises(engine.TargetNotLarger):
            engine.fit_box(width, height, resolution)
        return
    out_w, out_h = engine.fit_box(width, height, resolution)
    assert out_w % 2 == 0 and out_h % 2 == 0
    assert 0 < out_w <= min(box_w, 4 * width) and 0 < out_h <= min(box_h, 4 * height)
    assert out_w == box_w or out_h == box_h or (out_w, out_h) == (4 * width, 4 * height)
    # The free side is the even number nearest to side * scale (|error| <= 1).
    assert abs(out_w - width * scale) <= 1 and abs(out_h - height * scale) <= 1


def _reference_table(resolution: str, max_side: int) -> tuple[np.ndarray, np.ndarray]:
    """An independent integer-exact numpy implementation, over every size at once."""
    h, w = np.meshgrid(
        np.arange(1, max_side + 1, dtype=np.int64),
        np.arange(1, max_side + 1, dtype=np.int64),
        indexing="ij",
    )
    long_side, short_side = BOXES[resolution]
    box_w = np.where(w >= h, long_side, short_side)
    box_h = np.where(w >= h, short_side, long_side)
    larger = (box_w > w) & (box_h > h)
    # scale = num / den, the smallest of box_w/w, box_h/h and 4/1.
    num, den = box_w, w
    taller = box_h * w < num * h
    num, den = np.where(taller, box_h, num), np.where(taller, h, den)
    capped = num >= 4 * den
    num, den = np.where(capped, 4, num), np.where(capped, 1, den)

    def nearest_even(side):
        doubled = 2 * side * num  # side * scale = doubled / (2 * den)
        low = (doubled // (4 * den)) * 2  # largest even <= side * scale
        # distance from low, in units of 1 / (2 * den): round up only past the midpoint
        return np.where(doubled - low * 2 * den > 2 * den, low + 2, low)

    out_w = np.where(larger, nearest_even(w), 0)
    out_h = np.where(larger, nearest_even(h), 0)
    return out_w, out_h


@pytest.mark.slow
@pytest.mark.parametrize("resolution", sorted(BOXES))
def test_every_size_up_to_4096(resolution):
    native_w, native_h = _native.fit_box_table(4096, 4096, resolution)
    ref_w, ref_h = _reference_table(resolution, 4096)
    assert np.array_equal(native_w, ref_w)
    assert np.array_equal(native_h, ref_h)


@pytest.mark.parametrize(
    ("size", "resolution", "box"),
    [
        ((640, 360), "4k", (3840, 2160)),
        ((360, 640), "2k", (1440, 2560)),
        ((8, 8), "1080p", (1920, 1080)),
    ],
)
def test_box_size_follows_the_orientation(size, resolution, box):
    assert box_size(*size, resolution) == box


@given(st.integers(1, 4096), st.integers(1, 4096), st.sampled_from(sorted(BOXES)))
def test_fitted_size_reaches_the_box_unless_the_scale_limit_stopped_it(width, height, resolution):
    try:
        out_w, out_h = engine.fit_box(width, height, resolution)
    except engine.TargetNotLarger:
        return
    box_w, box_h = box_size(width, height, resolution)
    if out_w < box_w and out_h < box_h:
        assert (out_w, out_h) == (MAX_SCALE * width, MAX_SCALE * height)
    else:
        assert out_w == box_w or out_h == box_h
