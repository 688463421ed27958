"""The one sweeper of `serve`: closes sessions that reached their maximum duration (recording
their usage) and prepares sessions whose worker died before it could. It runs in the `serve`
process itself, not in the HTTP workers, so there is exactly one however many workers run."""

from __future__ import annotations

import asyncio
import logging
import threading

from service.clock import Clock, SystemClock
from service.domain.context import Context
from service.domain.sessions import sweep
from service.settings import Settings
from service.store.sqlite import SqliteStore

log = logging.getLogger("service.sweeper")


class Sweeper:
    def __init__(self, settings: Settings, clock: Clock | None = None) -> None:
        self._settings = settings
        self._clock = clock or SystemClock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="session-sweeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self._settings.sweep_interval_s + 10)

    def _run(self) -> None:
        asyncio.run(self._loop())

    async def _loop(self) -> None:
        store = SqliteStore(self._settings.database_path, self._clock.now_ms())
        ctx = Context(settings=self._settings, store=store, clock=self._clock)
        try:
            while not self._stop.is_set():
                try:
                    await sweep(ctx)
                except Exception:  # a bad pass must not end sweeping; the next one retries
                    log.exception("session sweep failed")
                await asyncio.to_thread(self._stop.wait, self._settings.sweep_interval_s)
        finally:
            await store.close()
