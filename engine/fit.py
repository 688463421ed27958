"""Box fitting of the upscale task, computed by the native module.

A source is fitted into the 1080p, 2k or 4k box (portrait when taller than wide), keeping its
aspect ratio, enlarged at most MAX_SCALE times; both output sides are even.
"""

from __future__ import annotations

from typing import Literal

from engine import _native
from engine.errors import TargetNotLarger

Resolution = Literal["1080p", "2k", "4k"]
RESOLUTIONS: tuple[str, ...] = ("1080p", "2k", "4k")
MAX_SCALE: int = _native.MAX_SCALE  # no fitted side exceeds this many times its source side


def _check(width: int, height: int, resolution: str) -> tuple[int, int]:
    # Names and types are checked here; the binding checks the size range (kMaxSourceSide
    # in native/limits.hpp keeps its integer arithmetic exact) with a ValueError of its own.
    if resolution not in RESOLUTIONS:
        raise ValueError(
            f"unknown resolution {resolution!r}; expected one of {', '.join(RESOLUTIONS)}"
        )
    if isinstance(width, bool) or isinstance(height, bool):
        raise ValueError("width and height must be integers")
    return int(width), int(height)


def fit_box(width: int, height: int, resolution: str) -> tuple[int, int]:
    """Return the even (out_w, out_h) that fits (width, height) into the resolution's box.

    Raises TargetNotLarger when the result would not be larger than the source and
    ValueError for a non-positive size or an unknown resolution.
    """
    fitted = _native.fit_box(*_check(width, height, resolution), resolution)
    if fitted is None:
        raise TargetNotLarger(
            f"a {width}x{height} source is not smaller than the {resolution} box; "
            "the output would not be larger than the input"
        )
    return fitted


def box_size(width: int, height: int, resolution: str) -> tuple[int, int]:
    """The (width, height) of the resolution's box that `fit_box` fits this source into.

    A fitted size reaches the box on at least one side unless MAX_SCALE stopped it short.
    """
    return _native.box_size(*_check(width, height, resolution), resolution)
