"""The input limits of an upscale and the checks that raise `InvalidVideo` for each.

`probe` applies the header checks; `FrameCheck` applies those only decoding can reveal.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import NoReturn

import av

from engine.errors import InvalidVideo
from engine.video.h264 import SequenceParameters

MAX_FILE_SIZE = 1 << 30
MAX_DURATION_S = 600
MAX_FRAME_RATE = 60
MAX_FRAMES = 18_000
MAX_VIDEO_SIDE = 4096  # width and height of an input video, as displayed
MAX_AREA = 2_100_000

ALLOWED_PIXEL_FORMATS = {
    "yuv420p": "4:2:0", "yuvj420p": "4:2:0",
    "yuv422p": "4:2:2", "yuvj422p": "4:2:2",
    "yuv444p": "4:4:4", "yuvj444p": "4:4:4",
}  # fmt: skip
# ISO base media brands that mean MP4 (QuickTime 'qt  ' and 3GPP brands do not).
_MP4_BRANDS = frozenset((
    "isom", "iso2", "iso3", "iso4", "iso5", "iso6", "iso7", "iso8", "iso9",
    "mp41", "mp42", "avc1", "M4V", "M4VP", "dash", "msnv", "f4v", "XAVC",
))  # fmt: skip
_HDR_TRANSFERS = {16: "smpte2084 (PQ)", 18: "arib-std-b67 (HLG)"}
# FFmpeg AVFieldOrder values that mean interlaced; 0 is unknown and 1 progressive.
_FIELD_ORDERS = {2: "tt", 3: "bb", 4: "tb", 5: "bt"}


def refuse(limit: str, actual: object, allowed: object, message: str) -> NoReturn:
    raise InvalidVideo(limit, actual, allowed, message)


def _number(value: float) -> str:
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def check_size(limit: str, size: int, maximum: int) -> None:
    if size > maximum:
        refuse(limit, size, maximum, f"file size {size:,} bytes exceeds the {maximum:,} byte limit")


def check_container(container: av.container.InputContainer) -> str:
    formats = container.format.name.split(",")
    if "mp4" not in formats:
        refuse(
            "container",
            formats[0],
            "mp4",
            f"container {formats[0]} is not supported; only MP4 is accepted",
        )
    brand = container.metadata.get("major_brand", "")
    compatible = container.metadata.get("compatible_brands", "")
    brands = {brand.strip()} | {compatible[i : i + 4].strip() for i in range(0, len(compatible), 4)}
    if not brands & _MP4_BRANDS:
        shown = brand.strip() or "QuickTime"
        refuse(
            "container", shown, "mp4", f"container {shown} is not supported; only MP4 is accepted"
        )
    return "mp4"


def check_video_codec(container: av.container.InputContainer) -> av.video.stream.VideoStream:
    if not container.streams:
        refuse("container", "empty", "mp4", "the file holds no media streams (truncated?)")
    if not container.streams.video:
        refuse("video_codec", None, "h264", "the file has no video stream")
    stream = container.streams.video[0]
    name = stream.codec_context.name
    if name != "h264":
        refuse(
            "video_codec",
            name,
            "h264",
            f"video codec {name} is not supported; only H.264 is accepted",
        )
    return stream


def check_format(
    codec: av.video.codeccontext.VideoCodecContext, sps: SequenceParameters | None
) -> str:
    """Bit depth, pixel format and transfer; returns the pixel format name."""
    if not codec.pix_fmt and not sps:
        refuse(
            "corrupt",
            "unreadable",
            "a decodable H.264 stream",
            "the video stream's picture format cannot be determined (corrupt data?)",
        )
    pix_fmt = codec.pix_fmt or "unknown"
    depth = sps.bit_depth_luma if sps else None
    if codec.pix_fmt:
        depth = max(c.bits for c in av.VideoFormat(pix_fmt).components)
    if depth is not None and depth != 8:
        refuse(
            "bit_depth",
            depth,
            8,
            f"bit depth {depth} is not supported; only 8-bit video is accepted",
        )
    if sps and sps.chroma_format_idc == 0:
        pix_fmt = "gray"  # FFmpeg decodes monochrome H.264 as 4:2:0 with flat chroma
    if pix_fmt not in ALLOWED_PIXEL_FORMATS:
        refuse(
            "pixel_format",
            pix_fmt,
            sorted(ALLOWED_PIXEL_FORMATS),
            f"pixel format {pix_fmt} is not supported; only 8-bit YUV 4:2:0, 4:2:2 or "
            "4:4:4 is accepted",
        )
    transfer = codec.color_trc or (sps.transfer_characteristics if sps else None)
    if transfer in _HDR_TRANSFERS:
        name = _HDR_TRANSFERS[transfer]
        refuse(
            "transfer",
            name.split()[0],
            "sdr",
            f"transfer {name} is HDR, which is not supported; only SDR video is accepted",
        )
    return pix_fmt


def check_picture(
    codec: av.video.codeccontext.VideoCodecContext,
    sps: SequenceParameters | None,
    stream: av.video.stream.VideoStream,
) -> None:
    """Field order and pixel aspect."""
    order = _FIELD_ORDERS.get(codec.field_order)
    if order:
        refuse(
            "field_order",
            order,
            "progressive",
            f"field order {order} (interlaced) is not supported; only progressive video "
            "is accepted",
        )
    ratios = [stream.sample_aspect_ratio, codec.sample_aspect_ratio]
    if sps and sps.sample_aspect_ratio:
        ratios.append(Fraction(*sps.sample_aspect_ratio) if sps.sample_aspect_ratio[1] else None)
    for ratio in ratios:
        if ratio and ratio != 1:
            shown = f"{ratio.numerator}:{ratio.denominator}"
            refuse(
                "sample_aspect_ratio",
                shown,
                "1:1",
                f"sample aspect ratio {shown} is not supported; only square pixels (1:1) "
                "are accepted",
            )


def check_pixels(
    codec: av.video.codeccontext.VideoCodecContext,
    sps: SequenceParameters | None,
    stream: av.video.stream.VideoStream,
) -> str:
    pix_fmt = check_format(codec, sps)
    check_picture(codec, sps, stream)
    return pix_fmt


def check_audio(container: av.container.InputContainer) -> tuple[str, ...]:
    codecs = tuple(stream.codec_context.name for stream in container.streams.audio)
    for name in codecs:
        if name != "aac":
            refuse(
                "audio_codec",
                name,
                "aac",
                f"audio codec {name} is not supported; every audio stream must be AAC "
                "(or the video must have no audio)",
            )
    return codecs


def check_dimensions(width: int, height: int) -> None:
    for limit, side in (("width", width), ("height", height)):
        if side > MAX_VIDEO_SIDE:
            refuse(
                limit,
                side,
                MAX_VIDEO_SIDE,
                f"{limit} {side} px exceeds the {MAX_VIDEO_SIDE} px limit",
            )
    if width * height > MAX_AREA:
        refuse(
            "area",
            width * height,
            MAX_AREA,
            f"area {width * height:,} pixels ({width}x{height}) exceeds the "
            f"{MAX_AREA:,} pixel limit",
        )


def check_frame_count(frames: int) -> None:
    if frames > MAX_FRAMES:
        refuse(
            "frames",
            frames,
            MAX_FRAMES,
            f"frame count {frames:,} exceeds the {MAX_FRAMES:,} frame limit",
        )


def check_timing(duration: float, rate: Fraction, frames: int) -> None:
    if duration > MAX_DURATION_S:
        refuse(
            "duration",
            round(duration, 3),
            MAX_DURATION_S,
            f"duration {_number(duration)} s exceeds the {MAX_DURATION_S} s limit",
        )
    if rate > MAX_FRAME_RATE:
        refuse(
            "frame_rate",
            round(float(rate), 3),
            MAX_FRAME_RATE,
            f"frame rate {_number(float(rate))} fps exceeds the {MAX_FRAME_RATE} fps limit",
        )
    if rate <= 0:
        refuse("frame_rate", 0, MAX_FRAME_RATE, "the video stream declares no frame rate")
    check_frame_count(frames)


def interval_tolerance(rate: Fraction, time_base: Fraction) -> Fraction:
    """How far one frame interval may stray from 1/rate and still count as constant.

    One time-base tick (timescales rarely divide 1001-based rates) plus 1% of the interval.
    """
    return time_base + 1 / rate / 100


def refuse_variable_rate(shortest: Fraction, longest: Fraction, rate: Fraction) -> NoReturn:
    refuse(
        "variable_frame_rate",
        "variable",
        "constant",
        f"variable frame rate (frame intervals from {_number(float(shortest) * 1000)} to "
        f"{_number(float(longest) * 1000)} ms, nominal {_number(float(rate))} fps) is not "
        "supported; only constant frame rate video is accepted",
    )


def check_header_rates(times: list[int], rate: Fraction, time_base: Fraction) -> None:
    """Constant frame rate as the sample table states it (decode order, which keeps spacing)."""
    if len(times) < 2 or rate <= 0:
        return
    intervals = [(b - a) * time_base for a, b in itertools.pairwise(times)]
    tolerance = interval_tolerance(rate, time_base)
    if any(abs(step - 1 / rate) > tolerance for step in intervals):
        refuse_variable_rate(min(intervals), max(intervals), rate)


class FrameCheck:
    """The limits only decoding can reveal, applied to each decoded frame in display order."""

    def __init__(self, rate: Fraction, time_base: Fraction, expected_frames: int) -> None:
        self.count = 0
        self._interval = 1 / rate
        self._time_base = time_base
        self._tolerance = interval_tolerance(rate, time_base)
        self._expected = expected_frames
        self._last_pts: int | None = None

    def frame(self, pts: int | None, interlaced: bool) -> None:
        self.count += 1
        if self.count > MAX_FRAMES:
            refuse(
                "frames",
                self.count,
                MAX_FRAMES,
                f"the video has more than the {MAX_FRAMES:,} frame limit",
            )
        if interlaced:
            refuse(
                "interlaced",
                "interlaced",
                "progressive",
                f"frame {self.count} is interlaced; only progressive video is accepted",
            )
        if pts is None:
            refuse(
                "corrupt",
                "no timestamp",
                "timestamped frames",
                f"frame {self.count} has no timestamp",
            )
        if self._last_pts is not None:
            step = (pts - self._last_pts) * self._time_base
            if abs(step - self._interval) > self._tolerance:
                refuse(
                    "variable_frame_rate",
                    "variable",
                    "constant",
                    f"variable frame rate: frame {self.count} comes "
                    f"{_number(float(step) * 1000)} ms after the previous one where the "
                    f"frame rate implies {_number(float(self._interval) * 1000)} ms; only "
                    "constant frame rate video is accepted",
                )
        self._last_pts = pts

    def finish(self) -> None:
        if self.count != self._expected:
            refuse(
                "corrupt",
                self.count,
                self._expected,
                f"only {self.count} of the {self._expected} frames the headers declare "
                "could be decoded",
            )
