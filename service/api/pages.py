"""Public, key-less endpoints behind the pages (/r/{route_id}, /i/{session_id}).

The HTML pages themselves register here too; this module holds the JSON status a session page
polls to switch from "connecting" to the conversation without a reload."""

from __future__ import annotations

from litestar import Controller, Request, get

from service.api.context import ctx_of
from service.domain import sessions as domain
from service.errors import NotFound
from service.schemas.sessions import SessionStatus, SessionStatusEnvelope

NO_REFERRER = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


class PagesController(Controller):
    path = "/"
    tags = ("public",)

    @get("/i/{session_id:str}/status", response_headers=NO_REFERRER)
    async def session_status(self, request: Request, session_id: str) -> SessionStatusEnvelope:
        ctx = ctx_of(request)
        session = await domain.find_session(ctx, session_id)
        if session is None:
            raise NotFound(f"No session {session_id!r}.")
        status = session.status(ctx.clock.now_ms())
        return SessionStatusEnvelope(SessionStatus(session_id=session_id, status=status))
