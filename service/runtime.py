"""What a process of the service opens from its settings: the store, the file store and the
clock, and the domain context built from them. The HTTP app, the offline CLI commands and the
background workers all open it here, so each process is wired the same way."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from service.clock import Clock, SystemClock
from service.domain.context import Context
from service.domain.files import FileStore
from service.domain.store import Store
from service.generators.face_finders import face_finder
from service.generators.openai_images import image_backend
from service.generators.speech_engines import open_speech
from service.responders import Responders
from service.settings import Settings
from service.store.errors import DatabaseUnavailable
from service.store.files import LocalFileStore
from service.store.sqlite import SqliteStore

SIGNING_KEY_FILE = "signing.key"


def signing_key(settings: Settings) -> bytes:
    """AVATAR_SIGNING_KEY, else the key kept in the data dir (made on first use, readable by
    this user only). It signs file links and derives webhook secrets: changing it voids both."""
    if settings.signing_key:
        return settings.signing_key.encode()
    path = settings.data_dir / SIGNING_KEY_FILE
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "w") as file:
        file.write(secrets.token_urlsafe(32))
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    # Another process may be writing it this instant: wait for the whole key.
    for _ in range(100):
        key = path.read_bytes().strip()
        if len(key) >= 32:
            return key
        time.sleep(0.01)
    raise OSError(f"{path} does not hold a signing key; delete it to make a new one")


async def _open_store(
    settings: Settings, clock: Clock | None, closing: AsyncExitStack
) -> tuple[Store, Clock, bytes]:
    """The store, the clock and the signing key. On PostgreSQL every node reads the
    database's clock (leases written by one node are compared by another) and shares the
    signing key kept in the database; a clock given (tests) or AVATAR_SIGNING_KEY still wins."""
    if settings.database_url is None:
        clock = clock or SystemClock()
        store = SqliteStore(settings.database_path, clock.now_ms())
        closing.push_async_callback(store.close)
        return store, clock, signing_key(settings)
    try:
        from service.store.postgres import open_postgres
    except ImportError as exc:  # the `cluster` extra is not installed
        raise DatabaseUnavailable(str(exc)) from None
    pg = await open_postgres(settings.database_url, clock.now_ms() if clock else None)
    closing.push_async_callback(pg.close)
    clock = clock or pg.clock
    key = settings.signing_key.encode() if settings.signing_key else None
    return pg, clock, key or await pg.signing_key(clock.now_ms())


async def open_files(settings: Settings) -> FileStore:
    """The data dir, or the S3 bucket every node shares (checked: FileStoreUnavailable)."""
    if settings.s3_bucket is None:
        return LocalFileStore(settings.data_dir)
    from service.store.s3 import S3FileStore

    files = S3FileStore(
        settings.s3_bucket,
        prefix=settings.s3_prefix,
        endpoint_url=settings.s3_endpoint_url,
        region=settings.s3_region,
        spool=settings.data_dir / "spool",
        presigned=settings.s3_presigned,
    )
    await asyncio.to_thread(files.check)
    return files


@asynccontextmanager
async def open_context(settings: Settings, clock: Clock | None = None) -> AsyncIterator[Context]:
    """The context of one process; on exit its background work is drained and the store
    closed (also when a later part cannot be made). Raises OSError or sqlite3.Error when the
    data dir cannot be opened, DatabaseUnavailable or FileStoreUnavailable (OSErrors) when
    the database or the bucket cannot."""
    async with AsyncExitStack() as closing:
        store, clock, key = await _open_store(settings, clock, closing)
        speech = await closing.enter_async_context(open_speech(settings))
        ctx = Context(
            settings=settings,
            store=store,
            files=await open_files(settings),
            clock=clock,
            signing_key=key,
            responders=Responders(settings),
            speech=speech,
            faces=face_finder(),
            images=image_backend(settings),
        )
        closing.push_async_callback(ctx.responders.aclose)
        closing.push_async_callback(ctx.drain)
        yield ctx
