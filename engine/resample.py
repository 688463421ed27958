"""`engine.resample`: one entry point over the native, Numba and float64 reference kernels.

Where arguments are checked: every API-level rule (names, types, sizes, offsets, `out`, the
ISA a caller asks for) is checked here, once, for all three kernels. The binding
(native/bindings.cpp) checks again only what guards memory at its boundary (dimensions,
dtype, strides, sizes, thread count, finite offsets, a variant the CPU can run), so the
kernels behind it can assume valid input.
"""

from __future__ import annotations

import functools
import os
from typing import Literal, get_args

import numpy as np

from engine import _native, detail

Filter = Literal["lanczos3", "bicubic", "bilinear", "detail"]
Kernel = Literal["native", "numba", "numpy"]
FILTERS: tuple[Filter, ...] = get_args(Filter)
KERNELS: tuple[Kernel, ...] = get_args(Kernel)
MAX_OUTPUT_SIDE: int = _native.MAX_OUTPUT_SIDE  # widest or tallest output of any kernel
ISAS: tuple[str, ...] = _native.ISAS  # every native variant, narrowest first


def check_names(filter: str, kernel: str) -> None:
    """Refuse an unknown filter or kernel name (the pipeline calls this before it starts)."""
    if filter not in FILTERS:
        raise ValueError(f"unknown filter {filter!r}; expected one of {', '.join(FILTERS)}")
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; expected one of {', '.join(KERNELS)}")
    if filter == "detail" and kernel != "native":
        raise ValueError(
            f"the detail filter exists only in the native kernel (kernel='native'), not {kernel!r}"
        )


def _check_sizes(plane: np.ndarray, out_w: int, out_h: int) -> None:
    if not isinstance(plane, np.ndarray) or plane.ndim != 2 or plane.dtype != np.uint8:
        raise ValueError("plane must be a 2-D numpy array of dtype uint8")
    if plane.shape[0] < 1 or plane.shape[1] < 1:
        raise ValueError(f"plane must not be empty (shape {plane.shape})")
    for name, side in (("out_w", out_w), ("out_h", out_h)):
        if isinstance(side, bool) or not isinstance(side, (int, np.integer)):
            raise ValueError(f"{name} must be an integer")
        if not 1 <= side <= MAX_OUTPUT_SIDE:
            raise ValueError(f"{name}={side} is outside 1..{MAX_OUTPUT_SIDE}")


def _check_offset(offset: tuple[float, float]) -> tuple[float, float]:
    try:
        dx, dy = (float(v) for v in offset)
    except (TypeError, ValueError):
        raise ValueError("offset must be a pair of numbers (dx, dy)") from None
    if not (np.isfinite(dx) and np.isfinite(dy)):
        raise ValueError("offset must be finite")
    return dx, dy


def _check_out(out: np.ndarray | None, out_w: int, out_h: int) -> None:
    if out is None:
        return
    if not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.shape != (out_h, out_w):
        raise ValueError(f"out must be a uint8 array of shape ({out_h}, {out_w})")


def _check_native(plane: np.ndarray, threads: int | None, out: np.ndarray | None) -> None:
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)):
        raise ValueError("threads must be an integer or None")
    # The native passes interleave reading the plane and writing `out` (the others read
    # the whole plane first).
    if out is not None and np.may_share_memory(plane, out):
        raise ValueError("out must not overlap plane")


def _check(
    plane: np.ndarray,
    out_w: int,
    out_h: int,
    filter: str,
    kernel: str,
    offset: tuple[float, float],
    threads: int | None,
    out: np.ndarray | None,
) -> tuple[float, float]:
    """Every API-level rule of `resample`; returns the offset as floats."""
    _check_sizes(plane, out_w, out_h)
    check_names(filter, kernel)
    dx, dy = _check_offset(offset)
    _check_out(out, out_w, out_h)
    if kernel == "native":
        _check_native(plane, threads, out)
    return dx, dy


@functools.cache
def _available_isas() -> tuple[str, ...]:
    return tuple(_native.kernel_info()["isas"])


def _requested_isa(isa: str | None) -> str | None:
    """The native variant to force: `isa`, else the AVATAR_ISA environment variable, else
    None (the binding then runs the widest one this CPU has)."""
    source = "isa"
    if isa is None:
        isa, source = os.environ.get("AVATAR_ISA") or None, "AVATAR_ISA"
        if isa is None:
            return None
    if isa not in ISAS:
        raise ValueError(f"{source}={isa!r} is unknown; expected one of {', '.join(ISAS)}")
    if isa not in _available_isas():
        raise ValueError(
            f"{source}={isa!r} is not supported by this CPU; "
            f"available: {', '.join(_available_isas())}"
        )
    return isa


