"""What every attack test asks of a real `serve` after the attack: nothing in its log that a
crash would print."""

from __future__ import annotations

import fcntl
import struct
import termios
import time

# What Python prints for an exception it logs, and what the app logs for an unhandled one.
CRASH_MARKS = ("Traceback (most recent call last)", "unhandled error", "INTERNAL_ERROR")


def _pending(server) -> int:
    """Bytes serve wrote that the drain thread has not read yet."""
    raw = fcntl.ioctl(server.process.stdout.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return struct.unpack("i", raw)[0]


def assert_clean_log(server, timeout: float = 5.0) -> None:
    """`server` (a LiveServer) printed no traceback and logged no unhandled error. A worker
    logs an error before it answers, so the lines are in the pipe by now: this waits until
    the drain thread has read them."""
    deadline = time.monotonic() + timeout
    while _pending(server) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # the drain thread splits what it read into lines
    lines = list(server.log)
    crashes = [line for line in lines if any(mark in line for mark in CRASH_MARKS)]
    assert not crashes, "".join(lines[-60:])
