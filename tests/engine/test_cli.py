"""`avatar-service upscale`: exit statuses and their messages, --json, --help, and the progress
output."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cli import EXIT_STATUSES, ProgressReport
from service.cli import main

AVATAR_SERVICE = str(Path(sys.executable).with_name("avatar-service"))
PROG = "avatar-service upscale"

# Runs the real console script with SIGINT at its default (a shell starts background jobs
# with SIGINT ignored, and Python would keep ignoring it) and optionally a cap on the size of
# files it writes, past which a write fails with EFBIG as on a full disk.
_LAUNCH = """
import os, resource, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
limit = int(sys.argv[1])
if limit:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
os.execv(sys.argv[2], sys.argv[2:])
"""


def start(*args: str, file_size_limit: int = 0) -> subprocess.Popen:
    command = [sys.executable, "-c", _LAUNCH, str(file_size_limit), AVATAR_SERVICE, "upscale"]
    return subprocess.Popen(
        [*command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def upscale(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["upscale", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def only_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


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


@pytest.mark.parametrize(
    ("name", "reason"),
    [("fps_61", "frame rate 61 fps exceeds the 60 fps limit"), ("not_smaller", "not be larger")],
)
def test_invalid_input_exits_6_with_the_reason(clip, tmp_path, capsys, name, reason):
    status, _, err = upscale(capsys, str(clip(name)), str(tmp_path / "out.mp4"), "--resolution",
                             "1080p")  # fmt: skip
    assert status == 6
    assert only_line(err).startswith(f"{PROG}: invalid input: ") and reason in err
    assert list(tmp_path.iterdir()) == []


def test_missing_input_exits_3_naming_the_file(tmp_path, capsys):
    missing = tmp_path / "missing.mp4"
    status, _, err = upscale(capsys, str(missing), str(tmp_path / "out.mp4"), "--resolution", "4k")
    assert status == 3
    assert only_line(err) == f"{PROG}: input file {missing} does not exist"


def test_folder_as_input_exits_3(tmp_path, capsys):
    status, _, err = upscale(capsys, str(tmp_path), str(tmp_path / "out.mp4"), "--resolution", "4k")
    assert status == 3
    assert only_line(err) == f"{PROG}: input {tmp_path} is not a file"


def test_missing_output_folder_exits_4_naming_the_folder(clip, tmp_path, capsys):
    folder = tmp_path / "not" / "there"
    status, _, err = upscale(capsys, str(clip("four_x_cap")), str(folder / "out.mp4"),
                             "--resolution", "4k")  # fmt: skip
    assert status == 4
    assert only_line(err) == f"{PROG}: output folder {folder} does not exist"


def test_folder_as_output_exits_4(clip, tmp_path, capsys):
    status, _, err = upscale(capsys, str(clip("four_x_cap")), str(tmp_path), "--resolution", "4k")
    assert status == 4
    assert only_line(err) == f"{PROG}: output {tmp_path} is a folder; name a file in it"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("crf", ["99", "-1", "51.5", "nan"])
def test_crf_out_of_range_exits_5_naming_the_flag(clip, tmp_path, capsys, crf):
    status, _, err = upscale(capsys, str(clip("four_x_cap")), str(tmp_path / "out.mp4"),
                             "--resolution", "4k", f"--crf={crf}")  # fmt: skip
    assert status == 5
    assert only_line(err) == f"{PROG}: --crf {crf} is out of range; allowed: 0 to 51"


def test_output_same_as_input_exits_5(clip_maker, tmp_path, capsys):
    source = clip_maker(tmp_path / "in.mp4", audio=())
    status, _, err = upscale(capsys, str(source), str(tmp_path / "." / "in.mp4"),
                             "--resolution", "4k")  # fmt: skip
    assert status == 5
    assert only_line(err) == f"{PROG}: OUT.mp4 must differ from IN.mp4 ({source})"


def test_processing_failure_exits_1_and_leaves_nothing(clip, tmp_path):
    # Writes past a 2 kB file-size cap fail as they would on a full disk.
    process = start(str(clip("four_x_cap")), str(tmp_path / "out.mp4"), "--resolution", "4k",
                    "--json", file_size_limit=2048)  # fmt: skip
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1
    assert only_line(err).startswith(f"{PROG}: error: ")
    assert "File too large" in err and out == ""
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_exits_130_without_a_traceback_or_output(clip, tmp_path):
    process = start(str(clip("many_frames")), str(tmp_path / "out.mp4"), "--resolution", "4k",
                    "--json")  # fmt: skip
    deadline = time.monotonic() + 60
    # The temporary output appears once frames are about to flow: interrupt mid-run.
    while not list(tmp_path.glob(".out.mp4.*.part")):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert only_line(err) == f"{PROG}: interrupted; no output was written"
    assert out == "" and list(tmp_path.iterdir()) == []


def test_help_shows_every_default_and_the_exit_statuses(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["upscale", "--help"])
    assert caught.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for default in ("lanczos3", "native", "veryfast", "18", "off"):
        assert f"(default: {default})" in text
    assert "the box to fit (required)" in text
    for status, meaning in EXIT_STATUSES:
        assert f"{status} {meaning}" in text
    assert [status for status, _ in EXIT_STATUSES] == [0, 1, 2, 3, 4, 5, 6, 130]


def test_scale_cap_note_on_stderr_keeps_json_stdout_clean(clip, tmp_path, capsys):
    status, out, err = upscale(capsys, str(clip("landscape")), str(tmp_path / "out.mp4"),
                               "--resolution", "4k", "--preset", "ultrafast", "--json")  # fmt: skip
    assert status == 0
    assert (json.loads(out)["width"], json.loads(out)["height"]) == (2560, 1440)
    assert only_line(err) == (
        f"{PROG}: note: the 4x enlargement limit applied: 640x360 became 2560x1440, "
        "short of the 4k box (3840x2160)"
    )


def test_no_note_when_the_output_reaches_the_box(clip_maker, tmp_path, capsys):
    # 480x270 is exactly a quarter of 1080p: the 4x limit and the box agree.
    source = clip_maker(tmp_path / "quarter.mp4", width=480, height=270, frames=1, audio=())
    status, out, err = upscale(capsys, str(source), str(tmp_path / "out.mp4"), "--resolution",
                               "1080p", "--preset", "ultrafast", "--json")  # fmt: skip
    assert status == 0 and err == ""
    assert (json.loads(out)["width"], json.loads(out)["height"]) == (1920, 1080)


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
