"""Opening PostgreSQL: the connection pool, and the numbered schema migrations applied under
an advisory lock, so nodes starting at once apply each migration exactly once."""

from __future__ import annotations

from importlib import resources
from typing import Any

from service.store.errors import DatabaseUnavailable
from service.store.postgres.driver import psycopg, psycopg_pool

# Any fixed number: the key of the advisory lock every node takes to migrate.
_MIGRATION_LOCK = 0x61766174  # "avat"
CONNECT_TIMEOUT_S = 10
POOL_SIZE = 8


def describe(url: str) -> str:
    """`host:port/db` of a connection URL, for messages (no user or password)."""
    info = psycopg.conninfo.conninfo_to_dict(url)
    host, port = info.get("host", "localhost"), info.get("port", "5432")
    return f"{host}:{port}/{info.get('dbname', '')}"


async def open_pool(url: str, *, size: int = POOL_SIZE) -> Any:
    """A pool of autocommit connections (writes open their own transactions). One connection
    is tried first, so an unreachable database fails at once with the driver's reason
    (DatabaseUnavailable) rather than after the pool's retries."""
    try:
        probe = await psycopg.AsyncConnection.connect(url, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.Error as exc:
        raise DatabaseUnavailable(
            f"cannot reach the database at {describe(url)}: {first_line(exc)}"
        ) from None
    await probe.close()
    pool = psycopg_pool.AsyncConnectionPool(
        url,
        min_size=1,
        max_size=size,
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
        open=False,
        name="avatar-store",
    )
    await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
    return pool


def first_line(exc: BaseException) -> str:
    """The first line of the driver's message (libpq adds hints on further lines)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) for every numbered file, in order."""
    folder = resources.files("service.store.postgres").joinpath("migrations")
    found = [
        (int(entry.name.split("_", 1)[0]), entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    ]
    return sorted(found)


async def migrate(pool: Any, now_ms: int) -> list[int]:
    """Apply the migrations not yet recorded in `schema_version`; return the versions applied.

    A transaction-scoped advisory lock serializes nodes starting at once: the second waits,
    then finds every migration recorded and applies none."""
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms BIGINT NOT NULL)"
        )
        cursor = await conn.execute("SELECT version FROM schema_version")
        done = {row[0] for row in await cursor.fetchall()}
        applied = []
        for version, name, script in _migrations():
            if version in done:
                continue
            await conn.execute(script)  # several statements: sent as one simple query
            await conn.execute(
                "INSERT INTO schema_version (version, name, applied_ms) VALUES (%s, %s, %s)",
                (version, name, now_ms),
            )
            applied.append(version)
    return applied
