"""One upscale as independent segments: where an input can be cut, one segment's upscale, and
the join of the upscaled segments into the output MP4.

A cut goes only where the frames after it decode without any before it and none of them is
shown before it: at an IDR picture (H.264's closed-GOP keyframe; an open-GOP I picture is a
keyframe to the container but its leading pictures reference the previous GOP) that no later
packet's timestamp precedes. Each segment is decoded from its cut up to the next cut,
resampled and encoded exactly as `upscale` does it, into a video-only MP4 that keeps the
input's timestamps. The join copies the segments' packets one after another (no re-encode)
with the input's audio, so the output has every frame once, at its own timestamp.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av

from engine.errors import EngineError
from engine.video.limits import MAX_FILE_SIZE
from engine.video.output import add_copied_audio
from engine.video.pipeline import (
    CancelEvent,
    Progress,
    UpscaleResult,
    prepare,
    result_of,
    run_into,
)
from engine.video.probe import probe

_NAL_IDR = 5


@dataclass(frozen=True)
class Segment:
    """Packets [first, end) in file order: from the packet with timestamp `start_pts` up to,
    not including, the one with `end_pts` (None: to the end of the stream)."""

    index: int
    start_pts: int
    end_pts: int | None
    frames: int


@dataclass(frozen=True)
class SegmentPlan:
    segments: tuple[Segment, ...]
    frames: int
    # A digest of the video packets (bytes and timestamps) and the cuts: a finished segment
    # is reused only for the very same input cut the very same way.
    fingerprint: str


@dataclass
class _Packet:
    pts: int
    idr: bool
    # False for a packet an edit list cuts: decoded (later frames may reference it), not shown.
    shown: bool


def _nal_types(data: bytes, length_size: int) -> Iterator[int]:
    """The NAL unit types of one length-prefixed (MP4) access unit."""
    at = 0
    while at + length_size < len(data):
        size = int.from_bytes(data[at : at + length_size], "big")
        yield data[at + length_size] & 0x1F
        at += length_size + size


def _length_size(extradata: bytes | None) -> int:
    # avcC's lengthSizeMinusOne (ISO/IEC 14496-15, 5.3.3.1); an Annex B stream has none.
    if not extradata or extradata[0] != 1 or len(extradata) < 5:
        raise EngineError("the video stream carries no avcC record; it cannot be segmented")
    return (extradata[4] & 0x03) + 1


def _scan(src: Path, digest: hashlib._Hash) -> tuple[list[_Packet], Fraction]:
    """Every video packet's timestamp and whether it is an IDR picture, in file order."""
    packets = []
    with av.open(str(src), metadata_errors="ignore") as source:
        video = source.streams.video[0]
        length_size = _length_size(video.codec_context.extradata)
        for packet in source.demux(video):
            if not packet.size:
                continue
            if packet.pts is None:
                raise EngineError("a video packet has no timestamp; the input cannot be segmented")
            data = bytes(packet)
            digest.update(packet.pts.to_bytes(8, "big", signed=True))
            digest.update(data)
            idr = packet.is_keyframe and _NAL_IDR in _nal_types(data, length_size)
            packets.append(_Packet(packet.pts, idr, not packet.is_discard))
        return packets, video.time_base


def _cut_points(packets: list[_Packet]) -> list[int]:
    """Indices of the packets a segment may start at (0 always)."""
    later_min = [0] * len(packets)
    low = None
    for at in range(len(packets) - 1, -1, -1):
        low = packets[at].pts if low is None else min(low, packets[at].pts)
        later_min[at] = low
    cuts, earlier_max = [0], None
    for at, packet in enumerate(packets):
        if at and packet.idr and earlier_max < packet.pts <= later_min[at]:
            cuts.append(at)
        earlier_max = packet.pts if earlier_max is None else max(earlier_max, packet.pts)
    return cuts


def plan_segments(
    src: str | os.PathLike[str], seconds: float, *, max_file_size: int = MAX_FILE_SIZE
) -> SegmentPlan:
    """Cut `src` into segments of at least `seconds` each (the last may be shorter), at the
    cut points the input offers: fewer segments, down to one, when it offers few."""
    if not seconds > 0:
        raise ValueError(f"segment seconds must be positive, not {seconds!r}")
    src = Path(src)
    probe(src, max_file_size=max_file_size)  # the header-visible limits first
    digest = hashlib.sha256(f"{seconds!r}".encode())
    packets, time_base = _scan(src, digest)
    if not packets:
        raise EngineError("the video stream has no frames")
    step = seconds / time_base
    starts, last = [0], packets[0].pts
    for at in _cut_points(packets)[1:]:
        if packets[at].pts - last >= step:
            starts.append(at)
            last = packets[at].pts
    ends = [*starts[1:], len(packets)]
    segments = tuple(
        Segment(
            index,
            packets[start].pts,
            packets[end].pts if end < len(packets) else None,
            sum(packet.shown for packet in packets[start:end]),
        )
        for index, (start, end) in enumerate(zip(starts, ends, strict=True))
    )
    digest.update(repr([(s.start_pts, s.end_pts) for s in segments]).encode())
    return SegmentPlan(segments, sum(s.frames for s in segments), digest.hexdigest())


