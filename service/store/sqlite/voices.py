"""Voice profiles, and moving their users to another voice when one is deleted."""

from __future__ import annotations

import sqlite3

from service.domain.models import VoiceProfile
from service.store.rows import VOICE_PROFILE_FIELDS, voice_profile_of, voice_profile_values
from service.store.sqlite.base import SqliteBase

_PROFILE = f"{', '.join(VOICE_PROFILE_FIELDS)} FROM voice_profiles"


def _insert(conn: sqlite3.Connection, profile: VoiceProfile) -> None:
    names = ", ".join(VOICE_PROFILE_FIELDS)
    marks = ", ".join(f":{name}" for name in VOICE_PROFILE_FIELDS)
    conn.execute(
        f"INSERT INTO voice_profiles ({names}) VALUES ({marks})", voice_profile_values(profile)
    )


def _delete(
    conn: sqlite3.Connection, owner_id: str, profile_id: str, replacement_id: str
) -> VoiceProfile | None:
    row = conn.execute(
        f"SELECT {_PROFILE} WHERE profile_id = ? AND owner_id = ?", (profile_id, owner_id)
    ).fetchone()
    if row is None:
        return None
    conn.execute("DELETE FROM voice_profiles WHERE profile_id = ?", (profile_id,))
    for table in ("agents", "sessions"):
        conn.execute(
            f"UPDATE {table} SET voice_id = ? WHERE owner_id = ? AND voice_id = ?",
            (replacement_id, owner_id, profile_id),
        )
    return voice_profile_of(row)


class VoicesMixin(SqliteBase):
    async def add_voice_profile(self, profile: VoiceProfile) -> None:
        await self._write(_insert, profile)

    async def get_voice_profile(self, profile_id: str) -> VoiceProfile | None:
        return self._one(f"SELECT {_PROFILE} WHERE profile_id = ?", (profile_id,), voice_profile_of)

    async def list_voice_profiles(self, owner_id: str) -> list[VoiceProfile]:
        return self._all(
            f"SELECT {_PROFILE} WHERE owner_id = ? ORDER BY created_ms DESC, profile_id DESC",
            (owner_id,),
            voice_profile_of,
        )

    async def delete_voice_profile(
        self, owner_id: str, profile_id: str, replacement_id: str
    ) -> VoiceProfile | None:
        profile = await self._write(_delete, owner_id, profile_id, replacement_id)
        if profile is not None:  # agents and sessions may have changed voice
            self._catalog_changes.touch()
            self._session_changes.touch()
        return profile
