"""Kept conversations: /v1/conversations."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Request

from service.api.context import ctx_of, owner_of
from service.api.openapi import get, post
from service.api.params import Cursor, Limit, text
from service.domain import conversations as domain
from service.domain.pagination import DEFAULT_LIMIT, page_request
from service.schemas.conversations import (
    Conversation,
    ConversationEnvelope,
    ConversationPage,
    ConversationPageEnvelope,
)

RouteFilter = Annotated[str | None, text("Only the conversations of this route.")]
SessionFilter = Annotated[str | None, text("Only the conversations of this session.")]


class ConversationsController(Controller):
    path = "/conversations"
    tags = ("conversations",)

    @get()
    async def list_conversations(
        self,
        request: Request,
        route_id: RouteFilter = None,
        session_id: SessionFilter = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> ConversationPageEnvelope:
        """The caller's conversations, newest first, without their messages."""
        found, next_cursor = await domain.list_conversations(
            ctx_of(request), owner_of(request), page_request(limit, cursor), route_id, session_id
        )
        return ConversationPageEnvelope(
            ConversationPage([Conversation.of(c) for c in found], next_cursor)
        )

    @get("/{conversation_id:str}")
    async def get_conversation(
        self, request: Request, conversation_id: str
    ) -> ConversationEnvelope:
        ctx = ctx_of(request)
        conversation = await domain.owned_conversation(ctx, owner_of(request), conversation_id)
        messages = await domain.conversation_messages(ctx, conversation)
        return ConversationEnvelope(Conversation.of(conversation, messages))

    @post("/{conversation_id:str}/delete", status_code=200)
    async def delete_conversation(
        self, request: Request, conversation_id: str
    ) -> ConversationEnvelope:
        ctx = ctx_of(request)
        conversation = await domain.delete_conversation(ctx, owner_of(request), conversation_id)
        return ConversationEnvelope(Conversation.of(conversation))
