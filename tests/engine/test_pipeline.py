"""`engine.upscale`: sizes, frames, timestamps, audio bytes, colour siting, cancel and cleanup."""

from __future__ import annotations

import threading
import time
from fractions import Fraction

import av
import numpy as np
import pytest

from engine import Canceled, EngineError, InvalidVideo, TargetNotLarger, probe, upscale
from engine.video.limits import MAX_FRAMES, FrameCheck

FAST = dict(preset="ultrafast")

VALID = [
    ("landscape", "1080p", (1920, 1080)),
    ("portrait", "1080p", (1080, 1920)),
    ("three_two", "1080p", (1620, 1080)),
    ("four_x_cap", "4k", (384, 256)),
    ("ntsc_rate", "2k", (640, 360)),
    ("full_range", "1080p", (512, 288)),
    ("yuv422", "1080p", (512, 288)),
    ("yuv444", "1080p", (512, 288)),
    ("two_aac", "1080p", (512, 288)),
    ("rotation_90", "1080p", (288, 512)),
    ("rotation_270_mirrored", "1080p", (288, 512)),
    ("no_audio", "1080p", (512, 288)),
    ("chroma_center_bt709", "1080p", (512, 288)),
]


def frame_times(path) -> list[Fraction]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [frame.pts * stream.time_base for frame in container.decode(stream)]


def audio_packets(path) -> list[list[tuple[bytes, Fraction, Fraction]]]:
    with av.open(str(path)) as container:
        streams = list(container.streams.audio)
        if not streams:
            return []
        found: list[list[tuple[bytes, Fraction, Fraction]]] = [[] for _ in streams]
        for packet in container.demux(*streams):
            if packet.size:
                tb = packet.time_base
                found[streams.index(packet.stream)].append(
                    (bytes(packet), packet.pts * tb, packet.dts * tb)
                )
        return found


@pytest.mark.parametrize(("name", "resolution", "size"), VALID)
def test_valid_kind_keeps_frames_timing_audio_and_format(clip, tmp_path, name, resolution, size):
    src, dst = clip(name), tmp_path / "out.mp4"
    options = {} if name == "landscape" else FAST  # the defaults once, fast elsewhere
    result = upscale(src, dst, resolution, **options)
    before, after = probe(src), probe(dst)
    assert (result.width, result.height) == size == (after.width, after.height)
    assert (after.rotation, after.mirrored) == (0, False)
    assert result.frames == before.frames == after.frames
    assert after.frame_rate_fraction == before.frame_rate_fraction == result.frame_rate_fraction
    assert after.duration == pytest.approx(before.duration, abs=1e-3)
    for field in ("chroma_format", "chroma_location", "color_range", "color_space",
                  "color_primaries", "color_transfer", "audio_codecs"):  # fmt: skip
        assert getattr(after, field) == getattr(before, field), field
    assert frame_times(dst) == frame_times(src)
    assert audio_packets(dst) == audio_packets(src)
    assert result.size_bytes == dst.stat().st_size and result.source == before
    assert list(tmp_path.iterdir()) == [dst]


def test_output_is_faststart_h264(clip, tmp_path):
    dst = tmp_path / "out.mp4"
    upscale(clip("four_x_cap"), dst, "4k", **FAST)
    head = dst.read_bytes()[:4096]
    assert 0 <= head.find(b"moov") < head.find(b"mdat") or b"mdat" not in head
    with av.open(str(dst)) as container:
        assert container.streams.video[0].codec_context.name == "h264"


