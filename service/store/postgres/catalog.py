"""Avatars, agents and routes.

A route is written only while its agent is live, and deleting an agent revokes its routes:
the insert locks the agent row (`FOR SHARE`), so a delete racing it either waits and then
revokes the new route too, or wins and the insert finds the agent gone."""

from __future__ import annotations

from service.domain.faces import FaceLandmarks
from service.domain.models import Agent, Avatar, Route
from service.domain.pagination import PageRequest
from service.store.postgres.base import Conn, PostgresBase, after_clause, announce, fetch_one
from service.store.rows import (
    AGENT_FIELDS,
    AVATAR_COLUMNS,
    ROUTE_COLUMNS,
    agent_of,
    agent_values,
    avatar_face_value,
    avatar_of,
)

_AVATAR = f"{AVATAR_COLUMNS} FROM avatars"
_AGENT_COLUMNS = ", ".join(AGENT_FIELDS)
_AGENT = f"{_AGENT_COLUMNS} FROM agents"
_ROUTE = f"{ROUTE_COLUMNS} FROM routes"
# A change moves changed_ms forward and counts one more version; times never go back past the
# creation or an earlier change, even if the clock does (clients check created <= updated).
_CHANGED = "changed_ms = GREATEST(COALESCE(changed_ms, created_ms), %(now)s), version = version + 1"
_REVOKE = f"revoked_ms = GREATEST(created_ms, %(now)s), {_CHANGED}"

# Derived route status as SQL, mirroring `Route.status`.
_STATUS_SQL = {
    "revoked": " AND revoked_ms IS NOT NULL",
    "expired": " AND revoked_ms IS NULL AND expires_ms IS NOT NULL AND expires_ms <= %s",
    "active": " AND revoked_ms IS NULL AND (expires_ms IS NULL OR expires_ms > %s)",
}


def _route(row: tuple) -> Route:
    return Route(*row)


async def _insert_avatar(conn: Conn, a: Avatar) -> None:
    await conn.execute(
        f"INSERT INTO avatars ({AVATAR_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (a.avatar_id, a.owner_id, a.name, a.width, a.height, a.source, a.created_ms,
         avatar_face_value(a.face, a.face_checked), a.status, a.error),
    )  # fmt: skip


async def _set_face(conn: Conn, avatar_id: str, face: str) -> None:
    await conn.execute("UPDATE avatars SET face = %s WHERE avatar_id = %s", (face, avatar_id))


async def _end_build(
    conn: Conn, avatar_id: str, status: str, error: str | None, face: str | None
) -> bool:
    cursor = await conn.execute(
        "UPDATE avatars SET status = %s, error = %s, face = coalesce(%s, face)"
        " WHERE avatar_id = %s AND status = 'PENDING'",
        (status, error, face, avatar_id),
    )
    return cursor.rowcount == 1


async def _delete_avatar(conn: Conn, owner_id: str, avatar_id: str) -> Avatar | None:
    row = await fetch_one(
        conn,
        f"DELETE FROM avatars WHERE avatar_id = %s AND owner_id = %s RETURNING {AVATAR_COLUMNS}",
        (avatar_id, owner_id),
    )
    return None if row is None else avatar_of(row)


async def _insert_agent(conn: Conn, agent: Agent) -> None:
    marks = ", ".join(f"%({name})s" for name in AGENT_FIELDS)
    await conn.execute(
        f"INSERT INTO agents ({_AGENT_COLUMNS}) VALUES ({marks})", agent_values(agent)
    )


async def _replace_agent(conn: Conn, agent: Agent) -> bool:
    assigns = ", ".join(f"{name} = %({name})s" for name in AGENT_FIELDS if name != "agent_id")
    cursor = await conn.execute(
        f"UPDATE agents SET {assigns} WHERE agent_id = %(agent_id)s AND deleted_ms IS NULL",
        agent_values(agent),
    )
    if cursor.rowcount == 1:
        await announce(conn, "catalog")
    return cursor.rowcount == 1


async def _delete_agent(conn: Conn, owner_id: str, agent_id: str, now_ms: int) -> Agent | None:
    row = await fetch_one(
        conn,
        "UPDATE agents SET deleted_ms = %s WHERE agent_id = %s AND owner_id = %s"
        f" AND deleted_ms IS NULL RETURNING {_AGENT_COLUMNS}",
        (now_ms, agent_id, owner_id),
    )
    if row is None:
        return None
    await conn.execute(
        f"UPDATE routes SET {_REVOKE} WHERE agent_id = %(agent)s AND revoked_ms IS NULL",
        {"now": now_ms, "agent": agent_id},
    )
    await announce(conn, "catalog")
    return agent_of(row)


