"""`engine.upscale`: decode -> resample -> encode + mux, the three stages overlapping in threads.

The decode thread demuxes the input, decodes video and checks each frame against the limits
only decoding reveals; audio packets travel along untouched. The resample thread turns each
decoded frame into an upscaled one (the native kernel releases the GIL). The calling thread
encodes with libx264 and muxes video and the copied audio into a temporary file beside `dst`,
which is renamed into place only when everything succeeded.
"""

from __future__ import annotations

import functools
import os
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal, Protocol, get_args

import av

from engine.errors import Canceled, EngineError
from engine.resample import check_names
from engine.video.limits import MAX_FILE_SIZE, FrameCheck, refuse
from engine.video.output import Output, OutputSpec
from engine.video.planes import FrameScaler, plane_targets
from engine.video.probe import VideoInfo, plan, probe
from engine.video.stages import END, Channel, StageThreads, Stopped

Preset = Literal[
    "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower",
    "veryslow", "placebo",
]  # fmt: skip
X264_PRESETS: tuple[Preset, ...] = get_args(Preset)
MAX_CRF = 51  # libx264's constant rate factor runs from 0 (lossless) to 51
_DECODED_FRAMES = 4
_SCALED_FRAMES = 3
# Output frames are recycled: one being resampled, the queued ones, one in the encoder call.
# libx264 copies a frame before `encode` returns, so a frame is free again right after it.
# Reuse spares the allocation and first-touch page faults of a 12 MB 4k frame per frame.
_POOL_FRAMES = _SCALED_FRAMES + 2
# One resampler thread keeps far ahead of libx264 (about 8 ms per 4k frame against 100+ ms to
# encode it) and spends less CPU than two, which x264's own threads can use instead.
_RESAMPLE_THREADS = 1
# Decode and resample need about a tenth of the encoder's CPU and run ahead of it behind the
# queues, so they run in the background: they fill the moments libx264's frame threads leave
# a core idle instead of taking it from the encoder's critical path. On 2 cores, 360p->1080p
# wall time over the encoder limit went from 1.10 at nice 5 to 1.01 in one interleaved
# comparison; later benchmark runs read 1.01 to 1.08 with no code change.


class CancelEvent(Protocol):
    def is_set(self) -> bool: ...


Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class UpscaleResult:
    """What `upscale` produced; plain fields, ready for JSON (dataclasses.asdict)."""

    output: str
    width: int
    height: int
    frames: int
    duration: float
    frame_rate: float
    frame_rate_fraction: str
    size_bytes: int
    seconds: float
    source: VideoInfo


def _check_options(src: Path, dst: Path, filter: str, kernel: str, preset: str, crf: float):
    check_names(filter, kernel)
    if preset not in X264_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(X264_PRESETS)}")
    if isinstance(crf, bool) or not isinstance(crf, (int, float)) or not 0 <= crf <= MAX_CRF:
        raise ValueError(f"crf must be a number from 0 to {MAX_CRF}, not {crf!r}")
    if dst.exists() and dst.resolve() == src.resolve():
        raise ValueError("the output path must differ from the input path")


def upscale(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    resolution: str,
    *,
    filter: str = "lanczos3",
    kernel: str = "native",
    preset: str = "veryfast",
    crf: float = 18,
    progress: Progress | None = None,
    cancel: CancelEvent | None = None,
    max_file_size: int = MAX_FILE_SIZE,
) -> UpscaleResult:
    """Upscale the MP4 `src` to fit the `resolution` box and write the MP4 `dst`.

    Raises InvalidVideo for a breached input limit (before any output is written for the
    header-visible ones), TargetNotLarger, Canceled when `cancel.is_set()` (checked at least
    every 50 ms), ValueError for bad options and EngineError for encoder or file failures.
    No partial output is left behind on any failure.
    """
    started = time.perf_counter()
    src_path, dst_path = Path(src), Path(dst)
    setup = prepare(src_path, dst_path, resolution, filter, kernel, preset, crf, max_file_size)
    info = setup.info
    frames = run_into(
        dst_path,
        src_path,
        setup,
        whole_file,
        info.frames,
        audio=True,
        progress=progress,
        cancel=cancel,
    )
    return result_of(dst_path, info, setup.spec.width, setup.spec.height, frames, started)


def result_of(
    dst: Path, info: VideoInfo, width: int, height: int, frames: int, started: float
) -> UpscaleResult:
    """What an upscale into `dst` that began at `started` (perf_counter) produced."""
    return UpscaleResult(
        output=str(dst),
        width=width,
        height=height,
        frames=frames,
        duration=info.duration,
        frame_rate=info.frame_rate,
        frame_rate_fraction=info.frame_rate_fraction,
        size_bytes=dst.stat().st_size,
        seconds=time.perf_counter() - started,
        source=info,
    )


@dataclass(frozen=True)
class Setup:
    """What every run of one upscale shares: the input's facts, the output and the scaler."""

    info: VideoInfo
    spec: OutputSpec
    scaler: FrameScaler


def prepare(
    src: Path,
    dst: Path,
    resolution: str,
    filter: str,
    kernel: str,
    preset: str,
    crf: float,
    max_file_size: int,
) -> Setup:
    """Check the options and the input's headers, and fit the output (the engine's errors)."""
    _check_options(src, dst, filter, kernel, preset, crf)
    info = probe(src, max_file_size=max_file_size)
    out_w, out_h = plan(info, resolution)
    spec = OutputSpec(out_w, out_h, preset, crf)
    scaler = FrameScaler(
        plane_targets(
            info.chroma_format,
            info.chroma_location,
            info.orientation,
            (info.width, info.height),
            (out_w, out_h),
        ),
        info.orientation,
        spec.pixel_format(info),
        filter,
        kernel,
        threads=_RESAMPLE_THREADS,
    )
    return Setup(info, spec, scaler)


