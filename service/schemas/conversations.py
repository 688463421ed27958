"""Kept conversation bodies."""

from __future__ import annotations

from typing import Literal

import msgspec

from service.clock import format_optional_ts, format_ts
from service.domain import models
from service.schemas.common import Timestamp


class ConversationMessage(msgspec.Struct):
    role: Literal["user", "assistant"]
    text: str
    at: Timestamp

    @classmethod
    def of(cls, message: models.Message) -> ConversationMessage:
        return cls(role=message.role, text=message.text, at=format_ts(message.at_ms))


class Conversation(msgspec.Struct, omit_defaults=True):
    conversation_id: str
    route_id: str | None
    session_id: str | None
    started_at: Timestamp
    ended_at: Timestamp | None
    end_reason: str | None
    messages: list[ConversationMessage] | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(
        cls, conversation: models.Conversation, messages: list[models.Message] | None = None
    ) -> Conversation:
        return cls(
            conversation_id=conversation.conversation_id,
            route_id=conversation.route_id,
            session_id=conversation.session_id,
            started_at=format_ts(conversation.started_ms),
            ended_at=format_optional_ts(conversation.ended_ms),
            end_reason=conversation.end_reason,
            messages=msgspec.UNSET
            if messages is None
            else [ConversationMessage.of(m) for m in messages],
        )


class ConversationEnvelope(msgspec.Struct):
    data: Conversation


class ConversationPage(msgspec.Struct):
    items: list[Conversation]
    next_cursor: str | None


class ConversationPageEnvelope(msgspec.Struct):
    data: ConversationPage
