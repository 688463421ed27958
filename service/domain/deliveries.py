"""Sending the webhooks that final tasks owe. A task's final status and its delivery are
written together (the outbox, see `tasks.delivery_for`); here a delivery is claimed, its body
built and signed, the URL rules checked again against the addresses its host resolves to,
the body posted once, and the outcome recorded on the task. A failed delivery changes
nothing else: the task keeps its status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol
from urllib.parse import urlsplit

from service import outbound
from service.domain.context import Context
from service.domain.models import Delivery, Task, WebhookOutcome
from service.domain.webhook_signing import owner_secret, signed_headers
from service.domain.webhooks import DeliveryFailed, check_addresses

log = logging.getLogger("service.webhooks")

# The most a delivery takes, from resolving its host to the receiver's status line.
TIMEOUT_S = 10.0
# A claim outlasts any send, so only the claim of a sender that died mid-send lapses.
CLAIM_MS = 30_000
# A delivery is sent once, and once more only when its sender died mid-send.
MAX_ATTEMPTS = 2

# A task's webhook body: its status response as the status endpoint of its kind answers now.
RenderBody = Callable[[Task], Awaitable[bytes]]


class Transport(Protocol):
    """How deliveries reach receivers (HTTP in `service.workers.webhook_client`)."""

    async def resolve(self, url: str) -> list[str]:
        """The addresses the URL's host resolves to; DeliveryFailed when it does not."""
        ...

    async def post(
        self, url: str, addresses: list[str], headers: dict[str, str], body: bytes
    ) -> int:
        """POST `body` to `url` over a connection to one of `addresses` (the checked ones,
        never a fresh lookup), with the URL's host as Host and TLS name, following no
        redirect; the response's status code. DeliveryFailed when no answer came."""
        ...


async def claim_next(ctx: Context) -> Delivery | None:
    now = ctx.clock.now_ms()
    return await ctx.store.claim_delivery(now, now + CLAIM_MS)


async def deliver(
    ctx: Context, delivery: Delivery, render: RenderBody, transport: Transport
) -> WebhookOutcome:
    """Send one claimed delivery and record its outcome on its task."""
    attempted = ctx.clock.now_ms()
    if delivery.attempts > MAX_ATTEMPTS:
        stops = delivery.attempts - 1
        status, error = None, f"Sending was cut short {stops} times; it is not tried again."
    else:
        status, error = await _attempt(ctx, delivery, render, transport)
    outcome = WebhookOutcome(error is None, attempted, status, error)
    await ctx.store.record_delivery(delivery.task_id, outcome, ctx.clock.now_ms())
    return outcome


async def _attempt(
    ctx: Context, delivery: Delivery, render: RenderBody, transport: Transport
) -> tuple[int | None, str | None]:
    """(status code, error): error None when the receiver took it (a 2xx answer)."""
    url = delivery.target.url
    try:
        outbound.check_url(url, allow_private=ctx.settings.webhook_allow_private)
    except outbound.UrlRefused as exc:
        return None, f"The webhook URL is refused: it {exc}."
    body = await _body(ctx, delivery, render)
    if body is None:
        return None, "The webhook body could not be built (an internal error)."
    headers = await _headers(ctx, delivery, body)
    try:
        async with asyncio.timeout(TIMEOUT_S):
            status = await _post(ctx, url, headers, body, transport)
    except TimeoutError:
        return None, f"No answer within {TIMEOUT_S:g} s."
    except DeliveryFailed as exc:
        return None, str(exc)
    if 200 <= status < 300:
        return status, None
    if 300 <= status < 400:
        return status, f"The receiver answered {status}, a redirect, which is not followed."
    return status, f"The receiver answered {status}."


async def _body(ctx: Context, delivery: Delivery, render: RenderBody) -> bytes | None:
    try:
        task = await ctx.store.get_task(delivery.task_id)
        if task is None:  # cannot happen: a delivery refers to its task
            raise LookupError(f"no task {delivery.task_id}")
        return await render(task)
    except Exception:  # a bug: recorded as this delivery's failure, never retried forever
        log.exception("webhook of %s: its body could not be built", delivery.task_id)
        return None


async def _headers(ctx: Context, delivery: Delivery, body: bytes) -> dict[str, str]:
    """Content type, the bearer token when the task has one, and the signature headers
    (the task id is the webhook id, so every attempt carries the same one)."""
    headers = {"Content-Type": "application/json"}
    if delivery.target.token:
        headers["Authorization"] = f"Bearer {delivery.target.token}"
    secret = await owner_secret(ctx, delivery.owner_id)
    timestamp = ctx.clock.now_ms() // 1000
    return headers | signed_headers(secret, delivery.task_id, timestamp, body)


async def _post(
    ctx: Context, url: str, headers: dict[str, str], body: bytes, transport: Transport
) -> int:
    """Resolve once, check every address, and connect to a checked one: a host that
    resolves differently a moment later (DNS rebinding) cannot redirect the request."""
    addresses = await transport.resolve(url)
    allow_private = ctx.settings.webhook_allow_private
    check_addresses(urlsplit(url).hostname or url, addresses, allow_private=allow_private)
    return await transport.post(url, addresses, headers, body)