def _bar_planes(width: int, height: int) -> list[np.ndarray]:
    """Y and U change every 16 luma columns, V every 16 luma rows (8 chroma samples)."""
    levels = np.array([60, 200, 90, 170, 40, 220, 120, 80], np.uint8)
    x = np.arange(width)
    y = np.arange(height)
    luma = np.tile(levels[(x // 16) % 8], (height, 1))
    u = np.tile(levels[(np.arange(width // 2) // 8) % 8], (height // 2, 1))
    v = np.tile(levels[::-1][(y[: height // 2] // 8) % 8][:, None], (1, width // 2))
    return [luma, u, v]


def _crossings(line: np.ndarray, first: int, count: int, period: int) -> list[float]:
    """Sub-sample positions where `line` crosses halfway between neighbouring plateaus."""
    found = []
    for step in range(1, count):
        edge = step * period - first
        low, high = float(line[edge - period // 2]), float(line[edge + period // 2 - 1])
        middle = (low + high) / 2
        for i in range(edge - period // 2, edge + period // 2 - 1):
            a, b = float(line[i]), float(line[i + 1])
            if (a - middle) * (b - middle) <= 0 and a != b:
                found.append(i + (middle - a) / (b - a))
                break
    return found


def _expected_crossing(k: int, site: float, scale: int) -> float:
    """Output chroma position of an input chroma step between samples k-1 and k.

    Input chroma sample i sits at luma 2i + site + 0.5 (pixel i spans [i, i+1)), so the step
    is at 2k + site - 0.5; scaled, then read back in output chroma samples of the same siting.
    """
    return (scale * (2 * k + site - 0.5) - site - 0.5) / 2


@pytest.mark.parametrize(("location", "h_site", "v_site"), [(0, 0.0, 0.5), (1, 0.5, 0.5),
                                                           (2, 0.0, 0.0)])  # fmt: skip
def test_coloured_bars_keep_colours_and_edges(clip_maker, frame_of_planes, tmp_path, location,
                                              h_site, v_site):  # fmt: skip
    width, height, scale = 128, 64, 4
    planes = _bar_planes(width, height)
    src = clip_maker(
        tmp_path / "bars.mp4", width=width, height=height, frames=2, audio=(),
        picture=lambda i, w, h: frame_of_planes(planes, "yuv420p"),
        options={"qp": "0"}, x264_params=f"chromaloc={location}",
    )  # fmt: skip
    dst = tmp_path / "out.mp4"
    upscale(src, dst, "1080p", crf=0, **FAST)
    with av.open(str(dst)) as container:
        frame = next(container.decode(video=0))
        y, u, v = (frame.planes[i] for i in range(3))
        out = [np.frombuffer(p, np.uint8).reshape(p.height, p.line_size)[:, : p.width]
               for p in (y, u, v)]  # fmt: skip
    luma_row, u_row, v_col = out[0][100], out[1][60], out[2][:, 100]
    # colours: each bar's middle keeps its level
    for bar in range(width // 16):
        assert abs(int(luma_row[bar * 64 + 32]) - int(planes[0][0, bar * 16])) <= 2
        assert abs(int(u_row[bar * 32 + 16]) - int(planes[1][0, bar * 8])) <= 2
    for bar in range(height // 16):
        assert abs(int(v_col[bar * 32 + 16]) - int(planes[2][bar * 8, 0])) <= 2
    # edges: luma steps at 16b land at 64b; chroma steps where their siting puts them
    luma_edges = _crossings(luma_row.astype(float), 0, width // 16, 64)
    assert luma_edges == pytest.approx([64 * b - 0.5 for b in range(1, width // 16)], abs=0.2)
    u_edges = _crossings(u_row.astype(float), 0, width // 16, 32)
    expected_u = [_expected_crossing(8 * b, h_site, scale) for b in range(1, width // 16)]
    assert u_edges == pytest.approx(expected_u, abs=0.2)
    v_edges = _crossings(v_col.astype(float), 0, height // 16, 32)
    expected_v = [_expected_crossing(8 * b, v_site, scale) for b in range(1, height // 16)]
    assert v_edges == pytest.approx(expected_v, abs=0.2)


def test_rotated_output_is_upright(clip_maker, tmp_path):
    """A marker at the stored top-left ends bottom-left after a 90 degree counter-clockwise turn."""

    def marked(index, width, height):
        image = np.full((height, width, 3), 30, np.uint8)
        image[:8, :8] = 230
        return image

    src = clip_maker(tmp_path / "turned.mp4", width=64, height=32, frames=2, audio=(),
                     rotation=90, picture=marked)  # fmt: skip
    dst = tmp_path / "out.mp4"
    upscale(src, dst, "1080p", **FAST)
    with av.open(str(dst)) as container:
        luma = next(container.decode(video=0)).to_ndarray(format="gray")
    assert luma.shape == (256, 128)
    rows, cols = np.nonzero(luma > 130)
    assert rows.min() >= 256 - 32 - 2 and cols.max() <= 32 + 2


@pytest.mark.parametrize(
    ("name", "limit"),
    [
        ("interlaced_frames", "interlaced"),
        ("irregular_frames", "variable_frame_rate"),
        ("size_change", "corrupt"),
        ("truncated", "corrupt"),
        ("garbled", "corrupt"),
    ],
)
def test_decode_time_breaches_fail_and_leave_nothing(clip, tmp_path, name, limit):
    probe(clip(name))  # the headers alone look fine
    with pytest.raises(InvalidVideo) as caught:
        upscale(clip(name), tmp_path / "out.mp4", "1080p", **FAST)
    assert caught.value.limit == limit
    assert list(tmp_path.iterdir()) == []


def test_frame_check_counts_past_the_limit():
    check = FrameCheck(Fraction(30), Fraction(1, 30), MAX_FRAMES + 1)
    for index in range(MAX_FRAMES):
        check.frame(index, False)
    with pytest.raises(InvalidVideo) as caught:
        check.frame(MAX_FRAMES, False)
    assert caught.value.limit == "frames"


def test_input_limits_come_before_the_box_fit(clip, tmp_path):
    with pytest.raises(InvalidVideo) as caught:
        upscale(clip("too_large"), tmp_path / "out.mp4", "1080p")
    assert caught.value.limit == "area"
    with pytest.raises(TargetNotLarger):
        upscale(clip("not_smaller"), tmp_path / "out.mp4", "1080p")
    assert list(tmp_path.iterdir()) == []


def test_progress_reports_every_frame(clip, tmp_path):
    calls = []
    result = upscale(clip("ntsc_rate"), tmp_path / "out.mp4", "2k",
                     progress=lambda done, total: calls.append((done, total)), **FAST)  # fmt: skip
    assert [done for done, _ in calls] == list(range(1, result.frames + 1))
    assert {total for _, total in calls} == {result.frames}


def test_cancel_stops_quickly_and_leaves_nothing(clip, tmp_path):
    cancel = threading.Event()
    canceled_at = []

    def on_progress(done, total):
        if done == 2 and not cancel.is_set():
            cancel.set()
            canceled_at.append(time.monotonic())

    with pytest.raises(Canceled):
        upscale(clip("many_frames"), tmp_path / "out.mp4", "4k", progress=on_progress,
                cancel=cancel)  # fmt: skip
    assert time.monotonic() - canceled_at[0] < 1.0
    assert list(tmp_path.iterdir()) == []
    assert issubclass(Canceled, EngineError)


def test_cancel_from_another_thread(clip, tmp_path):
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    started = time.monotonic()
    with pytest.raises(Canceled):
        upscale(clip("many_frames"), tmp_path / "out.mp4", "4k", cancel=cancel)
    timer.join()
    assert time.monotonic() - started < 0.3 + 1.0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "options",
    [dict(filter="nearest"), dict(kernel="gpu"), dict(preset="warp"), dict(crf=52),
     dict(crf=True)],
)  # fmt: skip
def test_bad_options_are_value_errors(clip, tmp_path, options):
    with pytest.raises(ValueError):
        upscale(clip("four_x_cap"), tmp_path / "out.mp4", "4k", **options)
    assert list(tmp_path.iterdir()) == []


def test_kernels_agree(clip, tmp_path):
    src = clip("four_x_cap")
    decoded = {}
    for kernel in ("native", "numpy"):
        dst = tmp_path / f"{kernel}.mp4"
        upscale(src, dst, "4k", kernel=kernel, crf=0, **FAST)
        with av.open(str(dst)) as container:
            decoded[kernel] = next(container.decode(video=0)).to_ndarray(format="gray")
    difference = np.abs(decoded["native"].astype(int) - decoded["numpy"].astype(int))
    assert difference.max() <= 2
