"""Resampling one decoded frame into a new, larger frame, plane by plane, without copies.

Each input plane is viewed as displayed (the display-matrix turn is a strided numpy view) and
resampled by `engine.resample` straight into the output frame's plane buffer. Chroma planes get
the offsets that keep every chroma sample at its siting (see `engine.video.geometry`).
"""

from __future__ import annotations

from dataclasses import dataclass

import av
import numpy as np

from engine.resample import resample
from engine.video.geometry import Orientation, chroma_offset, reversed_siting, siting

SUBSAMPLING = {"4:2:0": (2, 2), "4:2:2": (2, 1), "4:4:4": (1, 1)}


@dataclass(frozen=True)
class PlaneTarget:
    width: int
    height: int
    offset: tuple[float, float]


def plane_array(plane: av.video.plane.VideoPlane) -> np.ndarray:
    """A writable (height, width) uint8 view of a frame plane, rows `line_size` apart."""
    rows = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)
    return rows[:, : plane.width]


def _axis_offset(
    stored: tuple[int, bool],
    luma_in: int,
    luma_out: int,
    sub_out: int,
    subsampling: tuple[int, int],
    sites: tuple[float, float],
    site_out: float,
) -> float:
    axis, reverse = stored
    sub_in, site_in = subsampling[axis], sites[axis]
    if reverse:
        site_in = reversed_siting(site_in, sub_in)
    return chroma_offset(luma_in, luma_out, sub_in, sub_out, site_in, site_out)


def plane_targets(
    chroma_format: str,
    chroma_location: str,
    orientation: Orientation,
    display_size: tuple[int, int],
    out_size: tuple[int, int],
) -> tuple[PlaneTarget, PlaneTarget, PlaneTarget]:
    """Output size and resampler offset of the Y, U and V planes.

    Input and output share the chroma format and location; the input is seen through
    `orientation`, so an axis of the displayed input may come from the other stored axis,
    read backwards.
    """
    out_w, out_h = out_size
    sub = SUBSAMPLING[chroma_format]
    sites = siting(chroma_location, sub)
    x_source, y_source = orientation.axis_sources()
    dx = _axis_offset(x_source, display_size[0], out_w, sub[0], sub, sites, sites[0])
    dy = _axis_offset(y_source, display_size[1], out_h, sub[1], sub, sites, sites[1])
    chroma = PlaneTarget(out_w // sub[0], out_h // sub[1], (dx, dy))
    return PlaneTarget(out_w, out_h, (0.0, 0.0)), chroma, chroma


def plane_filter(filter: str, index: int) -> str:
    """The filter of plane `index` (0: luma): the learned `detail` filter was trained on luma,
    so chroma goes through Lanczos3."""
    return "lanczos3" if filter == "detail" and index > 0 else filter


@dataclass(frozen=True)
class FrameScaler:
    """Builds each output frame: allocate, resample every plane into it, copy the timing."""

    targets: tuple[PlaneTarget, PlaneTarget, PlaneTarget]
    orientation: Orientation
    pixel_format: str
    filter: str
    kernel: str
    threads: int | None = None

    def new_frame(self) -> av.VideoFrame:
        luma = self.targets[0]
        return av.VideoFrame(luma.width, luma.height, self.pixel_format)

    def scale(self, frame: av.VideoFrame, out: av.VideoFrame | None = None) -> av.VideoFrame:
        """Resample `frame` into `out` (a frame from `new_frame`, reused) or a new frame."""
        if out is None:
            out = self.new_frame()
        else:
            out.make_writable()  # a no-op unless something else still holds its buffers
        planes = zip(frame.planes, self.targets, out.planes, strict=True)
        for index, (source, target, plane) in enumerate(planes):
            resample(
                self.orientation.view(plane_array(source)),
                target.width,
                target.height,
                filter=plane_filter(self.filter, index),
                kernel=self.kernel,
                offset=target.offset,
                threads=self.threads,
                out=plane_array(plane),
            )
        out.pts = frame.pts
        out.time_base = frame.time_base
        out.duration = frame.duration
        out.color_range = frame.color_range
        out.colorspace = frame.colorspace
        out.color_primaries = frame.color_primaries
        out.color_trc = frame.color_trc
        return out
