"""The learned filter's native 2x pass: the scalar variant is the numpy reference exactly, each
SIMD variant agrees with it, and the binding refuses bad arguments with ValueError."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import engine
from engine import _native
from engine.detail import shipped
from engine.detail.reference import BUCKETS, PHASES, TAPS, buckets, upscale2x

ALL_ISAS = ("scalar", "avx2", "avx512")


def require(isa: str) -> None:
    if isa not in engine.kernel_info()["isas"]:
        pytest.skip(f"this CPU cannot run the {isa} variant")


def textured(height: int, width: int, seed: int = 0) -> np.ndarray:
    """Edges at every angle, faint and strong, and noise: every bucket gets pixels."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    rng = np.random.default_rng(seed)
    rings = np.sin(np.hypot(x - width / 3, y - height / 2) / 2.5)
    amplitude = np.select([y < height / 3, y < 2 * height / 3], [1.2, 10.0], 100.0)
    img = 128 + amplitude * rings + (amplitude > 50) * rng.normal(0, 6, rings.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def detail2x(plane: np.ndarray, isa: str, threads: int = 1) -> np.ndarray:
    model = shipped()
    out, ran = _native.detail2x(plane, model.weights, model.thresholds, threads, None, isa)
    assert ran == isa
    return out


SHAPES = [(1, 1), (1, 7), (5, 1), (3, 5), (16, 16), (17, 33), (40, 95), (64, 129)]


@pytest.mark.parametrize("shape", SHAPES)
def test_scalar_is_the_reference_exactly(shape):
    plane = textured(*shape)
    model = shipped()
    np.testing.assert_array_equal(
        detail2x(plane, "scalar"), upscale2x(plane, model.weights, model.thresholds)
    )


def test_every_bucket_is_exercised():
    used = np.unique(buckets(textured(64, 129), shipped().thresholds))
    assert len(used) == BUCKETS


@pytest.mark.parametrize("isa", ALL_ISAS[1:])
@pytest.mark.parametrize("shape", SHAPES)
def test_variant_agrees_with_scalar(isa, shape):
    require(isa)
    plane = textured(*shape, seed=shape[1])
    got, want = detail2x(plane, isa).astype(int), detail2x(plane, "scalar").astype(int)
    difference = np.abs(got - want)
    assert difference.max() <= 1  # fused multiply-adds round differently, buckets are exact
    assert (difference == 0).mean() > 0.999


@pytest.mark.parametrize("isa", ALL_ISAS)
def test_strided_source_and_threads_give_the_same_output(isa):
    require(isa)
    plane = textured(90, 70)
    want = detail2x(np.ascontiguousarray(plane[::-1, ::-1]), isa)
    np.testing.assert_array_equal(detail2x(plane[::-1, ::-1], isa, threads=3), want)


def longest_pause_during_a_slow_call(plane: np.ndarray) -> tuple[float, float]:
    """(longest pause between this thread's steps, the call's length) while another thread
    runs the scalar variant (the slowest: a tenth of a second or more here)."""
    call: dict[str, float] = {}

    def slow_call() -> None:
        start = time.perf_counter()
        detail2x(plane, "scalar")
        call["seconds"] = time.perf_counter() - start

    worker = threading.Thread(target=slow_call)
    last, longest = time.perf_counter(), 0.0
    worker.start()
    while worker.is_alive():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    return longest, call["seconds"]


def test_calls_release_the_gil():
    # Held, the GIL would stop this thread for the whole call, every time; released, only a
    # busy machine's scheduler pauses it, so one call in three is enough to see it run.
    plane = textured(540, 960)
    pauses = [longest_pause_during_a_slow_call(plane) for _ in range(3)]
    assert any(longest < 0.5 * seconds for longest, seconds in pauses), pauses


BAD = [
    ({"plane": np.zeros((4, 4, 3), np.uint8)}, "2-D"),
    ({"plane": np.zeros((4, 4), np.int16)}, "uint8"),
    ({"plane": np.zeros((4, 16385), np.uint8)}, "plane width"),
    ({"weights": np.zeros((BUCKETS, PHASES, TAPS - 1), np.float32)}, "weights must have shape"),
    ({"weights": np.full((BUCKETS, PHASES, TAPS), np.nan, np.float32)}, "finite"),
    ({"thresholds": np.zeros(3, np.float32)}, "thresholds"),
    ({"threads": 0}, "threads"),
    ({"out": np.zeros((8, 9), np.uint8)}, "out must be"),
    ({"isa": "sse9"}, "isa"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_arguments_raise_value_error(change, message):
    model = shipped()
    args = {"plane": np.zeros((4, 4), np.uint8), "weights": model.weights}
    args |= {"thresholds": model.thresholds, "threads": 1, "out": None, "isa": None}
    args.update(change)
    with pytest.raises(ValueError, match=message):
        _native.detail2x(**args)
