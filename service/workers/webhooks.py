"""The one webhook sender of `serve` (a role of the supervisor, so there is exactly one however
many HTTP workers run): it claims deliveries from the outbox, sends up to MAX_IN_FLIGHT of
them at once, sleeps until a task owes a new one, and on SIGTERM stops claiming and lets the
sends under way finish (each ends within the delivery timeout). A sender killed mid-send
leaves its claims to lapse: `serve` releases them when it starts again, and those deliveries
go out once more with the same webhook id."""

from __future__ import annotations

import asyncio
import logging

from service.domain.context import Context
from service.domain.deliveries import Transport, claim_next, deliver
from service.domain.models import Delivery, Task
from service.runtime import open_context
from service.settings import Settings
from service.workers.supervisor import first_of, run_until_terminated
from service.workers.webhook_bodies import webhook_base_url, webhook_body
from service.workers.webhook_client import HttpTransport

log = logging.getLogger("service.webhooks")

# Sends under way at once (most of a send is waiting on the receiver).
MAX_IN_FLIGHT = 32
# How long an idle sender sleeps before it looks again for claims that lapsed.
IDLE_WAIT_S = 1.0


class WebhookSender:
    def __init__(self, ctx: Context, transport: Transport, base_url: str) -> None:
        self._ctx = ctx
        self._transport = transport
        self._base_url = base_url
        self._sending: set[asyncio.Task] = set()

    async def serve(self, stop: asyncio.Event) -> None:
        """Send deliveries until `stop` is set, then finish the sends under way."""
        while not stop.is_set():
            await self.send_claimable()
            await self._idle(stop)
        await self.drain()

    async def send_claimable(self) -> int:
        """Claim deliveries and start sending them, until none is left or MAX_IN_FLIGHT are
        under way; how many were started."""
        started = 0
        while len(self._sending) < MAX_IN_FLIGHT:
            delivery = await claim_next(self._ctx)
            if delivery is None:
                break
            send = asyncio.create_task(self._send(delivery))
            self._sending.add(send)
            send.add_done_callback(self._sending.discard)
            started += 1
        return started

    async def drain(self) -> None:
        """Wait for the sends under way."""
        if self._sending:
            await asyncio.wait(set(self._sending))

    async def _send(self, delivery: Delivery) -> None:
        try:
            outcome = await deliver(self._ctx, delivery, self._render, self._transport)
        except Exception:  # its claim lapses, and it is tried once more
            log.exception("webhook of %s: sending failed unexpectedly", delivery.task_id)
            return
        if not outcome.delivered:
            log.info("webhook of %s not delivered: %s", delivery.task_id, outcome.error)

    async def _render(self, task: Task) -> bytes:
        return await webhook_body(self._ctx, task, self._base_url)

    async def _idle(self, stop: asyncio.Event) -> None:
        """Wait until a delivery may be owed, `stop` is set, or (when no room is left) a send
        ends; at most IDLE_WAIT_S."""
        full = len(self._sending) >= MAX_IN_FLIGHT
        await first_of(
            [self._ctx.store.wait_for_deliveries(IDLE_WAIT_S), stop.wait()],
            alongside=self._sending if full else set(),  # the sends are never canceled here
        )


async def _send_until(settings: Settings, stop: asyncio.Event) -> None:
    async with open_context(settings) as ctx:
        await WebhookSender(ctx, HttpTransport(), webhook_base_url(settings)).serve(stop)


def run_webhook_sender(settings: Settings) -> None:
    run_until_terminated(lambda stop: _send_until(settings, stop))
