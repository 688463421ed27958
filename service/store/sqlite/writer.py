"""One writer thread per process: writes run there inside BEGIN IMMEDIATE transactions, so
the event loop never waits on a database lock, and each write is committed before the awaiting
handler answers. Writes that queue up while a commit is in progress share the next one."""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from service.store.sqlite.connection import connect

T = TypeVar("T")

_STOP = object()
# Writes that share one commit when they arrive together.
MAX_BATCH = 64


class Writer:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="sqlite-writer", daemon=True)
        self._thread.start()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(conn, *args)` in a transaction on the writer thread and return its result."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((fn, args, loop, future))
        return await future

    def close(self) -> None:
        if self._thread.is_alive():
            self._jobs.put(_STOP)
            self._thread.join(timeout=10)

    def _run(self) -> None:
        conn = connect(self._path)
        try:
            while (batch := self._next_batch()) is not None:
                for (_, _, loop, future), outcome in zip(
                    batch, self._transaction(conn, batch), strict=True
                ):
                    if not loop.is_closed():
                        loop.call_soon_threadsafe(_settle, future, *outcome)
        finally:
            conn.close()

    def _next_batch(self) -> list | None:
        """The next job plus whatever else is already waiting (up to MAX_BATCH); None to stop."""
        job = self._jobs.get()
        batch = []
        while job is not _STOP:
            batch.append(job)
            if len(batch) >= MAX_BATCH or self._jobs.empty():
                return batch
            job = self._jobs.get()
        # Finish what was queued before the stop, then stop.
        if batch:
            self._jobs.put(_STOP)
            return batch
        return None

    @staticmethod
    def _transaction(conn: sqlite3.Connection, batch: list) -> list[tuple[Any, Any]]:
        """Run the batch in one transaction (one commit for many writes). With several jobs,
        each runs in its own savepoint, so a failing job is rolled back alone and reported
        to its caller only."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            if len(batch) == 1:
                fn, args, _, _ = batch[0]
                outcomes = [(fn(conn, *args), None)]
            else:
                outcomes = [_in_savepoint(conn, fn, args) for fn, args, _, _ in batch]
            conn.execute("COMMIT")
        except Exception as exc:  # nothing of the batch was written
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return [(None, exc)] * len(batch)
        return outcomes


def _in_savepoint(conn: sqlite3.Connection, fn: Callable, args: tuple) -> tuple[Any, Any]:
    conn.execute("SAVEPOINT job")
    try:
        result = fn(conn, *args)
    except Exception as exc:
        conn.execute("ROLLBACK TO job")
        conn.execute("RELEASE job")
        return None, exc
    conn.execute("RELEASE job")
    return result, None


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
