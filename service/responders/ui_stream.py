"""The AI SDK's UI message stream (version 1, header `x-vercel-ai-ui-message-stream: v1`):
server-sent events whose data are JSON parts with a `type`, ending with `data: [DONE]`. The
reply's text is the `delta` of its `text-delta` parts; every other part (reasoning, tools,
sources, files, data-*, steps, metadata) carries nothing the visitor hears."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

import msgspec

from service.responders.faults import Fault

# Between two text blocks of one reply (say, before and after a tool call).
BLOCK_SEPARATOR = "\n\n"


class _Part(msgspec.Struct):
    type: str
    id: str | None = None
    delta: str | None = None
    error_text: str | None = msgspec.field(default=None, name="errorText")


_decode_part = msgspec.json.Decoder(_Part).decode


async def ui_text(events: AsyncIterator[str]) -> AsyncIterator[str]:
    """The reply is complete at a `finish` part or at `[DONE]`; an `error` part fails it, an
    `abort` part or an end before either marker cuts it off."""
    block: str | None = None  # id of the text block being read
    async with aclosing(events):
        async for data in events:
            if data == "[DONE]":
                return
            part = _parse(data)
            if part.type == "text-delta" and part.delta:
                if block is not None and part.id != block:
                    yield BLOCK_SEPARATOR
                block = part.id
                yield part.delta
            elif part.type == "finish":
                return
            elif part.type == "error":
                raise Fault("failed", f"error part: {part.error_text}")
            elif part.type == "abort":
                raise Fault("cut", "abort part")
    raise Fault("cut", "the stream ended without a finish part or [DONE]")


def _parse(data: str) -> _Part:
    try:
        part = _decode_part(data)
    except msgspec.DecodeError as exc:
        raise Fault("malformed", f"unreadable part ({exc}): {data[:200]}") from None
    if part.type == "text-delta" and (part.delta is None or part.id is None):
        raise Fault("malformed", f"text-delta without id or delta: {data[:200]}")
    return part
