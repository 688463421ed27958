"""Shared plumbing of the SQLite store: the event-loop reader connection and the writer."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from service.domain.pagination import PageRequest
from service.store.sqlite.changes import ChangeMarker, MarkedCache
from service.store.sqlite.connection import connect, migrate
from service.store.sqlite.writer import Writer

T = TypeVar("T")


def after_clause(page: PageRequest, time_column: str, id_column: str) -> tuple[str, list]:
    """SQL condition and parameters selecting rows strictly after the page's cursor."""
    if page.after is None:
        return "", []
    return f" AND ({time_column}, {id_column}) < (?, ?)", [page.after.ms, page.after.id]


class SqliteBase:
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
