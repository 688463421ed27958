"""The libx264 settings every upscale (and the benchmark's encoder limit) uses."""

from __future__ import annotations

import re
from fractions import Fraction

import av
import numpy as np
import pytest

from engine.video.output import OutputSpec, configure_x264


def _configured(width: int, height: int, params: tuple[str, ...] = ()):
    codec = av.CodecContext.create("libx264", "w")
    codec.width, codec.height, codec.pix_fmt = width, height, "yuv420p"
    codec.time_base = Fraction(1, 30)
    configure_x264(codec, OutputSpec(width, height, "ultrafast", 18), params)
    return codec


def _entries(codec) -> dict[str, str]:
    params = codec.options.get("x264-params", "")
    return dict(entry.split("=", 1) for entry in params.split(":") if entry)


def _x264_settings(codec, width: int, height: int) -> dict[str, str]:
    """The settings libx264 ran with, from the text it writes into the first frame."""
    frame = av.VideoFrame.from_ndarray(np.zeros((height, width, 3), np.uint8), format="rgb24")
    frame = frame.reformat(format="yuv420p")
    frame.pts = 0
    first = bytes((codec.encode(frame) + codec.encode(None))[0])
    return {k.decode(): v.decode() for k, v in re.findall(rb" (\w+)=([\w.:]+)", first)}


def test_4k_output_splits_the_lookahead_and_keeps_given_params():
    codec = _configured(3840, 2160, ("chromaloc=1",))
    assert _entries(codec)["chromaloc"] == "1"
    assert codec.options["preset"] == "ultrafast" and codec.options["crf"] == "18"
    settings = _x264_settings(codec, 3840, 2160)
    assert int(settings["lookahead_threads"]) >= 2
    assert settings["sliced_threads"] == "0"  # frame threads


@pytest.mark.parametrize(("params", "expected"), [((), {}), (("chromaloc=2",), {"chromaloc": "2"})])
def test_smaller_output_keeps_x264s_lookahead_threads(params, expected):
    codec = _configured(1920, 1080, params)
    assert _entries(codec) == expected
    assert ("x264-params" in codec.options) == bool(params)
