"""What a process of the service opens from its settings: the store, the file store and the
clock, and the domain context built from them. The HTTP app, the offline CLI commands and the
background workers all open it here, so each process is wired the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from service.clock import Clock, SystemClock
from service.domain.context import Context
from service.settings import Settings
from service.store.files import LocalFileStore
from service.store.sqlite import SqliteStore


@asynccontextmanager
async def open_context(settings: Settings, clock: Clock | None = None) -> AsyncIterator[Context]:
    """The context of one process; on exit its background work is drained and the store
    closed. Raises OSError or sqlite3.Error when the data dir cannot be opened."""
    clock = clock or SystemClock()
    store = SqliteStore(settings.database_path, clock.now_ms())
    files = LocalFileStore(settings.data_dir)
    ctx = Context(settings=settings, store=store, files=files, clock=clock)
    try:
        yield ctx
    finally:
        await ctx.drain()
        await store.close()
