"""Public, key-less pages: /r/{route_id}, /i/{session_id} (their conversations run over the
sockets of `service.api.live`), a session's public JSON status, and the pages' static files.

Every answer here may be framed by any site (`frame-ancestors`, AVATAR_FRAME_ANCESTORS) and
never leaks its capability URL through a Referer header."""

from __future__ import annotations

from functools import cache

from litestar import Controller, Request, Response, get
from litestar.types import ASGIApp, Receive, Scope, Send

from service.api.context import ctx_of, interactive_base
from service.api.errors import error_response
from service.api.openapi import get as get_documented
from service.domain import sessions as domain
from service.domain.errors import echo
from service.pages import views
from service.pages.assets import ASSETS
from service.schemas.sessions import SessionPageStatus, SessionPageStatusEnvelope

_IMMUTABLE = "public, max-age=31536000, immutable"
_SHORT = "public, max-age=300"
_HTML = (b"content-type", b"text/html; charset=utf-8")


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


@cache
def _encoded_page_headers(frame_ancestors: str) -> tuple[tuple[bytes, bytes], ...]:
    items = page_headers(frame_ancestors).items()
    return (_HTML, *((k.lower().encode(), v.encode("latin-1")) for k, v in items))


def _headers(request: Request) -> dict[str, str]:
    return page_headers(ctx_of(request).settings.frame_ancestors)


class _HtmlPage:
    """A rendered page as a bare ASGI response: Litestar's generic Response path (header
    containers, encoders) cost more than rendering the page itself."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, request: Request, page: tuple[int, str]) -> None:
        self.status, html = page
        self.body = html.encode("utf-8")
        encoded = _encoded_page_headers(ctx_of(request).settings.frame_ancestors)
        self.headers = [*encoded, (b"content-length", str(len(self.body)).encode())]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body, "more_body": False})


class PagesController(Controller):
    path = "/"
    tags = ("public",)

    # The HTML pages are not API operations, so they stay out of the OpenAPI schema.
    @get("/r/{route_id:str}", include_in_schema=False)
    async def route_page(self, request: Request, route_id: str) -> ASGIApp:
        base = interactive_base(request)
        return _HtmlPage(request, await views.route_page(ctx_of(request), route_id, base))

    @get("/i/{session_id:str}", include_in_schema=False)
    async def session_page(self, request: Request, session_id: str) -> ASGIApp:
        base = interactive_base(request)
        return _HtmlPage(request, await views.session_page(ctx_of(request), session_id, base))

    @get_documented("/i/{session_id:str}/status", summary="Public status of a session (no key)")
    async def session_status(
        self, request: Request, session_id: str
    ) -> Response[SessionPageStatusEnvelope]:
        ctx = ctx_of(request)
        session = await domain.find_session(ctx, session_id)
        if session is None:
            message = f"No session {echo(session_id)}."
            return error_response(404, "NOT_FOUND", message, headers=_headers(request))
        status = SessionPageStatus(session_id=session_id, status=session.status(ctx.clock.now_ms()))
        return Response(SessionPageStatusEnvelope(status), headers=_headers(request))

    @get("/static/{name:str}", include_in_schema=False)
    async def static_file(self, name: str, v: str | None = None) -> Response[bytes]:
        asset = ASSETS.get(name)
        if asset is None:
            return error_response(404, "NOT_FOUND", "There is nothing at this path.")
        cache_control = _IMMUTABLE if v == asset.version else _SHORT
        headers = {"Cache-Control": cache_control, "X-Content-Type-Options": "nosniff"}
        return Response(asset.body, media_type=asset.media_type, headers=headers)
