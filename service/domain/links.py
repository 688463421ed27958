"""Who a public link admits: a route's link while the route is active and its agent exists, a
session's link until the session stops. The pages and the conversation sockets both ask here,
so they never disagree about a link."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from service.domain.context import Context
from service.domain.models import Agent, Route, Session


@dataclass(frozen=True)
class RouteLink:
    state: Literal["unknown", "inactive", "active"]
    route: Route | None = None
    agent: Agent | None = None  # set while active


@dataclass(frozen=True)
class SessionLink:
    state: Literal["unknown", "ended", "open"]
    session: Session | None = None


async def route_link(ctx: Context, route_id: str) -> RouteLink:
    route = await ctx.store.get_route(route_id)
    if route is None:
        return RouteLink("unknown")
    agent = await ctx.store.get_agent(route.agent_id)  # None once the agent was deleted
    if agent is None or route.status(ctx.clock.now_ms()) != "active":
        return RouteLink("inactive", route)
    return RouteLink("active", route, agent)


async def session_link(ctx: Context, session_id: str) -> SessionLink:
    session = await ctx.store.get_session(session_id)
    if session is None:
        return SessionLink("unknown")
    if session.status(ctx.clock.now_ms()) == "stopped":
        return SessionLink("ended", session)
    return SessionLink("open", session)