def _resample_native(
    plane: np.ndarray,
    out_w: int,
    out_h: int,
    filter: str,
    offset: tuple[float, float],
    threads: int | None,
    out: np.ndarray | None,
    isa: str | None,
) -> tuple[np.ndarray, str]:
    isa = _requested_isa(isa)
    if out is not None and out.strides[1] != 1:
        # The kernels write whole rows of contiguous pixels; go through a fresh array.
        fresh, ran = _resample_native(plane, out_w, out_h, filter, offset, threads, None, isa)
        out[...] = fresh
        return out, ran
    if filter == "detail":
        return _resample_detail(plane, out_w, out_h, offset, threads, out, isa)
    return _native.resample(plane, out_w, out_h, filter, *offset, threads, out, isa)


def _resample_detail(
    plane: np.ndarray,
    out_w: int,
    out_h: int,
    offset: tuple[float, float],
    threads: int | None,
    out: np.ndarray | None,
    isa: str | None,
) -> tuple[np.ndarray, str]:
    """The learned filter doubles the plane, then Lanczos3 takes it to the exact size and
    offset (a no-op at exactly 2x). A plane with a downscaled axis goes through Lanczos3."""
    in_h, in_w = plane.shape
    dx, dy = offset
    if out_w < in_w or out_h < in_h:
        return _native.resample(plane, out_w, out_h, "lanczos3", dx, dy, threads, out, isa)
    model = detail.shipped()
    if (out_w, out_h) == (2 * in_w, 2 * in_h) and dx == dy == 0.0:
        return _native.detail2x(plane, model.weights, model.thresholds, threads, out, isa)
    doubled, _ = _native.detail2x(plane, model.weights, model.thresholds, threads, None, isa)
    # Pixel u of the doubled grid sits at source position (u + 0.5) / 2 - 0.5.
    return _native.resample(doubled, out_w, out_h, "lanczos3", 2 * dx, 2 * dy, threads, out, isa)


def kernel_info() -> dict[str, object]:
    """What the kernels can do here: "kernels", "filters", "isas" (native variants this CPU
    runs), "isa" (the native default) and "threads" (the native default)."""
    return {"kernels": list(KERNELS), "filters": list(FILTERS), **_native.kernel_info()}


def resample(
    plane: np.ndarray,
    out_w: int,
    out_h: int,
    *,
    filter: str = "lanczos3",
    kernel: str = "native",
    offset: tuple[float, float] = (0.0, 0.0),
    threads: int | None = None,
    out: np.ndarray | None = None,
    isa: str | None = None,
) -> np.ndarray:
    """Resample a 2-D uint8 plane (any strides) to (out_h, out_w).

    Output pixel x samples the source at (x + 0.5) * in / out - 0.5 + dx (dy for rows); a
    downscaled axis stretches the filter. `out` receives the result when given (it may be a
    strided view, e.g. a frame plane). `threads` applies to the native kernel (None: all
    cores); `isa` forces one of its SIMD variants (see `kernel_info()`), as does the
    AVATAR_ISA environment variable for calls without `isa`.

    `filter="detail"` (native kernel only) is the learned filter of `engine.detail`: sharper
    than Lanczos3 on compressed video. It doubles the plane, then Lanczos3 takes the result to
    the exact size and offset; a plane with a downscaled axis goes through Lanczos3 alone.
    """
    options = {"filter": filter, "kernel": kernel, "offset": offset, "threads": threads}
    return resample_with_isa(plane, out_w, out_h, out=out, isa=isa, **options)[0]


def resample_with_isa(
    plane: np.ndarray,
    out_w: int,
    out_h: int,
    *,
    filter: str = "lanczos3",
    kernel: str = "native",
    offset: tuple[float, float] = (0.0, 0.0),
    threads: int | None = None,
    out: np.ndarray | None = None,
    isa: str | None = None,
) -> tuple[np.ndarray, str | None]:
    """`resample`, also returning the native variant that ran (None for numba and numpy)."""
    dx, dy = _check(plane, out_w, out_h, filter, kernel, offset, threads, out)
    if kernel == "native":
        return _resample_native(plane, int(out_w), int(out_h), filter, (dx, dy), threads, out, isa)
    if kernel == "numba":
        from engine import _numba

        return _numba.resample(plane, int(out_w), int(out_h), filter, (dx, dy), out), None
    from engine import _reference

    result = _reference.resample(plane, int(out_w), int(out_h), filter, (dx, dy))
    if out is None:
        return result, None
    out[...] = result
    return out, None
