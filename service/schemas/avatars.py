"""Avatar bodies (docs/api.md, "Avatars")."""

from __future__ import annotations

from typing import Literal

import msgspec

from service.clock import format_ts
from service.domain import models
from service.schemas.common import Timestamp


class Avatar(msgspec.Struct):
    avatar_id: str
    name: str | None
    width: int
    height: int
    source: Literal["upload", "generated"]
    created_at: Timestamp
    image_url: str

    @classmethod
    def of(cls, avatar: models.Avatar, base_url: str) -> Avatar:
        return cls(
            avatar_id=avatar.avatar_id,
            name=avatar.name,
            width=avatar.width,
            height=avatar.height,
            source=avatar.source,
            created_at=format_ts(avatar.created_ms),
            image_url=image_url(avatar.avatar_id, base_url),
        )


def image_url(avatar_id: str, base_url: str) -> str:
    """The public link of an avatar's PNG."""
    return f"{base_url}/avatars/{avatar_id}.png"


class AvatarEnvelope(msgspec.Struct):
    data: Avatar


class AvatarPage(msgspec.Struct):
    items: list[Avatar]
    next_cursor: str | None


class AvatarPageEnvelope(msgspec.Struct):
    data: AvatarPage
