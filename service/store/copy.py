"""Moving up from one machine: every table of a data dir's SQLite database, its signing key and
its files, copied into an empty PostgreSQL database (and an empty S3 bucket prefix), so the
owners keep their keys, agents, routes, history, results and working links.

Both schemas have the same tables and columns (see postgres/migrations/0001_initial.sql), so
rows move unchanged, by column name, through COPY, in one transaction: the target is either
complete or untouched. Files go first (a copy that fails halfway leaves the database empty and
the next attempt finds the bucket prefix holding files: delete them and run it again)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path

from service.store.errors import DatabaseUnavailable
from service.store.postgres import PostgresStore
from service.store.s3 import S3FileStore
from service.store.sqlite.connection import connect

# Parents before children (foreign keys are checked row by row).
TABLES = (
    "owners", "api_keys", "avatars", "agents", "routes", "sessions", "usage_records", "tasks",
    "idempotency_keys", "webhook_outbox", "webhook_secrets", "conversations",
    "conversation_messages", "voice_profiles",
)  # fmt: skip
# The folders of the data dir that hold blobs (not its lock, database, key or spool).
FILE_FOLDERS = ("uploads", "results", "avatars", "speech", "images", "builds")


class TargetNotEmpty(Exception):
    """The database or the bucket prefix already holds something; the message says what."""


async def check_empty(store: PostgresStore, files: S3FileStore | None) -> None:
    async with store.connection() as conn:
        for table in (*TABLES, "service_keys"):
            cursor = await conn.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
            if (await cursor.fetchone())[0]:
                raise TargetNotEmpty(f"the target database already has rows in {table}")
    if files is not None and await files.stale("", 2**62):
        raise TargetNotEmpty(f"the bucket s3://{files.bucket} already holds files there")


def blobs(data_dir: Path) -> list[str]:
    """The file-store keys of the data dir's finished blobs (partial ones are skipped)."""
    found = []
    for folder in FILE_FOLDERS:
        for path in sorted((data_dir / folder).rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                found.append(path.relative_to(data_dir).as_posix())
    return found


async def copy_files(data_dir: Path, files: S3FileStore, report: Callable[[str], None]) -> None:
    keys = blobs(data_dir)
    for key in keys:
        await asyncio.to_thread(
            files.client.upload_file, str(data_dir / key), files.bucket, files.object_key(key)
        )
    report(f"copied {len(keys)} files to s3://{files.bucket}")


async def copy_rows(
    database: Path, store: PostgresStore, signing_key: bytes, now_ms: int,
    report: Callable[[str], None],
) -> None:  # fmt: skip
    source = connect(database)
    try:
        async with store.connection() as conn, conn.transaction():
            for table in TABLES:
                columns = [row[1] for row in source.execute(f"PRAGMA table_info({table})")]
                names = ", ".join(columns)
                rows = source.execute(f"SELECT {names} FROM {table}").fetchall()
                async with conn.cursor().copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                    for row in rows:
                        await copy.write_row(row)
                report(f"{table}: {len(rows)} rows")
            await conn.execute(
                "INSERT INTO service_keys (name, value, created_ms) VALUES ('signing', %s, %s)",
                (signing_key.decode(), now_ms),
            )
    except sqlite3.Error as exc:
        raise DatabaseUnavailable(f"cannot read {database}: {exc}") from None
    finally:
        source.close()
