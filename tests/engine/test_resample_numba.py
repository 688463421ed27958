"""The Numba kernel's compilation set-up (its results are tested in test_resample.py)."""

from __future__ import annotations

import numba
import numpy as np

from engine import _native, _numba


def test_compiles_without_a_writable_cache(monkeypatch):
    real_njit = numba.njit

    def njit_without_cache(*args, **kwargs):
        if kwargs.get("cache"):
            raise RuntimeError("cannot cache function: no locator available")
        return real_njit(*args, **kwargs)

    monkeypatch.setattr(numba, "njit", njit_without_cache)

    def add_one(x):
        return x + 1

    assert _numba._jit(add_one, parallel=False)(41) == 42


def test_periodic_phases_cover_the_interior_of_integer_factors():
    first, weights = _native.weight_table(100, 200, "lanczos3", 0.0)
    period, step, start, count = _numba._phases(first, weights, 100)
    assert (period, step) == (2, 1)
    assert start < 10 and start + period * count > 190


def test_no_phases_when_the_period_is_the_whole_axis():
    first, weights = _native.weight_table(7, 13, "bicubic", 0.0)
    assert _numba._phases(first, weights, 7)[3] == 0


def test_intermediate_buffer_is_reused_per_thread():
    a = _numba._intermediate(10, 20)
    b = _numba._intermediate(5, 8)
    assert a.dtype == np.float32 and b.shape == (5, 8)
    assert np.shares_memory(a, b)
