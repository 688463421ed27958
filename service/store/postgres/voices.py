"""Voice profiles, and moving their users to another voice when one is deleted: in one
transaction, announced to every node (their cached agents and live sessions may have changed
voice)."""

from __future__ import annotations

from service.domain.models import VoiceProfile
from service.store.postgres.base import Conn, PostgresBase, announce, fetch_one
from service.store.rows import VOICE_PROFILE_FIELDS, voice_profile_of, voice_profile_values

_COLUMNS = ", ".join(VOICE_PROFILE_FIELDS)
_PROFILE = f"{_COLUMNS} FROM voice_profiles"


async def _insert(conn: Conn, profile: VoiceProfile) -> None:
    marks = ", ".join(f"%({name})s" for name in VOICE_PROFILE_FIELDS)
    await conn.execute(
        f"INSERT INTO voice_profiles ({_COLUMNS}) VALUES ({marks})", voice_profile_values(profile)
    )


async def _delete(
    conn: Conn, owner_id: str, profile_id: str, replacement_id: str
) -> VoiceProfile | None:
    row = await fetch_one(
        conn,
        f"DELETE FROM voice_profiles WHERE profile_id = %s AND owner_id = %s RETURNING {_COLUMNS}",
        (profile_id, owner_id),
    )
    if row is None:
        return None
    for table in ("agents", "sessions"):
        await conn.execute(
            f"UPDATE {table} SET voice_id = %s WHERE owner_id = %s AND voice_id = %s",
            (replacement_id, owner_id, profile_id),
        )
    await announce(conn, "catalog")
    await announce(conn, "sessions")
    return voice_profile_of(row)


class VoicesMixin(PostgresBase):
    async def add_voice_profile(self, profile: VoiceProfile) -> None:
        await self._write(_insert, profile)

    async def get_voice_profile(self, profile_id: str) -> VoiceProfile | None:
        sql = f"SELECT {_PROFILE} WHERE profile_id = %s"
        return await self._one(sql, (profile_id,), voice_profile_of)

    async def list_voice_profiles(self, owner_id: str) -> list[VoiceProfile]:
        return await self._all(
            f"SELECT {_PROFILE} WHERE owner_id = %s ORDER BY created_ms DESC, profile_id DESC",
            (owner_id,),
            voice_profile_of,
        )

    async def delete_voice_profile(
        self, owner_id: str, profile_id: str, replacement_id: str
    ) -> VoiceProfile | None:
        profile = await self._write(_delete, owner_id, profile_id, replacement_id)
        if profile is not None:  # this node's own caches, without waiting for the notice
            self._catalog_changes.touch()
            self._session_changes.touch()
        return profile
