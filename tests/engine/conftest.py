"""Test videos for the probe and pipeline tests, generated once per session with PyAV.

`clip(name)` builds (once) and returns the path of a named clip from `CLIPS` or `CRAFTED`;
`make_clip(path, **spec)` writes a custom one. Clips are tiny (<= 640x640, <= 12 frames) so that
the whole engine suite stays within its time budget.

How the header-level limits are produced:
- rotation: `VideoStream.set_display_rotation` (PyAV 18), which FFmpeg writes as the `tkhd` matrix;
- interlaced headers: x264 `interlaced=1`; SAR: the codec context's `sample_aspect_ratio`;
- HDR: the codec context's `color_trc`; VFR headers: irregular frame pts;
- decode-time breaches are spliced from packets of two encodes (see `CRAFTED`).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

SAMPLE_RATE = 48_000
AUDIO_FRAME = 1024


def moving_picture(index: int, width: int, height: int) -> np.ndarray:
    """An RGB frame with smooth gradients and a square that moves: content with motion."""
    y, x = np.mgrid[0:height, 0:width]
    image = np.empty((height, width, 3), np.uint8)
    image[..., 0] = (x * 255 // max(width - 1, 1) + index * 5) % 256
    image[..., 1] = y * 255 // max(height - 1, 1)
    image[..., 2] = 128 + 100 * np.sin((x + y + index * 3) / 7.0)
    side = max(min(width, height) // 4, 2)
    left = (index * 3) % max(width - side, 1)
    image[height // 3 : height // 3 + side, left : left + side] = (250, 250, 40)
    return image


def _audio(container: av.container.OutputContainer, codec: str, frames: int, rate: Fraction):
    stream = container.add_stream(codec, rate=SAMPLE_RATE)
    stream.layout = "mono"
    seconds = frames / rate
    chunks = int(seconds * SAMPLE_RATE) // AUDIO_FRAME + 1
    tone = 220 * (len(container.streams.audio))
    for chunk in range(chunks):
        t = (np.arange(AUDIO_FRAME) + chunk * AUDIO_FRAME) / SAMPLE_RATE
        samples = (0.3 * np.sin(2 * np.pi * tone * t)).astype(np.float32)[None, :]
        frame = av.AudioFrame.from_ndarray(samples, format="fltp", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        frame.pts = chunk * AUDIO_FRAME
        yield stream, frame
    yield stream, None


def make_clip(
    path: Path,
    *,
    width: int = 96,
    height: int = 64,
    frames: int = 6,
    rate: Fraction | int = 30,
    pix_fmt: str = "yuv420p",
    codec: str = "libx264",
    container: str = "mp4",
    audio: tuple[str, ...] = ("aac",),
    rotation: int | None = None,
    hflip: bool = False,
    x264_params: str = "",
    codec_attrs: dict[str, Any] | None = None,
    pts: list[int] | None = None,
    picture: Callable[[int, int, int], Any] = moving_picture,
    options: dict[str, str] | None = None,
) -> Path:
    """Encode a clip; `picture(i, w, h)` returns an RGB array or a ready av.VideoFrame."""
    rate = Fraction(rate)
    movflags = {"movflags": "+faststart"} if container == "mp4" else {}
    with av.open(str(path), "w", format=container, container_options=movflags) as out:
        video = out.add_stream(codec, rate=rate)
        video.width, video.height, video.pix_fmt = width, height, pix_fmt
        opts = dict(options or {})
        if x264_params:
            opts["x264-params"] = x264_params
        video.options = opts
        for name, value in (codec_attrs or {}).items():
            setattr(video.codec_context, name, value)
        if rotation is not None or hflip:
            video.set_display_rotation(rotation or 0, hflip=hflip)
        audio_frames = [list(_audio(out, name, frames, rate)) for name in audio]
        for index in range(frames):
            image = picture(index, width, height)
            frame = image if isinstance(image, av.VideoFrame) else _rgb_frame(image)
            frame.pts = index if pts is None else pts[index]
            out.mux(video.encode(frame))
        out.mux(video.encode(None))
        for items in audio_frames:
            for stream, frame in items:
                out.mux(stream.encode(frame))
    return path


def _rgb_frame(image: np.ndarray) -> av.VideoFrame:
    return av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")


def yuv_frame(planes: list[np.ndarray], pix_fmt: str) -> av.VideoFrame:
    """A frame whose Y, U and V planes hold exactly the given arrays."""
    height, width = planes[0].shape
    frame = av.VideoFrame(width, height, pix_fmt)
    for array, plane in zip(planes, frame.planes, strict=True):
        rows = np.frombuffer(plane, np.uint8).reshape(plane.height, plane.line_size)
        rows[:, : plane.width] = array
    return frame


# Clips by name -> make_clip arguments; the tests hold what each must produce or be refused for.
CLIPS: dict[str, dict[str, Any]] = {
    # valid kinds
    "landscape": dict(width=640, height=360, frames=5),
    "portrait": dict(width=360, height=640, frames=5),
    "three_two": dict(width=540, height=360, frames=5),
    "four_x_cap": dict(width=96, height=64),
    "ntsc_rate": dict(width=160, height=90, frames=8, rate=Fraction(30000, 1001)),
    "full_range": dict(width=128, height=72, pix_fmt="yuvj420p"),
    "yuv422": dict(width=128, height=72, pix_fmt="yuv422p"),
    "yuv444": dict(width=128, height=72, pix_fmt="yuv444p"),
    "two_aac": dict(width=128, height=72, audio=("aac", "aac")),
    "rotation_90": dict(width=128, height=72, rotation=90),
    "rotation_270_mirrored": dict(width=128, height=72, rotation=270, hflip=True),
    "no_audio": dict(width=128, height=72, audio=()),
    "chroma_center_bt709": dict(width=128, height=72, x264_params="chromaloc=1",
                                codec_attrs=dict(color_primaries=1, color_trc=1, colorspace=1)),
    "many_frames": dict(width=320, height=240, frames=150, audio=()),
    "not_smaller": dict(width=2000, height=64, frames=1, audio=()),
    # header-visible breaches
    "matroska": dict(container="matroska"),
    "quicktime": dict(container="mov"),
    "mpeg4_video": dict(codec="mpeg4"),
    "hevc": dict(codec="libx265", options={"x265-params": "log-level=error"}),
    "ten_bit": dict(pix_fmt="yuv420p10le"),
    "monochrome": dict(pix_fmt="gray"),
    "pq_transfer": dict(codec_attrs=dict(color_trc=16, color_primaries=9)),
    "hlg_transfer": dict(codec_attrs=dict(color_trc=18)),
    "interlaced": dict(x264_params="interlaced=1:tff=1"),
    "anamorphic": dict(codec_attrs=dict(sample_aspect_ratio=Fraction(4, 3))),
    "mp3_audio": dict(audio=("aac", "mp3")),
    "long": dict(frames=2, rate=Fraction(1, 301), audio=()),
    "fps_61": dict(rate=61, frames=3),
    "too_wide": dict(width=4098, height=16, frames=1, audio=()),
    "too_tall": dict(width=16, height=4098, frames=1, audio=()),
    "too_large": dict(width=1456, height=1456, frames=1, audio=()),
    "irregular_pts": dict(frames=6, pts=[0, 1, 2, 4, 5, 6]),
    "rotation_45": dict(rotation=45),
}  # fmt: skip


def _remux(path: Path, sources: list[Path], edit: Callable[[int, av.Packet, int], None]) -> Path:
    """Write the video packets of `sources` one after another into `path`, after `edit`."""
    packets: list[av.Packet] = []
    with av.open(str(sources[0])) as first, av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream_from_template(first.streams.video[0])
        end = 0
        for source in sources:
            with av.open(str(source)) as container:
                found = [p for p in container.demux(container.streams.video[0]) if p.size]
            step = found[1].dts - found[0].dts
            shift = end - found[0].dts
            for packet in found:
                packet.dts += shift
                packet.pts += shift
            end = found[-1].dts + step
            packets += found
        for index, packet in enumerate(packets):
            edit(index, packet, packets[1].dts - packets[0].dts)
            packet.stream = stream
            out.mux(packet)
    return path


def _frame_copies(path: Path, work: Path, count: int) -> Path:
    """`count` copies of one intra frame: a valid stream with more frames than allowed."""
    source = make_clip(work / "one.mp4", width=16, height=16, frames=1, rate=60, audio=())
    with av.open(str(source)) as container:
        stream = container.streams.video[0]
        packet = next(p for p in container.demux(stream) if p.size)
        with av.open(str(path), "w", format="mp4") as out:
            target = out.add_stream_from_template(stream)
            step = int(1 / (60 * stream.time_base))
            for index in range(count):
                copy = av.Packet(bytes(packet))
                copy.pts = copy.dts = index * step
                copy.duration = step
                copy.time_base = stream.time_base
                copy.is_keyframe = True
                copy.stream = target
                out.mux(copy)
    return path


def _crafted(name: str, path: Path, work: Path) -> Path:
    base = dict(width=64, height=48, frames=6, audio=(), x264_params="bframes=0")
    if name == "interlaced_frames":  # progressive headers, then interlaced frames (new SPS)
        first = make_clip(work / "progressive.mp4", **base)
        second = make_clip(work / "fields.mp4", **{**base, "x264_params":
                           "bframes=0:interlaced=1:repeat-headers=1"})  # fmt: skip
        return _remux(path, [first, second], lambda index, packet, step: None)
    if name == "size_change":  # a second SPS switches to another picture size
        first = make_clip(work / "small.mp4", **base)
        second = make_clip(work / "wider.mp4", **{**base, "width": 80,
                           "x264_params": "bframes=0:repeat-headers=1"})  # fmt: skip
        return _remux(path, [first, second], lambda index, packet, step: None)
    if name == "irregular_frames":  # regular decode times, one frame shown late
        source = make_clip(work / "regular.mp4", **{**base, "frames": 8})

        def late(index: int, packet: av.Packet, step: int) -> None:
            if index >= 4:
                packet.pts += step

        return _remux(path, [source], late)
    if name == "too_many_frames":
        return _frame_copies(path, work, 18_001)
    if name == "truncated":  # moov up front (faststart), media data cut short
        whole = make_clip(work / "whole.mp4", width=128, height=96, frames=12, audio=())
        data = whole.read_bytes()
        path.write_bytes(data[: len(data) * 2 // 3])
        return path
    if name == "garbled":  # media data overwritten with noise
        whole = make_clip(work / "whole2.mp4", width=128, height=96, frames=12, audio=())
        data = bytearray(whole.read_bytes())
        start = (data.find(b"mdat") + len(data)) // 2
        noise = np.random.default_rng(7).integers(0, 256, len(data) - start, np.uint8)
        data[start:] = noise.tobytes()
        path.write_bytes(bytes(data))
        return path
    raise KeyError(name)


CRAFTED = (
    "interlaced_frames",
    "size_change",
    "irregular_frames",
    "too_many_frames",
    "truncated",
    "garbled",
)


@pytest.fixture(scope="session")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    root = tmp_path_factory.mktemp("clips")
    built: dict[str, Path] = {}

    def build(name: str) -> Path:
        if name not in built:
            if name in CRAFTED:
                work = root / f"{name}-parts"
                work.mkdir()
                built[name] = _crafted(name, root / f"{name}.mp4", work)
            else:
                spec = CLIPS[name]
                if spec.get("codec", "libx264") not in av.codecs_available:
                    pytest.skip(f"this FFmpeg build has no {spec['codec']} encoder")
                suffix = {"matroska": ".mkv", "mov": ".mov"}.get(spec.get("container", ""), ".mp4")
                built[name] = make_clip(root / f"{name}{suffix}", **spec)
        return built[name]

    return build


@pytest.fixture(scope="session")
def clip_maker() -> Callable[..., Path]:
    return make_clip


@pytest.fixture(scope="session")
def frame_of_planes() -> Callable[[list[np.ndarray], str], av.VideoFrame]:
    return yuv_frame
