"""What every HTTP request passes before routing: the API key check of `/v1`, the refusal of
encoded slashes, and HEAD served as GET without a body.

It runs before Litestar routes the request, so an unknown `/v1` path answers 401 to a caller
without a key, like a known one (paths cannot be probed anonymously), and an id holding an
encoded `/` is an unknown id (404) instead of a path with an extra segment (405)."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from service.api.errors import service_error_parts
from service.domain.errors import NotFound, ServiceError

_API_PREFIX = "/v1"


def bearer_token(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


async def _authenticate(state: State, scope: Scope) -> None:
    """Set `scope["user"]` to the caller's owner id and `scope["auth"]` to the key."""
    key = await state["authenticator"].authenticate(bearer_token(scope))
    state["rate_limiter"].take(key.key_id, state["ctx"].clock.now_ms())
    scope["user"] = key.owner_id
    scope["auth"] = key


async def _refuse(send: Send, exc: ServiceError) -> None:
    status, headers, body = service_error_parts(exc)
    encoded = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    encoded += [(k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": encoded})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _without_body(send: Send) -> Send:
    """A send that keeps a response's status and headers (Content-Length included) but not its
    body: the answer to HEAD."""

    async def send_head(message: Message) -> None:
        if message["type"] == "http.response.body":
            if message.get("more_body", False):
                return
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)

    return send_head


def _has_encoded_slash(scope: Scope) -> bool:
    # Some servers (and Litestar's test client) leave the query in raw_path; it may hold %2F.
    raw_path = scope.get("raw_path") or b""
    return b"%2f" in raw_path.partition(b"?")[0].lower()


async def front_door(
    state: State, scope: Scope, receive: Receive, send: Send, inner: ASGIApp
) -> None:
    """Admit the request to `inner` (the routed app), or answer it here."""
    if scope["method"] == "HEAD":
        scope["method"] = "GET"
        scope["head"] = True  # lets a handler skip producing a body it would throw away
        send = _without_body(send)
    path: str = scope["path"]
    try:
        if path == _API_PREFIX or path.startswith(_API_PREFIX + "/"):
            await _authenticate(state, scope)
        if _has_encoded_slash(scope):
            raise NotFound("There is nothing at this path (ids never hold a '/').")
    except ServiceError as exc:
        await _refuse(send, exc)
        return
    await inner(scope, receive, send)
