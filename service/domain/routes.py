"""Routes (docs/api.md, "Routes"): a public link to one agent, its status derived at read
time."""

from __future__ import annotations

from service.domain.agents import owned_agent
from service.domain.context import Context
from service.domain.errors import NotFound, ValidationFailed, echo
from service.domain.ids import new_id
from service.domain.models import ROUTE_STATUSES, Route
from service.domain.ownership import require_owned
from service.domain.pagination import PageRequest, Position, next_cursor
from service.domain.text import check_display_text


def _not_found(route_id: str) -> NotFound:
    return NotFound(f"No route {echo(route_id)}.")


async def create_route(
    ctx: Context, owner_id: str, agent_id: str, label: str | None, validity_seconds: int | None
) -> Route:
    check_display_text("label", label)
    now = ctx.clock.now_ms()
    expires = None if validity_seconds is None else now + validity_seconds * 1000
    route = Route(new_id("rt"), owner_id, agent_id, label, now, expires)
    # The insert checks inside the write that the agent exists, is the caller's and is not
    # deleted, so a concurrent delete cannot leave an active route behind (and no separate
    # read of the agent is needed on this hot path).
    if not await ctx.store.add_route(route):
        raise NotFound(f"No agent {echo(agent_id)}.")
    return route


async def owned_route(ctx: Context, owner_id: str, route_id: str) -> Route:
    route = await ctx.store.get_route(route_id)
    return require_owned(route, owner_id, "route", route_id)


async def list_routes(
    ctx: Context,
    owner_id: str,
    page: PageRequest,
    *,
    agent_id: str | None = None,
    status: str | None = None,
    check_agent: bool = False,
) -> tuple[list[Route], str | None]:
    """The caller's routes, newest first; `check_agent` makes an unknown agent a 404."""
    if status is not None and status not in ROUTE_STATUSES:
        raise ValidationFailed.field("status", f"must be one of {', '.join(ROUTE_STATUSES)}")
    if check_agent and agent_id is not None:
        await owned_agent(ctx, owner_id, agent_id)
    rows = await ctx.store.list_routes(
        owner_id, page, now_ms=ctx.clock.now_ms(), agent_id=agent_id, status=status
    )
    return next_cursor(rows, page.limit, lambda r: Position(r.created_ms, r.route_id))


async def set_label(ctx: Context, owner_id: str, route_id: str, label: str | None) -> Route:
    """A label change counts as a change of the route (its version and `updated_ms`)."""
    check_display_text("label", label)
    route = await ctx.store.set_route_label(owner_id, route_id, label, ctx.clock.now_ms())
    if route is None:
        raise _not_found(route_id)
    return route


async def revoke_route(ctx: Context, owner_id: str, route_id: str) -> Route:
    """Instant, permanent and idempotent (also for expired routes)."""
    route = await ctx.store.revoke_route(owner_id, route_id, ctx.clock.now_ms())
    if route is None:
        raise _not_found(route_id)
    return route
