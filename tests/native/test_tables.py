"""The native weight tables (the coefficients every native pass and the Numba kernel apply)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import _native, _reference


def dense(first: np.ndarray, weights: np.ndarray, in_size: int) -> np.ndarray:
    matrix = np.zeros((len(first), in_size))
    for x, start in enumerate(first):
        for k, w in enumerate(weights[x]):
            matrix[x, min(start + k, in_size - 1)] += w
    return matrix


@settings(max_examples=80, deadline=None)
@given(
    in_size=st.integers(1, 200),
    out_size=st.integers(1, 200),
    filt=st.sampled_from(["lanczos3", "bicubic", "bilinear"]),
    shift=st.floats(-5, 5),
)
def test_table_invariants_and_agreement_with_reference(in_size, out_size, filt, shift):
    first, weights = _native.weight_table(in_size, out_size, filt, shift)
    assert first.dtype == np.int32 and weights.dtype == np.float32
    assert ((first >= 0) & (first < in_size)).all()
    assert (np.diff(first) >= 0).all()
    for row in weights:  # summed in tap order in float32, as the passes do
        total = np.float32(0)
        for w in row:
            total = np.float32(total + w)
        assert total == np.float32(1)
    reference = _reference.weight_matrix(in_size, out_size, filt, shift)
    np.testing.assert_allclose(dense(first, weights, in_size), reference, atol=2e-6)


@pytest.mark.parametrize(("filt", "taps"), [("lanczos3", 6), ("bicubic", 4), ("bilinear", 2)])
def test_upscaling_uses_the_filter_support(filt, taps):
    _, weights = _native.weight_table(1080, 2160, filt, 0.0)
    assert weights.shape == (2160, taps)


def test_downscaling_widens_the_support():
    _, weights = _native.weight_table(400, 100, "bilinear", 0.0)
    assert weights.shape[1] >= 7


def test_bad_table_arguments_raise_value_error():
    with pytest.raises(ValueError, match="filter"):
        _native.weight_table(10, 20, "box", 0.0)
    with pytest.raises(ValueError):
        _native.weight_table(0, 20, "bilinear", 0.0)
