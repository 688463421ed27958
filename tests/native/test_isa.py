"""The native SIMD variants: each one can be forced, is reported as the one that ran,
and agrees with the portable scalar variant (the specification)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import engine
from engine import _reference
from engine.resample import resample_with_isa

ALL_ISAS = ("scalar", "avx2", "avx512")
FILTERS = ("lanczos3", "bicubic", "bilinear")


def available() -> list[str]:
    return engine.kernel_info()["isas"]


def require(isa: str) -> None:
    if isa not in available():
        pytest.skip(f"this CPU cannot run the {isa} variant")


def natural(height: int, width: int) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    img = 128 + 90 * np.sin(x / 9.0 + (y / 13.0) ** 2) + 0.3 * ((x + y) % 17)
    img[: height // 3, : width // 3] = 20
    return np.clip(img, 0, 255).astype(np.uint8)


def test_kernel_info_describes_the_cpu():
    info = engine.kernel_info()
    assert info["kernels"] == ["native", "numba", "numpy"]
    assert info["isas"][0] == "scalar"
    assert set(info["isas"]) <= set(ALL_ISAS)
    assert info["isa"] == info["isas"][-1]
    assert info["threads"] >= 1


@pytest.mark.parametrize("isa", ALL_ISAS)
def test_isa_argument_selects_the_variant(isa):
    require(isa)
    _, ran = resample_with_isa(natural(10, 10), 20, 20, isa=isa)
    assert ran == isa


@pytest.mark.parametrize("isa", ALL_ISAS)
def test_environment_variable_selects_the_variant(isa, monkeypatch):
    require(isa)
    monkeypatch.setenv("AVATAR_ISA", isa)
    _, ran = resample_with_isa(natural(10, 10), 20, 20)
    assert ran == isa


def test_default_is_the_widest_variant(monkeypatch):
    monkeypatch.delenv("AVATAR_ISA", raising=False)
    _, ran = resample_with_isa(natural(10, 10), 20, 20)
    assert ran == engine.kernel_info()["isa"]


def test_concurrent_calls_each_report_their_own_variant():
    isas = available() * 8
    plane = natural(64, 64)
    with ThreadPoolExecutor(4) as pool:
        ran = list(pool.map(lambda isa: resample_with_isa(plane, 300, 300, isa=isa)[1], isas))
    assert ran == isas


@pytest.mark.parametrize("isa", [isa for isa in ALL_ISAS if isa != "scalar"])
def test_unsupported_variant_is_refused(isa, monkeypatch):
    if isa in available():
        pytest.skip(f"this CPU runs {isa}")
    with pytest.raises(ValueError, match="not supported"):
        engine.resample(natural(4, 4), 8, 8, isa=isa)
    monkeypatch.setenv("AVATAR_ISA", isa)
    with pytest.raises(ValueError, match="AVATAR_ISA"):
        engine.resample(natural(4, 4), 8, 8)


@pytest.mark.parametrize("isa", ALL_ISAS)
@pytest.mark.parametrize("filt", FILTERS)
@pytest.mark.parametrize(
    ("in_shape", "out_shape", "offset"),
    [
        ((135, 240), (270, 480), (0.25, 0.0)),  # 2x: periodic fast path
        ((30, 52), (120, 208), (0.1, -0.4)),  # 4x: periodic fast path
        ((41, 57), (123, 171), (-0.2, 0.3)),  # 3x: periodic fast path
        ((90, 160), (135, 240), (0.0, 0.0)),  # 1.5x: permute path
        ((97, 203), (61, 83), (0.0, 0.4)),  # downscale: gather path
        ((50, 77), (133, 333), (-0.3, 0.7)),  # odd sizes, partial vectors
    ],
)
def test_variant_agrees_with_scalar_and_reference(isa, filt, in_shape, out_shape, offset):
    require(isa)
    plane = natural(*in_shape)
    out_h, out_w = out_shape
    kwargs = {"filter": filt, "offset": offset}
    result = engine.resample(plane, out_w, out_h, isa=isa, **kwargs)
    scalar = engine.resample(plane, out_w, out_h, isa="scalar", **kwargs)
    reference = _reference.resample(plane, out_w, out_h, filt, offset)
    for other in (scalar, reference):
        diff = np.abs(result.astype(np.int16) - other)
        assert diff.max() <= 1
        assert (diff == 0).mean() >= 0.999


@pytest.mark.parametrize("isa", ALL_ISAS)
def test_variant_handles_every_row_alignment(isa):
    require(isa)
    plane = natural(30, 41)
    expected = engine.resample(plane, 300, 20, isa="scalar")
    for shift in range(0, 70, 7):
        storage = np.zeros((20, 400), np.uint8)
        out = storage[:, shift : shift + 300]
        engine.resample(plane, 300, 20, isa=isa, out=out)
        assert np.abs(out.astype(np.int16) - expected).max() <= 1
        assert not storage[:, :shift].any() and not storage[:, shift + 300 :].any()


@pytest.mark.parametrize("isa", [isa for isa in ALL_ISAS if isa != "scalar"])
def test_forced_variant_runs_its_own_code(isa):
    # The SIMD passes fuse multiply-adds, so on enough noise a few pixels land on the
    # other side of a rounding boundary than in the scalar pass: proof the other code ran.
    require(isa)
    rng = np.random.default_rng(0)
    planes = [rng.integers(0, 256, (200, 300), dtype=np.uint8) for _ in range(3)]
    differing = sum(
        int(
            (
                engine.resample(p, 700, 500, isa=isa) != engine.resample(p, 700, 500, isa="scalar")
            ).sum()
        )
        for p in planes
    )
    assert 0 < differing < 100
