"""Interactive sessions: /v1/interactive."""

from __future__ import annotations

from litestar import Controller, Request, get, post

from service.api.body import json_body, read_json
from service.api.context import ctx_of, interactive_base, owner_of
from service.api.params import Cursor, Limit
from service.domain import sessions as domain
from service.domain.pagination import DEFAULT_LIMIT, page_request
from service.schemas.sessions import (
    Session,
    SessionBox,
    SessionEnvelope,
    SessionPage,
    SessionPageEnvelope,
    SessionStart,
    SessionStop,
    StartedSession,
    StartedSessionEnvelope,
    StopOutcome,
    StopOutcomeEnvelope,
)


def _one(request: Request, session) -> SessionEnvelope:
    now = ctx_of(request).clock.now_ms()
    return SessionEnvelope(SessionBox(Session.of(session, now, interactive_base(request))))


class SessionsController(Controller):
    path = "/interactive"
    tags = ("interactive sessions",)

    @post("/start_session", operation_class=json_body(SessionStart), status_code=200)
    async def start_session(self, request: Request) -> StartedSessionEnvelope:
        body = await read_json(request, SessionStart)
        ctx = ctx_of(request)
        session = await domain.start_session(ctx, owner_of(request), body.params())
        view = Session.of(session, ctx.clock.now_ms(), interactive_base(request))
        token = domain.session_token(ctx, session.session_id)
        return StartedSessionEnvelope(StartedSession(view, token))

    @get("/list")
    async def list_sessions(
        self, request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
    ) -> SessionPageEnvelope:
        page = page_request(limit, cursor)
        sessions, next_cursor = await domain.list_open_sessions(
            ctx_of(request), owner_of(request), page
        )
        now, base = ctx_of(request).clock.now_ms(), interactive_base(request)
        return SessionPageEnvelope(
            SessionPage([Session.of(s, now, base) for s in sessions], next_cursor)
        )

    @get("/sessions/{session_id:str}")
    async def get_session(self, request: Request, session_id: str) -> SessionEnvelope:
        session = await domain.owned_session(ctx_of(request), owner_of(request), session_id)
        return _one(request, session)

    @post("/stop_sessions", operation_class=json_body(SessionStop), status_code=200)
    async def stop_sessions(self, request: Request) -> StopOutcomeEnvelope:
        body = await read_json(request, SessionStop)
        outcome = await domain.stop_sessions(ctx_of(request), owner_of(request), body.session_ids)
        return StopOutcomeEnvelope(StopOutcome(**outcome))
