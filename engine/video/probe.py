"""`engine.probe`: read an upload's headers into a `VideoInfo` and check every input limit.

Limits. Each breach raises `InvalidVideo` whose `limit` is one of these stable identifiers
(the service shows them to API users):

Seen in the headers by `probe`:
    file_size, container, video_codec, bit_depth, pixel_format, transfer, field_order,
    sample_aspect_ratio, audio_codec, duration, frame_rate, frames, width, height, area,
    variable_frame_rate (the sample table's frame intervals differ), rotation (a display
    matrix that is not a quarter turn or mirror)
Seen only while decoding, by `upscale`:
    variable_frame_rate (decoded timestamps), interlaced (a frame flagged interlaced),
    frames (more frames than the limit), corrupt (undecodable data or missing frames)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction

import av

from engine.fit import fit_box
from engine.video import h264, mp4
from engine.video.geometry import CHROMA_LOCATION_NAMES, Orientation, orientation_from_matrix
from engine.video.limits import (
    ALLOWED_PIXEL_FORMATS,
    MAX_FILE_SIZE,
    check_audio,
    check_container,
    check_dimensions,
    check_header_rates,
    check_pixels,
    check_size,
    check_timing,
    check_video_codec,
    refuse,
)


@dataclass(frozen=True)
class VideoInfo:
    """What `probe` learned from the headers; plain fields, ready for JSON (dataclasses.asdict).

    `width`/`height` are as displayed (after the display-matrix rotation);
    `stored_width`/`stored_height` as coded. `rotation` is counter-clockwise degrees applied
    after a left-right mirror when `mirrored`. Colour fields use the ITU-T H.273 code points
    (FFmpeg's enum values); `color_range` is "tv" (limited) or "pc" (full).
    """

    container: str
    video_codec: str
    width: int
    height: int
    stored_width: int
    stored_height: int
    rotation: int
    mirrored: bool
    duration: float
    frame_rate: float
    frame_rate_fraction: str
    frames: int
    pixel_format: str
    chroma_format: str
    chroma_location: str
    color_range: str
    color_space: int
    color_primaries: int
    color_transfer: int
    audio_codecs: tuple[str, ...]
    has_audio: bool
    size_bytes: int

    @property
    def orientation(self) -> Orientation:
        return Orientation(self.rotation, self.mirrored)


def _frame_rate(stream: av.video.stream.VideoStream) -> Fraction:
    """The nominal rate: FFmpeg's guessed (r_frame_rate) when it agrees with the average."""
    average = stream.average_rate
    guessed = stream.guessed_rate
    if guessed and (not average or abs(guessed - average) <= average / 1000):
        return Fraction(guessed)
    return Fraction(average) if average else Fraction(0)


def _duration(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> float:
    if stream.duration is not None and stream.time_base:
        return float(stream.duration * stream.time_base)
    return (container.duration or 0) / av.time_base


def _sample_times(stream: av.video.stream.VideoStream) -> list[int]:
    """Decode timestamps of the sample table (mp4 `stts`), in the stream's time base."""
    return [entry.timestamp for entry in stream.index_entries if not entry.is_discard]


def _orientation(path: str, stream: av.video.stream.VideoStream) -> Orientation:
    matrix = mp4.track_matrices(path).get(stream.id)
    if matrix is None:
        return Orientation()
    found = orientation_from_matrix(*matrix)
    if found is None:
        refuse(
            "rotation",
            "other",
            "quarter turns",
            "the display matrix is not a quarter turn "
            "or mirror; only rotations by multiples of 90 degrees are supported",
        )
    return found


def _sequence(stream: av.video.stream.VideoStream) -> h264.SequenceParameters | None:
    extradata = stream.codec_context.extradata
    if not extradata:
        return None
    try:
        return h264.read_sps(extradata)
    except h264.BitstreamError:
        refuse(
            "corrupt",
            "unreadable",
            "a valid H.264 sequence parameter set",
            "the H.264 sequence parameter set cannot be read",
        )


def _color_range(codec: av.video.codeccontext.VideoCodecContext, full: bool | None) -> str:
    if codec.color_range == 2 or (codec.pix_fmt or "").startswith("yuvj") or full:
        return "pc"
    return "tv"


def _chroma_location(sps: h264.SequenceParameters | None) -> str:
    loc = sps.chroma_sample_loc_type if sps else None
    if loc is None or loc >= len(CHROMA_LOCATION_NAMES):
        return "left"  # H.264 default when the VUI is silent (E.2.1)
    return CHROMA_LOCATION_NAMES[loc]


def _open_checked(path: str) -> av.container.InputContainer:
    try:
        return av.open(path, metadata_errors="ignore")
    except av.error.FFmpegError as exc:
        refuse(
            "container",
            "unreadable",
            "mp4",
            f"the file cannot be read as a video container ({exc.strerror or exc})",
        )


def probe(path: str | os.PathLike[str], *, max_file_size: int = MAX_FILE_SIZE) -> VideoInfo:
    """Read the headers of `path`, check every header-visible limit and describe the video.

    Raises InvalidVideo naming the first limit broken (the order follows the module docstring).
    `max_file_size` lets the service pass its configured upload limit.
    """
    path = os.fspath(path)
    size_bytes = os.path.getsize(path)
    check_size("file_size", size_bytes, max_file_size)
    with _open_checked(path) as container:
        return _describe(path, container, size_bytes)


def _describe(path: str, container: av.container.InputContainer, size_bytes: int) -> VideoInfo:
    container_name = check_container(container)
    stream = check_video_codec(container)
    codec = stream.codec_context
    sps = _sequence(stream)
    pixel_format = check_pixels(codec, sps, stream)
    audio_codecs = check_audio(container)
    rate = _frame_rate(stream)
    duration = _duration(container, stream)
    times = _sample_times(stream)
    frames = len(times) or stream.frames  # samples an edit list drops are not shown
    check_timing(duration, rate, frames)
    orientation = _orientation(path, stream)
    width, height = orientation.display_size(codec.width, codec.height)
    check_dimensions(width, height)
    check_header_rates(times, rate, stream.time_base)
    return VideoInfo(
        container=container_name,
        video_codec=codec.name,
        width=width,
        height=height,
        stored_width=codec.width,
        stored_height=codec.height,
        rotation=orientation.rotation,
        mirrored=orientation.mirrored,
        duration=duration,
        frame_rate=float(rate),
        frame_rate_fraction=f"{rate.numerator}/{rate.denominator}",
        frames=frames,
        pixel_format=pixel_format,
        chroma_format=ALLOWED_PIXEL_FORMATS[pixel_format],
        chroma_location=_chroma_location(sps),
        color_range=_color_range(codec, sps.full_range if sps else None),
        color_space=int(codec.colorspace or 2),
        color_primaries=int(codec.color_primaries or 2),
        color_transfer=int(codec.color_trc or 2),
        audio_codecs=audio_codecs,
        has_audio=bool(audio_codecs),
        size_bytes=size_bytes,
    )


def plan(info: VideoInfo, resolution: str) -> tuple[int, int]:
    """The output (width, height) for `resolution`; raises TargetNotLarger."""
    return fit_box(info.width, info.height, resolution)
