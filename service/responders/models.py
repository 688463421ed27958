"""What a responder is asked and what it gives back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol

import msgspec


class Turn(msgspec.Struct, frozen=True):
    """One message of the conversation so far."""

    role: Literal["user", "assistant"]
    text: str


class CustomAgent(msgspec.Struct, frozen=True):
    """The owner's own endpoint that answers instead of the language model."""

    url: str
    protocol: Literal["vercel_ai_sdk", "openai_chat"]
    bearer_token: str | None = None


class ReplyRequest(msgspec.Struct, frozen=True):
    """Everything a responder needs for one reply, taken from the agent (or session) as it was
    when the conversation started and from the kept transcript."""

    conversation_id: str
    history: list[Turn]  # oldest first; the last one is the visitor's new message
    instruction: str | None = None  # becomes the system message of the language model
    llm_model: str | None = None  # else AVATAR_LLM_DEFAULT_MODEL
    tools: Any = None  # the agent's `tools` (object or array), passed through to the model
    custom_agent: CustomAgent | None = None


class Responder(Protocol):
    def reply(self, request: ReplyRequest) -> AsyncIterator[str]:
        """The reply as text deltas, in order; raises ResponderError (of the service's one
        error hierarchy, `service.domain.errors`), possibly after some deltas, when the reply
        cannot be completed. Read it to the end, or close it when
        stopping early (`contextlib.aclosing`), so the upstream request ends at once."""
        ...
