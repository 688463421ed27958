"""Holds of the open conversation sockets, counted against their caps in the transaction that
takes them. Under READ COMMITTED two nodes counting at once would both see the last place free,
so each hold first takes transaction-scoped advisory locks on its client and on its route: the
holds that compete for a place queue one behind the other, and each counts the holds committed
before it. A hold is named by its socket's conversation id, and stamped alive with it
(`ConversationsMixin.keep_alive`)."""

from __future__ import annotations

from service.domain.models import SocketHold
from service.store.postgres.base import Conn, PostgresBase, fetch_one

# The first key of each advisory lock (the second is the hashed client or route): every hold
# takes its client's lock before its route's, so two holds never wait for each other in a ring.
_CLIENT_LOCK = 0x736B6331  # "skc1"
_ROUTE_LOCK = 0x736B7231  # "skr1"


async def _live(conn: Conn, column: str, value: str, live_ms: int) -> int:
    row = await fetch_one(
        conn,
        f"SELECT count(*) FROM socket_holds WHERE {column} = %s AND alive_ms >= %s",
        (value, live_ms),
    )
    return row[0]


async def _hold(
    conn: Conn, hold: SocketHold, per_client: int, per_route: int, live_ms: int
) -> str | None:
    await conn.execute(
        "SELECT pg_advisory_xact_lock(%s::int, hashtext(%s))", (_CLIENT_LOCK, hold.client)
    )
    if await _live(conn, "client", hold.client, live_ms) >= per_client:
        return "client"
    if hold.route_id is not None:
        await conn.execute(
            "SELECT pg_advisory_xact_lock(%s::int, hashtext(%s))", (_ROUTE_LOCK, hold.route_id)
        )
        if await _live(conn, "route_id", hold.route_id, live_ms) >= per_route:
            return "route"
    await conn.execute(
        "INSERT INTO socket_holds (socket_id, client, route_id, alive_ms) VALUES (%s, %s, %s, %s)",
        (hold.socket_id, hold.client, hold.route_id, hold.alive_ms),
    )
    return None


async def _release(conn: Conn, socket_id: str) -> None:
    await conn.execute("DELETE FROM socket_holds WHERE socket_id = %s", (socket_id,))


async def _drop_quiet(conn: Conn, alive_before_ms: int) -> int:
    cursor = await conn.execute("DELETE FROM socket_holds WHERE alive_ms < %s", (alive_before_ms,))
    return cursor.rowcount


class SocketHoldsMixin(PostgresBase):
    async def hold_socket(
        self, hold: SocketHold, per_client: int, per_route: int, live_since_ms: int
    ) -> str | None:
        return await self._write(_hold, hold, per_client, per_route, live_since_ms)

    async def release_socket(self, socket_id: str) -> None:
        await self._write(_release, socket_id)

    async def drop_quiet_sockets(self, alive_before_ms: int) -> int:
        return await self._write(_drop_quiet, alive_before_ms)
