"""`engine.probe` and `engine.plan`: what the headers say, and every header-visible limit."""

from __future__ import annotations

import dataclasses
import json

import av
import pytest

import engine
from engine import InvalidVideo, TargetNotLarger, VideoInfo, plan, probe

HEADER_LIMITS = [
    ("matroska", "container"),
    ("quicktime", "container"),
    ("mpeg4_video", "video_codec"),
    ("hevc", "video_codec"),
    ("ten_bit", "bit_depth"),
    ("monochrome", "pixel_format"),
    ("pq_transfer", "transfer"),
    ("hlg_transfer", "transfer"),
    ("interlaced", "field_order"),
    ("anamorphic", "sample_aspect_ratio"),
    ("mp3_audio", "audio_codec"),
    ("long", "duration"),
    ("fps_61", "frame_rate"),
    ("too_wide", "width"),
    ("too_tall", "height"),
    ("too_large", "area"),
    ("irregular_pts", "variable_frame_rate"),
    ("rotation_45", "rotation"),
    ("too_many_frames", "frames"),
]


@pytest.mark.parametrize(("name", "limit"), HEADER_LIMITS)
def test_each_header_limit_is_refused_by_name(clip, name, limit):
    with pytest.raises(InvalidVideo) as caught:
        probe(clip(name))
    error = caught.value
    assert error.limit == limit
    assert error.actual is not None and error.allowed is not None
    assert str(error) == error.message and error.message


def test_limit_messages_name_the_limit_and_both_values(clip):
    with pytest.raises(InvalidVideo) as caught:
        probe(clip("fps_61"))
    assert caught.value.message == "frame rate 61 fps exceeds the 60 fps limit"
    assert (caught.value.actual, caught.value.allowed) == (61, 60)
    with pytest.raises(InvalidVideo) as caught:
        probe(clip("too_large"))
    assert caught.value.message == (
        "area 2,119,936 pixels (1456x1456) exceeds the 2,100,000 pixel limit"
    )


def test_file_size_limit_is_a_parameter(clip):
    path = clip("four_x_cap")
    size = path.stat().st_size
    assert probe(path, max_file_size=size).size_bytes == size
    with pytest.raises(InvalidVideo) as caught:
        probe(path, max_file_size=size - 1)
    assert caught.value.limit == "file_size"
    assert (caught.value.actual, caught.value.allowed) == (size, size - 1)


def test_not_a_video_is_refused_as_container(tmp_path):
    path = tmp_path / "notes.mp4"
    path.write_text("this is not a video")
    with pytest.raises(InvalidVideo) as caught:
        probe(path)
    assert caught.value.limit == "container"


def test_landscape_headers(clip):
    info = probe(clip("landscape"))
    assert (info.width, info.height) == (640, 360)
    assert (info.stored_width, info.stored_height) == (640, 360)
    assert info.container == "mp4" and info.video_codec == "h264"
    assert info.frames == 5
    assert info.frame_rate == 30.0 and info.frame_rate_fraction == "30/1"
    assert info.duration == pytest.approx(5 / 30)
    assert info.pixel_format == "yuv420p" and info.chroma_format == "4:2:0"
    assert info.chroma_location == "left"
    assert info.color_range == "tv"
    assert info.audio_codecs == ("aac",) and info.has_audio
    assert info.size_bytes == clip("landscape").stat().st_size
    assert (info.rotation, info.mirrored) == (0, False)


def test_ntsc_rate_is_an_exact_fraction(clip):
    info = probe(clip("ntsc_rate"))
    assert info.frame_rate_fraction == "30000/1001"
    assert info.frame_rate == pytest.approx(29.97, abs=0.001)
    assert info.duration == pytest.approx(8 * 1001 / 30000, abs=1e-3)


@pytest.mark.parametrize(
    ("name", "rotation", "mirrored"),
    # 270 degrees then a mirror is the same picture as a mirror then 90 degrees.
    [("rotation_90", 90, False), ("rotation_270_mirrored", 90, True)],
)
def test_rotation_gives_the_displayed_size(clip, name, rotation, mirrored):
    info = probe(clip(name))
    assert (info.width, info.height) == (72, 128)
    assert (info.stored_width, info.stored_height) == (128, 72)
    assert (info.rotation, info.mirrored) == (rotation, mirrored)
    if not mirrored:  # FFmpeg's own reading of the matrix, on a decoded frame
        with av.open(str(clip(name))) as container:
            assert next(container.decode(video=0)).rotation % 360 == rotation


@pytest.mark.parametrize(
    ("name", "pixel_format", "chroma_format", "color_range"),
    [
        ("full_range", "yuvj420p", "4:2:0", "pc"),
        ("yuv422", "yuv422p", "4:2:2", "tv"),
        ("yuv444", "yuv444p", "4:4:4", "tv"),
    ],
)
def test_formats_and_ranges(clip, name, pixel_format, chroma_format, color_range):
    info = probe(clip(name))
    assert (info.pixel_format, info.chroma_format, info.color_range) == (
        pixel_format,
        chroma_format,
        color_range,
    )


def test_chroma_location_and_colour_tags_come_from_the_stream(clip):
    info = probe(clip("chroma_center_bt709"))
    assert info.chroma_location == "center"
    assert (info.color_primaries, info.color_transfer, info.color_space) == (1, 1, 1)


def test_audio_streams_are_listed(clip):
    assert probe(clip("two_aac")).audio_codecs == ("aac", "aac")
    info = probe(clip("no_audio"))
    assert info.audio_codecs == () and not info.has_audio


def test_video_info_serialises_to_plain_json(clip):
    info = probe(clip("landscape"))
    data = json.loads(json.dumps(dataclasses.asdict(info)))
    assert data["frame_rate_fraction"] == "30/1"
    assert VideoInfo(**{**data, "audio_codecs": tuple(data["audio_codecs"])}) == info


def test_plan_fits_the_displayed_size(clip):
    assert plan(probe(clip("landscape")), "1080p") == (1920, 1080)
    assert plan(probe(clip("rotation_90")), "4k") == (288, 512)
    with pytest.raises(TargetNotLarger):
        plan(probe(clip("not_smaller")), "1080p")


def test_public_names_are_exported():
    for name in ("probe", "plan", "upscale", "VideoInfo", "UpscaleResult", "Canceled"):
        assert name in engine.__all__ and hasattr(engine, name)
