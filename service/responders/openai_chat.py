"""OpenAI-compatible chat completions: the language model responder (POST
{AVATAR_LLM_BASE_URL}/chat/completions with stream: true) and the reading of such streams,
which custom agents of protocol `openai_chat` also answer with."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import httpx
import msgspec

from service.responders.faults import LANGUAGE_MODEL, Fault, for_visitor
from service.responders.models import ReplyRequest
from service.responders.upstream import Timeouts, post_events


class _Delta(msgspec.Struct):
    content: str | None = None  # tool calls, reasoning and the rest are ignored


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Chunk(msgspec.Struct):
    choices: list[_Choice] | None = None
    error: Any = None  # some servers report a failure mid-stream this way


_decode_chunk = msgspec.json.Decoder(_Chunk).decode


async def chat_text(events: AsyncIterator[str]) -> AsyncIterator[str]:
    """The text of a chat-completions stream: `choices[0].delta.content` of each chunk. The
    reply is complete at `[DONE]` or at the first choice's `finish_reason`, whichever comes
    first; a stream that ends before either was cut off."""
    async with aclosing(events):
        async for data in events:
            if data == "[DONE]":
                return
            try:
                chunk = _decode_chunk(data)
            except msgspec.DecodeError as exc:
                raise Fault("malformed", f"unreadable chunk ({exc}): {data[:200]}") from None
            if chunk.error is not None:
                raise Fault("failed", f"error in the stream: {data[:500]}")
            if not chunk.choices:  # a usage or keep-alive chunk
                continue
            choice = chunk.choices[0]
            if choice.delta is not None and choice.delta.content:
                yield choice.delta.content
            if choice.finish_reason is not None:
                return
    raise Fault("cut", "the stream ended without [DONE] or a finish_reason")


def openai_tools(tools: Any) -> list | None:
    """The agent's `tools` as the API's `tools`, which must be a non-empty array of tool
    definitions: an array goes as it is; an object is one tool definition (a function tool, or
    an MCP tool such as {"type": "mcp", "server_url": ...} for servers that run MCP) and goes
    as an array of one; an empty one, or anything else, is left out."""
    if isinstance(tools, list):
        return tools or None
    if isinstance(tools, dict):
        return [tools] if tools else None
    return None


def chat_body(request: ReplyRequest, model: str) -> dict[str, Any]:
    messages = [{"role": "system", "content": request.instruction}] if request.instruction else []
    messages += [{"role": turn.role, "content": turn.text} for turn in request.history]
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if (tools := openai_tools(request.tools)) is not None:
        body["tools"] = tools
    return body


def bearer(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


class LanguageModelResponder:
    """Replies from the configured OpenAI-compatible API."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        base_url: str,
        api_key: str | None,
        default_model: str | None,
        timeouts: Timeouts,
    ) -> None:
        self._client = client
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._default_model = default_model
        self._timeouts = timeouts

    def reply(self, request: ReplyRequest) -> AsyncIterator[str]:
        return for_visitor(
            self._text(request),
            who=LANGUAGE_MODEL,
            conversation_id=request.conversation_id,
            secrets=(self._api_key,),
        )

    async def _text(self, request: ReplyRequest) -> AsyncIterator[str]:
        model = request.llm_model or self._default_model
        if not model:
            raise Fault("no_model", "neither llm_model nor AVATAR_LLM_DEFAULT_MODEL is set")
        events = post_events(
            self._client,
            self._url,
            body=chat_body(request, model),
            headers=bearer(self._api_key),
            timeouts=self._timeouts,
        )
        async with aclosing(chat_text(events)) as texts:
            async for text in texts:
                yield text
