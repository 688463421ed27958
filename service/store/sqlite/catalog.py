"""Avatars, agents and routes."""

from __future__ import annotations

import sqlite3

from service.domain.faces import FaceLandmarks
from service.domain.models import Agent, Avatar, Route
from service.domain.pagination import PageRequest
from service.store.rows import (
    AGENT_FIELDS,
    AVATAR_COLUMNS,
    ROUTE_COLUMNS,
    agent_of,
    agent_values,
    avatar_face_value,
    avatar_of,
)
from service.store.shared.base import after_clause
from service.store.sqlite.base import SqliteBase

_AVATAR = f"{AVATAR_COLUMNS} FROM avatars"
_AGENT = f"{', '.join(AGENT_FIELDS)} FROM agents"
# Ids per `IN (...)` list, well under SQLite's limit on bound parameters.
_IN_BATCH = 500
_ROUTE = f"{ROUTE_COLUMNS} FROM routes"
# A change moves changed_ms forward and counts one more version. The times never go back past
# the creation or an earlier change, even if the wall clock does: clients check
# created <= revoked <= updated.
_CHANGED = "changed_ms = MAX(COALESCE(changed_ms, created_ms), :now), version = version + 1"
_REVOKE = f"revoked_ms = MAX(created_ms, :now), {_CHANGED}"

# Derived route status as SQL, mirroring `Route.status` (the parameter is "now").
_STATUS_SQL = {
    "revoked": " AND revoked_ms IS NOT NULL",
    "expired": " AND revoked_ms IS NULL AND expires_ms IS NOT NULL AND expires_ms <= ?",
    "active": " AND revoked_ms IS NULL AND (expires_ms IS NULL OR expires_ms > ?)",
}


def _route(row: tuple) -> Route:
    return Route(*row)


def _insert_avatar(conn: sqlite3.Connection, a: Avatar) -> None:
    conn.execute(
        f"INSERT INTO avatars ({AVATAR_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (a.avatar_id, a.owner_id, a.name, a.width, a.height, a.source, a.created_ms,
         avatar_face_value(a.face, a.face_checked), a.status, a.error),
    )  # fmt: skip


def _delete_avatar(conn: sqlite3.Connection, owner_id: str, avatar_id: str) -> Avatar | None:
    row = conn.execute(
        f"SELECT {_AVATAR} WHERE avatar_id = ? AND owner_id = ?", (avatar_id, owner_id)
    ).fetchone()
    if row is not None:
        conn.execute("DELETE FROM avatars WHERE avatar_id = ?", (avatar_id,))
    return None if row is None else avatar_of(row)


def _set_face(conn: sqlite3.Connection, avatar_id: str, face: str) -> None:
    conn.execute("UPDATE avatars SET face = ? WHERE avatar_id = ?", (face, avatar_id))


def _end_build(
    conn: sqlite3.Connection, avatar_id: str, status: str, error: str | None, face: str | None
) -> bool:
    cursor = conn.execute(
        "UPDATE avatars SET status = ?, error = ?, face = coalesce(?, face)"
        " WHERE avatar_id = ? AND status = 'PENDING'",
        (status, error, face, avatar_id),
    )
    return cursor.rowcount == 1


def _insert_agent(conn: sqlite3.Connection, agent: Agent) -> None:
    names = ", ".join(AGENT_FIELDS)
    marks = ", ".join(f":{name}" for name in AGENT_FIELDS)
    conn.execute(f"INSERT INTO agents ({names}) VALUES ({marks})", agent_values(agent))


def _replace_agent(conn: sqlite3.Connection, agent: Agent) -> bool:
    assigns = ", ".join(f"{name} = :{name}" for name in AGENT_FIELDS if name != "agent_id")
    cursor = conn.execute(
        f"UPDATE agents SET {assigns} WHERE agent_id = :agent_id AND deleted_ms IS NULL",
        agent_values(agent),
    )
    return cursor.rowcount == 1


def _delete_agent(conn: sqlite3.Connection, owner_id: str, agent_id: str, now_ms: int):
    row = conn.execute(
        f"SELECT {_AGENT} WHERE agent_id = ? AND owner_id = ? AND deleted_ms IS NULL",
        (agent_id, owner_id),
    ).fetchone()
    if row is None:
        return None
    conn.execute("UPDATE agents SET deleted_ms = ? WHERE agent_id = ?", (now_ms, agent_id))
    conn.execute(
        f"UPDATE routes SET {_REVOKE} WHERE agent_id = :agent AND revoked_ms IS NULL",
        {"now": now_ms, "agent": agent_id},
    )
    return agent_of(row)


def _insert_route(conn: sqlite3.Connection, r: Route) -> bool:
    # The agent must still exist when the route is written (a concurrent delete may win).
    cursor = conn.execute(
        "INSERT INTO routes (route_id, owner_id, agent_id, label, created_ms, expires_ms)"
        " SELECT ?, ?, ?, ?, ?, ? FROM agents"
        " WHERE agent_id = ? AND owner_id = ? AND deleted_ms IS NULL",
        (r.route_id, r.owner_id, r.agent_id, r.label, r.created_ms, r.expires_ms,
         r.agent_id, r.owner_id),
    )  # fmt: skip
    return cursor.rowcount == 1


def _owned_route(conn: sqlite3.Connection, owner_id: str, route_id: str) -> Route | None:
    sql = f"SELECT {_ROUTE} WHERE route_id = ? AND owner_id = ?"
    row = conn.execute(sql, (route_id, owner_id)).fetchone()
    return None if row is None else _route(row)


