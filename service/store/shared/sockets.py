"""Holds of the open conversation sockets, for both databases, counted against their caps in
the transaction that takes them. SQLite's writes run one at a time; under PostgreSQL's READ
COMMITTED two nodes counting at once would both see the last place free, so each hold first
serializes on its client and on its route (advisory locks): the holds that compete for a place
queue one behind the other, and each counts the holds committed before it. A hold is named by
its socket's conversation id, and stamped alive with it (`ConversationsMixin.keep_alive`)."""

from __future__ import annotations

from service.domain.models import SocketHold
from service.store.shared.base import SharedBase
from service.store.shared.steps import Body, Query, Serialize

# The first key of each advisory lock (the second is the hashed client or route): every hold
# takes its client's lock before its route's, so two holds never wait for each other in a ring.
_CLIENT_LOCK = 0x736B6331  # "skc1"
_ROUTE_LOCK = 0x736B7231  # "skr1"


def _live(column: str, value: str, live_ms: int) -> Body[int]:
    found = yield Query(
        f"SELECT count(*) FROM socket_holds WHERE {column} = ? AND alive_ms >= ?",
        (value, live_ms),
    )
    return found.first()[0]


def _hold(hold: SocketHold, per_client: int, per_route: int, live_ms: int) -> Body[str | None]:
    yield Serialize(_CLIENT_LOCK, hold.client)
    if (yield from _live("client", hold.client, live_ms)) >= per_client:
        return "client"
    if hold.route_id is not None:
        yield Serialize(_ROUTE_LOCK, hold.route_id)
        if (yield from _live("route_id", hold.route_id, live_ms)) >= per_route:
            return "route"
    yield Query(
        "INSERT INTO socket_holds (socket_id, client, route_id, alive_ms) VALUES (?, ?, ?, ?)",
        (hold.socket_id, hold.client, hold.route_id, hold.alive_ms),
        wait=False,
    )
    return None


def _release(socket_id: str) -> Body[None]:
    yield Query("DELETE FROM socket_holds WHERE socket_id = ?", (socket_id,), wait=False)


def _drop_quiet(alive_before_ms: int) -> Body[int]:
    dropped = yield Query("DELETE FROM socket_holds WHERE alive_ms < ?", (alive_before_ms,))
    return dropped.rowcount


class SocketHoldsMixin(SharedBase):
    async def hold_socket(
        self, hold: SocketHold, per_client: int, per_route: int, live_since_ms: int
    ) -> str | None:
        return await self._run(_hold(hold, per_client, per_route, live_since_ms))

    async def release_socket(self, socket_id: str) -> None:
        await self._run(_release(socket_id))

    async def drop_quiet_sockets(self, alive_before_ms: int) -> int:
        return await self._run(_drop_quiet(alive_before_ms))
