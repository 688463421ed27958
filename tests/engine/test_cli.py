"""`avatar-service upscale`: exit statuses, --json, and the progress output."""

from __future__ import annotations

import io
import json

import pytest

from engine.cli import ProgressReport
from service.cli import main


def test_upscale_json(clip, tmp_path, capsys):
    dst = tmp_path / "out.mp4"
    status = main(["upscale", str(clip("four_x_cap")), str(dst), "--resolution", "4k",
                   "--preset", "ultrafast", "--crf", "20", "--json"])  # fmt: skip
    assert status == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["width"], result["height"], result["frames"]) == (384, 256, 6)
    assert result["frame_rate"] == 30.0 and result["frame_rate_fraction"] == "30/1"
    assert result["duration"] == pytest.approx(0.2)
    assert result["size_bytes"] == dst.stat().st_size and result["seconds"] > 0


def test_upscale_plain_output_and_progress_lines(clip, tmp_path, capsys):
    dst = tmp_path / "out.mp4"
    argv = ["upscale", str(clip("ntsc_rate")), str(dst), "--resolution", "2k", "--kernel", "numpy",
            "--filter", "bicubic", "--preset", "ultrafast"]  # fmt: skip
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 0
    assert captured.out.startswith(f"wrote {dst}: 640x360, 8 frames")
    assert "8/8 frames" in captured.err and "\r" not in captured.err


def test_invalid_input_exits_2_with_the_reason(clip, tmp_path, capsys):
    status = main(["upscale", str(clip("fps_61")), str(tmp_path / "out.mp4"),
                   "--resolution", "1080p"])  # fmt: skip
    assert status == 2
    assert "frame rate 61 fps exceeds the 60 fps limit" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_not_larger_exits_2(clip, tmp_path, capsys):
    status = main(["upscale", str(clip("not_smaller")), str(tmp_path / "out.mp4"),
                   "--resolution", "1080p"])  # fmt: skip
    assert status == 2
    assert "not be larger" in capsys.readouterr().err


def test_other_failures_exit_1(tmp_path, capsys):
    status = main(["upscale", str(tmp_path / "missing.mp4"), str(tmp_path / "out.mp4"),
                   "--resolution", "4k"])  # fmt: skip
    assert status == 1
    assert "missing.mp4" in capsys.readouterr().err


def test_unknown_resolution_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as caught:
        main(["upscale", "a.mp4", "b.mp4", "--resolution", "8k"])
    assert caught.value.code == 2


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal():
    terminal = Terminal()
    report = ProgressReport(terminal)
    for done in range(1, 11):
        report(done, 10)
    report.finish()
    text = terminal.getvalue()
    assert text.startswith("\r[") and "10/10 frames" in text and "fps" in text
    assert "ETA 0:00:00" in text and text.endswith("\n")
