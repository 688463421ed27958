"""Voice profile and clone task bodies (SPEC 14): the hosted API's shapes. The profile lists are
bare arrays in `data`; a premade profile has no `user_id`."""

from __future__ import annotations

from typing import Any

import msgspec

from service.clock import format_ts
from service.domain import voices
from service.domain.clone_status import CloneState
from service.schemas.tasks import TaskView, error_view, task_view_fields


class VoiceProfileView(msgspec.Struct, kw_only=True):
    id: str
    name: str
    description: str
    languages: list[str]
    is_premade: bool
    sample_clip: str  # a signed link, readable without an API key until AVATAR_URL_TTL_S
    status: str
    created_at: str
    user_id: str | msgspec.UnsetType = msgspec.UNSET  # an owner's profile only

    @classmethod
    def of(cls, profile: voices.Profile, sample_link: str, base_url: str) -> VoiceProfileView:
        """The view of `profile`, its sample clip at `sample_link` (a signed path) under
        `base_url`."""
        return cls(
            id=profile.profile_id,
            name=profile.name,
            description=profile.description or "",
            languages=list(profile.languages),
            is_premade=profile.is_premade,
            sample_clip=base_url + sample_link,
            status=profile.status,
            created_at=format_ts(profile.created_ms),
            user_id=msgspec.UNSET if profile.owner_id is None else profile.owner_id,
        )


class VoiceProfileEnvelope(msgspec.Struct):
    data: VoiceProfileView


class VoiceProfilesEnvelope(msgspec.Struct):
    data: list[VoiceProfileView]


class Nothing(msgspec.Struct):
    """`{}`: the answer of a deletion."""


class NothingEnvelope(msgspec.Struct):
    data: Nothing


def profiles_view(shown: list[tuple[voices.Profile, str]], base_url: str) -> VoiceProfilesEnvelope:
    """The list of (profile, its sample link) pairs."""
    return VoiceProfilesEnvelope([VoiceProfileView.of(p, link, base_url) for p, link in shown])


class CloneStatus(TaskView, kw_only=True):
    """Every task's fields, then the clone's own, as the hosted API names them: `profile_id`
    once COMPLETED, `meta_data` (what was measured of the samples), `error` as a string."""

    name: str
    profile_id: str | msgspec.UnsetType = msgspec.UNSET
    meta_data: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    error: str | msgspec.UnsetType = msgspec.UNSET
    error_code: str | msgspec.UnsetType = msgspec.UNSET


class CloneStatusEnvelope(msgspec.Struct):
    data: CloneStatus


def clone_status(state: CloneState, base_url: str) -> CloneStatusEnvelope:
    """The status response of a clone task (also its webhook's body)."""
    task = state.task
    result, unset = task.result or {}, msgspec.UNSET
    error = error_view(task)
    view = CloneStatus(
        **task_view_fields(task, base_url, state.queue_position),
        name=task.params["name"],
        profile_id=result.get("profile_id", unset),
        meta_data=result.get("meta_data", unset),
        error=unset if error is unset else error.message,
        error_code=unset if error is unset else error.code,
    )
    return CloneStatusEnvelope(view)
