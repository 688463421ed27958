"""Interactive sessions and usage records."""

from __future__ import annotations

from service.domain.models import Session, UsageFilter, UsageRecord, UsageTotals
from service.domain.pagination import PageRequest
from service.store.postgres.base import Conn, PostgresBase, after_clause, announce
from service.store.rows import (
    SESSION_FIELDS,
    USAGE_COLUMNS,
    session_of,
    session_values,
    usage_totals_of,
)

_SESSION_COLUMNS = ", ".join(SESSION_FIELDS)
_SESSION = f"{_SESSION_COLUMNS} FROM sessions"
_USAGE = f"{USAGE_COLUMNS} FROM usage_records"


def _usage(row: tuple) -> UsageRecord:
    return UsageRecord(*row)


async def _insert_session(conn: Conn, session: Session) -> None:
    marks = ", ".join(f"%({name})s" for name in SESSION_FIELDS)
    await conn.execute(
        f"INSERT INTO sessions ({_SESSION_COLUMNS}) VALUES ({marks})", session_values(session)
    )


async def _mark_ready(conn: Conn, session_id: str, ready_ms: int) -> bool:
    cursor = await conn.execute(
        "UPDATE sessions SET ready_ms = %s WHERE session_id = %s AND ready_ms IS NULL"
        " AND stopped_ms IS NULL",
        (ready_ms, session_id),
    )
    if cursor.rowcount == 1:
        await announce(conn, "sessions")
    return cursor.rowcount == 1


async def insert_usage(conn: Conn, u: UsageRecord) -> None:
    await conn.execute(
        f"INSERT INTO usage_records ({USAGE_COLUMNS})"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (u.usage_id, u.owner_id, u.kind, u.ref_id, u.started_ms, u.ended_ms, u.seconds,
         u.billable_seconds, u.route_id),
    )  # fmt: skip


async def _stop(conn: Conn, session_id: str, stopped_ms: int, reason: str, usage) -> bool:
    """Stop once: only the caller that flips `stopped_ms` records the usage."""
    cursor = await conn.execute(
        "UPDATE sessions SET stopped_ms = %s, stop_reason = %s WHERE session_id = %s"
        " AND stopped_ms IS NULL",
        (stopped_ms, reason, session_id),
    )
    if cursor.rowcount != 1:
        return False
    await insert_usage(conn, usage)
    await announce(conn, "sessions")
    return True


class SessionsMixin(PostgresBase):
    async def add_session(self, session: Session) -> None:
        await self._write(_insert_session, session)

    async def get_session(self, session_id: str) -> Session | None:
        sql = f"SELECT {_SESSION} WHERE session_id = %s"
        return await self._one(sql, (session_id,), session_of)

    async def list_open_sessions(
        self, owner_id: str, page: PageRequest, *, now_ms: int
    ) -> list[Session]:
        cond, params = after_clause(page, "created_ms", "session_id")
        sql = (
            f"SELECT {_SESSION} WHERE owner_id = %s AND stopped_ms IS NULL AND max_end_ms > %s"
            f"{cond} ORDER BY created_ms DESC, session_id DESC LIMIT %s"
        )
        return await self._all(sql, [owner_id, now_ms, *params, page.limit + 1], session_of)

    async def mark_session_ready(self, session_id: str, ready_ms: int) -> None:
        if await self._write(_mark_ready, session_id, ready_ms):
            self._session_changes.touch()

    async def stop_session(
        self, session_id: str, stopped_ms: int, reason: str, usage: UsageRecord
    ) -> bool:
        stopped = await self._write(_stop, session_id, stopped_ms, reason, usage)
        if stopped:
            self._session_changes.touch()
        return stopped

    async def add_usage(self, usage: UsageRecord) -> None:
        await self._write(insert_usage, usage)

    async def sessions_past_max(self, now_ms: int, limit: int) -> list[Session]:
        sql = f"SELECT {_SESSION} WHERE stopped_ms IS NULL AND max_end_ms <= %s LIMIT %s"
        return await self._all(sql, (now_ms, limit), session_of)

    async def idle_sessions(self, now_ms: int, limit: int) -> list[Session]:
        """Open sessions past their idle timeout with no conversation open."""
        sql = (
            f"SELECT {_SESSION} WHERE stopped_ms IS NULL AND max_end_ms > %s"
            " AND idle_timeout_min IS NOT NULL"
            " AND coalesce(last_active_ms, created_ms) + idle_timeout_min * 60000 <= %s"
            " AND NOT EXISTS (SELECT 1 FROM conversations c"
            " WHERE c.session_id = sessions.session_id AND c.ended_ms IS NULL) LIMIT %s"
        )
        return await self._all(sql, (now_ms, now_ms, limit), session_of)

    async def unprepared_sessions(self, created_before_ms: int, limit: int) -> list[Session]:
        sql = (
            f"SELECT {_SESSION} WHERE stopped_ms IS NULL AND ready_ms IS NULL"
            " AND created_ms < %s LIMIT %s"
        )
        return await self._all(sql, (created_before_ms, limit), session_of)

    async def list_usage(
        self, owner_id: str, which: UsageFilter, page: PageRequest
    ) -> list[UsageRecord]:
        where, params = _usage_where(owner_id, which)
        cond, after = after_clause(page, "ended_ms", "usage_id")
        sql = f"SELECT {_USAGE} WHERE {where}{cond} ORDER BY ended_ms DESC, usage_id DESC LIMIT %s"
        return await self._all(sql, [*params, *after, page.limit + 1], _usage)

    async def usage_totals(self, owner_id: str, which: UsageFilter) -> UsageTotals:
        where, params = _usage_where(owner_id, which)
        rows = await self._all(
            "SELECT kind, sum(seconds), sum(billable_seconds), count(*) FROM usage_records"
            f" WHERE {where} GROUP BY kind",
            params,
            tuple,
        )
        return usage_totals_of(rows)


def _usage_where(owner_id: str, which: UsageFilter) -> tuple[str, list]:
    """The WHERE clause (and its parameters) of the owner's records `which` selects."""
    where = "owner_id = %s AND ended_ms >= %s AND ended_ms < %s"
    params: list = [owner_id, which.since_ms, which.until_ms]
    if which.kind is not None:
        where += " AND kind = %s"
        params.append(which.kind)
    if which.route_id is not None:
        where += " AND route_id = %s"
        params.append(which.route_id)
    return where, params
