"""The one sweeper of `serve`: closes sessions that reached their maximum duration (recording
their usage) and prepares sessions whose worker died before it could. It runs as a role of the
supervisor, so there is exactly one however many HTTP workers run."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from service.domain.sessions import sweep
from service.runtime import open_context
from service.settings import Settings
from service.workers.supervisor import run_until_terminated

log = logging.getLogger("service.sweeper")


async def _sweep_until(settings: Settings, stop: asyncio.Event) -> None:
    async with open_context(settings) as ctx:
        while not stop.is_set():
            try:
                await sweep(ctx)
            except Exception:  # a failed pass must not end sweeping; the next one retries
                log.exception("session sweep failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), settings.sweep_interval_s)


def run_sweeper(settings: Settings) -> None:
    run_until_terminated(lambda stop: _sweep_until(settings, stop))
