"""Owners and API keys."""

from __future__ import annotations

from service.domain.models import ApiKey, Owner
from service.store.postgres.base import Conn, PostgresBase

_KEY_COLUMNS = (
    "k.key_id, k.owner_id, o.name, k.key_hash, k.prefix, k.created_ms, k.last_used_ms,"
    " k.revoked_ms FROM api_keys k JOIN owners o ON o.owner_id = k.owner_id"
)


def _key(row: tuple) -> ApiKey:
    return ApiKey(*row)


async def _insert_owner(conn: Conn, owner: Owner) -> None:
    await conn.execute(
        "INSERT INTO owners (owner_id, name, created_ms) VALUES (%s, %s, %s)",
        (owner.owner_id, owner.name, owner.created_ms),
    )


async def _insert_key(conn: Conn, key: ApiKey) -> None:
    await conn.execute(
        "INSERT INTO api_keys (key_id, owner_id, key_hash, prefix, created_ms)"
        " VALUES (%s, %s, %s, %s, %s)",
        (key.key_id, key.owner_id, key.key_hash, key.prefix, key.created_ms),
    )


async def _revoke_key(conn: Conn, key_id: str, now_ms: int) -> None:
    await conn.execute(
        "UPDATE api_keys SET revoked_ms = %s WHERE key_id = %s AND revoked_ms IS NULL",
        (now_ms, key_id),
    )


async def _touch_key(conn: Conn, key_id: str, now_ms: int, min_interval_ms: int) -> None:
    await conn.execute(
        "UPDATE api_keys SET last_used_ms = %s WHERE key_id = %s"
        " AND (last_used_ms IS NULL OR last_used_ms <= %s)",
        (now_ms, key_id, now_ms - min_interval_ms),
    )


class AccountsMixin(PostgresBase):
    async def get_owner_by_name(self, name: str) -> Owner | None:
        sql = "SELECT owner_id, name, created_ms FROM owners WHERE name = %s"
        return await self._one(sql, (name,), lambda row: Owner(*row))

    async def add_owner(self, owner: Owner) -> None:
        await self._write(_insert_owner, owner)

    async def count_owners(self) -> int:
        return await self._one("SELECT count(*) FROM owners", None, lambda row: row[0])

    async def add_key(self, key: ApiKey) -> None:
        await self._write(_insert_key, key)

    async def get_key_by_hash(self, key_hash: str) -> ApiKey | None:
        return await self._one(f"SELECT {_KEY_COLUMNS} WHERE k.key_hash = %s", (key_hash,), _key)

    async def list_keys(self) -> list[ApiKey]:
        return await self._all(f"SELECT {_KEY_COLUMNS} ORDER BY k.created_ms, k.key_id", None, _key)

    async def revoke_key(self, key_id: str, now_ms: int) -> ApiKey | None:
        await self._write(_revoke_key, key_id, now_ms)
        return await self._one(f"SELECT {_KEY_COLUMNS} WHERE k.key_id = %s", (key_id,), _key)

    async def touch_key(self, key_id: str, now_ms: int, min_interval_ms: int) -> None:
        await self._write(_touch_key, key_id, now_ms, min_interval_ms)
