"""One writer thread per process: writes run there inside BEGIN IMMEDIATE transactions, so
the event loop never waits on a database lock, and each write is committed before the awaiting
handler answers. Writes that queue up while a commit is in progress share the next one."""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from service.store.sqlite.connection import connect

T = TypeVar("T")
log = logging.getLogger("service.store")

_STOP = object()
# Writes that share one commit when they arrive together.
MAX_BATCH = 64


class Writer:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        # Set once the thread has ended (closed, or failed): why every later write fails. The
        # lock makes "not stopped, so queue the job" one step, so no job is queued after the
        # thread's last look at the queue.
        self._stopped: sqlite3.Error | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="sqlite-writer", daemon=True)
        self._thread.start()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(conn, *args)` in a transaction on the writer thread and return its result.
        Raises sqlite3.OperationalError at once when the writer has stopped."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            if self._stopped is not None:
                raise self._stopped
            self._jobs.put((fn, args, loop, future))
        return await future

    def close(self) -> None:
        if self._thread.is_alive():
            self._jobs.put(_STOP)
            self._thread.join(timeout=10)

    def _run(self) -> None:
        batch: list | None = []
        stopped = sqlite3.OperationalError("the database writer was closed")
        try:
            conn = connect(self._path)
            try:
                while (batch := self._next_batch()) is not None:
                    _answer(batch, self._transaction(conn, batch))
            finally:
                conn.close()
        except BaseException as exc:
            # A write must never wait for a thread that is gone: the one under way and every
            # later one fail with this error instead.
            log.exception("the database writer stopped")
            stopped = sqlite3.OperationalError(f"the database writer stopped ({exc!r})")
            under_way = batch or []
            _answer(under_way, [(None, stopped)] * len(under_way))
        with self._lock:
            self._stopped = stopped
        self._fail_queued()

    def _fail_queued(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job is not _STOP:
                _answer([job], [(None, self._stopped)])

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


def _answer(batch: list, outcomes: list[tuple[Any, Any]]) -> None:
    """Hand each job's (result, error) to the event loop that waits for it."""
    for (_, _, loop, future), outcome in zip(batch, outcomes, strict=True):
        if not loop.is_closed():
            loop.call_soon_threadsafe(_settle, future, *outcome)


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.done():  # canceled by its caller (or answered already)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
