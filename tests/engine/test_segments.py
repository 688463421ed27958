"""An upscale run as segments: cut only at closed-GOP keyframes, joined into exactly the frames,
timestamps and audio of a single pass, pictures as good as a single pass's."""

from __future__ import annotations

import threading
from fractions import Fraction

import av
import numpy as np
import pytest

from engine import (
    Canceled,
    EngineError,
    join_segments,
    plan_segments,
    upscale,
    upscale_segment,
)

# 90 frames at 30 fps with an IDR every 30 frames: cut points every second. (Shorter segments
# make the extra IDRs a visible share of the clip: 10-frame ones read 0.1 dB better than one
# pass, 30-frame ones 0.02 dB.)
CLOSED_GOP = "keyint=30:min-keyint=30:scenecut=0"
OPTIONS = dict(preset="veryfast", crf=18)  # B-frames: decode order differs from display order


def _frames(path) -> tuple[list[Fraction], list[np.ndarray]]:
    with av.open(str(path)) as container:
        video = container.streams.video[0]
        decoded = [(f.pts * video.time_base, f.to_ndarray()) for f in container.decode(video)]
    return [t for t, _ in decoded], [p for _, p in decoded]


def _audio(path) -> list[tuple[bytes, int]]:
    with av.open(str(path)) as container:
        return [(bytes(p), p.pts) for p in container.demux(audio=0) if p.size]


def _psnr(pictures: list[np.ndarray], reference: list[np.ndarray]) -> float:
    pairs = zip(pictures, reference, strict=True)
    error = np.mean([np.mean((a.astype(float) - b) ** 2) for a, b in pairs])
    return 10 * np.log10(255**2 / error)


def _segmented(src, dst, plan, work, **options):
    parts = []
    for segment in plan.segments:
        part = work / f"part-{segment.index}.mp4"
        upscale_segment(src, part, "1080p", segment, **options)
        parts.append(part)
    return join_segments(src, plan, parts, dst)


@pytest.fixture(scope="module")
def closed_gop(tmp_path_factory, clip_maker):
    path = tmp_path_factory.mktemp("segments") / "closed.mp4"
    return clip_maker(path, width=96, height=64, frames=90, x264_params=CLOSED_GOP)


def test_cuts_fall_on_idr_frames_about_the_segment_length_apart(closed_gop):
    plan = plan_segments(closed_gop, 0.9)
    assert [s.frames for s in plan.segments] == [30, 30, 30]
    assert [s.start_pts for s in plan.segments[1:]] == [s.end_pts for s in plan.segments[:-1]]
    assert plan.segments[-1].end_pts is None
    assert [s.frames for s in plan_segments(closed_gop, 1.5).segments] == [60, 30]
    assert plan_segments(closed_gop, 1.5).fingerprint != plan.fingerprint


def test_segmented_equals_single_pass(closed_gop, tmp_path):
    plan = plan_segments(closed_gop, 0.9)
    joined = _segmented(closed_gop, tmp_path / "joined.mp4", plan, tmp_path, **OPTIONS)
    upscale(closed_gop, tmp_path / "single.mp4", "1080p", **OPTIONS)
    upscale(closed_gop, tmp_path / "lossless.mp4", "1080p", preset="veryfast", crf=0)
    times, pictures = _frames(tmp_path / "joined.mp4")
    single_times, single = _frames(tmp_path / "single.mp4")
    _, lossless = _frames(tmp_path / "lossless.mp4")
    assert joined.frames == len(times) == len(single_times) == 90
    assert times == single_times
    assert _audio(tmp_path / "joined.mp4") == _audio(closed_gop)
    assert abs(_psnr(pictures, lossless) - _psnr(single, lossless)) <= 0.1


@pytest.mark.parametrize(
    "params",
    ["keyint=10:min-keyint=10:scenecut=0:open-gop=1", "keyint=infinite:scenecut=0"],
    ids=["open-gop", "single-keyframe"],
)
def test_inputs_without_closed_gop_cuts_run_as_one_segment(clip_maker, tmp_path, params):
    src = clip_maker(tmp_path / "src.mp4", width=96, height=64, frames=40, x264_params=params)
    plan = plan_segments(src, 0.3)
    assert [s.frames for s in plan.segments] == [40]
    _segmented(src, tmp_path / "joined.mp4", plan, tmp_path, preset="ultrafast")
    assert _frames(tmp_path / "joined.mp4")[0] == _frames(src)[0]


def test_canceled_segment_leaves_nothing(closed_gop, tmp_path):
    plan = plan_segments(closed_gop, 0.9)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Canceled):
        upscale_segment(closed_gop, tmp_path / "part.mp4", "1080p", plan.segments[1], cancel=cancel)
    assert list(tmp_path.iterdir()) == []


def test_join_refuses_parts_that_miss_frames(closed_gop, tmp_path):
    plan = plan_segments(closed_gop, 0.9)
    part = tmp_path / "part.mp4"
    upscale_segment(closed_gop, part, "1080p", plan.segments[0], preset="ultrafast")
    with pytest.raises(ValueError, match="1 parts for a plan of 3"):
        join_segments(closed_gop, plan, [part], tmp_path / "out.mp4")
    longer = plan_segments(closed_gop, 1.5)  # 60 and 30 frames
    with pytest.raises(EngineError, match="hold 60 frames where the input has 90"):
        join_segments(closed_gop, longer, [part, part], tmp_path / "out.mp4")
    assert not (tmp_path / "out.mp4").exists()
