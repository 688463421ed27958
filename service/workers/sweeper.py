"""The one sweeper of `serve`: closes sessions that reached their maximum duration (recording
their usage) and prepares sessions whose worker died before it could.

It runs in its own process started by `serve` (so there is exactly one however many HTTP
workers run). Not a thread of the `serve` process: Granian forks its workers from that
process, and forking while another thread holds a lock can deadlock the child."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import signal
from multiprocessing.synchronize import Event

from service.clock import SystemClock
from service.domain.context import Context
from service.domain.sessions import sweep
from service.settings import Settings
from service.store.sqlite import SqliteStore

log = logging.getLogger("service.sweeper")


async def _sweep_until(settings: Settings, stop: Event) -> None:
    clock = SystemClock()
    store = SqliteStore(settings.database_path, clock.now_ms())
    ctx = Context(settings=settings, store=store, clock=clock)
    try:
        while not stop.is_set():
            try:
                await sweep(ctx)
            except Exception:  # a failed pass must not end sweeping; the next one retries
                log.exception("session sweep failed")
            await asyncio.to_thread(stop.wait, settings.sweep_interval_s)
    finally:
        await store.close()


def _main(settings: Settings, stop: Event) -> None:
    # Ctrl-C reaches the whole process group; `serve` decides when the sweeper ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    asyncio.run(_sweep_until(settings, stop))


class SweeperProcess:
    def __init__(self, settings: Settings) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._process = context.Process(
            target=_main, args=(settings, self._stop), name="avatar-sweeper", daemon=True
        )
        self._timeout = settings.sweep_interval_s + 10

    def start(self) -> None:
        self._process.start()

    def stop(self) -> None:
        self._stop.set()
        self._process.join(timeout=self._timeout)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
