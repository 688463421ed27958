"""`engine.compose`: frames drawn by the caller and a mono PCM track, encoded into one MP4
(H.264 by libx264, AAC by FFmpeg's native encoder) for the generated videos (talking avatar,
avatar motion).

The caller hands RGB frames one by one (an iterator, so a long video is never held in memory)
and the whole audio. The video track lasts `frames / fps`; the caller picks the frame count
that matches the audio's duration (see `frame_count`). The file is written beside `dst` and
renamed into place only when complete, so a failure or a cancel leaves nothing behind."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from engine.errors import Canceled, EngineError
from engine.video.output import OutputSpec, configure_x264
from engine.video.pipeline import MAX_CRF, X264_PRESETS, CancelEvent, Progress

# FFmpeg's native AAC encoder at a bit rate that keeps speech clean for mono.
_AAC_BIT_RATE = 96_000
# Rates the AAC encoder takes (its sampling-frequency table); other rates are refused.
AAC_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000)
# How many PCM samples go to the encoder per call (it re-frames to 1024 itself).
_AUDIO_CHUNK = 4096


@dataclass(frozen=True)
class ComposedVideo:
    """What `compose` wrote."""

    output: str
    width: int
    height: int
    frames: int
    fps: int
    duration: float  # of the video track: frames / fps
    audio_duration: float
    size_bytes: int


def frame_count(duration_s: float, fps: int) -> int:
    """The frames of a video as long as `duration_s` to the nearest frame (at least one; a
    tie takes the longer)."""
    return max(1, int(duration_s * fps + 0.5))


def compose(
    dst: str | os.PathLike[str],
    frames: Iterable[np.ndarray],
    *,
    width: int,
    height: int,
    fps: int,
    pcm: bytes,
    sample_rate: int,
    preset: str = "veryfast",
    crf: float = 18,
    total_frames: int | None = None,
    progress: Progress | None = None,
    cancel: CancelEvent | None = None,
) -> ComposedVideo:
    """Encode `frames` ((height, width, 3) uint8 RGB arrays; width and height even) at `fps`
    with `pcm` (16-bit little-endian mono at `sample_rate`, one of AAC_RATES) into the MP4
    `dst` (`+faststart`). `progress(done, total_frames)` is called per frame when the total is
    given. Raises Canceled when `cancel.is_set()` (checked every frame), ValueError for bad
    arguments, EngineError when encoding fails; no partial output is left on any failure."""
    dst_path = Path(dst)
    _check(preset, crf, width, height, fps, sample_rate)
    temp = dst_path.with_name(f".{dst_path.name}.{secrets.token_hex(6)}.part")
    try:
        written = _write(temp, frames, OutputSpec(width, height, preset, crf), fps,
                         pcm, sample_rate, total_frames, progress, cancel)  # fmt: skip
        os.replace(temp, dst_path)
    except av.error.FFmpegError as exc:
        raise EngineError(f"video encoding failed: {exc}") from exc
    finally:
        temp.unlink(missing_ok=True)
    return ComposedVideo(
        str(dst_path), width, height, written, fps, written / fps,
        len(pcm) / 2 / sample_rate, dst_path.stat().st_size,
    )  # fmt: skip


def _check(preset: str, crf: float, width: int, height: int, fps: int, sample_rate: int) -> None:
    if preset not in X264_PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {', '.join(X264_PRESETS)}")
    if isinstance(crf, bool) or not isinstance(crf, (int, float)) or not 0 <= crf <= MAX_CRF:
        raise ValueError(f"crf must be a number from 0 to {MAX_CRF}, not {crf!r}")
    if width % 2 or height % 2 or width < 2 or height < 2:
        raise ValueError(f"width and height must be even and positive, not {width}x{height}")
    if sample_rate not in AAC_RATES:
        raise ValueError(f"sample_rate must be one of {AAC_RATES}, not {sample_rate}")
    if not 1 <= fps <= 60:
        raise ValueError(f"fps must be from 1 to 60, not {fps}")


def _write(
    path: Path,
    frames: Iterable[np.ndarray],
    spec: OutputSpec,
    fps: int,
    pcm: bytes,
    sample_rate: int,
    total: int | None,
    progress: Progress | None,
    cancel: CancelEvent | None,
) -> int:
    with av.open(str(path), "w", format="mp4", container_options={"movflags": "+faststart"}) as out:
        video = _video_stream(out, spec, fps)
        audio = _AudioTrack(out, pcm, sample_rate)
        written = 0
        for rgb in frames:
            if cancel is not None and cancel.is_set():
                raise Canceled("the video was canceled")
            if rgb.shape != (spec.height, spec.width, 3) or rgb.dtype != np.uint8:
                raise ValueError(f"frame {written} is {rgb.shape} {rgb.dtype}, not the size set")
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(format="yuv420p")
            frame.pts = written
            out.mux(video.encode(frame))
            written += 1
            # The sound of the frames so far goes in beside them (interleaved, so a player
            # reading the file front to back needs no large buffer).
            audio.encode_until(written / fps)
            if progress is not None and total:
                progress(min(written, total), total)
        out.mux(video.encode(None))
        audio.finish()
    return written


def _video_stream(out: av.container.OutputContainer, spec: OutputSpec, fps: int):
    stream = out.add_stream("libx264", rate=fps)
    stream.width, stream.height, stream.pix_fmt = spec.width, spec.height, "yuv420p"
    stream.time_base = Fraction(1, fps)
    codec = stream.codec_context
    codec.time_base = Fraction(1, fps)
    # The RGB -> YUV conversion above is swscale's default: BT.601, limited range; say so.
    codec.colorspace = 6  # SMPTE 170M
    codec.color_range = 1  # limited (tv)
    configure_x264(codec, spec)
    return stream


class _AudioTrack:
    """The PCM, fed to the AAC encoder in order as the video advances."""

    def __init__(self, out: av.container.OutputContainer, pcm: bytes, rate: int) -> None:
        self._out, self._rate = out, rate
        self._samples = np.frombuffer(pcm, dtype="<i2")
        self._stream = out.add_stream("aac", rate=rate, layout="mono")
        self._stream.bit_rate = _AAC_BIT_RATE
        self._done = 0

    def encode_until(self, seconds: float) -> None:
        end = min(len(self._samples), round(seconds * self._rate))
        while self._done < end:
            stop = min(end, self._done + _AUDIO_CHUNK)
            chunk = np.ascontiguousarray(self._samples[self._done : stop].reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(chunk, format="s16", layout="mono")
            frame.sample_rate, frame.pts = self._rate, self._done
            frame.time_base = Fraction(1, self._rate)
            self._out.mux(self._stream.encode(frame))
            self._done = stop

    def finish(self) -> None:
        self.encode_until(len(self._samples) / self._rate)
        self._out.mux(self._stream.encode(None))
