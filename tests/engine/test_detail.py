"""The learned `detail` filter through the engine: sizes, offsets, downscaled axes, the kernels
that lack it, the frame scaler's planes, the shipped model and a tiny training run."""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np
import pytest

import engine
from engine import _native, probe, upscale
from engine.detail import Model, load, save, shipped
from engine.detail.reference import BUCKETS, PHASES, TAPS
from engine.resample import resample_with_isa
from engine.train_detail import train
from engine.video.degrade import area_downscale, degrade
from engine.video.geometry import Orientation
from engine.video.planes import FrameScaler, plane_array, plane_targets
from service.cli import main


def picture(height: int, width: int, seed: int = 0) -> np.ndarray:
    """Sharp shapes at many angles over smooth shading: what the filter should sharpen."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    img = 60 + 0.3 * x + 0.2 * y
    for angle in np.linspace(0, np.pi, 7, endpoint=False):
        img += 40 * (np.sin((x * np.cos(angle) + y * np.sin(angle)) / 11.0 + seed) > 0.6)
    img[(x - width / 2) ** 2 + (y - height / 2) ** 2 < (min(height, width) / 5) ** 2] = 230
    return np.clip(img, 0, 255).astype(np.uint8)


def doubled(plane: np.ndarray) -> np.ndarray:
    model = shipped()
    return _native.detail2x(plane, model.weights, model.thresholds, None, None, None)[0]


def test_shipped_model_loads_and_records_how_it_was_made():
    model = shipped()
    assert model.weights.shape == (BUCKETS, PHASES, TAPS)
    assert model.thresholds[0] > 0 and 0 < model.thresholds[1] < 1
    assert model.about["command"].startswith("python -m engine.train_detail")
    assert "astronaut" not in model.about["images"]


def test_exact_double_is_the_learned_pass():
    plane = picture(30, 44)
    np.testing.assert_array_equal(engine.resample(plane, 88, 60, filter="detail"), doubled(plane))


@pytest.mark.parametrize(("size", "offset"), [((132, 90), (0.0, 0.0)), ((60, 31), (0.25, -0.5))])
def test_other_sizes_and_offsets_finish_with_lanczos(size, offset):
    plane = picture(30, 44)
    want = engine.resample(doubled(plane), *size, offset=(2 * offset[0], 2 * offset[1]))
    got = engine.resample(plane, *size, filter="detail", offset=offset)
    np.testing.assert_array_equal(got, want)


def test_offset_moves_the_result():
    plane = picture(30, 44)
    still = engine.resample(plane, 88, 60, filter="detail")
    moved = engine.resample(plane, 88, 60, filter="detail", offset=(0.5, 0.0))
    assert not np.array_equal(still, moved)
    np.testing.assert_array_equal(moved[:, 10:-10], still[:, 11:-9])  # half a source pixel


@pytest.mark.parametrize("size", [(40, 60), (20, 15)])
def test_a_downscaled_axis_uses_lanczos3(size):
    plane = picture(30, 44)
    got = engine.resample(plane, *size, filter="detail", offset=(0.1, 0.0))
    np.testing.assert_array_equal(got, engine.resample(plane, *size, offset=(0.1, 0.0)))


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_other_kernels_name_the_native_one(kernel):
    with pytest.raises(ValueError, match="only in the native kernel"):
        engine.resample(picture(8, 8), 16, 16, filter="detail", kernel=kernel)


@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512"])
def test_isa_override_reaches_the_learned_pass(isa, monkeypatch):
    if isa not in engine.kernel_info()["isas"]:
        pytest.skip(f"this CPU cannot run the {isa} variant")
    monkeypatch.setenv("AVATAR_ISA", isa)
    _, ran = resample_with_isa(picture(20, 20), 40, 40, filter="detail")
    assert ran == isa


def test_sharper_than_lanczos3_on_a_compressed_picture():
    target, source = degrade(picture(240, 320, seed=3), 2, 23)
    h, w = target.shape

    def psnr(plane: np.ndarray) -> float:
        error = np.mean((plane.astype(np.float64) - target) ** 2)
        return 10 * np.log10(255**2 / error)

    gain = psnr(engine.resample(source, w, h, filter="detail")) - psnr(
        engine.resample(source, w, h)
    )
    assert gain > 0  # bench.quality measures how much, on photos


def test_frame_scaler_sends_luma_through_detail_and_chroma_through_lanczos3():
    frame = av.VideoFrame.from_ndarray(np.zeros((48, 32), np.uint8), format="yuv420p")
    frame.pts, frame.time_base = 0, Fraction(1, 25)
    for plane, (h, w) in zip(frame.planes, [(32, 32), (16, 16), (16, 16)], strict=True):
        plane_array(plane)[...] = picture(h, w, seed=h)
    targets = plane_targets("4:2:0", "left", Orientation(), (32, 32), (80, 80))
    out = FrameScaler(targets, Orientation(), "yuv420p", "detail", "native").scale(frame)
    for index, (source, plane, target) in enumerate(
        zip(frame.planes, out.planes, targets, strict=True)
    ):
        want = engine.resample(
            plane_array(source),
            target.width,
            target.height,
            filter="detail" if index == 0 else "lanczos3",
            offset=target.offset,
        )
        np.testing.assert_array_equal(plane_array(plane), want)


def test_upscale_with_detail(clip, tmp_path):
    result = upscale(
        clip("four_x_cap"), tmp_path / "out.mp4", "4k", filter="detail", preset="ultrafast"
    )
    assert (result.width, result.height) == (384, 256)


def test_cli_takes_filter_detail(clip, tmp_path, capsys):
    dst = tmp_path / "out.mp4"
    argv = ["upscale", str(clip("four_x_cap")), str(dst), "--resolution", "4k",
            "--filter", "detail", "--preset", "ultrafast", "--json"]  # fmt: skip
    assert main(argv) == 0
    assert probe(dst).width == 384


def test_tiny_training_run_is_reproducible_and_usable(tmp_path):
    images = [picture(96, 128, seed=s) for s in range(2)]
    first, second = train(images, seed=5, per_image=1), train(images, seed=5, per_image=1)
    np.testing.assert_array_equal(first.weights, second.weights)
    np.testing.assert_array_equal(first.thresholds, second.thresholds)
    save(first, tmp_path / "weights.npz")
    model = load(tmp_path / "weights.npz")
    np.testing.assert_array_equal(model.weights, first.weights)
    out, _ = _native.detail2x(images[0], model.weights, model.thresholds, 1, None, None)
    assert out.shape == (192, 256)


def test_model_refuses_bad_arrays():
    with pytest.raises(ValueError, match="weights"):
        Model(np.zeros((BUCKETS, PHASES, TAPS - 1), np.float32), np.zeros(2, np.float32), {})
    with pytest.raises(ValueError, match="finite"):
        Model(np.full((BUCKETS, PHASES, TAPS), np.inf, np.float32), np.zeros(2, np.float32), {})


def test_area_downscale_means_whole_blocks():
    plane = np.arange(30, dtype=np.uint8).reshape(5, 6)
    assert area_downscale(plane, 2).tolist() == [[4, 6, 8], [16, 18, 20]]
