"""The database's clock, read without a round trip: leases and deadlines written by one node
are compared by another, so every node reads time from the database they share rather than
from their own (possibly drifting) clocks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

# How often the offset to the database's clock is measured again (local clocks drift slowly;
# NTP steps are rare).
REFRESH_S = 60.0
_SAMPLES = 3
log = logging.getLogger("service.store")


def _local_ms() -> float:
    return time.time_ns() / 1_000_000


class DatabaseClock:
    """`now_ms()` = local time + the measured offset to the database's `clock_timestamp()`.
    Each measurement keeps the sample of the shortest round trip (its midpoint is closest to
    the moment the server read its clock)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._offset_ms = 0.0
        self._task: asyncio.Task | None = None

    def now_ms(self) -> int:
        return int(_local_ms() + self._offset_ms)

    async def start(self) -> None:
        await self.measure()
        self._task = asyncio.create_task(self._refresh(), name="avatar-database-clock")

    async def measure(self) -> None:
        best: tuple[float, float] | None = None
        async with self._pool.connection() as conn:
            for _ in range(_SAMPLES):
                before = _local_ms()
                cursor = await conn.execute("SELECT extract(epoch FROM clock_timestamp()) * 1000")
                server_ms = float((await cursor.fetchone())[0])
                after = _local_ms()
                if best is None or after - before < best[0]:
                    best = (after - before, server_ms - (before + after) / 2)
        self._offset_ms = best[1]

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_S)
            try:
                await self.measure()
            except Exception as exc:  # keep the last offset; the next refresh retries
                log.warning("cannot read the database's clock (%s)", exc)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
