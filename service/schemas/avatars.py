"""Avatar bodies (docs/api.md, "Avatars")."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from service.clock import format_ts
from service.domain import models
from service.schemas.common import Name, StrictBody, Timestamp

AvatarStatus = Literal["PENDING", "BUILDING", "READY", "ERROR"]


class Avatar(msgspec.Struct, kw_only=True):
    """`status` READY, or for an avatar built from a photo PENDING / BUILDING until READY or
    ERROR (with `error`, absent otherwise); `image_url` answers 404 until READY."""

    avatar_id: str
    name: str | None
    width: int
    height: int
    source: Literal["upload", "generated"]
    created_at: Timestamp
    image_url: str
    status: AvatarStatus
    error: str | msgspec.UnsetType = msgspec.UNSET

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
            status=avatar.status,  # type: ignore[arg-type]
            error=msgspec.UNSET if avatar.error is None else avatar.error,
        )


def image_url(avatar_id: str, base_url: str) -> str:
    """The public link of an avatar's PNG."""
    return f"{base_url}/avatars/{avatar_id}.png"


class AvatarBuildCreate(StrictBody):
    """AsyncBuildApiRequestBody: `image` the photo's bytes in base64 (PNG, JPEG or WebP)."""

    image: Annotated[str, msgspec.Meta(min_length=1)]
    name: Name


class AvatarBuildStarted(msgspec.Struct):
    avatar_id: str


class AvatarBuildEnvelope(msgspec.Struct):
    data: AvatarBuildStarted


class AvatarEnvelope(msgspec.Struct):
    data: Avatar


class AvatarPage(msgspec.Struct):
    items: list[Avatar]
    next_cursor: str | None


class AvatarPageEnvelope(msgspec.Struct):
    data: AvatarPage
