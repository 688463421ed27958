"""Kept conversations and their messages, for both databases; closing one records its usage in
the same write. A message is kept only while its conversation is (on PostgreSQL the insert
locks the conversation row, so a delete racing it either waits and removes the message too,
or wins)."""

from __future__ import annotations

import msgspec

from service.domain.models import Conversation, Message, UsageRecord
from service.domain.pagination import PageRequest
from service.store.rows import CONVERSATION_FIELDS, MESSAGE_COLUMNS, conversation_of
from service.store.shared.base import SharedBase, after_clause
from service.store.shared.sessions import insert_usage
from service.store.shared.steps import Announce, Body, Query, insert, marks

_COLUMNS = ", ".join(CONVERSATION_FIELDS)
_SELECT = f"SELECT {_COLUMNS} FROM conversations"
_MESSAGE = f"SELECT {MESSAGE_COLUMNS} FROM conversation_messages"
_INSERT = insert("conversations", CONVERSATION_FIELDS)


def _message(row: tuple) -> Message:
    return Message(*row)


def _session_seen(session_id: str, at_ms: int) -> Query:
    return Query(
        "UPDATE sessions SET last_active_ms = ? WHERE session_id = ?"
        " AND (last_active_ms IS NULL OR last_active_ms < ?)",
        (at_ms, session_id, at_ms),
        wait=False,
    )


def _insert(c: Conversation) -> Body[None]:
    yield Query(_INSERT, msgspec.structs.astuple(c), wait=False)
    if c.session_id is not None:
        yield _session_seen(c.session_id, c.started_ms)


def _add_message(m: Message, session_id: str | None) -> Body[None]:
    # Nothing more is kept of a conversation its owner deleted while it was still open.
    yield Query(
        f"INSERT INTO conversation_messages ({MESSAGE_COLUMNS})"
        " SELECT ?, ?, ?, ?, ? FROM conversations WHERE conversation_id = ?"
        " AND deleted_ms IS NULL FOR SHARE",
        (m.conversation_id, m.seq, m.role, m.text, m.at_ms, m.conversation_id),
        wait=False,
    )
    if session_id is not None and m.role == "user":
        yield _session_seen(session_id, m.at_ms)


def _close(c: Conversation, ended_ms: int, reason: str, usage: UsageRecord | None) -> Body[bool]:
    """Close once: only the caller that sets `ended_ms` records the usage."""
    closed = yield Query(
        "UPDATE conversations SET ended_ms = ?, end_reason = ? WHERE conversation_id = ?"
        " AND ended_ms IS NULL",
        (ended_ms, reason, c.conversation_id),
    )
    if closed.rowcount != 1:
        return False
    if usage is not None:
        yield insert_usage(usage)
    if c.session_id is not None:
        yield _session_seen(c.session_id, ended_ms)
        yield Announce("sessions")
    return True


def _keep_alive(conversation_ids: list[str], now_ms: int) -> Body[None]:
    among = f"IN ({marks(len(conversation_ids))})"
    yield Query(
        f"UPDATE conversations SET alive_ms = ? WHERE conversation_id {among} AND ended_ms IS NULL",
        (now_ms, *conversation_ids),
        wait=False,
    )
    # A socket's hold is named by its conversation's id (see the stores' sockets.py).
    yield Query(
        f"UPDATE socket_holds SET alive_ms = ? WHERE socket_id {among}",
        (now_ms, *conversation_ids),
        wait=False,
    )


def _delete(owner_id: str, conversation_id: str, now_ms: int) -> Body[Conversation | None]:
    deleted = yield Query(
        "UPDATE conversations SET deleted_ms = ? WHERE conversation_id = ? AND owner_id = ?"
        f" AND deleted_ms IS NULL RETURNING {_COLUMNS}",
        (now_ms, conversation_id, owner_id),
    )
    if not deleted.rows:
        return None
    yield Query(
        "DELETE FROM conversation_messages WHERE conversation_id = ?",
        (conversation_id,),
        wait=False,
    )
    return conversation_of(deleted.first())


class ConversationsMixin(SharedBase):
    async def add_conversation(self, conversation: Conversation) -> None:
        await self._run(_insert(conversation))

    async def get_conversation(self, conversation_id: str) -> Conversation | None:
        sql = f"{_SELECT} WHERE conversation_id = ? AND deleted_ms IS NULL"
        return await self._read_one(sql, (conversation_id,), conversation_of)

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
        return await self._read_all(sql, [*params, *after, page.limit + 1], conversation_of)

    async def add_message(self, message: Message, session_id: str | None) -> None:
        await self._run(_add_message(message, session_id))

    async def list_messages(self, conversation_id: str, last: int | None = None) -> list[Message]:
        """The conversation's messages, oldest first (only the `last` ones when given)."""
        if last is None:
            sql = f"{_MESSAGE} WHERE conversation_id = ? ORDER BY seq"
            return await self._read_all(sql, (conversation_id,), _message)
        sql = f"{_MESSAGE} WHERE conversation_id = ? ORDER BY seq DESC LIMIT ?"
        return (await self._read_all(sql, (conversation_id, last), _message))[::-1]

    async def close_conversation(
        self, conversation: Conversation, ended_ms: int, reason: str, usage: UsageRecord | None
    ) -> bool:
        closed = await self._run(_close(conversation, ended_ms, reason, usage))
        if closed and conversation.session_id is not None:
            self._session_changes.touch()
        return closed

    async def keep_alive(self, conversation_ids: list[str], now_ms: int) -> None:
        if conversation_ids:
            await self._run(_keep_alive(list(conversation_ids), now_ms))

    async def conversations_gone_quiet(
        self, alive_before_ms: int, limit: int
    ) -> list[Conversation]:
        sql = f"{_SELECT} WHERE ended_ms IS NULL AND alive_ms < ? LIMIT ?"
        return await self._read_all(sql, (alive_before_ms, limit), conversation_of)

    async def delete_conversation(
        self, owner_id: str, conversation_id: str, now_ms: int
    ) -> Conversation | None:
        return await self._run(_delete(owner_id, conversation_id, now_ms))
