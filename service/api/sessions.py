"""Interactive sessions: /v1/interactive."""

from __future__ import annotations

from litestar import Controller, Request

from service.api.body import json_body, read_json
from service.api.context import ctx_of, interactive_base, owner_of, public_base
from service.api.openapi import get, post
from service.api.responses import NO_STORE
from service.domain import session_reads as reads
from service.domain import sessions as domain
from service.schemas.compat import SessionProfile, SessionProfileEnvelope
from service.schemas.sessions import (
    Session,
    SessionBox,
    SessionEnvelope,
    SessionListEnvelope,
    SessionStart,
    SessionStop,
    StartedSession,
    StartedSessionEnvelope,
    StopOutcome,
    StopOutcomeEnvelope,
)


def _views(request: Request, found: list[reads.NamedSession]) -> list[Session]:
    """The views of `found`, with page links under the interactive base."""
    now, base = ctx_of(request).clock.now_ms(), interactive_base(request)
    return [Session.of(n.session, now, base, n.avatar_name) for n in found]


class SessionsController(Controller):
    path = "/interactive"
    tags = ("interactive sessions",)

    @post(
        "/start_session",
        operation_class=json_body(SessionStart),
        status_code=200,
        response_headers=NO_STORE,  # the answer holds the session token
    )
    async def start_session(self, request: Request) -> StartedSessionEnvelope:
        body = await read_json(request, SessionStart)
        started, token = await reads.start_named_session(
            ctx_of(request), owner_of(request), body.params()
        )
        [view] = _views(request, [started])
        return StartedSessionEnvelope(StartedSession(view, token))

    @get("/list")
    async def list_sessions(self, request: Request) -> SessionListEnvelope:
        found = await reads.open_named_sessions(ctx_of(request), owner_of(request))
        return SessionListEnvelope(_views(request, found))

    @get("/sessions/{session_id:str}")
    async def get_session(self, request: Request, session_id: str) -> SessionEnvelope:
        found = await reads.owned_named_session(ctx_of(request), owner_of(request), session_id)
        [view] = _views(request, [found])
        return SessionEnvelope(SessionBox(view))

    @get("/session/{session_id:str}/profile", response_headers=NO_STORE)  # a session token
    async def get_session_profile(
        self, request: Request, session_id: str
    ) -> SessionProfileEnvelope:
        profile = await reads.session_profile(ctx_of(request), owner_of(request), session_id)
        return SessionProfileEnvelope(SessionProfile.of(profile, public_base(request)))

    @post("/stop_sessions", operation_class=json_body(SessionStop), status_code=200)
    async def stop_sessions(self, request: Request) -> StopOutcomeEnvelope:
        body = await read_json(request, SessionStop)
        outcome = await domain.stop_sessions(ctx_of(request), owner_of(request), body.session_ids)
        return StopOutcomeEnvelope(StopOutcome.of(outcome))
