"""Small helpers handlers share: the domain context, the caller and link bases."""

from __future__ import annotations

from litestar import Request

from service.api.proxies import base_url
from service.domain.context import Context


def ctx_of(request: Request) -> Context:
    # Item access: State's attribute access goes through a slow __getattr__ fallback.
    return request.app.state["ctx"]


def owner_of(request: Request) -> str:
    """The owner id the API key middleware authenticated."""
    return request.scope["user"]


def _request_base(request: Request) -> str:
    return base_url(request.scope, ctx_of(request).settings.trusted_proxies)


def interactive_base(request: Request) -> str:
    """Base of page links: AVATAR_INTERACTIVE_URL, else AVATAR_PUBLIC_URL, else the request
    (as the visitor made it, when a trusted proxy passed it on)."""
    settings = ctx_of(request).settings
    return settings.interactive_url or settings.public_url or _request_base(request)


def public_base(request: Request) -> str:
    """Base of file links: AVATAR_PUBLIC_URL, else the request's own scheme and host."""
    return ctx_of(request).settings.public_url or _request_base(request)
