"""An open conversation, turn by turn: the agent's greeting, then each visitor message with the
agent's streamed reply, every message numbered and kept as it is said. A socket handler (or any
other transport: the voice socket speaks the same turns) only relays what these yield."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import msgspec

from service.domain.context import Context
from service.domain.conversations import Setup, close
from service.domain.errors import ValidationFailed
from service.domain.ids import new_id
from service.domain.models import Conversation, Message
from service.responders import ReplyRequest, Turn

MAX_MESSAGE_CHARS = 4000
# How much of a long conversation a responder is given.
HISTORY_MESSAGES = 50


@dataclass(frozen=True)
class ReplyDelta:
    """A piece of the agent's reply as it streams; `message_id` is the reply's."""

    message_id: str
    text: str


@dataclass(frozen=True)
class AgentMessage:
    """A whole message of the agent (the greeting, or a reply once streamed), as kept."""

    message_id: str
    text: str


class Live:
    """One open conversation: its record, its setup and the next message number. A route's
    conversation is kept from the visitor's first message (a socket that never carries one is
    neither kept nor billed); a session's from its opening, since an open socket is what keeps
    a session from idling."""

    def __init__(self, conversation: Conversation, setup: Setup, kept: bool) -> None:
        self.conversation = conversation
        self.setup = setup
        self.kept = kept
        self.heard_ms = conversation.started_ms  # the visitor's last message (or the opening)
        self._seq = 0
        self._unkept: list[Message] = []  # said before the conversation was kept

    @property
    def conversation_id(self) -> str:
        return self.conversation.conversation_id

    def next_message_id(self) -> tuple[int, str]:
        self._seq += 1
        return self._seq, f"{self.conversation_id}.{self._seq}"


def new_conversation(ctx: Context, setup: Setup) -> Live:
    """A conversation about to open (its id and numbering); nothing is kept yet."""
    now = ctx.clock.now_ms()
    conversation = Conversation(
        new_id("cnv"), setup.owner_id, now, now, setup.route_id, setup.session_id
    )
    return Live(conversation, setup, kept=False)


async def open_conversation(ctx: Context, live: Live) -> None:
    """Its socket is open: a session's conversation is kept from now (a route's waits for the
    visitor's first message)."""
    now = ctx.clock.now_ms()
    live.heard_ms = now
    if live.setup.session_id is not None:
        live.conversation = msgspec.structs.replace(live.conversation, started_ms=now, alive_ms=now)
        await ctx.store.add_conversation(live.conversation)
        live.kept = True


async def greet(ctx: Context, live: Live) -> AgentMessage | None:
    """The agent's greeting, numbered and recorded; None when the agent has none."""
    if not live.setup.greeting:
        return None
    return await _said(ctx, live, "assistant", live.setup.greeting)


async def take_turn(
    ctx: Context, live: Live, text: Any
) -> AsyncIterator[ReplyDelta | AgentMessage]:
    """The visitor says `text`: it is recorded, the agent's reply streams as ReplyDelta items
    and ends with the whole reply as an AgentMessage, recorded. Raises ValidationFailed for a
    text that cannot be taken (nothing is recorded), and ResponderError when the reply fails
    (its message is fit for the visitor; what streamed of it is not kept)."""
    if (problem := check_message(text)) is not None:
        raise ValidationFailed(problem)
    now = ctx.clock.now_ms()
    live.heard_ms = now
    if not live.kept:
        await _keep(ctx, live, now)
    await _said(ctx, live, "user", text)
    seq, message_id = live.next_message_id()
    parts: list[str] = []
    async for delta in _reply(ctx, live):
        parts.append(delta)
        yield ReplyDelta(message_id, delta)
    reply = "".join(parts)
    await _record(ctx, live, Message(live.conversation_id, seq, "assistant", reply, _now(ctx)))
    yield AgentMessage(message_id, reply)


async def end_conversation(ctx: Context, live: Live, reason: str) -> None:
    """End the conversation (and bill it) if it was kept; one never kept leaves no trace."""
    if live.kept:
        await close(ctx, live.conversation, reason)


def idle_since(live: Live, since_ms: int) -> bool:
    """Whether a route conversation has had no visitor message (nor opened) since `since_ms`:
    it ends then, so an idle socket holds no place under the caps for long. A session has its
    own idle rule (`idle_timeout`)."""
    return live.setup.route_id is not None and live.heard_ms <= since_ms


def check_message(text: Any) -> str | None:
    """Why a visitor's message text cannot be taken (None when it can)."""
    if not isinstance(text, str):
        return "A message needs a text."
    if not 1 <= len(text) <= MAX_MESSAGE_CHARS:
        return f"A message is 1 to {MAX_MESSAGE_CHARS} characters long."
    return None


async def _keep(ctx: Context, live: Live, now_ms: int) -> None:
    """Start keeping (and billing) the conversation from now, with what was said before."""
    live.conversation = msgspec.structs.replace(
        live.conversation, started_ms=now_ms, alive_ms=now_ms
    )
    await ctx.store.add_conversation(live.conversation)
    live.kept = True
    unkept, live._unkept = live._unkept, []
    for message in unkept:
        await _record(ctx, live, message)


async def _said(ctx: Context, live: Live, role: str, text: str) -> AgentMessage:
    seq, message_id = live.next_message_id()
    await _record(ctx, live, Message(live.conversation_id, seq, role, text, _now(ctx)))
    return AgentMessage(message_id, text)


async def _record(ctx: Context, live: Live, message: Message) -> None:
    if live.kept:
        await ctx.store.add_message(message, live.setup.session_id)
    else:
        live._unkept.append(message)


async def _reply(ctx: Context, live: Live) -> AsyncIterator[str]:
    """The agent's reply to the conversation as kept so far, as text deltas."""
    setup = live.setup
    history = await ctx.store.list_messages(live.conversation_id, last=HISTORY_MESSAGES)
    request = ReplyRequest(
        conversation_id=live.conversation_id,
        history=[Turn(m.role, m.text) for m in history],
        instruction=setup.instruction,
        llm_model=setup.llm_model,
        tools=setup.tools,
        custom_agent=setup.custom_agent,
    )
    replies = ctx.responders.responder_for(request).reply(request)
    # Closing the stream early (the visitor left) ends the upstream request at once.
    async with contextlib.aclosing(replies):
        async for delta in replies:
            yield delta


def _now(ctx: Context) -> int:
    return ctx.clock.now_ms()
