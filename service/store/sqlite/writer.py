"""One writer thread per process: every write runs there in its own BEGIN IMMEDIATE
transaction, so the event loop never waits on a database lock and each write is committed
before the awaiting handler answers."""

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
            while (job := self._jobs.get()) is not _STOP:
                fn, args, loop, future = job
                outcome = self._transaction(conn, fn, args)
                if not loop.is_closed():
                    loop.call_soon_threadsafe(_settle, future, *outcome)
        finally:
            conn.close()

    @staticmethod
    def _transaction(conn: sqlite3.Connection, fn: Callable, args: tuple) -> tuple[Any, Any]:
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn, *args)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except Exception as exc:  # handed to the awaiting coroutine, raised there
            return None, exc
        return result, None


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
