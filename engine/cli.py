"""The `avatar-service upscale` sub-command: a terminal front end over `engine.upscale`.

Every failure prints one line on stderr and exits with its own status (the table below, also
shown by `--help`); argparse's usage errors keep argparse's status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TextIO

from engine.errors import EngineError, InvalidVideo, TargetNotLarger
from engine.fit import MAX_SCALE, RESOLUTIONS, box_size
from engine.resample import FILTERS, KERNELS
from engine.video.pipeline import MAX_CRF, X264_PRESETS, UpscaleResult, upscale

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_INPUT = 3
EXIT_NO_OUTPUT_FOLDER = 4
EXIT_BAD_VALUE = 5
EXIT_INVALID_INPUT = 6
EXIT_INTERRUPTED = 130  # the shell's convention for a command ended by SIGINT (128 + 2)
EXIT_STATUSES = (
    (EXIT_OK, "the output was written"),
    (EXIT_FAILED, "processing failed (the encoder, or writing the output)"),
    (EXIT_USAGE, "usage error: unknown option, missing --resolution, a value not in the choices"),
    (EXIT_NO_INPUT, "IN.mp4 does not exist or is not a file"),
    (EXIT_NO_OUTPUT_FOLDER, "the folder of OUT.mp4 does not exist, or OUT.mp4 is a folder"),
    (EXIT_BAD_VALUE, f"--crf outside 0..{MAX_CRF}, or OUT.mp4 is IN.mp4"),
    (EXIT_INVALID_INPUT, "the video breaks an input limit, or is not smaller than the box"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); no output is left behind"),
)
_PROG = "avatar-service upscale"
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


class _Refused(Exception):
    """A failure with its exit status; the message is the line shown on stderr."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def _check_arguments(args: argparse.Namespace) -> None:
    """What argparse cannot see, refused before any work starts."""
    if not 0 <= args.crf <= MAX_CRF:  # also refuses nan
        raise _Refused(
            EXIT_BAD_VALUE, f"--crf {args.crf:g} is out of range; allowed: 0 to {MAX_CRF}"
        )
    source, target = Path(args.input), Path(args.output)
    if not source.exists():
        raise _Refused(EXIT_NO_INPUT, f"input file {source} does not exist")
    if not source.is_file():
        raise _Refused(EXIT_NO_INPUT, f"input {source} is not a file")
    if not target.parent.is_dir():
        raise _Refused(EXIT_NO_OUTPUT_FOLDER, f"output folder {target.parent} does not exist")
    if target.is_dir():
        raise _Refused(EXIT_NO_OUTPUT_FOLDER, f"output {target} is a folder; name a file in it")
    if target.exists() and target.resolve() == source.resolve():
        raise _Refused(EXIT_BAD_VALUE, f"OUT.mp4 must differ from IN.mp4 ({source})")


def _upscale(args: argparse.Namespace) -> UpscaleResult:
    report = None if args.json else ProgressReport(sys.stderr)
    try:
        return upscale(
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
        raise _Refused(EXIT_INVALID_INPUT, f"invalid input: {_one_line(exc)}") from exc
    except (EngineError, OSError, ValueError) as exc:
        raise _Refused(EXIT_FAILED, f"error: {_one_line(exc)}") from exc
    finally:
        if report is not None:
            report.finish()


def _scale_cap_note(result: UpscaleResult, resolution: str) -> str | None:
    """A note when MAX_SCALE, not the box, set the output size."""
    source = result.source
    box_w, box_h = box_size(source.width, source.height, resolution)
    if result.width >= box_w or result.height >= box_h:
        return None
    return (
        f"note: the {MAX_SCALE}x enlargement limit applied: {source.width}x{source.height} "
        f"became {result.width}x{result.height}, short of the {resolution} box ({box_w}x{box_h})"
    )


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


def _print_result(result: UpscaleResult, args: argparse.Namespace) -> None:
    note = _scale_cap_note(result, args.resolution)
    if note is not None:
        print(f"{_PROG}: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(_summary(result)))
        return
    print(
        f"wrote {result.output}: {result.width}x{result.height}, {result.frames} frames, "
        f"{result.duration:.3f} s at {result.frame_rate:g} fps, in {result.seconds:.1f} s"
    )


def run_upscale(args: argparse.Namespace) -> int:
    try:
        _check_arguments(args)
        result = _upscale(args)
    except _Refused as refused:
        print(f"{_PROG}: {refused}", file=sys.stderr)
        return refused.status
    except KeyboardInterrupt:
        # The pipeline has already removed its partial output on the way out.
        print(f"{_PROG}: interrupted; no output was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    _print_result(result, args)
    return EXIT_OK


def _epilog() -> str:
    rows = "\n".join(f"  {status:<4} {meaning}" for status, meaning in EXIT_STATUSES)
    return f"exit status:\n{rows}"


def add_upscale_command(subparsers: argparse._SubParsersAction) -> None:
    """Register `upscale` on the `avatar-service` parser."""
    parser = subparsers.add_parser(
        "upscale",
        help="upscale an MP4 video to fit a 1080p, 2k or 4k box",
        description="Upscale an MP4 (H.264) video to fit a 1080p, 2k or 4k box, keeping its\n"
        "frames, timestamps, audio and colours. No side is enlarged more than "
        f"{MAX_SCALE}x.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_arguments(parser)
    parser.set_defaults(handler=run_upscale)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="IN.mp4", help="the video to upscale")
    parser.add_argument("output", metavar="OUT.mp4", help="where to write the result")
    parser.add_argument(
        "--resolution", required=True, choices=RESOLUTIONS, help="the box to fit (required)"
    )
    parser.add_argument(
        "--filter",
        default="lanczos3",
        choices=FILTERS,
        help="resampling filter; detail: the learned filter for luma, Lanczos3 for chroma "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--kernel",
        default="native",
        choices=KERNELS,
        help="resampling kernel (default: %(default)s)",
    )
    parser.add_argument(
        "--preset",
        default="veryfast",
        choices=X264_PRESETS,
        help="x264 preset (default: %(default)s)",
    )
    parser.add_argument(
        "--crf",
        default=18.0,
        type=float,
        help=f"x264 constant rate factor, 0 to {MAX_CRF}; lower is better quality "
        "(default: %(default)g)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the result as JSON on stdout (default: off)"
    )