def _set_label(
    conn: sqlite3.Connection, owner_id: str, route_id: str, label: str | None, now_ms: int
):
    # Setting the label it already has is no change (no new version).
    conn.execute(
        f"UPDATE routes SET label = :label, {_CHANGED}"
        " WHERE route_id = :route AND owner_id = :owner AND label IS NOT :label",
        {"label": label, "now": now_ms, "route": route_id, "owner": owner_id},
    )
    return _owned_route(conn, owner_id, route_id)


def _revoke_route(conn: sqlite3.Connection, owner_id: str, route_id: str, now_ms: int):
    conn.execute(
        f"UPDATE routes SET {_REVOKE}"
        " WHERE route_id = :route AND owner_id = :owner AND revoked_ms IS NULL",
        {"now": now_ms, "route": route_id, "owner": owner_id},
    )
    return _owned_route(conn, owner_id, route_id)


class CatalogMixin(SqliteBase):
    async def add_avatar(self, avatar: Avatar) -> None:
        await self._write(_insert_avatar, avatar)

    async def get_avatar(self, avatar_id: str) -> Avatar | None:
        return self._one(f"SELECT {_AVATAR} WHERE avatar_id = ?", (avatar_id,), avatar_of)

    async def get_avatars(self, avatar_ids: list[str]) -> list[Avatar]:
        found: list[Avatar] = []
        for start in range(0, len(avatar_ids), _IN_BATCH):
            batch = avatar_ids[start : start + _IN_BATCH]
            marks = ", ".join("?" * len(batch))
            found += self._all(f"SELECT {_AVATAR} WHERE avatar_id IN ({marks})", batch, avatar_of)
        return found

    async def list_avatars(self, owner_id: str, page: PageRequest) -> list[Avatar]:
        cond, params = after_clause(page, "created_ms", "avatar_id")
        sql = f"SELECT {_AVATAR} WHERE owner_id = ?{cond} ORDER BY created_ms DESC, avatar_id DESC"
        return self._all(sql + " LIMIT ?", [owner_id, *params, page.limit + 1], avatar_of)

    async def delete_avatar(self, owner_id: str, avatar_id: str) -> Avatar | None:
        return await self._write(_delete_avatar, owner_id, avatar_id)

    async def set_avatar_face(self, avatar_id: str, face: FaceLandmarks | None) -> None:
        await self._write(_set_face, avatar_id, avatar_face_value(face))

    async def end_avatar_build(
        self, avatar_id: str, status: str, error: str | None, face: FaceLandmarks | None
    ) -> bool:
        value = None if face is None else avatar_face_value(face)
        return await self._write(_end_build, avatar_id, status, error, value)

    async def add_agent(self, agent: Agent) -> None:
        await self._write(_insert_agent, agent)

    async def get_agent(self, agent_id: str) -> Agent | None:
        mark = self._agent_cache.mark()
        agent = self._agent_cache.get(agent_id, mark)
        if agent is None:
            sql = f"SELECT {_AGENT} WHERE agent_id = ? AND deleted_ms IS NULL"
            agent = self._one(sql, (agent_id,), agent_of)
            if agent is not None:
                self._agent_cache.put(agent_id, mark, agent)
        return agent

    async def list_agents(self, owner_id: str, page: PageRequest) -> list[Agent]:
        cond, params = after_clause(page, "created_ms", "agent_id")
        sql = (
            f"SELECT {_AGENT} WHERE owner_id = ? AND deleted_ms IS NULL{cond}"
            " ORDER BY created_ms DESC, agent_id DESC LIMIT ?"
        )
        return self._all(sql, [owner_id, *params, page.limit + 1], agent_of)

    async def replace_agent(self, agent: Agent) -> bool:
        replaced = await self._write(_replace_agent, agent)
        self._catalog_changes.touch()
        return replaced

    async def delete_agent(self, owner_id: str, agent_id: str, now_ms: int) -> Agent | None:
        agent = await self._write(_delete_agent, owner_id, agent_id, now_ms)
        if agent is not None:
            self._catalog_changes.touch()  # the agent is gone and its routes are revoked
        return agent

    async def add_route(self, route: Route) -> bool:
        return await self._write(_insert_route, route)

    async def get_route(self, route_id: str) -> Route | None:
        # The hottest read (API and public page): served from the per-process cache while no
        # route or agent changed anywhere (see changes.py); new rows need no invalidation.
        mark = self._route_cache.mark()
        route = self._route_cache.get(route_id, mark)
        if route is None:
            route = self._one(f"SELECT {_ROUTE} WHERE route_id = ?", (route_id,), _route)
            if route is not None:
                self._route_cache.put(route_id, mark, route)
        return route

    async def list_routes(
        self,
        owner_id: str,
        page: PageRequest,
        *,
        now_ms: int,
        agent_id: str | None = None,
        status: str | None = None,
    ) -> list[Route]:
        sql, params = f"SELECT {_ROUTE} WHERE owner_id = ?", [owner_id]
        if agent_id is not None:
            sql, params = sql + " AND agent_id = ?", [*params, agent_id]
        if status is not None:
            sql += _STATUS_SQL[status]
            params += [] if status == "revoked" else [now_ms]
        cond, after = after_clause(page, "created_ms", "route_id")
        sql += f"{cond} ORDER BY created_ms DESC, route_id DESC LIMIT ?"
        return self._all(sql, [*params, *after, page.limit + 1], _route)

    async def set_route_label(
        self, owner_id: str, route_id: str, label: str | None, now_ms: int
    ) -> Route | None:
        route = await self._write(_set_label, owner_id, route_id, label, now_ms)
        self._catalog_changes.touch()
        return route

    async def revoke_route(self, owner_id: str, route_id: str, now_ms: int) -> Route | None:
        route = await self._write(_revoke_route, owner_id, route_id, now_ms)
        self._catalog_changes.touch()
        return route
