"""Routes: /v1/agents/{agent_id}/routes and /v1/agent-routes."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Request

from service.api.body import json_body, read_json
from service.api.context import ctx_of, interactive_base, owner_of
from service.api.openapi import get, post
from service.api.params import Cursor, Limit, text
from service.domain import routes as domain
from service.domain.models import ROUTE_STATUSES
from service.domain.pagination import DEFAULT_LIMIT, page_request
from service.schemas.routes import (
    Route,
    RouteCreate,
    RouteEnvelope,
    RoutePage,
    RoutePageEnvelope,
    RouteUpdate,
)

# Checked by the domain: Litestar would read `status=null` as no filter.
StatusFilter = Annotated[str | None, text("Only the routes of this status.", enum=ROUTE_STATUSES)]
AgentFilter = Annotated[str | None, text("Only the routes of this agent.")]


def _one(request: Request, route) -> RouteEnvelope:
    now = ctx_of(request).clock.now_ms()
    return RouteEnvelope(Route.of(route, now, interactive_base(request)))


def _page(request: Request, found: tuple[list, str | None]) -> RoutePageEnvelope:
    routes, cursor = found
    now, base = ctx_of(request).clock.now_ms(), interactive_base(request)
    return RoutePageEnvelope(RoutePage([Route.of(r, now, base) for r in routes], cursor))


class AgentRoutesController(Controller):
    path = "/agents/{agent_id:str}/routes"
    tags = ("routes",)

    @post(operation_class=json_body(RouteCreate, required=False), status_code=201)
    async def create_route(self, request: Request, agent_id: str) -> RouteEnvelope:
        body = await read_json(request, RouteCreate)
        route = await domain.create_route(
            ctx_of(request), owner_of(request), agent_id, body.label, body.validity_seconds
        )
        return _one(request, route)

    @get()
    async def list_agent_routes(
        self,
        request: Request,
        agent_id: str,
        status: StatusFilter = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> RoutePageEnvelope:
        found = await domain.list_routes(
            ctx_of(request),
            owner_of(request),
            page_request(limit, cursor),
            agent_id=agent_id,
            status=status,
            check_agent=True,
        )
        return _page(request, found)


class RoutesController(Controller):
    path = "/agent-routes"
    tags = ("routes",)

    @get()
    async def list_routes(
        self,
        request: Request,
        status: StatusFilter = None,
        agent_id: AgentFilter = None,
        limit: Limit = DEFAULT_LIMIT,
        cursor: Cursor = None,
    ) -> RoutePageEnvelope:
        page = page_request(limit, cursor)
        found = await domain.list_routes(
            ctx_of(request), owner_of(request), page, agent_id=agent_id, status=status
        )
        return _page(request, found)

    @get("/{route_id:str}")
    async def get_route(self, request: Request, route_id: str) -> RouteEnvelope:
        route = await domain.owned_route(ctx_of(request), owner_of(request), route_id)
        return _one(request, route)

    @post("/{route_id:str}/update", operation_class=json_body(RouteUpdate), status_code=200)
    async def update_route(self, request: Request, route_id: str) -> RouteEnvelope:
        body = await read_json(request, RouteUpdate)
        route = await domain.set_label(ctx_of(request), owner_of(request), route_id, body.label)
        return _one(request, route)

    @post("/{route_id:str}/revoke", status_code=200)
    async def revoke_route(self, request: Request, route_id: str) -> RouteEnvelope:
        route = await domain.revoke_route(ctx_of(request), owner_of(request), route_id)
        return _one(request, route)
