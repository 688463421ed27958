"""The output MP4: a libx264 video stream tagged like the input, and audio streams copied as is."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av

from engine.video.geometry import CHROMA_LOCATION_NAMES
from engine.video.probe import VideoInfo


@dataclass(frozen=True)
class OutputSpec:
    width: int
    height: int
    preset: str
    crf: float

    @staticmethod
    def pixel_format(info: VideoInfo) -> str:
        """The input's chroma format; full range is carried by the range tag, not a yuvj format."""
        return info.pixel_format.replace("yuvj", "yuv")


# libx264 gives its lookahead (frame types, MB-tree) one thread per six frame threads, so a
# single thread below 8 cores. On 2 cores that thread held up 4k encodes: a second one cut the
# encoder's wall time by 5-20% (120 frames, interleaved runs) and ours by 4-15% end to end.
# For 1080p it bought nothing (same wall time, 7-14% more CPU), so smaller frames keep one.
_SPLIT_LOOKAHEAD_AREA = 2560 * 1440


def configure_x264(
    codec: av.video.codeccontext.VideoCodecContext, spec: OutputSpec, params: Iterable[str] = ()
) -> None:
    """The libx264 settings of every upscale (the benchmark's encoder limit uses them too).

    `params` are further `x264-params` entries (`key=value`).
    """
    params = list(params)
    if spec.width * spec.height > _SPLIT_LOOKAHEAD_AREA:
        # x264's own choice is cores / 4; never lower it.
        params.append(f"lookahead-threads={max(2, len(os.sched_getaffinity(0)) // 4)}")
    options = {"preset": spec.preset, "crf": f"{spec.crf:g}"}
    if params:
        options["x264-params"] = ":".join(params)
    codec.options = options
    # PyAV defaults to slice threading, which makes libx264 use sliced threads; frame threads
    # (FFmpeg's own default, as in the ffmpeg CLI) keep both cores busier for the same output.
    codec.thread_type = "AUTO"
    codec.thread_count = 0


def _x264_params(info: VideoInfo) -> list[str]:
    # libx264 writes the chroma location into the VUI only when told; absent means LEFT.
    location = CHROMA_LOCATION_NAMES.index(info.chroma_location)
    if info.chroma_format == "4:2:0" and location:
        return [f"chromaloc={location}"]
    return []


def add_copied_audio(
    container: av.container.OutputContainer, template: av.audio.stream.AudioStream
) -> av.audio.stream.AudioStream:
    """A stream of `container` that takes `template`'s packets as they are."""
    stream = container.add_stream_from_template(template)
    if language := template.metadata.get("language"):
        stream.metadata["language"] = language
    return stream


class Output:
    """Writes `path`; `close` finishes the file, `abandon` deletes it without finishing it."""

    def __init__(
        self,
        path: Path,
        source: av.container.InputContainer,
        info: VideoInfo,
        spec: OutputSpec,
        *,
        audio: bool = True,
    ) -> None:
        self._path = path
        self._container = av.open(
            str(path), "w", format="mp4", container_options={"movflags": "+faststart"}
        )
        try:
            self._video = self._add_video(source.streams.video[0], info, spec)
            copied = source.streams.audio if audio else ()
            self._audio = {stream.index: self._add_audio(stream) for stream in copied}
        except BaseException:
            self.abandon()
            raise

    def _add_video(
        self, template: av.video.stream.VideoStream, info: VideoInfo, spec: OutputSpec
    ) -> av.video.stream.VideoStream:
        stream = self._container.add_stream("libx264", rate=Fraction(info.frame_rate_fraction))
        stream.width, stream.height = spec.width, spec.height
        stream.pix_fmt = spec.pixel_format(info)
        stream.time_base = template.time_base
        codec, source = stream.codec_context, template.codec_context
        codec.time_base = template.time_base
        codec.color_range = 2 if info.color_range == "pc" else source.color_range
        codec.color_primaries = source.color_primaries
        codec.color_trc = source.color_trc
        codec.colorspace = source.colorspace
        configure_x264(codec, spec, _x264_params(info))
        return stream

    def _add_audio(self, template: av.audio.stream.AudioStream) -> av.audio.stream.AudioStream:
        return add_copied_audio(self._container, template)

    def encode(self, frame: av.VideoFrame) -> int:
        """Encode one frame; returns how many frames the encoder finished and wrote."""
        packets = self._video.encode(frame)
        self._container.mux(packets)
        return len(packets)

    def flush(self) -> Iterator[None]:
        """Drain the encoder, yielding once per frame written."""
        for packet in self._video.encode(None):
            self._container.mux(packet)
            yield None

    def copy_audio(self, packet: av.Packet) -> None:
        packet.stream = self._audio[packet.stream.index]
        self._container.mux(packet)

    def close(self) -> None:
        self._container.close()

    def abandon(self) -> None:
        # Unlinking first makes the trailer's faststart pass fail at once (it reopens the
        # file by name) instead of rewriting a possibly large partial file.
        self._path.unlink(missing_ok=True)
        with contextlib.suppress(av.error.FFmpegError, OSError):
            self._container.close()
