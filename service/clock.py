"""Time: a clock abstraction (tests move time by hand) and RFC 3339 formatting.

Times are kept as integer milliseconds since the Unix epoch, so arithmetic such as
`expires_at = created_at + validity_seconds` is exact and cursors compare exactly."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from functools import lru_cache
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock time in milliseconds since the Unix epoch."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to (for tests)."""

    def __init__(self, start_ms: int = 1_767_225_600_000) -> None:  # 2026-01-01T00:00:00Z
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += round(seconds * 1000)


@lru_cache(maxsize=4096)
def _second(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def format_ts(ms: int) -> str:
    """`ms` as RFC 3339 UTC with milliseconds, e.g. 2026-01-01T00:00:00.000Z."""
    seconds, millis = divmod(ms, 1000)
    return f"{_second(seconds)}.{millis:03d}Z"


def format_optional_ts(ms: int | None) -> str | None:
    return None if ms is None else format_ts(ms)


_RFC_3339 = "expected an RFC 3339 timestamp such as 2026-01-01T00:00:00Z"


def parse_ts(text: str) -> int:
    """An RFC 3339 timestamp (offset or `Z` required) to epoch ms; ValueError if invalid."""
    if len(text) < 20 or text[10] not in "Tt ":
        raise ValueError(_RFC_3339)
    try:
        parsed = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:  # its own words name Python types ("offset must be a timedelta ...")
        raise ValueError(_RFC_3339) from None
    if parsed.tzinfo is None:
        raise ValueError("the timestamp needs a time zone (Z or an offset)")
    try:
        return round(parsed.astimezone(UTC).timestamp() * 1000)
    except OverflowError:
        raise ValueError("the timestamp is out of range") from None
