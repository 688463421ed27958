"""Opening the database and applying the numbered schema migrations."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

BUSY_TIMEOUT_MS = 5000


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, foreign keys on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    # NORMAL in WAL mode keeps the database consistent across crashes; a power cut may lose
    # the last commits, which is the usual trade for not syncing on every commit.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def _migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) for every numbered file, in order."""
    found = []
    for entry in resources.files("service.store").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append((version, entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    return found


def _statements(script: str):
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""
    if buffer.strip() and not buffer.strip().startswith("--"):
        raise ValueError(f"incomplete SQL statement in migration: {buffer[:80]!r}")


def migrate(conn: sqlite3.Connection, now_ms: int) -> list[int]:
    """Apply the migrations not yet recorded in `schema_version`; return the versions applied.

    The check and the changes share one IMMEDIATE transaction, so several worker processes
    starting at once apply each migration exactly once."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms INTEGER NOT NULL)"
        )
        done = {row[0] for row in conn.execute("SELECT version FROM schema_version")}
        applied = []
        for version, name, script in _migrations():
            if version in done:
                continue
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version (version, name, applied_ms) VALUES (?, ?, ?)",
                (version, name, now_ms),
            )
            applied.append(version)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return applied
