"""The app's response class for handler return values.

Handlers return msgspec Structs. Litestar's generic path (header containers, cookie and
encoder merging) took about a third of a small GET's time here, so plain JSON answers skip it:
the body is encoded once with msgspec and sent as two ASGI messages. Anything unusual (cookies,
background tasks) still takes Litestar's own path."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response
from litestar.datastructures import ResponseHeader
from litestar.types import Receive, Scope, Send

# The `response_headers` of an answer holding a secret (a webhook secret, a session token):
# it must not linger in a proxy's or browser's cache.
NO_STORE = [ResponseHeader(name="Cache-Control", value="no-store")]

_encoder = msgspec.json.Encoder()
_JSON = (b"content-type", b"application/json")


class _JsonASGIResponse:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        self.status, self.body, self.headers = status, body, headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body, "more_body": False})


class JsonResponse(Response):
    def to_asgi_response(  # type: ignore[override]
        self,
        app: Any,
        request: Request,
        *,
        headers: dict[str, str] | None = None,
        status_code: int | None = None,
        **options: Any,
    ) -> Any:
        plain = not (self.cookies or self.background or any(options.values()))
        # No content (a 204 answer) also takes Litestar's path, which sends no body for it.
        if not plain or self.content is None or self.media_type not in (None, "application/json"):
            return super().to_asgi_response(
                app, request, headers=headers, status_code=status_code, **options
            )
        body = _encoder.encode(self.content)
        encoded = [_JSON, (b"content-length", str(len(body)).encode())]
        for name, value in {**(headers or {}), **self.headers}.items():
            encoded.append((name.lower().encode("latin-1"), str(value).encode("latin-1")))
        return _JsonASGIResponse(self.status_code or status_code or 200, body, encoded)