def _window(segment: Segment, first: bool):
    """The packet source of one segment: seek to its cut, then its packets and a drain.

    The packets' timestamps are moved to start at 0: an MP4 that starts later starts with
    an empty edit, which MP4 keeps in the movie's coarse time scale (1/1000 s), so the
    timestamps read back would be off by a fraction of a tick. The join moves them back."""

    def packets(source: av.container.InputContainer) -> Iterator[av.Packet | None]:
        video = source.streams.video[0]
        if not first:
            source.seek(segment.start_pts, stream=video, backward=True, any_frame=False)
        started = first
        for packet in source.demux(video):
            if not packet.size:
                break
            if not started:
                started = packet.pts == segment.start_pts
                if not started:
                    continue
            if packet.pts == segment.end_pts:
                break
            packet.pts -= segment.start_pts
            if packet.dts is not None:
                packet.dts -= segment.start_pts
            yield packet
        if not started:
            raise EngineError(f"segment {segment.index}'s first frame was not found")
        yield None

    return packets


def upscale_segment(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    resolution: str,
    segment: Segment,
    *,
    filter: str = "lanczos3",
    kernel: str = "native",
    preset: str = "veryfast",
    crf: float = 18,
    progress: Progress | None = None,
    cancel: CancelEvent | None = None,
    max_file_size: int = MAX_FILE_SIZE,
) -> int:
    """Upscale one segment of `src` (from `plan_segments`) into the video-only MP4 `dst`,
    with `upscale`'s settings and errors; returns its frame count."""
    src_path, dst_path = Path(src), Path(dst)
    setup = prepare(src_path, dst_path, resolution, filter, kernel, preset, crf, max_file_size)
    return run_into(
        dst_path,
        src_path,
        setup,
        _window(segment, segment.index == 0),
        segment.frames,
        audio=False,
        progress=progress,
        cancel=cancel,
    )


def join_segments(
    src: str | os.PathLike[str],
    plan: SegmentPlan,
    parts: Sequence[str | os.PathLike[str]],
    dst: str | os.PathLike[str],
    *,
    max_file_size: int = MAX_FILE_SIZE,
) -> UpscaleResult:
    """Write the MP4 `dst`: the upscaled `parts` (`upscale_segment`'s outputs, one per
    segment of `plan`) copied one after another at their segments' times, with `src`'s
    audio streams copied bit for bit. Raises EngineError when the parts were not
    encoded alike or do not add up to the input's frames."""
    started = time.perf_counter()
    src_path, dst_path = Path(src), Path(dst)
    info = probe(src_path, max_file_size=max_file_size)
    temp = dst_path.with_name(f".{dst_path.name}.{secrets.token_hex(6)}.part")
    if len(parts) != len(plan.segments):
        raise ValueError(f"{len(parts)} parts for a plan of {len(plan.segments)} segments")
    starts = [segment.start_pts for segment in plan.segments]
    try:
        width, height, frames = _join(src_path, starts, [Path(p) for p in parts], temp)
        if frames != info.frames:
            raise EngineError(
                f"the segments hold {frames} frames where the input has {info.frames}"
            )
        os.replace(temp, dst_path)
    finally:
        temp.unlink(missing_ok=True)
    return result_of(dst_path, info, width, height, frames, started)


def _join(src: Path, starts: list[int], parts: list[Path], temp: Path) -> tuple[int, int, int]:
    """Copy the parts' video and the source's audio into `temp`, interleaved by time."""
    if not parts:
        raise EngineError("there are no segments to join")
    try:
        with (
            av.open(str(src), metadata_errors="ignore") as source,
            av.open(str(parts[0])) as first,
            av.open(
                str(temp), "w", format="mp4", container_options={"movflags": "+faststart"}
            ) as out,
        ):
            template = first.streams.video[0]
            video = out.add_stream_from_template(template)
            audio = {s.index: add_copied_audio(out, s) for s in source.streams.audio}
            offsets = _offsets(starts, source.streams.video[0].time_base, template.time_base)
            tracks = [_video_packets(parts, offsets, template.codec_context.extradata)]
            if audio:
                tracks.append(p for p in source.demux(*source.streams.audio) if p.size)
            frames = 0
            for packet in _interleaved(tracks):
                if packet.stream.type == "video":
                    frames += 1
                    packet.stream = video
                else:
                    packet.stream = audio[packet.stream.index]
                out.mux(packet)
            return template.width, template.height, frames
    except av.error.FFmpegError as exc:
        raise EngineError(f"the segments could not be joined: {exc}") from exc


def _offsets(starts: list[int], source_base: Fraction, part_base: Fraction) -> list[int]:
    """Each segment's start in the parts' time base (the encoder keeps the source's, or a
    multiple of it where MP4 wants a finer one, so the conversion is exact)."""
    offsets = [start * source_base / part_base for start in starts]
    if any(offset.denominator != 1 for offset in offsets):
        raise EngineError(f"the segments' time base {part_base} cannot carry the input's times")
    return [int(offset) for offset in offsets]


def _video_packets(
    parts: list[Path], offsets: list[int], extradata: bytes | None
) -> Iterator[av.Packet]:
    """Every part's video packets in turn, moved to its segment's start; each part must
    carry the first part's parameter sets (one sample description serves the output)."""
    for index, (path, offset) in enumerate(zip(parts, offsets, strict=True)):
        with av.open(str(path)) as part:
            stream = part.streams.video[0]
            if stream.codec_context.extradata != extradata:
                raise EngineError(
                    f"segment {index} was encoded with other parameters than segment 0"
                )
            for packet in part.demux(stream):
                if packet.size:
                    packet.pts += offset
                    packet.dts += offset
                    yield packet


def _interleaved(tracks: list[Iterator[av.Packet]]) -> Iterator[av.Packet]:
    """The packets of every track, in decode-time order across tracks."""
    heads = [next(track, None) for track in tracks]
    while any(head is not None for head in heads):
        at = min(
            (i for i, head in enumerate(heads) if head is not None),
            key=lambda i: heads[i].dts * heads[i].time_base,
        )
        yield heads[at]
        heads[at] = next(tracks[at], None)
