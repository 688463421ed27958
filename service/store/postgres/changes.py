"""Change marks shared by every node through LISTEN/NOTIFY.

A write that changes what other processes watch (routes, agents, sessions, tasks, webhook
deliveries) sends `NOTIFY avatar_changes, '<topic>'` inside its own transaction: PostgreSQL
delivers it at commit, to every listening connection of every node. Each process keeps one
listening connection; a notification moves that topic's `Marker` to a fresh value and wakes
its waiters. The writing process also moves its marker itself after the commit, so its own
next read never trusts a cache the change made stale.

Should the listening connection drop, every marker moves (whatever was missed meanwhile is
treated as changed) and it reconnects; `MarkedCache` entries also expire after a second."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from typing import Any

from service.store.postgres.driver import psycopg

CHANNEL = "avatar_changes"
TOPICS = ("catalog", "sessions", "tasks", "deliveries")
RECONNECT_S = 0.5
log = logging.getLogger("service.store")


class Marker:
    """A value that changes whenever its topic does; `wait` returns at the next change."""

    def __init__(self) -> None:
        self._value = secrets.token_bytes(16)
        self._changed = asyncio.Event()

    def current(self) -> bytes:
        return self._value

    def touch(self) -> None:
        self._value = secrets.token_bytes(16)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait(self, timeout_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout_s)


def notify(topic: str) -> tuple[str, tuple[str, str]]:
    """The statement (and its parameters) that announces a change of `topic` at commit."""
    return "SELECT pg_notify(%s, %s)", (CHANNEL, topic)


class Listener:
    """One LISTEN connection per process, feeding the markers until `close`."""

    def __init__(self, url: str, markers: dict[str, Marker]) -> None:
        self._url = url
        self._markers = markers
        self._listening = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name="avatar-store-listener")

    async def started(self, timeout_s: float) -> None:
        """Wait until a LISTEN is in place (changes committed later are seen)."""
        await asyncio.wait_for(self._listening.wait(), timeout_s)

    async def _run(self) -> None:
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._url, autocommit=True
                ) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self._touch_all()  # whatever happened while not listening
                    self._listening.set()
                    await self._deliver(conn)
            except psycopg.Error as exc:
                self._listening.clear()
                log.warning("change notifications interrupted (%s); reconnecting", exc)
                self._touch_all()
                await asyncio.sleep(RECONNECT_S)

    async def _deliver(self, conn: Any) -> None:
        async for note in conn.notifies():
            marker = self._markers.get(note.payload)
            if marker is not None:
                marker.touch()

    def _touch_all(self) -> None:
        for marker in self._markers.values():
            marker.touch()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
