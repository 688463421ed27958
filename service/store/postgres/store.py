"""`PostgresStore`: the `Store` interface over a PostgreSQL database that several nodes share."""

from __future__ import annotations

import secrets

from service.store.errors import DatabaseUnavailable
from service.store.postgres.accounts import AccountsMixin
from service.store.postgres.base import fetch_one
from service.store.postgres.catalog import CatalogMixin
from service.store.postgres.connection import (
    CONNECT_TIMEOUT_S,
    describe,
    first_line,
    migrate,
    open_pool,
)
from service.store.postgres.driver import psycopg
from service.store.postgres.voices import VoicesMixin
from service.store.shared.conversations import ConversationsMixin
from service.store.shared.sessions import SessionsMixin
from service.store.shared.sockets import SocketHoldsMixin
from service.store.shared.tasks import TasksMixin
from service.store.shared.webhooks import WebhooksMixin

_SIGNING_KEY = "signing"


class PostgresStore(
    AccountsMixin,
    CatalogMixin,
    SessionsMixin,
    ConversationsMixin,
    SocketHoldsMixin,
    TasksMixin,
    WebhooksMixin,
    VoicesMixin,
):
    """Made by `open_postgres`; `clock` is the database's clock (see clock.py)."""

    async def signing_key(self, now_ms: int) -> bytes:
        """The key every node signs with: made by the first node that asks, then read."""
        async with self.connection() as conn:
            await conn.execute(
                "INSERT INTO service_keys (name, value, created_ms) VALUES (%s, %s, %s)"
                " ON CONFLICT (name) DO NOTHING",
                (_SIGNING_KEY, secrets.token_urlsafe(32), now_ms),
            )
            row = await fetch_one(
                conn, "SELECT value FROM service_keys WHERE name = %s", (_SIGNING_KEY,)
            )
        return row[0].encode()


async def open_postgres(url: str, now_ms: int | None = None) -> PostgresStore:
    """Connect, apply pending migrations (recorded at `now_ms`, default the database's time)
    and start listening for other nodes' changes. Raises DatabaseUnavailable."""
    pool = await open_pool(url)
    try:
        store = PostgresStore(pool, url)
    except BaseException:
        await pool.close()
        raise
    try:
        await store.clock.start()
        await migrate(pool, store.clock.now_ms() if now_ms is None else now_ms)
        await store.listening(CONNECT_TIMEOUT_S)
    except BaseException as exc:
        await store.close()
        if isinstance(exc, psycopg.Error | TimeoutError):
            reason = first_line(exc)
            raise DatabaseUnavailable(
                f"cannot use the database at {describe(url)}: {reason}"
            ) from None
        raise
    return store
