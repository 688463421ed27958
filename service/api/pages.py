"""Public, key-less pages: /r/{route_id}, /i/{session_id}, the JSON status a session page polls
to switch from "connecting" to ready without a reload, and the pages' static files.

Every answer here may be framed by any site (`frame-ancestors`, AVATAR_FRAME_ANCESTORS) and
never leaks its capability URL through a Referer header."""

from __future__ import annotations

from functools import cache

from litestar import Controller, Request, Response, get
from litestar.enums import MediaType

from service.api.context import ctx_of, interactive_base
from service.api.errors import error_response
from service.domain import sessions as domain
from service.pages import views
from service.pages.assets import ASSETS
from service.schemas.sessions import SessionStatus, SessionStatusEnvelope

_IMMUTABLE = "public, max-age=31536000, immutable"
_SHORT = "public, max-age=300"


@cache
def page_headers(frame_ancestors: str) -> dict[str, str]:
    """Headers of every page and of the status endpoint. Scripts and styles come only from
    the service itself; there is deliberately no X-Frame-Options (pages are embeddable)."""
    policy = (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; "
        f"frame-ancestors {frame_ancestors}"
    )
    return {
        "Content-Security-Policy": policy,
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
    }


def _headers(request: Request) -> dict[str, str]:
    return page_headers(ctx_of(request).settings.frame_ancestors)


def _html(request: Request, page: tuple[int, str]) -> Response[str]:
    status, html = page
    return Response(html, status_code=status, media_type=MediaType.HTML, headers=_headers(request))


class PagesController(Controller):
    path = "/"
    tags = ("public",)

    # The HTML pages are not API operations, so they stay out of the OpenAPI schema.
    @get("/r/{route_id:str}", media_type=MediaType.HTML, include_in_schema=False)
    async def route_page(self, request: Request, route_id: str) -> Response[str]:
        base = interactive_base(request)
        return _html(request, await views.route_page(ctx_of(request), route_id, base))

    @get("/i/{session_id:str}", media_type=MediaType.HTML, include_in_schema=False)
    async def session_page(self, request: Request, session_id: str) -> Response[str]:
        base = interactive_base(request)
        return _html(request, await views.session_page(ctx_of(request), session_id, base))

    @get("/i/{session_id:str}/status", summary="Public status of a session (no key)")
    async def session_status(
        self, request: Request, session_id: str
    ) -> Response[SessionStatusEnvelope]:
        ctx = ctx_of(request)
        session = await domain.find_session(ctx, session_id)
        if session is None:
            message = f"No session {session_id!r}."
            return error_response(404, "NOT_FOUND", message, headers=_headers(request))
        status = SessionStatus(session_id=session_id, status=session.status(ctx.clock.now_ms()))
        return Response(SessionStatusEnvelope(status), headers=_headers(request))

    @get("/static/{name:str}", include_in_schema=False)
    async def static_file(self, name: str, v: str | None = None) -> Response[bytes]:
        asset = ASSETS.get(name)
        if asset is None:
            return error_response(404, "NOT_FOUND", "There is nothing at this path.")
        cache_control = _IMMUTABLE if v == asset.version else _SHORT
        headers = {"Cache-Control": cache_control, "X-Content-Type-Options": "nosniff"}
        return Response(asset.body, media_type=asset.media_type, headers=headers)
