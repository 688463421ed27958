"""Interactive sessions: /v1/interactive."""

from __future__ import annotations

from litestar import Controller, Request, get, post

from service.api.body import json_body, read_json
from service.api.context import ctx_of, interactive_base, owner_of, public_base
from service.api.responses import NO_STORE
from service.domain import sessions as domain
from service.schemas.compat import SessionProfileEnvelope, session_profile
from service.schemas.sessions import (
    SessionBox,
    SessionEnvelope,
    SessionListEnvelope,
    SessionStart,
    SessionStop,
    StartedSession,
    StartedSessionEnvelope,
    StopOutcome,
    StopOutcomeEnvelope,
    session_view,
    session_views,
)


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
        ctx = ctx_of(request)
        session = await domain.start_session(ctx, owner_of(request), body.params())
        view = await session_view(ctx, session, interactive_base(request))
        token = domain.session_token(ctx, session.session_id)
        return StartedSessionEnvelope(StartedSession(view, token))

    @get("/list")
    async def list_sessions(self, request: Request) -> SessionListEnvelope:
        ctx = ctx_of(request)
        sessions = await domain.open_sessions(ctx, owner_of(request))
        return SessionListEnvelope(await session_views(ctx, sessions, interactive_base(request)))

    @get("/sessions/{session_id:str}")
    async def get_session(self, request: Request, session_id: str) -> SessionEnvelope:
        ctx = ctx_of(request)
        session = await domain.owned_session(ctx, owner_of(request), session_id)
        view = await session_view(ctx, session, interactive_base(request))
        return SessionEnvelope(SessionBox(view))

    @get("/session/{session_id:str}/profile", response_headers=NO_STORE)  # a session token
    async def get_session_profile(
        self, request: Request, session_id: str
    ) -> SessionProfileEnvelope:
        ctx = ctx_of(request)
        session = await domain.owned_session(ctx, owner_of(request), session_id)
        return await session_profile(ctx, session, public_base(request))

    @post("/stop_sessions", operation_class=json_body(SessionStop), status_code=200)
    async def stop_sessions(self, request: Request) -> StopOutcomeEnvelope:
        body = await read_json(request, SessionStop)
        outcome = await domain.stop_sessions(ctx_of(request), owner_of(request), body.session_ids)
        return StopOutcomeEnvelope(StopOutcome.of(outcome))