def whole_file(source: av.container.InputContainer) -> Iterator[av.Packet]:
    """Every packet of the video stream and of the audio streams (copied along)."""
    return source.demux(source.streams.video[0], *source.streams.audio)


# The packets a run decodes, in file order; a None among them drains the decoder (a window of
# the file ends with one, where the whole file ends with an empty packet per stream).
PacketSource = Callable[[av.container.InputContainer], Iterable[av.Packet | None]]


def run_into(
    dst: Path,
    src: Path,
    setup: Setup,
    packets: PacketSource,
    frames: int,
    *,
    audio: bool,
    progress: Progress | None,
    cancel: CancelEvent | None,
) -> int:
    """Decode `packets` of `src` (`frames` frames), resample and encode them into a
    temporary file beside `dst`, renamed into place when everything succeeded; returns the
    frame count written. Audio is copied along when `audio`."""
    temp = dst.with_name(f".{dst.name}.{secrets.token_hex(6)}.part")
    run = _Run(src, temp, setup, packets, frames, audio, progress, cancel)
    try:
        written = run.execute()
        os.replace(temp, dst)
    finally:
        temp.unlink(missing_ok=True)
    return written


def _drain(video: av.video.stream.VideoStream) -> list[av.VideoFrame]:
    """The frames the decoder still holds (a drain through the stream leaves their time
    base unset, where a packet's decode sets it)."""
    frames = video.decode(None)
    for frame in frames:
        frame.time_base = video.time_base
    return frames


class _Run:
    """One run of the stages: the stage threads, the channels between them and the output."""

    def __init__(
        self,
        src: Path,
        temp: Path,
        setup: Setup,
        packets: PacketSource,
        frames: int,
        audio: bool,
        progress: Progress | None,
        cancel: CancelEvent | None,
    ) -> None:
        self._src, self._temp, self._info, self._frames = src, temp, setup.info, frames
        self._spec, self._scaler = setup.spec, setup.scaler
        self._packets, self._audio = packets, audio
        self._progress, self._cancel = progress, cancel
        self._threads = StageThreads()
        self._decoded = Channel(self._threads.stop, _DECODED_FRAMES)
        self._scaled = Channel(self._threads.stop, _SCALED_FRAMES)
        self._free = Channel(self._threads.stop, _POOL_FRAMES)
        for _ in range(_POOL_FRAMES):
            self._free.put(self._scaler.new_frame())

    def execute(self) -> int:
        """Run every stage to the end; returns the frame count written."""
        try:
            with av.open(str(self._src), metadata_errors="ignore") as source:
                output = Output(self._temp, source, self._info, self._spec, audio=self._audio)
                try:
                    decode = functools.partial(self._decode, source)
                    self._threads.start("upscale-decode", decode, background=True)
                    self._threads.start("upscale-resample", self._resample, background=True)
                    frames = self._encode(output)
                except BaseException:
                    self._threads.close()
                    output.abandon()
                    raise
                self._threads.close()
                output.close()
                return frames
        except av.error.FFmpegError as exc:
            raise EngineError(f"video processing failed: {exc}") from exc

    def _check_cancel(self) -> None:
        if self._cancel is not None and self._cancel.is_set():
            raise Canceled("the upscale was canceled")
        if self._threads.error is not None:
            raise self._threads.error

    def _decode(self, source: av.container.InputContainer) -> None:
        video = source.streams.video[0]
        check = FrameCheck(Fraction(self._info.frame_rate_fraction), video.time_base, self._frames)
        try:
            for packet in self._packets(source):
                if packet is not None and packet.stream.type == "audio":
                    if packet.size:
                        self._decoded.put(packet)
                    continue
                for frame in packet.decode() if packet is not None else _drain(video):
                    check.frame(frame.pts, frame.interlaced_frame)
                    self._check_layout(frame)
                    self._decoded.put(frame)
        except av.error.FFmpegError as exc:
            refuse(
                "corrupt",
                "undecodable",
                "a valid H.264 stream",
                f"the video data is corrupt and cannot be decoded ({exc.strerror or exc})",
            )
        check.finish()
        self._decoded.put(END)

    def _check_layout(self, frame: av.VideoFrame) -> None:
        """A new SPS mid-stream may change the picture; the output was set up for the first."""
        info = self._info
        layout = (frame.width, frame.height, frame.format.name.replace("yuvj", "yuv"))
        expected = (info.stored_width, info.stored_height, info.pixel_format.replace("yuvj", "yuv"))
        if layout != expected:
            refuse(
                "corrupt",
                "{}x{} {}".format(*layout),
                "{}x{} {}".format(*expected),
                "the picture changes from {}x{} {} to {}x{} {} mid-stream".format(
                    *expected, *layout
                ),
            )

    def _encode_frames(self, output: Output) -> int:
        written = 0
        while (item := self._scaled.get(idle=self._check_cancel)) is not END:
            self._check_cancel()
            if isinstance(item, av.Packet):
                output.copy_audio(item)
                continue
            written += output.encode(item)
            self._free.put(item)
            if self._progress is not None and written:
                self._progress(written, self._frames)
        return written

    def _resample(self) -> None:
        while (item := self._decoded.get()) is not END:
            if isinstance(item, av.VideoFrame):
                item = self._scaler.scale(item, self._free.get())
            self._scaled.put(item)
        self._scaled.put(END)

    def _encode(self, output: Output) -> int:
        try:
            written = self._encode_frames(output)
        except Stopped:
            self._check_cancel()  # raises the reason the run stopped
            raise
        total = self._frames
        for _ in output.flush():
            written += 1
            if self._progress is not None:
                self._progress(written, total)
        return written