async def _insert_route(conn: Conn, r: Route) -> bool:
    cursor = await conn.execute(
        "INSERT INTO routes (route_id, owner_id, agent_id, label, created_ms, expires_ms)"
        " SELECT %s, %s, %s, %s, %s, %s FROM agents"
        " WHERE agent_id = %s AND owner_id = %s AND deleted_ms IS NULL FOR SHARE",
        (r.route_id, r.owner_id, r.agent_id, r.label, r.created_ms, r.expires_ms,
         r.agent_id, r.owner_id),
    )  # fmt: skip
    return cursor.rowcount == 1


async def _owned_route(conn: Conn, owner_id: str, route_id: str) -> Route | None:
    sql = f"SELECT {_ROUTE} WHERE route_id = %s AND owner_id = %s"
    row = await fetch_one(conn, sql, (route_id, owner_id))
    return None if row is None else _route(row)


async def _set_label(conn: Conn, owner_id: str, route_id: str, label: str | None, now_ms: int):
    # Setting the label it already has is no change (no new version).
    cursor = await conn.execute(
        f"UPDATE routes SET label = %(label)s, {_CHANGED} WHERE route_id = %(route)s"
        " AND owner_id = %(owner)s AND label IS DISTINCT FROM %(label)s",
        {"label": label, "now": now_ms, "route": route_id, "owner": owner_id},
    )
    if cursor.rowcount:
        await announce(conn, "catalog")
    return await _owned_route(conn, owner_id, route_id)


async def _revoke_route(conn: Conn, owner_id: str, route_id: str, now_ms: int):
    cursor = await conn.execute(
        f"UPDATE routes SET {_REVOKE}"
        " WHERE route_id = %(route)s AND owner_id = %(owner)s AND revoked_ms IS NULL",
        {"now": now_ms, "route": route_id, "owner": owner_id},
    )
    if cursor.rowcount:
        await announce(conn, "catalog")
    return await _owned_route(conn, owner_id, route_id)


class CatalogMixin(PostgresBase):
    async def add_avatar(self, avatar: Avatar) -> None:
        await self._write(_insert_avatar, avatar)

    async def get_avatar(self, avatar_id: str) -> Avatar | None:
        return await self._one(f"SELECT {_AVATAR} WHERE avatar_id = %s", (avatar_id,), avatar_of)

    async def get_avatars(self, avatar_ids: list[str]) -> list[Avatar]:
        sql = f"SELECT {_AVATAR} WHERE avatar_id = ANY(%s)"
        return await self._all(sql, (list(avatar_ids),), avatar_of)

    async def list_avatars(self, owner_id: str, page: PageRequest) -> list[Avatar]:
        cond, params = after_clause(page, "created_ms", "avatar_id")
        sql = f"SELECT {_AVATAR} WHERE owner_id = %s{cond} ORDER BY created_ms DESC, avatar_id DESC"
        return await self._all(sql + " LIMIT %s", [owner_id, *params, page.limit + 1], avatar_of)

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
            sql = f"SELECT {_AGENT} WHERE agent_id = %s AND deleted_ms IS NULL"
            agent = await self._one(sql, (agent_id,), agent_of)
            if agent is not None:
                self._agent_cache.put(agent_id, mark, agent)
        return agent

    async def list_agents(self, owner_id: str, page: PageRequest) -> list[Agent]:
        cond, params = after_clause(page, "created_ms", "agent_id")
        sql = (
            f"SELECT {_AGENT} WHERE owner_id = %s AND deleted_ms IS NULL{cond}"
            " ORDER BY created_ms DESC, agent_id DESC LIMIT %s"
        )
        return await self._all(sql, [owner_id, *params, page.limit + 1], agent_of)

    async def replace_agent(self, agent: Agent) -> bool:
        replaced = await self._write(_replace_agent, agent)
        self._catalog_changes.touch()
        return replaced

    async def delete_agent(self, owner_id: str, agent_id: str, now_ms: int) -> Agent | None:
        agent = await self._write(_delete_agent, owner_id, agent_id, now_ms)
        if agent is not None:
            self._catalog_changes.touch()
        return agent

    async def add_route(self, route: Route) -> bool:
        return await self._write(_insert_route, route)

    async def get_route(self, route_id: str) -> Route | None:
        # The hottest read: served from the per-process cache while no route or agent changed
        # on any node (see changes.py); new rows need no invalidation.
        mark = self._route_cache.mark()
        route = self._route_cache.get(route_id, mark)
        if route is None:
            route = await self._one(f"SELECT {_ROUTE} WHERE route_id = %s", (route_id,), _route)
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
        sql, params = f"SELECT {_ROUTE} WHERE owner_id = %s", [owner_id]
        if agent_id is not None:
            sql, params = sql + " AND agent_id = %s", [*params, agent_id]
        if status is not None:
            sql += _STATUS_SQL[status]
            params += [] if status == "revoked" else [now_ms]
        cond, after = after_clause(page, "created_ms", "route_id")
        sql += f"{cond} ORDER BY created_ms DESC, route_id DESC LIMIT %s"
        return await self._all(sql, [*params, *after, page.limit + 1], _route)

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
