"""Voice profile and clone task bodies (SPEC 14): the hosted API's shapes. The profile lists are
bare arrays in `data`; a premade profile has no `user_id`."""

from __future__ import annotations

from typing import Any

import msgspec

from service.clock import format_ts
from service.domain import voice_reads
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
    def of(cls, shown: voice_reads.ShownProfile, base_url: str) -> VoiceProfileView:
        profile = shown.profile
        return cls(
            id=profile.profile_id,
            name=profile.name,
            description=profile.description or "",
            languages=list(profile.languages),
            is_premade=profile.is_premade,
            sample_clip=base_url + shown.sample_link,
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


def profiles_view(profiles: list[voice_reads.ShownProfile], base_url: str) -> VoiceProfilesEnvelope:
    return VoiceProfilesEnvelope([VoiceProfileView.of(p, base_url) for p in profiles])


class CloneStatus(TaskView, kw_only=True):
    """Every task's fields, then the clone's own, as the hosted API names them: `profile_id`
    once COMPLETED, `meta_data` (what was measured of the samples), `error` as a string."""

    name: str
    profile_id: str | msgspec.UnsetType = msgspec.UNSET
    meta_data: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET
    error: str | msgspec.UnsetType = msgspec.UNSET
    error_code: str | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(cls, state: voice_reads.CloneState, base_url: str) -> CloneStatus:
        """The status response of a clone task (also its webhook's body)."""
        task, unset = state.task, msgspec.UNSET
        result, error = task.result or {}, error_view(task)
        return cls(
            **task_view_fields(task, base_url, state.queue_position),
            name=task.params["name"],
            profile_id=result.get("profile_id", unset),
            meta_data=result.get("meta_data", unset),
            error=unset if error is unset else error.message,
            error_code=unset if error is unset else error.code,
        )


class CloneStatusEnvelope(msgspec.Struct):
    data: CloneStatus
