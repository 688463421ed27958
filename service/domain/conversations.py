"""Conversations through a route or a session: who may open one, what it runs with, when it
must end, how it is closed and billed, and the owner's API over the kept ones. Its turns (what
is said, and kept as it is said) are `service.domain.turns`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.domain.context import Context
from service.domain.ids import new_id
from service.domain.links import route_link, session_link
from service.domain.models import Conversation, Message, UsageRecord
from service.domain.ownership import require_owned
from service.domain.pagination import PageRequest, Position, next_cursor
from service.domain.sessions import session_token_matches
from service.responders import CustomAgent

# An open conversation's worker stamps it this often; one unstamped for QUIET_MS has no
# worker any more and is closed by the sweeper.
KEEP_ALIVE_MS = 15_000
QUIET_MS = 60_000


@dataclass(frozen=True)
class Setup:
    """What a conversation runs with, as it was when the conversation started."""

    owner_id: str
    route_id: str | None
    session_id: str | None
    greeting: str | None
    instruction: str | None
    llm_model: str | None
    tools: Any
    custom_agent: CustomAgent | None
    voice_id: str | None = None  # the voice profile it speaks with (see domain/voices.py)


async def admit_route(ctx: Context, route_id: str) -> Setup | None:
    """The setup of a conversation through an active route; None when it admits nobody."""
    link = await route_link(ctx, route_id)
    if link.state != "active":
        return None
    route, agent = link.route, link.agent
    custom = None
    if agent.runtime_kind == "custom_agent":
        custom = CustomAgent(
            agent.custom_agent_url, agent.custom_agent_protocol, agent.custom_agent_bearer_token
        )
    return Setup(
        route.owner_id, route.route_id, None, agent.greeting, agent.instruction,
        agent.llm_model, agent.tools, custom, agent.voice_id,
    )  # fmt: skip


async def admit_session(ctx: Context, session_id: str, token: str | None) -> Setup | None:
    """The setup of a conversation in a session that has not stopped; a token, when given,
    must be the session's."""
    link = await session_link(ctx, session_id)
    if link.state != "open":
        return None
    if token is not None and not session_token_matches(ctx, session_id, token):
        return None
    session = link.session
    return Setup(
        session.owner_id, None, session.session_id, None, session.instruction,
        session.llm_model, session.tools, None, session.voice_id,
    )  # fmt: skip


async def session_state(ctx: Context, setup: Setup) -> str:
    """ "connecting" while the session warms up, "ready" after."""
    session = await ctx.store.get_session(setup.session_id)
    return "ready" if session and session.status(ctx.clock.now_ms()) == "ready" else "connecting"


async def watch_state(ctx: Context, setup: Setup) -> tuple[str, int | None]:
    """(why the conversation must end now, "" while it may go on; when it will end by the
    clock alone: the route's expiry or the session's maximum duration)."""
    now = ctx.clock.now_ms()
    if setup.route_id is not None:
        route = await ctx.store.get_route(setup.route_id)
        if route is None or await ctx.store.get_agent(route.agent_id) is None:
            return "revoked", None
        status = route.status(now)
        return ("" if status == "active" else status), route.expires_ms
    session = await ctx.store.get_session(setup.session_id)
    if session is None:
        return "session_stopped", None
    stopped_ms, stop_reason = session.effective_stop(now)
    if stopped_ms is not None:
        return f"session_{stop_reason or 'stopped'}", None
    return "", session.max_end_ms


def _usage(conversation: Conversation, ended_ms: int) -> UsageRecord | None:
    """Route conversations are billed by duration (sessions bill their own lifetime)."""
    if conversation.route_id is None:
        return None
    seconds = round(max(0, ended_ms - conversation.started_ms) / 1000, 3)
    return UsageRecord(
        new_id("usg"), conversation.owner_id, "route_conversation", conversation.conversation_id,
        conversation.started_ms, ended_ms, seconds, seconds, route_id=conversation.route_id,
    )  # fmt: skip


async def close(
    ctx: Context, conversation: Conversation, reason: str, ended_ms: int | None = None
) -> bool:
    """End the conversation and record its usage; False when it had ended already."""
    ended_ms = ctx.clock.now_ms() if ended_ms is None else ended_ms
    usage = _usage(conversation, ended_ms)
    return await ctx.store.close_conversation(conversation, ended_ms, reason, usage)


async def close_quiet(ctx: Context, quiet_since_ms: int | None = None) -> int:
    """Close conversations whose worker stopped stamping them (it died): they end, and are
    billed, at their last stamp; the places their sockets held under the caps are dropped. Run
    by the sweeper, and on start-up for all that are open."""
    closed = 0
    if quiet_since_ms is None:
        quiet_since_ms = ctx.clock.now_ms() - QUIET_MS
    while found := await ctx.store.conversations_gone_quiet(quiet_since_ms, 500):
        for conversation in found:
            closed += await close(ctx, conversation, "lost", conversation.alive_ms)
    # Their sockets' places under the caps go too (they stopped counting at QUIET_MS already).
    await ctx.store.drop_quiet_sockets(quiet_since_ms)
    return closed


# The owner's API: listing, reading and deleting kept conversations.


async def owned_conversation(ctx: Context, owner_id: str, conversation_id: str) -> Conversation:
    conversation = await ctx.store.get_conversation(conversation_id)
    return require_owned(conversation, owner_id, "conversation", conversation_id)


async def list_conversations(
    ctx: Context,
    owner_id: str,
    page: PageRequest,
    route_id: str | None = None,
    session_id: str | None = None,
) -> tuple[list[Conversation], str | None]:
    rows = await ctx.store.list_conversations(
        owner_id, page, route_id=route_id, session_id=session_id
    )
    return next_cursor(rows, page.limit, lambda c: Position(c.started_ms, c.conversation_id))


async def conversation_messages(ctx: Context, conversation: Conversation) -> list[Message]:
    return await ctx.store.list_messages(conversation.conversation_id)


async def delete_conversation(ctx: Context, owner_id: str, conversation_id: str) -> Conversation:
    deleted = await ctx.store.delete_conversation(owner_id, conversation_id, ctx.clock.now_ms())
    return require_owned(deleted, owner_id, "conversation", conversation_id)
