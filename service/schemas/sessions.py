"""Interactive session bodies (docs/api.md, "Interactive sessions")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from service.clock import format_optional_ts, format_ts
from service.domain import models
from service.schemas import compat
from service.schemas.common import Identifier, StrictBody, Timestamp, Tools

SessionInstruction = Annotated[str, msgspec.Meta(max_length=12_000)]


class SessionStart(StrictBody):
    """Either spelling of the voice and instruction is accepted; both with different values
    are refused."""

    avatar_id: Identifier
    voice_profile_id: Identifier | None = None
    voice_id: Identifier | None = None
    model: Identifier | None = None
    llm_model: Identifier | None = None
    instruction: SessionInstruction | None = None
    instructions: SessionInstruction | None = None
    # The hosted API's schema types tools as a string: a JSON string holding them is taken too.
    tools: Tools | str | None = None
    # Minutes without a visitor before the session stops by itself; -1: never.
    idle_timeout: int | None = None
    use_beta: bool | None = None

    def params(self) -> dict[str, Any]:
        return msgspec.structs.asdict(self)


class SessionStop(StrictBody):
    session_ids: Annotated[list[Identifier], msgspec.Meta(min_length=1, max_length=100)]


class Session(compat.HostedSessionNames):
    """A session; the hosted API's names for the same facts follow ours."""

    session_id: str
    status: Literal["starting", "ready", "stopped"]
    client_url: str
    avatar_id: str
    voice_id: str | None
    model: str
    llm_model: str | None
    created_at: Timestamp
    ready_at: Timestamp | None
    stopped_at: Timestamp | None
    stop_reason: Literal["api", "idle", "max_duration", "error"] | None
    idle_timeout: int  # minutes; -1: never

    @classmethod
    def of(
        cls, session: models.Session, now_ms: int, base_url: str, avatar_name: str | None
    ) -> Session:
        status = session.status(now_ms)
        stopped_ms, reason = session.effective_stop(now_ms)
        return cls(
            session_id=session.session_id,
            status=status,
            client_url=f"{base_url}/i/{session.session_id}",
            avatar_id=session.avatar_id,
            voice_id=session.voice_id,
            model=session.model,
            llm_model=session.llm_model,
            created_at=format_ts(session.created_ms),
            ready_at=format_optional_ts(session.reached_ready(now_ms)),
            stopped_at=format_optional_ts(stopped_ms),
            stop_reason=reason,
            idle_timeout=-1 if session.idle_timeout_min is None else session.idle_timeout_min,
            **compat.session_names(session, status, avatar_name),
        )


class SessionBox(msgspec.Struct):
    session: Session


class StartedSession(msgspec.Struct):
    session: Session
    # A second capability for socket clients other than the page (/i/{id}/ws?token=...).
    session_token: str


class StartedSessionEnvelope(msgspec.Struct):
    data: StartedSession


class SessionEnvelope(msgspec.Struct):
    data: SessionBox


class SessionListEnvelope(msgspec.Struct):
    """The open sessions as a bare array (the hosted API's shape of this one list)."""

    data: list[Session]


class StopOutcome(compat.HostedStopNames):
    stopped: list[str]
    already_stopped: list[str]
    not_found: list[str]

    @classmethod
    def of(cls, outcome: dict[str, list[str]]) -> StopOutcome:
        return cls(**outcome, **compat.stop_names(outcome))


class StopOutcomeEnvelope(msgspec.Struct):
    data: StopOutcome


class SessionPageStatus(msgspec.Struct):
    """The public status a session page polls (no key: the session id is the credential).
    (Not `SessionStatus`: generators name the enum of `Session.status` so.)"""

    session_id: str
    status: Literal["starting", "ready", "stopped"]


class SessionPageStatusEnvelope(msgspec.Struct):
    data: SessionPageStatus
