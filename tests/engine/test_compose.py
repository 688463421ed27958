"""engine.compose: drawn frames and PCM into one MP4 (H.264 + AAC), durations kept, no file left
behind on a failure or a cancel."""

from __future__ import annotations

import threading

import av
import numpy as np
import pytest

import engine

RATE, FPS = 24_000, 25


def tone(seconds: float) -> bytes:
    t = np.arange(round(seconds * RATE)) / RATE
    return (np.sin(2 * np.pi * 220 * t) * 8000).astype("<i2").tobytes()


def frames(count: int, side: int = 64):
    for i in range(count):
        yield np.full((side, side, 3), (i * 9) % 256, np.uint8)


@pytest.mark.parametrize("seconds", [0.5, 1.23])
def test_the_video_lasts_as_long_as_its_sound(tmp_path, seconds):
    count = engine.frame_count(seconds, FPS)
    out = engine.compose(tmp_path / "v.mp4", frames(count), width=64, height=64, fps=FPS,
                         pcm=tone(seconds), sample_rate=RATE)  # fmt: skip
    assert out.frames == count and abs(out.duration - seconds) <= 0.5 / FPS + 1e-9
    with av.open(str(tmp_path / "v.mp4")) as container:
        video, audio = container.streams.video[0], container.streams.audio[0]
        assert (video.codec_context.name, audio.codec_context.name) == ("h264", "aac")
        assert abs(float(audio.duration * audio.time_base) - seconds) <= 1 / FPS
        assert sum(1 for _ in container.decode(video)) == count


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"width": 63}, "even"),
        ({"sample_rate": 11000}, "sample_rate"),
        ({"fps": 0}, "fps"),
        ({"preset": "fastest"}, "preset"),
        ({"crf": 60}, "crf"),
    ],
)
def test_bad_arguments_are_refused(tmp_path, change, says):
    args = {"width": 64, "height": 64, "fps": FPS, "pcm": tone(0.1), "sample_rate": RATE} | change
    with pytest.raises(ValueError, match=says):
        engine.compose(tmp_path / "v.mp4", frames(2), **args)
    assert not list(tmp_path.iterdir())


def test_a_cancel_or_a_wrong_frame_leaves_nothing(tmp_path):
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(engine.Canceled):
        engine.compose(tmp_path / "v.mp4", frames(5), width=64, height=64, fps=FPS,
                       pcm=tone(0.2), sample_rate=RATE, cancel=cancel)  # fmt: skip
    with pytest.raises(ValueError, match="frame 0"):
        engine.compose(tmp_path / "v.mp4", frames(5, side=32), width=64, height=64, fps=FPS,
                       pcm=tone(0.2), sample_rate=RATE)  # fmt: skip
    assert not list(tmp_path.iterdir())
