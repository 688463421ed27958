"""The hosted API's names and shapes for our own facts, in one place.

The hosted service's generated SDK and CLI read some fields under other names (a session's
`state` is our `status`) and a few answers in other shapes (an avatar with `themes`). Every such
name is computed here, from facts the service keeps anyway, when a response is built: nothing
is stored twice, and the domain never sees these names (docs/api.md, "Using the hosted
clients"). Our own views inherit the `Hosted...Names` structs, so both names travel together."""

from __future__ import annotations

from typing import Any

import msgspec

from service.clock import format_ts
from service.domain import models, session_reads
from service.domain.sessions import one_of
from service.schemas.avatars import AvatarStatus, image_url
from service.schemas.common import Timestamp

# The hosted types require a string name; ours is optional, and a deleted avatar has none.
_NO_NAME = ""


# Sessions


class SessionAvatar(msgspec.Struct):
    id: str
    name: str


class HostedSessionNames(msgspec.Struct, kw_only=True):
    """A session's facts under the hosted API's names (listed after ours)."""

    state: str  # = status
    start_time: Timestamp  # = created_at
    metis_model: str  # = model
    avatar: SessionAvatar  # = avatar_id, with the avatar's name
    user_id: str  # = the owner


def session_names(session: models.Session, status: str, avatar_name: str | None) -> dict:
    return {
        "state": status,
        "start_time": format_ts(session.created_ms),
        "metis_model": session.model,
        "avatar": SessionAvatar(session.avatar_id, avatar_name or _NO_NAME),
        "user_id": session.owner_id,
    }


class HostedStopNames(msgspec.Struct, kw_only=True):
    stopped_sessions: list[str]  # = stopped


def stop_names(outcome: dict[str, list[str]]) -> dict:
    return {"stopped_sessions": outcome["stopped"]}


class ProfileAvatar(msgspec.Struct):
    id: str
    name: str
    image: str  # the public PNG
    supported_interactive_models: list[str]


class SessionProfile(msgspec.Struct):
    """What a client other than the page needs to join a session."""

    session_id: str
    session_token: str
    avatar: ProfileAvatar

    @classmethod
    def of(cls, profile: session_reads.SessionProfile, base_url: str) -> SessionProfile:
        """`base_url` starts the image link: AVATAR_PUBLIC_URL, else the request's own."""
        session = profile.named.session
        avatar = ProfileAvatar(
            id=session.avatar_id,
            name=profile.named.avatar_name or _NO_NAME,
            image=image_url(session.avatar_id, base_url),
            supported_interactive_models=list(profile.models),
        )
        return cls(session.session_id, profile.session_token, avatar)


class SessionProfileEnvelope(msgspec.Struct):
    data: SessionProfile


# Avatars (the hosted paths /v1/avatar/...)


class AvatarTheme(msgspec.Struct):
    name: str
    key_image: str


class HostedAvatar(msgspec.Struct, kw_only=True):
    """An avatar in the hosted API's shape: its status (READY, or PENDING / BUILDING / ERROR
    while one built from a photo is not), and once READY one theme whose key image is its
    PNG (no theme before: there is no image yet)."""

    id: str
    user_id: str
    name: str
    created_at: Timestamp
    status: AvatarStatus
    supported_interactive_models: list[str]
    themes: list[AvatarTheme]
    error: str | msgspec.UnsetType = msgspec.UNSET  # why its build ended in ERROR

    @classmethod
    def of(
        cls, avatar: models.Avatar, known_models: tuple[str, ...], base_url: str
    ) -> HostedAvatar:
        return cls(
            id=avatar.avatar_id,
            user_id=avatar.owner_id,
            name=avatar.name or _NO_NAME,
            created_at=format_ts(avatar.created_ms),
            status=avatar.status,  # type: ignore[arg-type]
            supported_interactive_models=list(known_models),
            themes=[AvatarTheme("Default", image_url(avatar.avatar_id, base_url))]
            if avatar.status == "READY"
            else [],
            error=msgspec.UNSET if avatar.error is None else avatar.error,
        )


class HostedAvatarEnvelope(msgspec.Struct):
    data: HostedAvatar


class HostedAvatarListEnvelope(msgspec.Struct):
    data: list[HostedAvatar]


# Agents


class HostedAgentNames(msgspec.Struct, kw_only=True):
    """An agent's facts under the hosted API's names (listed after ours)."""

    id: str  # = agent_id
    user_id: str  # = the owner
    voice_profile_id: str | None  # = voice_id


def agent_names(agent: models.Agent) -> dict:
    return {"id": agent.agent_id, "user_id": agent.owner_id, "voice_profile_id": agent.voice_id}


def fold_voice(fields: dict[str, Any], missing: Any) -> dict[str, Any]:
    """Agent body fields with the hosted spelling `voice_profile_id` folded into `voice_id`
    (`missing` marks a field not given; two different values are refused)."""
    spellings = {"voice_id": fields["voice_id"], "voice_profile_id": fields["voice_profile_id"]}
    folded = {name: value for name, value in fields.items() if name != "voice_profile_id"}
    return folded | {"voice_id": one_of(spellings, missing)}
