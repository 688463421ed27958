"""Where samples sit: display-matrix orientation as numpy views, and the chroma siting offsets.

Coordinates: pixel i of a plane covers [i, i + 1) of its own grid, so its centre is at i + 0.5
(the resampler maps `x_in = (x_out + 0.5) * in / out - 0.5 + dx`). A chroma plane subsampled by
`s` along an axis holds sample i at luma position `s * i + c + 0.5`, where `c` is the siting of
the chroma location along that axis in luma pixels: 0 for left/top (co-sited with the even luma
sample), 0.5 for centre, 1 for bottom.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# H.264 chroma_sample_loc_type (figure E-1) -> FFmpeg name and (horizontal, vertical) siting
# in luma pixels for 4:2:0.
CHROMA_LOCATIONS: tuple[tuple[str, float, float], ...] = (
    ("left", 0.0, 0.5),
    ("center", 0.5, 0.5),
    ("topleft", 0.0, 0.0),
    ("top", 0.5, 0.0),
    ("bottomleft", 0.0, 1.0),
    ("bottom", 0.5, 1.0),
)
CHROMA_LOCATION_NAMES: tuple[str, ...] = tuple(name for name, _, _ in CHROMA_LOCATIONS)


@dataclass(frozen=True)
class Orientation:
    """How the stored picture becomes the displayed one: mirror left-right, then rotate.

    `rotation` is counter-clockwise in degrees (0, 90, 180, 270), as FFmpeg reports it.
    """

    rotation: int = 0
    mirrored: bool = False

    @property
    def swaps_axes(self) -> bool:
        return self.rotation in (90, 270)

    def display_size(self, width: int, height: int) -> tuple[int, int]:
        return (height, width) if self.swaps_axes else (width, height)

    def view(self, plane: np.ndarray) -> np.ndarray:
        """The plane as displayed: a strided view, no copy."""
        view = plane[:, ::-1] if self.mirrored else plane
        return np.rot90(view, self.rotation // 90)

    def axis_sources(self) -> tuple[tuple[int, bool], tuple[int, bool]]:
        """For the displayed (x, y) axes: (stored axis 0 = x / 1 = y, whether it runs reversed)."""
        probe = np.arange(4).reshape(2, 2)  # probe[y, x] = 2 * y + x
        shown = self.view(probe)
        x_step = int(shown[0, 1] - shown[0, 0])
        y_step = int(shown[1, 0] - shown[0, 0])
        x_axis = (0 if abs(x_step) == 1 else 1, x_step < 0)
        y_axis = (0 if abs(y_step) == 1 else 1, y_step < 0)
        return x_axis, y_axis


def orientation_from_matrix(a: float, b: float, c: float, d: float) -> Orientation | None:
    """Orientation of a display matrix's 2x2 part, or None unless it is a quarter turn or flip.

    The matrix sends the stored x axis to display direction (a, b) and the stored y axis to
    (c, d), with display y pointing down (this is how FFmpeg applies it when auto-rotating).
    """
    scale = math.hypot(a, b)
    if scale == 0 or not math.isclose(scale, math.hypot(c, d), rel_tol=1e-3):
        return None
    a, b, c, d = (round(v / scale, 3) for v in (a, b, c, d))
    if any(v not in (-1.0, 0.0, 1.0) for v in (a, b, c, d)) or a * d - b * c == 0:
        return None
    mirrored = a * d - b * c < 0
    if mirrored:
        a, b = -a, -b
    rotation = round(math.degrees(math.atan2(-b, a))) % 360
    return Orientation(rotation=rotation, mirrored=mirrored)


def siting(chroma_location: str, subsampling: tuple[int, int]) -> tuple[float, float]:
    """(horizontal, vertical) chroma siting in luma pixels; 0 on an axis that is not subsampled.

    The chroma location applies to 4:2:0 only; 4:2:2 chroma is co-sited with even luma samples.
    """
    if subsampling != (2, 2):
        return 0.0, 0.0
    _, horizontal, vertical = CHROMA_LOCATIONS[CHROMA_LOCATION_NAMES.index(chroma_location)]
    return horizontal, vertical


def chroma_offset(
    luma_in: int, luma_out: int, sub_in: int, sub_out: int, site_in: float, site_out: float
) -> float:
    """The resampler offset `dx` that lands each output chroma sample where its siting says.

    Output chroma sample j sits at output luma position `sub_out * j + site_out + 0.5`; scaled
    into the input (ratio r = luma_in / luma_out), that is input chroma index
    `((sub_out * j + site_out + 0.5) * r - site_in - 0.5) / sub_in`. The resampler maps
    j to `(j + 0.5) * rc - 0.5 + dx` with rc = r * sub_out / sub_in; both are linear in j with
    the same slope, so dx is the difference of their constants. For 4:2:0 LEFT siting on both
    sides this is `0.25 * (1 - r)`.
    """
    ratio = luma_in / luma_out
    wanted = ((site_out + 0.5) * ratio - site_in - 0.5) / sub_in
    mapped = 0.5 * ratio * sub_out / sub_in - 0.5
    return wanted - mapped


def reversed_siting(site: float, sub: int) -> float:
    """Siting seen along an axis read backwards (a flip or rotation): `sub - 1 - site`."""
    return sub - 1 - site if sub > 1 else 0.0
