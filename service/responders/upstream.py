"""One streamed call to an upstream (a language model or an agent's service): POST a JSON body,
read the answer as server-sent events, within three time limits; anything else is a Fault."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx
import msgspec

from service.responders.faults import Fault
from service.responders.net import AddressRefused
from service.responders.sse import event_data

ERROR_BODY_BYTES = 1000  # of a refusal's body, kept for the log


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Time limits of one reply, in seconds."""

    connect: float = 5.0  # to resolve the host and open the connection
    read: float = 30.0  # the longest silence: before the answer starts, and between two chunks
    total: float = 120.0  # the whole reply, however slowly it trickles in

    def for_httpx(self) -> httpx.Timeout:
        return httpx.Timeout(connect=self.connect, read=self.read, write=self.read, pool=self.read)


async def post_events(
    client: httpx.AsyncClient,
    url: str,
    *,
    body: Any,
    headers: Mapping[str, str],
    timeouts: Timeouts,
) -> AsyncIterator[str]:
    """The `data` of each event of the answer, as it arrives. Redirects are not followed
    (the client is built so): a 3xx is a refusal like any other non-2xx answer."""
    deadline = asyncio.get_running_loop().time() + timeouts.total
    try:
        request = client.build_request(
            "POST",
            url,
            content=msgspec.json.encode(body),
            headers={"content-type": "application/json", "accept": "text/event-stream", **headers},
        )
    except httpx.InvalidURL as exc:  # not an HTTPError: it would escape as a traceback
        raise Fault("refused", f"the URL cannot be used: {exc}") from None
    answered = False
    try:
        async with asyncio.timeout_at(deadline):
            response = await client.send(request, stream=True)
        answered = True
        try:
            async with asyncio.timeout_at(deadline):
                await _check_answer(response)
            async with aclosing(event_data(response.aiter_bytes())) as events:
                while True:
                    # The deadline never spans a `yield`: the consumer's time is its own.
                    async with asyncio.timeout_at(deadline):
                        data = await anext(events, None)
                    if data is None:
                        return
                    yield data
        finally:
            await response.aclose()
    except (TimeoutError, httpx.TimeoutException) as exc:
        raise Fault("timeout", f"no answer in time ({type(exc).__name__})") from None
    except AddressRefused as exc:
        raise Fault("refused", str(exc)) from None
    except httpx.HTTPError as exc:  # the connection failed, or broke during the answer
        kind = "cut" if answered else "unreachable"
        raise Fault(kind, f"{type(exc).__name__}: {exc}") from None


async def _check_answer(response: httpx.Response) -> None:
    if not response.is_success:
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= ERROR_BODY_BYTES:
                break
        text = body[:ERROR_BODY_BYTES].decode(errors="replace")
        raise Fault("status", f"HTTP {response.status_code}: {text}")
    if response.headers.get("content-type", "").startswith("application/json"):
        # A whole JSON answer: the endpoint ignored the request to stream.
        raise Fault("malformed", "a JSON answer where a text/event-stream was expected")
