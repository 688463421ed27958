"""Shared plumbing of the PostgreSQL store: the pool, reads, writes in transactions, and the
change marks that travel between nodes (see changes.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from service.domain.pagination import PageRequest
from service.store.postgres.changes import TOPICS, Listener, Marker, notify
from service.store.postgres.clock import DatabaseClock
from service.store.postgres.driver import TUPLES_OK
from service.store.shared.base import SharedBase
from service.store.shared.base import after_clause as shared_after_clause
from service.store.shared.steps import POSTGRES, Announce, Body, Query, Result, Serialize, check
from service.store.sqlite.changes import MarkedCache

T = TypeVar("T")
Conn = Any  # psycopg.AsyncConnection (the driver is imported lazily)


def after_clause(page: PageRequest, time_column: str, id_column: str) -> tuple[str, list]:
    """SQL condition and parameters selecting rows strictly after the page's cursor."""
    condition, params = shared_after_clause(page, time_column, id_column)
    return POSTGRES.sql(condition), params


async def fetch_one(conn: Conn, sql: str, params: Any = None) -> tuple | None:
    cursor = await conn.execute(sql, params)
    return await cursor.fetchone()


async def announce(conn: Conn, topic: str) -> None:
    """Tell every node, at this transaction's commit, that `topic` changed."""
    await conn.execute(*notify(topic))


class PostgresBase(SharedBase):
    def __init__(self, pool: Any, url: str) -> None:
        self._pool = pool
        self._markers = {topic: Marker() for topic in TOPICS}
        self._listener = Listener(url, self._markers)
        self._catalog_changes = self._markers["catalog"]
        self._session_changes = self._markers["sessions"]
        self._task_changes = self._markers["tasks"]
        self._delivery_changes = self._markers["deliveries"]
        self._route_cache = MarkedCache(self._catalog_changes)
        self._agent_cache = MarkedCache(self._catalog_changes)
        self.clock = DatabaseClock(pool)

    async def close(self) -> None:
        await self.clock.close()
        await self._listener.close()
        await self._pool.close()

    def connection(self) -> Any:
        """`async with store.connection() as conn`: a pooled autocommit connection, for the
        tools that work beside the store interface (`store copy`)."""
        return self._pool.connection()

    async def listening(self, timeout_s: float) -> None:
        """Wait until changes made on other nodes reach this store."""
        await self._listener.started(timeout_s)

    def live_mark(self) -> bytes:
        """Changes whenever a route, an agent or a session changes, on any node."""
        return self._catalog_changes.current() + self._session_changes.current()

    async def _one(self, sql: str, params: Any, build: Callable[[tuple], T]) -> T | None:
        async with self._pool.connection() as conn:
            row = await fetch_one(conn, sql, params)
        return None if row is None else build(row)

    async def _all(self, sql: str, params: Any, build: Callable[[tuple], T]) -> list[T]:
        async with self._pool.connection() as conn:
            cursor = await conn.execute(sql, params)
            return [build(row) for row in await cursor.fetchall()]

    async def _write(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """`await fn(conn, *args)` in one transaction, committed before this returns."""
        async with self._pool.connection() as conn, conn.transaction():
            return await fn(conn, *args)

    async def _read_one(self, sql: str, params: Any, build: Callable[[tuple], T]) -> T | None:
        return await self._one(POSTGRES.sql(sql), params, build)

    async def _read_all(self, sql: str, params: Any, build: Callable[[tuple], T]) -> list[T]:
        return await self._all(POSTGRES.sql(sql), params, build)

    async def _run(self, body: Body[T], *, atomic: bool = True) -> T:
        """Run a write's statements (see shared/steps.py), one round trip each. (psycopg's
        pipeline mode saves round trips but costs more client CPU than it saves: measured in
        bench/README.md, the claimers are CPU-bound.)"""
        async with self._pool.connection() as conn:
            if not atomic:
                return await _drive(conn, body)
            async with conn.transaction():
                return await _drive(conn, body)


async def _drive(conn: Conn, body: Body[T]) -> T:
    reply = None
    while True:
        try:
            step = body.send(reply)
        except StopIteration as done:
            return done.value
        reply = None
        if isinstance(step, Announce):
            await announce(conn, step.topic)
        elif isinstance(step, Serialize):
            await conn.execute(
                "SELECT pg_advisory_xact_lock(%s::int, hashtext(%s))", (step.key, step.name)
            )
        elif isinstance(step, Query):
            cursor = await conn.execute(POSTGRES.sql(step.sql), step.params)
            check(step, cursor.rowcount)
            if step.wait:
                rows = await cursor.fetchall() if _has_rows(cursor) else []
                reply = Result(cursor.rowcount, rows)


def _has_rows(cursor: Any) -> bool:
    # Not `cursor.description`: it builds a Column object per column on every access.
    result = cursor.pgresult
    return result is not None and result.status == TUPLES_OK
