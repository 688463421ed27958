"""Interactive sessions and usage records, for both databases."""

from __future__ import annotations

from service.domain.models import Session, UsageFilter, UsageRecord, UsageTotals
from service.domain.pagination import PageRequest
from service.store.rows import (
    SESSION_FIELDS,
    USAGE_COLUMNS,
    session_of,
    session_values,
    usage_totals_of,
)
from service.store.shared.base import SharedBase, after_clause
from service.store.shared.steps import Announce, Body, Query, insert

_SESSION = f"{', '.join(SESSION_FIELDS)} FROM sessions"
_USAGE = f"{USAGE_COLUMNS} FROM usage_records"
_INSERT_SESSION = insert("sessions", SESSION_FIELDS)
_INSERT_USAGE = insert("usage_records", tuple(USAGE_COLUMNS.split(", ")))


def _usage(row: tuple) -> UsageRecord:
    return UsageRecord(*row)


def insert_usage(u: UsageRecord) -> Query:
    """The statement that records `u` (part of the write that ends what it bills)."""
    return Query(
        _INSERT_USAGE,
        (u.usage_id, u.owner_id, u.kind, u.ref_id, u.started_ms, u.ended_ms, u.seconds,
         u.billable_seconds, u.route_id),
        wait=False,
    )  # fmt: skip


def _add_usage(usage: UsageRecord) -> Body[None]:
    yield insert_usage(usage)


def _insert_session(session: Session) -> Body[None]:
    values = session_values(session)
    yield Query(_INSERT_SESSION, [values[name] for name in SESSION_FIELDS], wait=False)


def _mark_ready(session_id: str, ready_ms: int) -> Body[bool]:
    marked = yield Query(
        "UPDATE sessions SET ready_ms = ? WHERE session_id = ? AND ready_ms IS NULL"
        " AND stopped_ms IS NULL",
        (ready_ms, session_id),
    )
    if marked.rowcount != 1:
        return False
    yield Announce("sessions")
    return True


def _stop(session_id: str, stopped_ms: int, reason: str, usage: UsageRecord) -> Body[bool]:
    """Stop once: only the caller that flips `stopped_ms` records the usage."""
    stopped = yield Query(
        "UPDATE sessions SET stopped_ms = ?, stop_reason = ? WHERE session_id = ?"
        " AND stopped_ms IS NULL",
        (stopped_ms, reason, session_id),
    )
    if stopped.rowcount != 1:
        return False
    yield insert_usage(usage)
    yield Announce("sessions")
    return True


def _usage_where(owner_id: str, which: UsageFilter) -> tuple[str, list]:
    """The WHERE clause (and its parameters) of the owner's records `which` selects."""
    where = "owner_id = ? AND ended_ms >= ? AND ended_ms < ?"
    params: list = [owner_id, which.since_ms, which.until_ms]
    if which.kind is not None:
        where += " AND kind = ?"
        params.append(which.kind)
    if which.route_id is not None:
        where += " AND route_id = ?"
        params.append(which.route_id)
    return where, params


class SessionsMixin(SharedBase):
    async def add_session(self, session: Session) -> None:
        await self._run(_insert_session(session))

    async def get_session(self, session_id: str) -> Session | None:
        sql = f"SELECT {_SESSION} WHERE session_id = ?"
        return await self._read_one(sql, (session_id,), session_of)

    async def list_open_sessions(
        self, owner_id: str, page: PageRequest, *, now_ms: int
    ) -> list[Session]:
        cond, params = after_clause(page, "created_ms", "session_id")
        sql = (
            f"SELECT {_SESSION} WHERE owner_id = ? AND stopped_ms IS NULL AND max_end_ms > ?"
            f"{cond} ORDER BY created_ms DESC, session_id DESC LIMIT ?"
        )
        return await self._read_all(sql, [owner_id, now_ms, *params, page.limit + 1], session_of)

    async def mark_session_ready(self, session_id: str, ready_ms: int) -> None:
        if await self._run(_mark_ready(session_id, ready_ms)):
            self._session_changes.touch()

    async def stop_session(
        self, session_id: str, stopped_ms: int, reason: str, usage: UsageRecord
    ) -> bool:
        stopped = await self._run(_stop(session_id, stopped_ms, reason, usage))
        if stopped:
            self._session_changes.touch()
        return stopped

    async def add_usage(self, usage: UsageRecord) -> None:
        await self._run(_add_usage(usage))

    async def sessions_past_max(self, now_ms: int, limit: int) -> list[Session]:
        sql = f"SELECT {_SESSION} WHERE stopped_ms IS NULL AND max_end_ms <= ? LIMIT ?"
        return await self._read_all(sql, (now_ms, limit), session_of)

    async def idle_sessions(self, now_ms: int, limit: int) -> list[Session]:
        """Open sessions past their idle timeout with no conversation open."""
        sql = (
            f"SELECT {_SESSION} WHERE stopped_ms IS NULL AND max_end_ms > ?"
            " AND idle_timeout_min IS NOT NULL"
            " AND coalesce(last_active_ms, created_ms) + idle_timeout_min * 60000 <= ?"
            " AND NOT EXISTS (SELECT 1 FROM conversations c"
            " WHERE c.session_id = sessions.session_id AND c.ended_ms IS NULL) LIMIT ?"
        )
        return await self._read_all(sql, (now_ms, now_ms, limit), session_of)

    async def unprepared_sessions(self, created_before_ms: int, limit: int) -> list[Session]:
        sql = (
            f"SELECT {_SESSION} WHERE stopped_ms IS NULL AND ready_ms IS NULL"
            " AND created_ms < ? LIMIT ?"
        )
        return await self._read_all(sql, (created_before_ms, limit), session_of)

    async def list_usage(
        self, owner_id: str, which: UsageFilter, page: PageRequest
    ) -> list[UsageRecord]:
        where, params = _usage_where(owner_id, which)
        cond, after = after_clause(page, "ended_ms", "usage_id")
        sql = f"SELECT {_USAGE} WHERE {where}{cond} ORDER BY ended_ms DESC, usage_id DESC LIMIT ?"
        return await self._read_all(sql, [*params, *after, page.limit + 1], _usage)

    async def usage_totals(self, owner_id: str, which: UsageFilter) -> UsageTotals:
        where, params = _usage_where(owner_id, which)
        rows = await self._read_all(
            "SELECT kind, sum(seconds), sum(billable_seconds), count(*) FROM usage_records"
            f" WHERE {where} GROUP BY kind",
            params,
            tuple,
        )
        return usage_totals_of(rows)
