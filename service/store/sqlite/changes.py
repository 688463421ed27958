"""A change marker shared by every process using one data dir, read without a system call.

Each SQLite call releases the GIL, and under Granian a release costs far more than the query
(measured here: a minimal Litestar app under Granian fell from ~5,800 to ~3,400-4,500
requests/s when each request added one trivial indexed SELECT). So hot reads of rarely
changing rows (routes, agents) are cached per process, and every change to such rows writes a fresh
marker into a small memory-mapped file; a cached row is used only while the marker still
holds the value it had before the row was read."""

from __future__ import annotations

import asyncio
import mmap
import os
import secrets
import time
from pathlib import Path

_SIZE = 16


class ChangeMarker:
    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size < _SIZE:
                os.ftruncate(fd, _SIZE)
            self._map = mmap.mmap(fd, _SIZE)
        finally:
            os.close(fd)

    def current(self) -> bytes:
        return self._map[:_SIZE]

    def touch(self) -> None:
        """Record a change (call after the change is committed). Values never repeat, so a
        reader that cached under an older value can never see it again."""
        self._map[:_SIZE] = time.time_ns().to_bytes(8, "little") + secrets.token_bytes(8)

    async def wait(self, timeout_s: float, poll_s: float = 0.01) -> None:
        """Return once the marker changes (a change committed by any process) or after
        `timeout_s`. Polling the mapped page costs no system call, so 10 ms is cheap."""
        start = self.current()
        deadline = time.monotonic() + timeout_s
        while self.current() == start and time.monotonic() < deadline:
            await asyncio.sleep(poll_s)

    def close(self) -> None:
        self._map.close()


class MarkedCache:
    """key -> value, trusted while the marker still holds the value read before the value was
    loaded, and for at most `max_age_s` (a safety net should a process die between a commit
    and its `touch`)."""

    def __init__(self, marker: ChangeMarker, max_age_s: float = 1.0, limit: int = 10_000) -> None:
        self._marker = marker
        self._max_age = max_age_s
        self._limit = limit
        self._entries: dict[str, tuple[bytes, float, object]] = {}

    def mark(self) -> bytes:
        """The marker value to pass to `get` and `put` (read it before reading the store)."""
        return self._marker.current()

    def get(self, key: str, mark: bytes):
        entry = self._entries.get(key)
        if entry is None or entry[0] != mark or entry[1] < time.monotonic():
            return None
        return entry[2]

    def put(self, key: str, mark: bytes, value: object) -> None:
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[key] = (mark, time.monotonic() + self._max_age, value)
