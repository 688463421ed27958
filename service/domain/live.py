"""The conversations open in this process, and the one watch that ends them when their route is
revoked or expires, or their session stops: by any process, since the store's live mark changes
with every route, agent or session change anywhere, and by the clock for expiries and for a
route conversation left without a visitor message for AVATAR_CONVERSATION_IDLE_S. It also
stamps them alive, so the sweeper can tell an open conversation from one whose process died."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from service.domain.context import Context
from service.domain.conversations import KEEP_ALIVE_MS, watch_state
from service.domain.turns import Live, idle_since

log = logging.getLogger("service.live")

# How often the watch looks: a revoked route's sockets close well within a second.
TICK_S = 0.1
# How long a stopping process waits for its sockets to say goodbye and record their end.
STOP_WAIT_S = 5.0


@dataclass
class _Watched:
    live: Live
    on_end: Callable[[str], None]
    deadline_ms: int | None = None


class LiveConversations:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._open: dict[str, _Watched] = {}
        self._task: asyncio.Task | None = None
        self._serving = 0  # sockets between their opening and their last write
        self._all_done = asyncio.Event()
        self._all_done.set()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Around a socket's whole life, its closing writes included: `stop` waits for them,
        so they land before the store closes."""
        self._serving += 1
        self._all_done.clear()
        try:
            yield
        finally:
            self._serving -= 1
            if not self._serving:
                self._all_done.set()

    async def watch(self, live: Live, on_end: Callable[[str], None]) -> None:
        """Call `on_end(reason)` once when `live` must end (at once if it must already)."""
        watched = _Watched(live, on_end)
        self._open[live.conversation_id] = watched
        try:
            await self._check(watched)
        except BaseException:
            # Unwatched, it is not stamped alive either: the sweeper closes it should its
            # socket never do so.
            self.forget(live)
            raise
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def forget(self, live: Live) -> None:
        self._open.pop(live.conversation_id, None)

    async def stop(self, reason: str) -> None:
        """End every open conversation (the process is shutting down), let their sockets
        finish (for up to STOP_WAIT_S), and end the watch."""
        for watched in list(self._open.values()):
            self._end(watched, reason)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._all_done.wait(), STOP_WAIT_S)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _check(self, watched: _Watched) -> None:
        reason, watched.deadline_ms = await watch_state(self._ctx, watched.live.setup)
        if reason:
            self._end(watched, reason)

    def _end(self, watched: _Watched, reason: str) -> None:
        if self._open.pop(watched.live.conversation_id, None) is not None:
            watched.on_end(reason)

    async def _run(self) -> None:
        mark, stamped = None, self._ctx.clock.now_ms()
        while True:
            await asyncio.sleep(TICK_S)
            try:
                mark = await self._check_changed(mark)
                now = self._ctx.clock.now_ms()
                if now - stamped >= KEEP_ALIVE_MS:
                    stamped = now
                    await self._ctx.store.keep_alive(list(self._open), now)
            except Exception:  # the watch must outlive a failed pass; the next one retries
                log.exception("watching live conversations failed")

    async def _check_changed(self, mark: bytes | None) -> bytes:
        """Check every conversation when the live mark moved past `mark`, and those due by
        the clock; the mark they were all checked against (a pass that fails keeps the old
        mark, so the next one checks them all again)."""
        current = self._ctx.store.live_mark()
        now = self._ctx.clock.now_ms()
        idle_ms = round(self._ctx.settings.conversation_idle_s * 1000)
        for watched in list(self._open.values()):
            if idle_since(watched.live, now - idle_ms):
                self._end(watched, "idle")
                continue
            due = watched.deadline_ms is not None and now >= watched.deadline_ms
            if current != mark or due:
                await self._check(watched)
        return current
