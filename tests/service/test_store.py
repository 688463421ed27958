"""The stores: writes committed or rolled back as a whole, caches that follow changes made
elsewhere, route change times (on SQLite and PostgreSQL alike); and the SQLite store's own
parts: numbered migrations recorded once, pragmas, the writer thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from service.domain.models import Agent, Avatar, Owner, Route, UsageFilter
from service.domain.pagination import PageRequest
from service.runtime import SIGNING_KEY_FILE, open_context
from service.settings import load_settings
from service.store.shared.steps import LostWrite, Query
from service.store.sqlite import SqliteStore, connection, writer
from service.store.sqlite.connection import _migrations
from tests.service.conftest import eventually


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


def test_failed_write_rolls_back_and_reports(open_store):
    async def scenario():
        store = await open_store()
        try:
            await store.add_owner(Owner("own_1", "alice", 0))
            with pytest.raises(Exception, match=r"(?i)unique"):
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


def test_cached_routes_and_agents_follow_changes_made_by_other_processes(open_store, monkeypatch):
    """Two stores on one database stand for two worker processes (or nodes): a route or
    agent read (and cached) by one is seen changed once the other commits the change, at
    once on SQLite, by notification within milliseconds on PostgreSQL."""

    async def scenario():
        reader, writer = await open_store(), await open_store()
        try:
            await writer.add_owner(Owner("own_1", "alice", 0))
            await writer.add_agent(Agent("agt_1", "own_1", "A", 0, 0))
            for route_id in ("rt_1", "rt_2"):
                assert await writer.add_route(Route(route_id, "own_1", "agt_1", None, 0))
                assert (await reader.get_route(route_id)).revoked_ms is None  # now cached
            with monkeypatch.context() as patch:
                patch.setattr(reader, "_one", None)  # any read of the database would fail
                assert (await reader.get_route("rt_1")).route_id == "rt_1"

            async def route(route_id):
                return await reader.get_route(route_id)

            await writer.set_route_label("own_1", "rt_1", "new", 3)
            await eventually(lambda: _has(route("rt_1"), label="new"))
            await writer.revoke_route("own_1", "rt_1", 5)
            await eventually(lambda: _has(route("rt_1"), revoked_ms=5, version=3))
            assert (await reader.get_route("rt_2")).revoked_ms is None
            assert (await reader.get_agent("agt_1")).name == "A"  # cached
            await writer.replace_agent(Agent("agt_1", "own_1", "B", 0, 7))
            await eventually(lambda: _has(reader.get_agent("agt_1"), name="B"))
            await writer.delete_agent("own_1", "agt_1", 9)
            await eventually(lambda: _has(route("rt_2"), revoked_ms=9, version=2))
            await eventually(lambda: _gone(reader.get_agent("agt_1")))
            assert await reader.get_route("rt_missing") is None
        finally:
            await reader.close()
            await writer.close()

    run(scenario())


def test_writes_arriving_together_fail_alone(tmp_path):
    """Writes queued while another commits share a transaction; one failing write (a
    duplicate owner name) must not undo or fail the others."""

    async def scenario():
        store = SqliteStore(tmp_path / "db.sqlite", 0)
        try:
            owners = [Owner(f"own_{i}", f"name{i}", 0) for i in range(20)]
            owners.append(Owner("own_dup", "name3", 0))
            results = await asyncio.gather(
                *(store.add_owner(owner) for owner in owners), return_exceptions=True
            )
            failures = [r for r in results if isinstance(r, Exception)]
            assert len(failures) == 1 and isinstance(failures[0], sqlite3.IntegrityError)
            assert await store.count_owners() == 20
        finally:
            await store.close()

    run(scenario())


async def _gone(read) -> bool:
    return await read is None


async def _has(read, **values) -> bool:
    record = await read
    return all(getattr(record, name) == value for name, value in values.items())


def test_route_changes_keep_their_times_in_order(open_store):
    """Each change moves the last-change time forward and counts a version; a no-op (the same
    label, a second revoke) changes nothing; a clock that steps back never puts a revoke
    before the creation or the last change before an earlier one."""

    async def scenario():
        store = await open_store()
        try:
            await store.add_owner(Owner("own_1", "alice", 0))
            await store.add_agent(Agent("agt_1", "own_1", "A", 0, 0))
            assert await store.add_route(Route("rt_1", "own_1", "agt_1", "a", 100))
            route = await store.set_route_label("own_1", "rt_1", "a", 150)
            assert (route.version, route.changed_ms, route.updated_ms) == (1, None, 100)
            route = await store.set_route_label("own_1", "rt_1", None, 200)
            assert (route.version, route.changed_ms, route.label) == (2, 200, None)
            route = await store.revoke_route("own_1", "rt_1", 50)  # the clock stepped back
            assert (route.version, route.revoked_ms, route.updated_ms) == (3, 100, 200)
            route = await store.revoke_route("own_1", "rt_1", 300)
            assert (route.version, route.revoked_ms, route.updated_ms) == (3, 100, 200)
            route = await store.set_route_label("own_1", "rt_1", "b", 400)
            assert (route.version, route.revoked_ms, route.updated_ms) == (4, 100, 400)
        finally:
            await store.close()

    run(scenario())


def database_before(path, migration: str, monkeypatch) -> sqlite3.Connection:
    """A database at `path` with the migrations before `migration` applied and an owner."""
    older = [m for m in _migrations() if m[1] < migration]
    with monkeypatch.context() as patch:
        patch.setattr(connection, "_migrations", lambda: older)
        conn = connection.connect(path)
        connection.migrate(conn, 0)
    conn.execute("INSERT INTO owners VALUES ('own_1', 'alice', 0)")
    return conn


def test_route_versions_migration_counts_past_revokes(tmp_path, monkeypatch):
    path = tmp_path / "db.sqlite"
    conn = database_before(path, "0004", monkeypatch)
    conn.execute(
        "INSERT INTO agents (agent_id, owner_id, name, model, created_ms, updated_ms)"
        " VALUES ('agt_1', 'own_1', 'A', 'metis-2.5', 0, 0)"
    )
    conn.execute(
        "INSERT INTO routes (route_id, owner_id, agent_id, created_ms, revoked_ms)"
        " VALUES ('rt_old', 'own_1', 'agt_1', 10, 20), ('rt_live', 'own_1', 'agt_1', 30, NULL)"
    )
    conn.close()

    async def check():
        store = SqliteStore(path, 0)
        try:
            old, live = await store.get_route("rt_old"), await store.get_route("rt_live")
            assert (old.version, old.updated_ms) == (2, 20)
            assert (live.version, live.updated_ms) == (1, 30)
        finally:
            await store.close()

    run(check())


def test_a_statement_that_cannot_miss_rolls_its_write_back_when_it_does(open_store):
    """The shared write bodies (service/store/shared) mark statements that must touch one row
    (`expect`); a miss is a bug, and both drivers undo the whole write before saying so."""

    def body():
        yield Query("INSERT INTO owners (owner_id, name, created_ms) VALUES (?, ?, ?)",
                    ("own_1", "alice", 0), wait=False)  # fmt: skip
        yield Query("UPDATE owners SET name = ? WHERE owner_id = ?", ("bob", "own_9"),
                    wait=False, expect=1)  # fmt: skip

    async def scenario():
        store = await open_store()
        try:
            with pytest.raises(LostWrite, match="1 row"):
                await store._run(body())
            assert await store.get_owner_by_name("alice") is None
        finally:
            await store.close()

    run(scenario())


def test_a_context_that_cannot_be_opened_closes_its_store(tmp_path):
    """An unreadable signing key fails the opening after the store was opened: the store's
    writer thread must not outlive the failure."""
    (tmp_path / SIGNING_KEY_FILE).mkdir(parents=True)  # where the key file should be

    def writers() -> int:
        return sum(thread.name == "sqlite-writer" for thread in threading.enumerate())

    async def open_it() -> None:
        async with open_context(load_settings({}, data_dir=tmp_path)):
            pass

    before = writers()
    with pytest.raises(OSError):
        run(open_it())
    assert writers() == before


def test_the_queue_column_migration_keeps_waiting_tasks_in_order(tmp_path, monkeypatch):
    path = tmp_path / "db.sqlite"
    conn = database_before(path, "0006", monkeypatch)
    for task_id, created in (("tsk_late", 20), ("tsk_early", 10)):
        conn.execute(
            "INSERT INTO tasks (task_id, owner_id, kind, status, stage, version, progress,"
            " params, created_ms, updated_ms, queued_ms, reruns)"
            " VALUES (?, 'own_1', 'upscale', 'IN_QUEUE', 'queued', 1, 0, '{}', ?, ?, ?, 0)",
            (task_id, created, created, created),
        )
    conn.close()

    async def check():
        store = SqliteStore(path, 0)
        try:
            late = await store.get_task("tsk_late")
            assert (late.created_ms, await store.queue_position(late)) == (20, 2)
            claimed = await store.claim_task("wrk_1", 100, lambda task: task)
            assert claimed.task_id == "tsk_early"
        finally:
            await store.close()

    run(check())


def test_the_usage_route_migration_names_the_route_of_earlier_conversations(tmp_path, monkeypatch):
    path = tmp_path / "db.sqlite"
    conn = database_before(path, "0008", monkeypatch)
    conn.execute(
        "INSERT INTO conversations (conversation_id, owner_id, route_id, started_ms, alive_ms)"
        " VALUES ('cnv_1', 'own_1', 'rt_1', 0, 0)"
    )
    conn.execute(
        "INSERT INTO usage_records VALUES ('usg_1', 'own_1', 'route_conversation', 'cnv_1', 0,"
        " 1000, 1.0, 1.0), ('usg_2', 'own_1', 'session', 'ses_1', 0, 2000, 2.0, 2.0)"
    )
    conn.close()

    async def check():
        store = SqliteStore(path, 0)
        try:
            which = UsageFilter(0, 10_000, route_id="rt_1")
            [record] = await store.list_usage("own_1", which, PageRequest(10))
            assert (record.usage_id, record.route_id) == ("usg_1", "rt_1")
            totals = await store.usage_totals("own_1", which)
            assert (totals.route_conversation_seconds, totals.session_seconds) == (1.0, 0.0)
        finally:
            await store.close()

    run(check())


def test_writes_fail_rather_than_wait_when_the_writer_thread_is_gone(tmp_path, monkeypatch):
    """The writer thread cannot open its connection (say, no file descriptor is left): every
    write says so at once instead of waiting for ever."""

    def unable(path):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(writer, "connect", unable)

    async def scenario() -> None:
        gone = writer.Writer(tmp_path / "db.sqlite")
        try:
            for _ in range(3):
                with pytest.raises(sqlite3.OperationalError, match="writer stopped"):
                    await asyncio.wait_for(gone.run(lambda conn: None), 5)
        finally:
            gone.close()

    run(scenario())


def test_a_write_after_the_writer_closed_fails_at_once(tmp_path):
    """A store closed under a late caller (shutdown, a test's teardown) answers its writes
    with an error that says so, instead of leaving the caller waiting for ever."""

    async def scenario() -> None:
        closed = writer.Writer(tmp_path / "db.sqlite")
        closed.close()
        with pytest.raises(sqlite3.OperationalError, match="writer was closed"):
            await asyncio.wait_for(closed.run(lambda conn: None), 5)

    run(scenario())


def test_writes_racing_the_writers_close_are_all_answered(tmp_path):
    """Writes queued while `close` runs in another thread each end: written, or refused."""

    def write(conn: sqlite3.Connection, n: int) -> int:
        conn.execute("INSERT INTO t VALUES (?)", (n,))
        return n

    async def attempt(w: writer.Writer, n: int) -> int | None:
        try:
            return await w.run(write, n)
        except sqlite3.OperationalError as exc:
            assert "writer was closed" in str(exc)
            return None

    async def scenario() -> None:
        w = writer.Writer(tmp_path / "db.sqlite")
        await w.run(lambda conn: conn.execute("CREATE TABLE t (n INTEGER)"))
        first = [asyncio.ensure_future(attempt(w, n)) for n in range(200)]
        closing = asyncio.ensure_future(asyncio.to_thread(w.close))
        later = [asyncio.ensure_future(attempt(w, n)) for n in range(200, 400)]
        outcomes = await asyncio.wait_for(asyncio.gather(*first, *later), 10)
        await closing
        written = [n for n in outcomes if n is not None]
        conn = sqlite3.connect(tmp_path / "db.sqlite")
        stored = sorted(n for (n,) in conn.execute("SELECT n FROM t"))
        conn.close()
        assert stored == sorted(written)

    run(scenario())


def test_avatars_are_read_in_one_call_however_many(open_store):
    async def scenario():
        store = await open_store()
        try:
            await store.add_owner(Owner("own_1", "alice", 0))
            ids = [f"av_{n}" for n in range(1200)]
            for avatar_id in ids[::2]:
                await store.add_avatar(Avatar(avatar_id, "own_1", None, 1, 1, "upload", 0))
            found = await store.get_avatars([*ids, "av_unknown"])
            assert sorted(a.avatar_id for a in found) == sorted(ids[::2])
            assert await store.get_avatars([]) == []
        finally:
            await store.close()

    run(scenario())
