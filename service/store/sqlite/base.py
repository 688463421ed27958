"""Shared plumbing of the SQLite store: the event-loop reader connection and the writer."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from service.store.shared.base import SharedBase
from service.store.shared.steps import SQLITE, Body, Query, Result, check
from service.store.sqlite.changes import ChangeMarker, MarkedCache
from service.store.sqlite.connection import connect, migrate
from service.store.sqlite.writer import Writer

T = TypeVar("T")


class SqliteBase(SharedBase):
    def __init__(self, path: Path, now_ms: int) -> None:
        # Reads run on the calling (event-loop) thread: an indexed read costs ~20 µs here,
        # far less than a hop to a thread pool.
        self._reader = connect(path)
        migrate(self._reader, now_ms)
        self._writer = Writer(path)
        # Routes and agents: the reads behind every public page and route lookup.
        self._catalog_changes = self._marker(path, "catalog")
        self._route_cache = MarkedCache(self._catalog_changes)
        self._agent_cache = MarkedCache(self._catalog_changes)
        # Sessions: what open conversations watch (with the catalog) to end when theirs ends.
        self._session_changes = self._marker(path, "sessions")
        # What wakes idle task workers and the webhook sender in other processes.
        self._task_changes = self._marker(path, "tasks")
        self._delivery_changes = self._marker(path, "deliveries")

    @staticmethod
    def _marker(path: Path, topic: str) -> ChangeMarker:
        return ChangeMarker(path.with_name(f"{path.name}.{topic}-changed"))

    async def close(self) -> None:
        self._writer.close()
        self._reader.close()
        for marker in (
            self._catalog_changes,
            self._session_changes,
            self._task_changes,
            self._delivery_changes,
        ):
            marker.close()

    def live_mark(self) -> bytes:
        """Changes whenever a route, an agent or a session changes, in any process."""
        return self._catalog_changes.current() + self._session_changes.current()

    def _one(self, sql: str, params: tuple | list, build: Callable[[sqlite3.Row | tuple], T]):
        row = self._reader.execute(sql, params).fetchone()
        return None if row is None else build(row)

    def _all(self, sql: str, params: tuple | list, build: Callable[[tuple], T]) -> list[T]:
        return [build(row) for row in self._reader.execute(sql, params).fetchall()]

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._writer.run(fn, *args)

    async def _read_one(self, sql: str, params: Any, build: Callable[[tuple], T]) -> T | None:
        return self._one(SQLITE.sql(sql), params, build)

    async def _read_all(self, sql: str, params: Any, build: Callable[[tuple], T]) -> list[T]:
        return self._all(SQLITE.sql(sql), params, build)

    async def _run(self, body: Body[T], *, atomic: bool = True) -> T:
        # Every write is atomic here: the writer runs each in a transaction (or savepoint).
        return await self._writer.run(_drive, body)


def _drive(conn: sqlite3.Connection, body: Body[T]) -> T:
    """Run a write's statements in order on the writer's connection (see shared/steps.py)."""
    reply = None
    while True:
        try:
            step = body.send(reply)
        except StopIteration as done:
            return done.value
        reply = None
        # Nothing to do for the other steps: SQLite's writes run one at a time (Serialize),
        # and other processes watch the change files the store touches after it (Announce).
        if isinstance(step, Query):
            cursor = conn.execute(SQLITE.sql(step.sql), step.params)
            rows = cursor.fetchall()  # before rowcount: RETURNING rows count once fetched
            check(step, cursor.rowcount)
            if step.wait:
                reply = Result(cursor.rowcount if cursor.rowcount >= 0 else len(rows), rows)
