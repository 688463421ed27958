"""Agent bodies (docs/api.md, "Agents")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from service.clock import format_ts
from service.domain import models
from service.schemas import compat
from service.schemas.common import (
    Greeting,
    Identifier,
    Instruction,
    Name,
    StrictBody,
    Timestamp,
    Tools,
)

RuntimeKind = Literal["managed_agent", "custom_agent"]
CustomProtocol = Literal["vercel_ai_sdk", "openai_chat"]
Description = Annotated[str, msgspec.Meta(max_length=1_000)]
Url = Annotated[str, msgspec.Meta(min_length=1, max_length=2_000)]
BearerToken = Annotated[str, msgspec.Meta(min_length=1, max_length=4_096)]


class AgentCreate(StrictBody):
    """`voice_profile_id` is the hosted API's spelling of `voice_id`; both with different values
    are refused."""

    name: Name
    avatar_id: Identifier | None = None
    voice_id: Identifier | None = None
    voice_profile_id: Identifier | None = None
    instruction: Instruction | None = None
    llm_model: Identifier | None = None
    model: Identifier | None = None
    greeting: Greeting | None = None
    tools: Tools | None = None
    description: Description | None = None
    runtime_kind: RuntimeKind | None = None
    custom_agent_url: Url | None = None
    custom_agent_protocol: CustomProtocol | None = None
    custom_agent_bearer_token: BearerToken | None = None

    def fields(self) -> dict[str, Any]:
        given = compat.fold_voice(msgspec.structs.asdict(self), missing=None)
        return {name: value for name, value in given.items() if value is not None}


class AgentUpdate(StrictBody):
    """Only the fields present change; `null` clears an optional field."""

    name: Name | UnsetType = UNSET
    avatar_id: Identifier | UnsetType | None = UNSET
    voice_id: Identifier | UnsetType | None = UNSET
    voice_profile_id: Identifier | UnsetType | None = UNSET
    instruction: Instruction | UnsetType | None = UNSET
    llm_model: Identifier | UnsetType | None = UNSET
    model: Identifier | UnsetType = UNSET
    greeting: Greeting | UnsetType | None = UNSET
    tools: Tools | UnsetType | None = UNSET
    description: Description | UnsetType | None = UNSET
    runtime_kind: RuntimeKind | UnsetType = UNSET
    custom_agent_url: Url | UnsetType | None = UNSET
    custom_agent_protocol: CustomProtocol | UnsetType | None = UNSET
    custom_agent_bearer_token: BearerToken | UnsetType | None = UNSET

    def changes(self) -> dict[str, Any]:
        given = compat.fold_voice(msgspec.structs.asdict(self), missing=UNSET)
        return {name: value for name, value in given.items() if value is not UNSET}


class Agent(compat.HostedAgentNames):
    """An agent; the hosted API's names for the same facts follow ours."""

    agent_id: str
    name: str
    avatar_id: str | None
    voice_id: str | None
    instruction: str | None
    llm_model: str | None
    model: str
    greeting: str | None
    tools: Any
    description: str | None
    runtime_kind: RuntimeKind
    custom_agent_url: str | None
    custom_agent_protocol: CustomProtocol | None
    # The bearer token is write-only: only whether one is set is shown.
    has_custom_agent_bearer_token: bool
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, agent: models.Agent) -> Agent:
        return cls(
            agent_id=agent.agent_id,
            name=agent.name,
            avatar_id=agent.avatar_id,
            voice_id=agent.voice_id,
            instruction=agent.instruction,
            llm_model=agent.llm_model,
            model=agent.model,
            greeting=agent.greeting,
            tools=agent.tools,
            description=agent.description,
            runtime_kind=agent.runtime_kind,
            custom_agent_url=agent.custom_agent_url,
            custom_agent_protocol=agent.custom_agent_protocol,
            has_custom_agent_bearer_token=agent.custom_agent_bearer_token is not None,
            created_at=format_ts(agent.created_ms),
            updated_at=format_ts(agent.updated_ms),
            **compat.agent_names(agent),
        )


class AgentEnvelope(msgspec.Struct):
    data: Agent


class AgentPage(msgspec.Struct):
    items: list[Agent]
    next_cursor: str | None


class AgentPageEnvelope(msgspec.Struct):
    data: AgentPage
