"""The SQLite store: numbered migrations recorded once, pragmas, writes committed or rolled
back as a whole."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from service.domain.models import Agent, Owner, Route
from service.store.sqlite import SqliteStore
from service.store.sqlite.connection import _migrations


def run(coro):
    return asyncio.run(coro)


def test_migrations_are_numbered_and_recorded_once(tmp_path):
    path = tmp_path / "db.sqlite"

    async def open_twice():
        for now in (1000, 2000):
            store = SqliteStore(path, now)
            await store.close()

    run(open_twice())
    conn = sqlite3.connect(path)
    versions = conn.execute("SELECT version, name, applied_ms FROM schema_version").fetchall()
    assert versions == [(v, name, 1000) for v, name, _ in _migrations()]
    assert versions[0][:2] == (1, "0001_initial.sql")
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_connection_pragmas(tmp_path):
    async def check():
        store = SqliteStore(tmp_path / "db.sqlite", 0)
        try:
            conn = store._reader
            assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
            assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
            assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        finally:
            await store.close()

    run(check())


def test_failed_write_rolls_back_and_reports(tmp_path):
    async def scenario():
        store = SqliteStore(tmp_path / "db.sqlite", 0)
        try:
            await store.add_owner(Owner("own_1", "alice", 0))
            with pytest.raises(sqlite3.IntegrityError):
                await store.add_owner(Owner("own_2", "alice", 0))  # name is unique
            assert await store.count_owners() == 1
            await store.add_agent(Agent("agt_1", "own_1", "A", 0, 0))
            # A route may only be written for a live agent of the same owner.
            assert not await store.add_route(Route("rt_1", "own_2", "agt_1", None, 0))
            await store.delete_agent("own_1", "agt_1", 5)
            assert not await store.add_route(Route("rt_2", "own_1", "agt_1", None, 6))
            assert await store.get_route("rt_2") is None
        finally:
            await store.close()

    run(scenario())
