"""Agents (docs/api.md, "Agents"): stored avatar configurations."""

from __future__ import annotations

from typing import Any

import msgspec

from service.domain.avatars import READY, owned_avatar
from service.domain.context import Context
from service.domain.errors import NotFound, ValidationFailed, echo
from service.domain.ids import new_id
from service.domain.models import Agent
from service.domain.ownership import require_owned
from service.domain.pagination import PageRequest, Position, next_cursor
from service.domain.text import check_display_text
from service.domain.voices import check_voice_ref
from service.domain.webhooks import check_url

MAX_TOOLS_BYTES = 64 * 1024


def check_tools(tools: Any) -> None:
    if tools is not None and len(msgspec.json.encode(tools)) > MAX_TOOLS_BYTES:
        raise ValidationFailed.field("tools", f"must be at most {MAX_TOOLS_BYTES} bytes of JSON")


def check_model(ctx: Context, model: str, field: str = "model") -> None:
    known = ctx.settings.models
    if model not in known:
        raise ValidationFailed.field(field, f"unknown model; known models: {', '.join(known)}")


async def check_avatar_ref(ctx: Context, owner_id: str, avatar_id: str | None) -> None:
    if avatar_id is None:
        return
    try:
        avatar = await owned_avatar(ctx, owner_id, avatar_id)
    except NotFound:
        raise ValidationFailed.field("avatar_id", "no avatar of yours has this id") from None
    if avatar.status != READY:  # still being built, or its build failed (SPEC 14)
        message = f"the avatar is {avatar.status}; only a READY avatar can be used"
        raise ValidationFailed.field("avatar_id", message)


def check_runtime(ctx: Context, agent: Agent) -> None:
    """A custom agent needs its endpoint and protocol; an endpoint, whenever one is given,
    follows the rule of `service.outbound` (so none is stored that a call would refuse)."""
    if agent.custom_agent_url is not None:
        check_url(
            agent.custom_agent_url,
            allow_private=ctx.settings.webhook_allow_private,
            field="custom_agent_url",
        )
    if agent.runtime_kind != "custom_agent":
        return
    if agent.custom_agent_url is None:
        raise ValidationFailed.field("custom_agent_url", "is required for a custom_agent")
    if agent.custom_agent_protocol is None:
        raise ValidationFailed.field("custom_agent_protocol", "is required for a custom_agent")


async def _check_fields(ctx: Context, owner_id: str, fields: dict[str, Any]) -> None:
    check_display_text("name", fields.get("name"))
    check_tools(fields.get("tools"))
    if "model" in fields:
        check_model(ctx, fields["model"])
    await check_avatar_ref(ctx, owner_id, fields.get("avatar_id"))
    await check_voice_ref(ctx, owner_id, fields.get("voice_id"), "voice_id")


async def create_agent(ctx: Context, owner_id: str, fields: dict[str, Any]) -> Agent:
    """`fields` holds the given agent fields (name required, the rest optional)."""
    fields.setdefault("model", ctx.settings.models[0])
    await _check_fields(ctx, owner_id, fields)
    now = ctx.clock.now_ms()
    agent = Agent(
        agent_id=new_id("agt"), owner_id=owner_id, created_ms=now, updated_ms=now, **fields
    )
    check_runtime(ctx, agent)
    await ctx.store.add_agent(agent)
    return agent


async def owned_agent(ctx: Context, owner_id: str, agent_id: str) -> Agent:
    agent = await ctx.store.get_agent(agent_id)
    return require_owned(agent, owner_id, "agent", agent_id)


async def list_agents(
    ctx: Context, owner_id: str, page: PageRequest
) -> tuple[list[Agent], str | None]:
    rows = await ctx.store.list_agents(owner_id, page)
    return next_cursor(rows, page.limit, lambda a: Position(a.created_ms, a.agent_id))


async def update_agent(ctx: Context, owner_id: str, agent_id: str, changes: dict) -> Agent:
    """Apply the given fields (a partial update); `None` clears an optional field."""
    agent = await owned_agent(ctx, owner_id, agent_id)
    await _check_fields(ctx, owner_id, changes)
    updated = msgspec.structs.replace(agent, updated_ms=ctx.clock.now_ms(), **changes)
    check_runtime(ctx, updated)
    if not await ctx.store.replace_agent(updated):  # deleted meanwhile
        raise NotFound(f"No agent {echo(agent_id)}.")
    return updated


async def delete_agent(ctx: Context, owner_id: str, agent_id: str) -> Agent:
    """Delete the agent and revoke every route of it, in one write."""
    agent = await ctx.store.delete_agent(owner_id, agent_id, ctx.clock.now_ms())
    if agent is None:
        raise NotFound(f"No agent {echo(agent_id)}.")
    return agent
