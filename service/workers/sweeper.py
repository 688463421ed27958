"""The one sweeper of `serve`: closes conversations whose worker died and sessions that reached
their maximum duration or idle timeout (recording their usage), prepares sessions whose worker
died before it could, and tidies tasks and files (see `service.domain.janitor`). It runs as a
role of the supervisor, so there is exactly one however many HTTP workers run."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from service.domain.context import Context
from service.domain.conversations import close_quiet
from service.domain.janitor import tidy
from service.domain.kinds import task_kinds
from service.domain.sessions import sweep
from service.runtime import open_context
from service.settings import Settings
from service.workers.supervisor import run_until_terminated

log = logging.getLogger("service.sweeper")


async def tidy_tasks(ctx: Context) -> None:
    await tidy(ctx, task_kinds())


_STEPS = (
    # Conversations whose worker died close first: an open one keeps its session from idling.
    ("closing quiet conversations", close_quiet),
    ("session sweep", sweep),
    ("task tidying", tidy_tasks),
)


async def _sweep_until(settings: Settings, stop: asyncio.Event) -> None:
    async with open_context(settings) as ctx:
        while not stop.is_set():
            for name, step in _STEPS:
                try:
                    await step(ctx)
                except Exception:  # a failed pass must not end sweeping; the next one retries
                    log.exception("%s failed", name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), settings.sweep_interval_s)


def run_sweeper(settings: Settings) -> None:
    run_until_terminated(lambda stop: _sweep_until(settings, stop))
