"""Kept conversations and their messages; closing one records its usage in the same write."""

from __future__ import annotations

import sqlite3

import msgspec

from service.domain.models import Conversation, Message, UsageRecord
from service.domain.pagination import PageRequest
from service.store.rows import CONVERSATION_FIELDS, MESSAGE_COLUMNS, conversation_of
from service.store.sqlite.base import SqliteBase, after_clause
from service.store.sqlite.sessions import insert_usage

_SELECT = f"SELECT {', '.join(CONVERSATION_FIELDS)} FROM conversations"
_MESSAGE = f"SELECT {MESSAGE_COLUMNS} FROM conversation_messages"


def _message(row: tuple) -> Message:
    return Message(*row)


def _insert(conn: sqlite3.Connection, c: Conversation) -> None:
    marks = ", ".join("?" * len(CONVERSATION_FIELDS))
    sql = f"INSERT INTO conversations ({', '.join(CONVERSATION_FIELDS)}) VALUES ({marks})"
    conn.execute(sql, msgspec.structs.astuple(c))
    if c.session_id is not None:
        _session_seen(conn, c.session_id, c.started_ms)


def _session_seen(conn: sqlite3.Connection, session_id: str, at_ms: int) -> None:
    conn.execute(
        "UPDATE sessions SET last_active_ms = max(coalesce(last_active_ms, 0), ?)"
        " WHERE session_id = ?",
        (at_ms, session_id),
    )


def _add_message(conn: sqlite3.Connection, m: Message, session_id: str | None) -> None:
    # Nothing more is kept of a conversation its owner deleted while it was still open.
    conn.execute(
        "INSERT INTO conversation_messages (conversation_id, seq, role, text, at_ms)"
        " SELECT ?, ?, ?, ?, ? FROM conversations WHERE conversation_id = ?"
        " AND deleted_ms IS NULL",
        (m.conversation_id, m.seq, m.role, m.text, m.at_ms, m.conversation_id),
    )
    if session_id is not None and m.role == "user":
        _session_seen(conn, session_id, m.at_ms)


def _close(
    conn: sqlite3.Connection, c: Conversation, ended_ms: int, reason: str, usage: UsageRecord | None
) -> bool:
    """Close once: only the caller that sets `ended_ms` records the usage."""
    cursor = conn.execute(
        "UPDATE conversations SET ended_ms = ?, end_reason = ? WHERE conversation_id = ?"
        " AND ended_ms IS NULL",
        (ended_ms, reason, c.conversation_id),
    )
    if cursor.rowcount != 1:
        return False
    if usage is not None:
        insert_usage(conn, usage)
    if c.session_id is not None:
        _session_seen(conn, c.session_id, ended_ms)
    return True


def _keep_alive(conn: sqlite3.Connection, conversation_ids: list[str], now_ms: int) -> None:
    stamps = [(now_ms, conversation_id) for conversation_id in conversation_ids]
    conn.executemany(
        "UPDATE conversations SET alive_ms = ? WHERE conversation_id = ? AND ended_ms IS NULL",
        stamps,
    )
    # A socket's hold is named by its conversation's id (see service.store.sqlite.sockets).
    conn.executemany("UPDATE socket_holds SET alive_ms = ? WHERE socket_id = ?", stamps)


def _delete(conn: sqlite3.Connection, owner_id: str, conversation_id: str, now_ms: int):
    row = conn.execute(
        f"{_SELECT} WHERE conversation_id = ? AND owner_id = ? AND deleted_ms IS NULL",
        (conversation_id, owner_id),
    ).fetchone()
    if row is None:
        return None
    conn.execute(
        "UPDATE conversations SET deleted_ms = ? WHERE conversation_id = ?",
        (now_ms, conversation_id),
    )
    conn.execute("DELETE FROM conversation_messages WHERE conversation_id = ?", (conversation_id,))
    return conversation_of(row)


class ConversationsMixin(SqliteBase):
    async def add_conversation(self, conversation: Conversation) -> None:
        await self._write(_insert, conversation)

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        sql = f"{_SELECT} WHERE conversation_id = ? AND deleted_ms IS NULL"
        return self._one(sql, (conversation_id,), conversation_of)

    async def list_conversations(
        self,
        owner_id: str,
        page: PageRequest,
        *,
        route_id: str | None = None,
        session_id: str | None = None,
    ) -> list[Conversation]:
        sql, params = f"{_SELECT} WHERE owner_id = ? AND deleted_ms IS NULL", [owner_id]
        for column, value in (("route_id", route_id), ("session_id", session_id)):
            if value is not None:
                sql, params = f"{sql} AND {column} = ?", [*params, value]
        cond, after = after_clause(page, "started_ms", "conversation_id")
        sql += f"{cond} ORDER BY started_ms DESC, conversation_id DESC LIMIT ?"
        return self._all(sql, [*params, *after, page.limit + 1], conversation_of)

    async def add_message(self, message: Message, session_id: str | None) -> None:
        await self._write(_add_message, message, session_id)

    async def list_messages(self, conversation_id: str, last: int | None = None) -> list[Message]:
        """The conversation's messages, oldest first (only the `last` ones when given)."""
        if last is None:
            sql = f"{_MESSAGE} WHERE conversation_id = ? ORDER BY seq"
            return self._all(sql, (conversation_id,), _message)
        sql = f"{_MESSAGE} WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?"
        return self._all(sql, (conversation_id, last), _message)[::-1]

    async def close_conversation(
        self, conversation: Conversation, ended_ms: int, reason: str, usage: UsageRecord | None
    ) -> bool:
        closed = await self._write(_close, conversation, ended_ms, reason, usage)
        if closed and conversation.session_id is not None:
            self._session_changes.touch()
        return closed

    async def keep_alive(self, conversation_ids: list[str], now_ms: int) -> None:
        if conversation_ids:
            await self._write(_keep_alive, conversation_ids, now_ms)

    async def conversations_gone_quiet(
        self, alive_before_ms: int, limit: int
    ) -> list[Conversation]:
        sql = f"{_SELECT} WHERE ended_ms IS NULL AND alive_ms < ? LIMIT ?"
        return self._all(sql, (alive_before_ms, limit), conversation_of)

    async def delete_conversation(
        self, owner_id: str, conversation_id: str, now_ms: int
    ) -> Conversation | None:
        return await self._write(_delete, owner_id, conversation_id, now_ms)
