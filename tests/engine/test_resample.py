"""engine.resample: every kernel against the float64 reference, plus the API contract."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine import _reference
from engine.resample import kernel_info

FILTERS = ("lanczos3", "bicubic", "bilinear")
FAST_KERNELS = ("native", "numba")


def scene(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A natural-looking plane: gradients, a sharp-edged box, rings and some noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    img = 40 + 120 * x / max(width, 1) + 60 * np.sin(x / 7.0) * np.cos(y / 5.0)
    img[height // 4 : height // 2, width // 3 : 2 * width // 3] = 250
    img += rng.normal(0, 6, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def assert_close_to_reference(result, plane, out_w, out_h, filt, offset, min_exact=0.99):
    expected = _reference.resample(plane, out_w, out_h, filt, offset)
    diff = np.abs(result.astype(np.int16) - expected.astype(np.int16))
    assert result.shape == (out_h, out_w)
    assert diff.max() <= 1
    assert (diff == 0).mean() >= min_exact


@pytest.mark.parametrize("kernel", FAST_KERNELS)
@pytest.mark.parametrize("filt", FILTERS)
@pytest.mark.parametrize(
    ("in_shape", "out_shape", "offset"),
    [
        ((45, 80), (90, 160), (0.0, 0.0)),  # 2x, the pipeline's common case
        ((36, 64), (108, 192), (0.25, -0.125)),  # 3x with chroma-like shifts
        ((27, 48), (108, 192), (0.0, 0.0)),  # 4x
        ((70, 90), (31, 44), (0.5, 0.3)),  # downscale
        ((40, 1), (97, 1), (0.0, 0.2)),  # 1-pixel-wide planes
        ((1, 33), (1, 70), (0.1, 0.0)),
        ((1, 1), (3, 5), (0.0, 0.0)),
    ],
)
def test_kernels_match_reference(kernel, filt, in_shape, out_shape, offset):
    plane = scene(*in_shape)
    out_h, out_w = out_shape
    result = engine.resample(plane, out_w, out_h, filter=filt, kernel=kernel, offset=offset)
    assert_close_to_reference(result, plane, out_w, out_h, filt, offset)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    in_w=st.integers(1, 40),
    in_h=st.integers(1, 40),
    out_w=st.integers(1, 90),
    out_h=st.integers(1, 90),
    filt=st.sampled_from(FILTERS),
    dx=st.floats(-3, 3),
    dy=st.floats(-3, 3),
    step=st.sampled_from([1, 2, 3]),
)
def test_native_matches_reference_on_random_shapes(
    data, in_w, in_h, out_w, out_h, filt, dx, dy, step
):
    seed = data.draw(st.integers(0, 2**16))
    base = np.random.default_rng(seed).integers(0, 256, (in_h * 2, in_w * step), dtype=np.uint8)
    plane = base[::2, ::step]  # strided rows and pixels, read in place
    isa = data.draw(st.sampled_from(kernel_info()["isas"]))
    result = engine.resample(plane, out_w, out_h, filter=filt, offset=(dx, dy), isa=isa)
    expected = _reference.resample(plane, out_w, out_h, filt, (dx, dy))
    assert np.abs(result.astype(np.int16) - expected).max() <= 1


@settings(max_examples=25, deadline=None)
@given(
    in_w=st.integers(1, 30),
    in_h=st.integers(1, 30),
    out_w=st.integers(1, 70),
    out_h=st.integers(1, 70),
    filt=st.sampled_from(FILTERS),
    dx=st.floats(-2, 2),
    seed=st.integers(0, 2**16),
)
def test_numba_equals_native_scalar_exactly(in_w, in_h, out_w, out_h, filt, dx, seed):
    plane = np.random.default_rng(seed).integers(0, 256, (in_h, in_w), dtype=np.uint8)
    kwargs = {"filter": filt, "offset": (dx, -dx)}
    numba_out = engine.resample(plane, out_w, out_h, kernel="numba", **kwargs)
    scalar_out = engine.resample(plane, out_w, out_h, kernel="native", isa="scalar", **kwargs)
    np.testing.assert_array_equal(numba_out, scalar_out)


def test_large_frame_is_exact_enough():
    plane = scene(270, 480, seed=3)
    result = engine.resample(plane, 1920, 1080)
    assert_close_to_reference(result, plane, 1920, 1080, "lanczos3", (0.0, 0.0), 0.999)


@pytest.mark.parametrize("isa", kernel_info()["isas"])
def test_thread_counts_give_identical_output(isa):
    plane = scene(150, 260, seed=1)
    runs = [engine.resample(plane, 610, 333, threads=t, isa=isa) for t in (1, 2, 3, 4)]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0], other)


def test_writes_into_padded_strided_out_and_leaves_padding_alone():
    plane = scene(40, 50)
    storage = np.full((83, 128), 7, dtype=np.uint8)  # rows of 128 bytes, 100 used
    out = storage[1:81, 3:103]
    returned = engine.resample(plane, 100, 80, out=out)
    assert returned is out
    np.testing.assert_array_equal(out, engine.resample(plane, 100, 80))
    assert (storage[0] == 7).all() and (storage[81:] == 7).all()
    assert (storage[:, :3] == 7).all() and (storage[:, 103:] == 7).all()


def test_writes_straight_into_a_pyav_plane():
    av = pytest.importorskip("av")
    plane = scene(36, 64)
    frame = av.VideoFrame(128, 72, "yuv420p")
    target = frame.planes[0]
    raw = np.frombuffer(target, dtype=np.uint8)
    view = np.lib.stride_tricks.as_strided(raw, (72, 128), (target.line_size, 1), writeable=True)
    engine.resample(plane, 128, 72, out=view)
    np.testing.assert_array_equal(frame.to_ndarray()[:72], engine.resample(plane, 128, 72))


@pytest.mark.parametrize("kernel", ("native", "numba", "numpy"))
def test_out_with_pixel_stride_is_filled(kernel):
    plane = scene(20, 30)
    storage = np.zeros((40, 120), dtype=np.uint8)
    out = storage[:, ::2]
    engine.resample(plane, 60, 40, kernel=kernel, out=out)
    expected = engine.resample(plane, 60, 40, kernel=kernel)
    np.testing.assert_array_equal(out, expected)
    assert (storage[:, 1::2] == 0).all()


def test_idle_pool_sleeps():
    engine.resample(scene(400, 400), 1600, 1600, threads=4)
    time.sleep(0.05)  # workers poll for 100 us after their last task, then sleep
    start = time.process_time()  # every thread of the process
    time.sleep(0.5)
    assert time.process_time() - start < 0.1


def test_concurrent_calls_from_python_threads_agree():
    planes = [scene(120, 200, seed=s) for s in range(4)]
    expected = [engine.resample(p, 500, 300, threads=2) for p in planes]
    results: dict[int, list[np.ndarray]] = {}

    def worker(index: int) -> None:
        results[index] = [engine.resample(p, 500, 300, threads=2) for p in planes * 3]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for index in range(3):
        for got, want in zip(results[index], expected * 3, strict=True):
            np.testing.assert_array_equal(got, want)


BAD_CALLS = [
    ({"plane": np.zeros((4, 4, 3), np.uint8)}, "2-D"),
    ({"plane": np.zeros((4, 4), np.uint16)}, "uint8"),
    ({"plane": np.zeros((0, 4), np.uint8)}, "empty"),
    ({"plane": [[1, 2], [3, 4]]}, "2-D"),
    ({"out_w": 0}, "out_w"),
    ({"out_h": 16385}, "out_h"),
    ({"out_w": 2.5}, "out_w"),
    ({"filter": "nearest"}, "filter"),
    ({"offset": (1.0,)}, "offset"),
    ({"offset": (float("nan"), 0.0)}, "finite"),
    ({"out": np.zeros((8, 9), np.uint8)}, "out"),
    ({"out": np.zeros((8, 8), np.float32)}, "out"),
]


@pytest.mark.parametrize("kernel", ("native", "numba", "numpy"))
@pytest.mark.parametrize(("change", "message"), BAD_CALLS)
def test_bad_input_raises_value_error(kernel, change, message):
    args = {"plane": np.zeros((4, 4), np.uint8), "out_w": 8, "out_h": 8}
    args.update(change)
    plane, out_w, out_h = args.pop("plane"), args.pop("out_w"), args.pop("out_h")
    with pytest.raises(ValueError, match=message):
        engine.resample(plane, out_w, out_h, kernel=kernel, **args)


def test_unknown_kernel_raises_value_error():
    with pytest.raises(ValueError, match="kernel"):
        engine.resample(np.zeros((4, 4), np.uint8), 8, 8, kernel="cuda")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threads": 0}, "threads"),
        ({"threads": 1000}, "threads"),
        ({"threads": "2"}, "threads"),
        ({"isa": "neon"}, "unknown"),
    ],
)
def test_bad_native_options_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        engine.resample(np.zeros((4, 4), np.uint8), 8, 8, **kwargs)


def test_out_overlapping_plane_is_refused():
    storage = np.zeros((16, 16), np.uint8)
    with pytest.raises(ValueError, match="overlap"):
        engine.resample(storage[:4, :4], 8, 8, out=storage[2:10, 2:10])


def test_read_only_out_is_refused():
    out = np.zeros((8, 8), np.uint8)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        engine.resample(np.zeros((4, 4), np.uint8), 8, 8, out=out)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[::-1],  # negative row stride
        lambda a: a[:, ::-1],  # negative pixel stride
        lambda a: np.broadcast_to(a[:1], a.shape),  # zero row stride
        lambda a: a.T,  # column-major
    ],
    ids=["rows-reversed", "pixels-reversed", "broadcast", "transposed"],
)
@pytest.mark.parametrize("kernel", FAST_KERNELS)
def test_unusual_strides_are_read_in_place(view, kernel):
    plane = view(scene(30, 30, seed=5))
    result = engine.resample(plane, 70, 50, kernel=kernel)
    np.testing.assert_array_equal(
        result, engine.resample(np.ascontiguousarray(plane), 70, 50, kernel=kernel)
    )


def test_writes_into_a_reversed_out_view():
    plane = scene(20, 20)
    storage = np.zeros((40, 64), np.uint8)
    engine.resample(plane, 64, 40, out=storage[::-1])
    np.testing.assert_array_equal(storage[::-1], engine.resample(plane, 64, 40))


@pytest.mark.parametrize("kernel", FAST_KERNELS)
def test_exact_ties_round_half_up(kernel):
    # At 1.5x, bilinear weights are 1/2 and 1/6, 5/6: many outputs are exactly k + 1/2
    # in rational arithmetic although neither float32 nor float64 sums land on it.
    plane = np.random.default_rng(9).integers(0, 256, (40, 60), dtype=np.uint8)
    result = engine.resample(plane, 90, 60, filter="bilinear", kernel=kernel)
    np.testing.assert_array_equal(result, _reference.resample(plane, 90, 60, "bilinear", (0, 0)))
