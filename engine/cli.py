"""The `avatar-service upscale` sub-command: a terminal front end over `engine.upscale`.

Exit status: 0 on success; 2 when the input cannot be upscaled (an input limit is broken, or
the video is already as large as the box) with the reason on stderr; 1 for any other failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TextIO

from engine.errors import EngineError, InvalidVideo, TargetNotLarger
from engine.fit import RESOLUTIONS
from engine.resample import FILTERS, KERNELS
from engine.video.pipeline import X264_PRESETS, UpscaleResult, upscale

EXIT_INVALID_INPUT = 2
_BAR_WIDTH = 30
_REDRAW_S = 0.2


class ProgressReport:
    """A redrawn bar (frames, fps, ETA) on a terminal; a line per 10 % elsewhere."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._started = time.monotonic()
        self._last_draw = 0.0
        self._last_tenth = 0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        elapsed = max(now - self._started, 1e-9)
        fps = done / elapsed
        eta = (total - done) / fps if fps > 0 else 0.0
        if self._tty:
            if now - self._last_draw >= _REDRAW_S or done >= total:
                self._last_draw = now
                filled = _BAR_WIDTH * done // max(total, 1)
                bar = "#" * filled + "." * (_BAR_WIDTH - filled)
                self._stream.write(
                    f"\r[{bar}] {done}/{total} frames  {fps:5.1f} fps  ETA {_clock(eta)} "
                )
                self._stream.flush()
            return
        tenth = 10 * done // max(total, 1)
        if tenth > self._last_tenth:
            self._last_tenth = tenth
            print(f"{done}/{total} frames, {fps:.1f} fps, ETA {_clock(eta)}", file=self._stream)

    def finish(self) -> None:
        if self._tty:
            self._stream.write("\n")
            self._stream.flush()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


def _summary(result: UpscaleResult) -> dict[str, object]:
    return {
        "output": result.output,
        "width": result.width,
        "height": result.height,
        "frames": result.frames,
        "duration": result.duration,
        "frame_rate": result.frame_rate,
        "frame_rate_fraction": result.frame_rate_fraction,
        "size_bytes": result.size_bytes,
        "seconds": round(result.seconds, 3),
    }


def run_upscale(args: argparse.Namespace) -> int:
    report = None if args.json else ProgressReport(sys.stderr)
    try:
        result = upscale(
            args.input,
            args.output,
            args.resolution,
            filter=args.filter,
            kernel=args.kernel,
            preset=args.preset,
            crf=args.crf,
            progress=report,
        )
    except (InvalidVideo, TargetNotLarger) as exc:
        print(f"avatar-service upscale: invalid input: {exc}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    except (EngineError, OSError, ValueError) as exc:
        print(f"avatar-service upscale: error: {exc}", file=sys.stderr)
        return 1
    finally:
        if report is not None:
            report.finish()
    if args.json:
        print(json.dumps(_summary(result)))
    else:
        print(
            f"wrote {result.output}: {result.width}x{result.height}, {result.frames} frames, "
            f"{result.duration:.3f} s at {result.frame_rate:g} fps, in {result.seconds:.1f} s"
        )
    return 0


def add_upscale_command(subparsers: argparse._SubParsersAction) -> None:
    """Register `upscale` on the `avatar-service` parser."""
    parser = subparsers.add_parser(
        "upscale",
        help="upscale an MP4 video to fit a 1080p, 2k or 4k box",
        description="Upscale an MP4 (H.264) video to fit a 1080p, 2k or 4k box, keeping its "
        "frames, timestamps, audio and colours.",
    )
    parser.add_argument("input", metavar="IN.mp4", help="the video to upscale")
    parser.add_argument("output", metavar="OUT.mp4", help="where to write the result")
    parser.add_argument("--resolution", required=True, choices=RESOLUTIONS)
    parser.add_argument("--filter", default="lanczos3", choices=FILTERS)
    parser.add_argument("--kernel", default="native", choices=KERNELS)
    parser.add_argument("--preset", default="veryfast", choices=X264_PRESETS, help="x264 preset")
    parser.add_argument("--crf", default=18.0, type=float, help="x264 CRF, 0 to 51 (default 18)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run_upscale)
