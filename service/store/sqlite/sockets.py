"""Holds of the open conversation sockets, counted against their caps in the same write that
takes them, so two workers admitting at once cannot both take the last place. A hold is named
by its socket's conversation id, and stamped alive with it (`ConversationsMixin.keep_alive`)."""

from __future__ import annotations

import sqlite3

from service.domain.models import SocketHold
from service.store.sqlite.base import SqliteBase


def _hold(
    conn: sqlite3.Connection, hold: SocketHold, per_client: int, per_route: int, live_ms: int
) -> str | None:
    clients = conn.execute(
        "SELECT count(*) FROM socket_holds WHERE client = ? AND alive_ms >= ?",
        (hold.client, live_ms),
    ).fetchone()[0]
    if clients >= per_client:
        return "client"
    if hold.route_id is not None:
        routes = conn.execute(
            "SELECT count(*) FROM socket_holds WHERE route_id = ? AND alive_ms >= ?",
            (hold.route_id, live_ms),
        ).fetchone()[0]
        if routes >= per_route:
            return "route"
    conn.execute(
        "INSERT INTO socket_holds (socket_id, client, route_id, alive_ms) VALUES (?, ?, ?, ?)",
        (hold.socket_id, hold.client, hold.route_id, hold.alive_ms),
    )
    return None


def _release(conn: sqlite3.Connection, socket_id: str) -> None:
    conn.execute("DELETE FROM socket_holds WHERE socket_id = ?", (socket_id,))


def _drop_quiet(conn: sqlite3.Connection, alive_before_ms: int) -> int:
    return conn.execute("DELETE FROM socket_holds WHERE alive_ms < ?", (alive_before_ms,)).rowcount


class SocketHoldsMixin(SqliteBase):
    async def hold_socket(
        self, hold: SocketHold, per_client: int, per_route: int, live_since_ms: int
    ) -> str | None:
        return await self._write(_hold, hold, per_client, per_route, live_since_ms)

    async def release_socket(self, socket_id: str) -> None:
        await self._write(_release, socket_id)

    async def drop_quiet_sockets(self, alive_before_ms: int) -> int:
        return await self._write(_drop_quiet, alive_before_ms)
