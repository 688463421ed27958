"""Box fitting of the upscale task (SPEC section 9), computed by the native module."""

from __future__ import annotations

from typing import Literal

from engine import _native
from engine.errors import TargetNotLarger

Resolution = Literal["1080p", "2k", "4k"]
RESOLUTIONS: tuple[str, ...] = ("1080p", "2k", "4k")


def _check_resolution(resolution: str) -> None:
    if resolution not in RESOLUTIONS:
        raise ValueError(
            f"unknown resolution {resolution!r}; expected one of {', '.join(RESOLUTIONS)}"
        )


def fit_box(width: int, height: int, resolution: str) -> tuple[int, int]:
    """Return the even (out_w, out_h) that fits (width, height) into the resolution's box.

    Raises TargetNotLarger when the result would not be larger than the source and
    ValueError for a non-positive size or an unknown resolution.
    """
    # Names and types are checked here; the binding checks the size range (kMaxSourceSide
    # in native/limits.hpp keeps its integer arithmetic exact) with a ValueError of its own.
    _check_resolution(resolution)
    if isinstance(width, bool) or isinstance(height, bool):
        raise ValueError("width and height must be integers")
    fitted = _native.fit_box(int(width), int(height), resolution)
    if fitted is None:
        raise TargetNotLarger(
            f"a {width}x{height} source is not smaller than the {resolution} box; "
            "the output would not be larger than the input"
        )
    return fitted
