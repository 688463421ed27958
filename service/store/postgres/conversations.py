"""Kept conversations and their messages; closing one records its usage in the same write.
A message is kept only while its conversation is (the insert locks the conversation row, so
a delete racing it either waits and removes the message too, or wins)."""

from __future__ import annotations

import msgspec

from service.domain.models import Conversation, Message, UsageRecord
from service.domain.pagination import PageRequest
from service.store.postgres.base import Conn, PostgresBase, after_clause, announce, fetch_one
from service.store.postgres.sessions import insert_usage
from service.store.rows import CONVERSATION_FIELDS, MESSAGE_COLUMNS, conversation_of

_COLUMNS = ", ".join(CONVERSATION_FIELDS)
_SELECT = f"SELECT {_COLUMNS} FROM conversations"
_MESSAGE = f"SELECT {MESSAGE_COLUMNS} FROM conversation_messages"


def _message(row: tuple) -> Message:
    return Message(*row)


async def _insert(conn: Conn, c: Conversation) -> None:
    marks = ", ".join(["%s"] * len(CONVERSATION_FIELDS))
    sql = f"INSERT INTO conversations ({_COLUMNS}) VALUES ({marks})"
    await conn.execute(sql, msgspec.structs.astuple(c))
    if c.session_id is not None:
        await _session_seen(conn, c.session_id, c.started_ms)


async def _session_seen(conn: Conn, session_id: str, at_ms: int) -> None:
    await conn.execute(
        "UPDATE sessions SET last_active_ms = GREATEST(coalesce(last_active_ms, 0), %s)"
        " WHERE session_id = %s",
        (at_ms, session_id),
    )


async def _add_message(conn: Conn, m: Message, session_id: str | None) -> None:
    await conn.execute(
        f"INSERT INTO conversation_messages ({MESSAGE_COLUMNS})"
        " SELECT %s, %s, %s, %s, %s FROM conversations WHERE conversation_id = %s"
        " AND deleted_ms IS NULL FOR SHARE",
        (m.conversation_id, m.seq, m.role, m.text, m.at_ms, m.conversation_id),
    )
    if session_id is not None and m.role == "user":
        await _session_seen(conn, session_id, m.at_ms)


async def _close(
    conn: Conn, c: Conversation, ended_ms: int, reason: str, usage: UsageRecord | None
) -> bool:
    """Close once: only the caller that sets `ended_ms` records the usage."""
    cursor = await conn.execute(
        "UPDATE conversations SET ended_ms = %s, end_reason = %s WHERE conversation_id = %s"
        " AND ended_ms IS NULL",
        (ended_ms, reason, c.conversation_id),
    )
    if cursor.rowcount != 1:
        return False
    if usage is not None:
        await insert_usage(conn, usage)
    if c.session_id is not None:
        await _session_seen(conn, c.session_id, ended_ms)
        await announce(conn, "sessions")
    return True


async def _keep_alive(conn: Conn, conversation_ids: list[str], now_ms: int) -> None:
    await conn.execute(
        "UPDATE conversations SET alive_ms = %s WHERE conversation_id = ANY(%s)"
        " AND ended_ms IS NULL",
        (now_ms, conversation_ids),
    )
    # A socket's hold is named by its conversation's id (see service.store.postgres.sockets).
    await conn.execute(
        "UPDATE socket_holds SET alive_ms = %s WHERE socket_id = ANY(%s)",
        (now_ms, conversation_ids),
    )


async def _delete(conn: Conn, owner_id: str, conversation_id: str, now_ms: int):
    row = await fetch_one(
        conn,
        "UPDATE conversations SET deleted_ms = %s WHERE conversation_id = %s AND owner_id = %s"
        f" AND deleted_ms IS NULL RETURNING {_COLUMNS}",
        (now_ms, conversation_id, owner_id),
    )
    if row is None:
        return None
    await conn.execute(
        "DELETE FROM conversation_messages WHERE conversation_id = %s", (conversation_id,)
    )
    return conversation_of(row)


class ConversationsMixin(PostgresBase):
    async def add_conversation(self, conversation: Conversation) -> None:
        await self._write(_insert, conversation)

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        sql = f"{_SELECT} WHERE conversation_id = %s AND deleted_ms IS NULL"
        return await self._one(sql, (conversation_id,), conversation_of)

    async def list_conversations(
        self,
        owner_id: str,
        page: PageRequest,
        *,
        route_id: str | None = None,
        session_id: str | None = None,
    ) -> list[Conversation]:
        sql, params = f"{_SELECT} WHERE owner_id = %s AND deleted_ms IS NULL", [owner_id]
        for column, value in (("route_id", route_id), ("session_id", session_id)):
            if value is not None:
                sql, params = f"{sql} AND {column} = %s", [*params, value]
        cond, after = after_clause(page, "started_ms", "conversation_id")
        sql += f"{cond} ORDER BY started_ms DESC, conversation_id DESC LIMIT %s"
        return await self._all(sql, [*params, *after, page.limit + 1], conversation_of)

    async def add_message(self, message: Message, session_id: str | None) -> None:
        await self._write(_add_message, message, session_id)

    async def list_messages(self, conversation_id: str, last: int | None = None) -> list[Message]:
        """The conversation's messages, oldest first (only the `last` ones when given)."""
        if last is None:
            sql = f"{_MESSAGE} WHERE conversation_id = %s ORDER BY seq"
            return await self._all(sql, (conversation_id,), _message)
        sql = f"{_MESSAGE} WHERE conversation_id = %s ORDER BY seq DESC LIMIT %s"
        return (await self._all(sql, (conversation_id, last), _message))[::-1]

    async def close_conversation(
        self, conversation: Conversation, ended_ms: int, reason: str, usage: UsageRecord | None
    ) -> bool:
        closed = await self._write(_close, conversation, ended_ms, reason, usage)
        if closed and conversation.session_id is not None:
            self._session_changes.touch()
        return closed

    async def keep_alive(self, conversation_ids: list[str], now_ms: int) -> None:
        if conversation_ids:
            await self._write(_keep_alive, list(conversation_ids), now_ms)

    async def conversations_gone_quiet(
        self, alive_before_ms: int, limit: int
    ) -> list[Conversation]:
        sql = f"{_SELECT} WHERE ended_ms IS NULL AND alive_ms < %s LIMIT %s"
        return await self._all(sql, (alive_before_ms, limit), conversation_of)

    async def delete_conversation(
        self, owner_id: str, conversation_id: str, now_ms: int
    ) -> Conversation | None:
        return await self._write(_delete, owner_id, conversation_id, now_ms)
