"""The one way the service calls an operator's OpenAI-compatible backend (speech, images): a
POST whose 2xx answer is read whole up to a size bound. Every other outcome (a refusal, a
timeout, an unreachable host, an answer too large) becomes the caller's own error type with a
message naming the backend, never its address or key."""

from __future__ import annotations

import httpx
import msgspec

# Of a refusal's body: how much is read, and how much of its message is repeated.
_REFUSAL_BYTES, _REASON_CHARS = 4096, 200


def bearer(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


async def post_for_bytes(
    client: httpx.AsyncClient,
    url: str,
    what: str,
    failure: type[Exception],
    max_bytes: int,
    **kwargs,
) -> bytes:
    """The body of a 2xx answer to a POST, at most `max_bytes`; `failure(message)` otherwise."""
    return await read_bytes(client, "POST", url, what, failure, max_bytes, **kwargs)


async def read_bytes(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    what: str,
    failure: type[Exception],
    max_bytes: int,
    **kwargs,
) -> bytes:
    """The body of a 2xx answer, at most `max_bytes`; `failure(message)` otherwise."""
    try:
        async with client.stream(method, url, **kwargs) as response:
            if not response.is_success:
                reason = await _reason(response)
                raise failure(f"The {what} backend answered HTTP {response.status_code}{reason}.")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise failure(f"The {what} backend's answer is too large.")
            return bytes(body)
    except httpx.TimeoutException:
        raise failure(f"The {what} backend did not answer in time.") from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        reason = type(exc).__name__
        raise failure(f"The {what} backend cannot be reached ({reason}).") from None


async def _reason(response: httpx.Response) -> str:
    """ ": <message>" when the refusal's body is OpenAI's error JSON ({"error": {"message"}}),
    so the caller learns why (a bad size, a refused prompt); else nothing."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= _REFUSAL_BYTES:
            return ""
    try:
        error = msgspec.json.decode(bytes(body)).get("error")
        message = error.get("message") if isinstance(error, dict) else error
    except (msgspec.DecodeError, AttributeError):
        return ""
    if not isinstance(message, str) or not message.strip():
        return ""
    text = " ".join(message.split()).rstrip(".")
    return ": " + (text if len(text) <= _REASON_CHARS else text[:_REASON_CHARS] + "…")
