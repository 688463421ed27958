"""Agents: /v1/agents."""

from __future__ import annotations

from litestar import Controller, Request

from service.api.body import json_body, read_json
from service.api.context import ctx_of, owner_of
from service.api.openapi import delete, get, post
from service.api.params import Cursor, Limit
from service.domain import agents as domain
from service.domain.pagination import DEFAULT_LIMIT, page_request
from service.schemas.agents import (
    Agent,
    AgentCreate,
    AgentEnvelope,
    AgentPage,
    AgentPageEnvelope,
    AgentUpdate,
)


class AgentsController(Controller):
    path = "/agents"
    tags = ("agents",)

    @post(operation_class=json_body(AgentCreate), status_code=201)
    async def create_agent(self, request: Request) -> AgentEnvelope:
        body = await read_json(request, AgentCreate)
        agent = await domain.create_agent(ctx_of(request), owner_of(request), body.fields())
        return AgentEnvelope(Agent.of(agent))

    @get()
    async def list_agents(
        self, request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
    ) -> AgentPageEnvelope:
        page = page_request(limit, cursor)
        agents, next_cursor = await domain.list_agents(ctx_of(request), owner_of(request), page)
        return AgentPageEnvelope(AgentPage([Agent.of(a) for a in agents], next_cursor))

    @get("/{agent_id:str}")
    async def get_agent(self, request: Request, agent_id: str) -> AgentEnvelope:
        agent = await domain.owned_agent(ctx_of(request), owner_of(request), agent_id)
        return AgentEnvelope(Agent.of(agent))

    @post("/{agent_id:str}/update", operation_class=json_body(AgentUpdate), status_code=200)
    async def update_agent(self, request: Request, agent_id: str) -> AgentEnvelope:
        changes = (await read_json(request, AgentUpdate)).changes()
        agent = await domain.update_agent(ctx_of(request), owner_of(request), agent_id, changes)
        return AgentEnvelope(Agent.of(agent))

    @post("/{agent_id:str}/delete", status_code=200)
    async def delete_agent(self, request: Request, agent_id: str) -> AgentEnvelope:
        return await _delete(request, agent_id)

    # The hosted API's spelling of the same delete (its CLI's `agent delete`).
    @delete("/{agent_id:str}", status_code=200)
    async def delete_agent_by_method(self, request: Request, agent_id: str) -> AgentEnvelope:
        return await _delete(request, agent_id)


async def _delete(request: Request, agent_id: str) -> AgentEnvelope:
    agent = await domain.delete_agent(ctx_of(request), owner_of(request), agent_id)
    return AgentEnvelope(Agent.of(agent))
