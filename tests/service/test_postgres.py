"""The PostgreSQL store's own parts: migrations applied once by nodes starting together, the
signing key and clock every node shares, change notifications that survive a dropped
connection, and a clear refusal when the database cannot be reached."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from service.domain.models import Owner, Session
from service.runtime import open_context
from service.settings import load_settings
from service.store.errors import DatabaseUnavailable
from service.store.postgres import open_postgres
from service.store.postgres.connection import _migrations
from tests.service.stack import free_port


def run(coro):
    return asyncio.run(coro)


def test_nodes_starting_together_apply_each_migration_once(database_url):
    async def start_four():
        stores = await asyncio.gather(*(open_postgres(database_url, n) for n in range(4)))
        for store in stores:
            await store.close()

    run(start_four())
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
    assert rows == [(version, name) for version, name, _ in _migrations()]


def test_every_node_signs_with_the_key_in_the_database_unless_one_is_set(database_url, tmp_path):
    async def keys(**overrides):
        found = []
        for n in range(2):
            settings = load_settings(
                {}, data_dir=tmp_path / f"node{n}", database_url=database_url, **overrides
            )
            async with open_context(settings) as ctx:
                found.append(ctx.signing_key)
                # No clock given: the database's (within the loopback round trip of ours).
                assert abs(ctx.clock.now_ms() - time.time() * 1000) < 1000
        return found

    first, second = run(keys())
    assert first == second and len(first) >= 32
    assert run(keys(signing_key="k" * 40)) == [b"k" * 40] * 2
    assert run(keys()) == [first, first]  # made once, kept


def test_changes_still_arrive_after_the_listening_connection_drops(database_url):
    async def moved(store, mark: bytes) -> None:
        deadline = time.monotonic() + 5
        while store.live_mark() == mark:
            assert time.monotonic() < deadline, "the live mark never moved"
            await asyncio.sleep(0.01)

    async def scenario():
        watcher, writer = await open_postgres(database_url), await open_postgres(database_url)
        try:
            await writer.add_owner(Owner("own_1", "alice", 0))
            await writer.add_session(Session("ses_1", "own_1", "av", "m", 0, 10))
            mark = watcher.live_mark()
            async with writer.connection() as conn:
                await conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE query LIKE 'LISTEN%%' AND pid <> pg_backend_pid()"
                )
            await moved(watcher, mark)  # what it may have missed counts as changed
            await watcher.listening(5)
            mark = watcher.live_mark()
            await writer.mark_session_ready("ses_1", 1)
            await moved(watcher, mark)
        finally:
            await watcher.close()
            await writer.close()

    run(scenario())


def test_an_unreachable_database_is_refused_in_one_line(run_cli, tmp_path):
    url = f"postgresql://avatar:secret-pw@127.0.0.1:{free_port()}/avatar"
    with pytest.raises(DatabaseUnavailable) as raised:
        run(open_postgres(url))
    assert f"127.0.0.1:{url.split(':')[3]}" in str(raised.value)
    assert "secret-pw" not in str(raised.value)
    env = {"PATH": "/usr/bin:/bin", "AVATAR_DATABASE_URL": url}
    result = run_cli("serve", "--port", str(free_port()), "--data-dir", str(tmp_path), env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the database at 127.0.0.1" in lines[0], lines
    assert "secret-pw" not in result.stderr
