"""Replies from an agent's own endpoint (`custom_agent` agents): POST `custom_agent_url` with
{id: conversation_id, messages: [{role, content}, ...]} and the bearer token when set; the
answer is read as the AI SDK's UI message stream (`vercel_ai_sdk`) or as a chat-completions
stream (`openai_chat`). The URL follows the rule of `service.outbound`, checked when the agent
is saved, again at each call (the setting or the rule may have changed since) and at the
connection (net.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import httpx

from service.outbound import UrlRefused, check_url
from service.responders.faults import AGENT_SERVICE, Fault, for_visitor
from service.responders.models import CustomAgent, ReplyRequest
from service.responders.openai_chat import bearer, chat_text
from service.responders.ui_stream import ui_text
from service.responders.upstream import Timeouts, post_events

READERS = {"vercel_ai_sdk": ui_text, "openai_chat": chat_text}


def agent_body(request: ReplyRequest, agent: CustomAgent) -> dict[str, Any]:
    """The conversation only: the endpoint has its own instruction and tools."""
    messages: list[dict[str, Any]] = [
        {"role": turn.role, "content": turn.text} for turn in request.history
    ]
    body: dict[str, Any] = {"id": request.conversation_id, "messages": messages}
    if agent.protocol == "vercel_ai_sdk":
        # AI SDK servers build model messages from `parts` (convertToModelMessages), so each
        # message also carries its text as a text part: a stock endpoint reads it unchanged.
        for message in messages:
            message["parts"] = [{"type": "text", "text": message["content"]}]
    else:
        # Chat-completions servers answer with one JSON body unless asked to stream.
        body["stream"] = True
        if request.llm_model:
            body["model"] = request.llm_model
    return body


class CustomAgentResponder:
    def __init__(self, client: httpx.AsyncClient, *, allow_private: bool, timeouts: Timeouts):
        self._client = client
        self._allow_private = allow_private
        self._timeouts = timeouts

    def reply(self, request: ReplyRequest) -> AsyncIterator[str]:
        agent = request.custom_agent
        assert agent is not None, "a custom agent reply needs request.custom_agent"
        return for_visitor(
            self._text(request, agent),
            who=AGENT_SERVICE,
            conversation_id=request.conversation_id,
            secrets=(agent.bearer_token,),
        )

    async def _text(self, request: ReplyRequest, agent: CustomAgent) -> AsyncIterator[str]:
        try:
            check_url(agent.url, allow_private=self._allow_private)
        except UrlRefused as exc:
            raise Fault("refused", f"custom_agent_url {exc}") from None
        events = post_events(
            self._client,
            agent.url,
            body=agent_body(request, agent),
            headers=bearer(agent.bearer_token),
            timeouts=self._timeouts,
        )
        async with aclosing(READERS[agent.protocol](events)) as texts:
            async for text in texts:
                yield text
