"""Domain records. Times are epoch milliseconds (see `service.clock`)."""

from __future__ import annotations

from typing import Any

import msgspec


class Owner(msgspec.Struct, frozen=True):
    owner_id: str
    name: str
    created_ms: int


class ApiKey(msgspec.Struct, frozen=True):
    key_id: str
    owner_id: str
    owner_name: str
    key_hash: str
    prefix: str
    created_ms: int
    last_used_ms: int | None = None
    revoked_ms: int | None = None


class Avatar(msgspec.Struct, frozen=True):
    avatar_id: str
    owner_id: str
    name: str | None
    width: int
    height: int
    source: str
    created_ms: int


class Agent(msgspec.Struct, frozen=True):
    agent_id: str
    owner_id: str
    name: str
    created_ms: int
    updated_ms: int
    avatar_id: str | None = None
    voice_id: str | None = None
    instruction: str | None = None
    llm_model: str | None = None
    model: str = "metis-2.5"
    greeting: str | None = None
    tools: Any = None


class Route(msgspec.Struct, frozen=True):
    route_id: str
    owner_id: str
    agent_id: str
    label: str | None
    created_ms: int
    expires_ms: int | None = None
    revoked_ms: int | None = None

    def status(self, now_ms: int) -> str:
        """Derived at read time, so expiry needs no background job."""
        if self.revoked_ms is not None:
            return "revoked"
        if self.expires_ms is not None and now_ms >= self.expires_ms:
            return "expired"
        return "active"


class Session(msgspec.Struct, frozen=True):
    session_id: str
    owner_id: str
    avatar_id: str
    model: str
    created_ms: int
    max_end_ms: int
    voice_id: str | None = None
    llm_model: str | None = None
    instruction: str | None = None
    tools: Any = None
    ready_ms: int | None = None
    stopped_ms: int | None = None
    stop_reason: str | None = None

    def status(self, now_ms: int) -> str:
        """Derived from stored times, so every HTTP worker answers alike."""
        if self.stopped_ms is not None or now_ms >= self.max_end_ms:
            return "stopped"
        if self.ready_ms is not None and now_ms >= self.ready_ms:
            return "ready"
        return "starting"

    def effective_stop(self, now_ms: int) -> tuple[int | None, str | None]:
        """(stopped_at, stop_reason) as a reader sees them, including a not yet swept timeout."""
        if self.stopped_ms is not None:
            return self.stopped_ms, self.stop_reason
        if now_ms >= self.max_end_ms:
            return self.max_end_ms, "max_duration"
        return None, None


class UsageRecord(msgspec.Struct, frozen=True):
    usage_id: str
    owner_id: str
    kind: str
    ref_id: str
    started_ms: int
    ended_ms: int
    seconds: float
    billable_seconds: float


class UsageTotals(msgspec.Struct, frozen=True):
    route_conversation_seconds: float = 0.0
    session_seconds: float = 0.0
    upscale_billable_seconds: float = 0.0
