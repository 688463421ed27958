"""The hosted API's response types, to read our answers the way its own clients do.

Mirrored by hand from the hosted SDK's OpenAPI document (its Go types are generated from it)
and, for agents and routes (newer than that document), from the fields its CLI reads:

- a field the SDK requires is required here; an optional one may be absent or null (Go decodes
  both to nil). Where the CLI dereferences an optional field without a check (a nil would crash
  it), the field is required here, and says so;
- an array is a `list`; the SDK marks most arrays nullable, but we always send one;
- timestamps must be RFC 3339 with a zone (`Rfc3339`), as Go's `time.Time` demands;
- unknown fields are ignored, as the clients ignore them.

`check_route` makes the lifecycle checks the CLI makes on every route it reads."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


class Rfc3339(datetime):
    """A time sent as RFC 3339 with a zone (msgspec alone would also take a space for the `T`,
    which Go refuses)."""


def _decode_custom(type_: type, value: Any) -> Any:
    if type_ is Rfc3339:
        if not isinstance(value, str) or not _RFC3339.fullmatch(value):
            raise ValueError(f"not an RFC 3339 time with a zone: {value!r}")
        return Rfc3339.fromisoformat(value)  # also refuses impossible dates
    raise NotImplementedError(type_)


Timestamp = Rfc3339
TaskStatus = Literal["IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELED", "TIMED_OUT"]


class Hosted(msgspec.Struct, kw_only=True):
    """Base of the hosted types: keyword fields, so required and optional ones mix freely."""


# Interactive sessions


class MetisSessionAvatar(Hosted):
    id: str | UnsetType | None = UNSET
    name: str | UnsetType | None = UNSET


class MetisSession(Hosted):
    avatar: MetisSessionAvatar
    start_time: Timestamp
    # Optional in the SDK; the CLI's `interactive start` dereferences both unchecked.
    session_id: str
    metis_model: str
    idle_timeout: int | UnsetType | None = UNSET
    state: str | UnsetType | None = UNSET
    user_id: str | UnsetType | None = UNSET


class StartSessionOutput(Hosted):
    session: MetisSession
    session_token: str


class StartSessionApiResponseBody(Hosted):
    data: StartSessionOutput  # optional in the SDK; the CLI fails without it


class ListSessionsApiResponseBody(Hosted):
    data: list[MetisSession]


class StopSessionOutput(Hosted):
    stopped_sessions: list[str]


class StopSessionsApiResponseBody(Hosted):
    data: StopSessionOutput


class PresignedAvatarSystemProfile(Hosted):
    id: str
    name: str
    image: str | UnsetType | None = UNSET
    liveportrait: list[str] | UnsetType | None = UNSET


class MetisSessionProfile(Hosted):
    session_id: str
    session_token: str
    avatar: PresignedAvatarSystemProfile


class GetSessionProfileApiResponseBody(Hosted):
    data: MetisSessionProfile


# Avatars


class PresignedAvatarTheme(Hosted):
    name: str
    key_image: str | UnsetType | None = UNSET
    live_video: str | UnsetType | None = UNSET


class AvatarResponse(Hosted):
    id: str
    user_id: str
    name: str
    created_at: Timestamp
    status: Literal["PENDING", "BUILDING", "READY", "ERROR"]
    themes: list[PresignedAvatarTheme] | None
    supported_interactive_models: list[str] | UnsetType | None = UNSET  # the CLI shows it


class AsyncBuildOutput(Hosted):
    avatar_id: str


class AsyncBuildApiResponseBody(Hosted):
    data: AsyncBuildOutput


class GetUserAvatarListApiResponseBody(Hosted):
    data: list[AvatarResponse]


class GetAvatarApiResponseBody(Hosted):
    data: AvatarResponse


# Agents and routes


class AgentResponse(Hosted):
    id: str
    user_id: str
    name: str
    avatar_id: str
    voice_profile_id: str
    model: str
    runtime_kind: str
    has_custom_agent_bearer_token: bool
    created_at: Timestamp
    updated_at: Timestamp
    description: str | UnsetType | None = UNSET
    instruction: str | UnsetType | None = UNSET
    tools: list[Any] | UnsetType | None = UNSET
    custom_agent_url: str | UnsetType | None = UNSET
    custom_agent_protocol: str | UnsetType | None = UNSET


class AgentApiResponseBody(Hosted):
    data: AgentResponse


class AgentRouteResponse(Hosted):
    id: str
    agent_id: str
    path: str
    status: Literal["active", "expired", "revoked"]
    route_version: int
    created_at: Timestamp
    updated_at: Timestamp
    label: str | UnsetType | None = UNSET
    expires_at: Timestamp | UnsetType | None = UNSET
    revoked_at: Timestamp | UnsetType | None = UNSET
    url: str | UnsetType | None = UNSET


class AgentRouteApiResponseBody(Hosted):
    """The answer to a route's create, get and revoke."""

    data: AgentRouteResponse


class RoutePage(Hosted):
    items: list[AgentRouteResponse]
    next_cursor: str | None


class RouteListApiResponseBody(Hosted):
    """Our route list: a page of hosted routes (the hosted list is a bare array; see
    docs/api.md, "Using the hosted clients")."""

    data: RoutePage


# Tasks


class AsyncTaskStatus(Hosted):
    task_id: str
    status: TaskStatus


class AsyncTaskApiResponseBody(Hosted):
    """The answer to a task submission."""

    data: AsyncTaskStatus


class GenerateAvatarTaskOutput(Hosted):
    task_id: str
    status: TaskStatus
    image: str | UnsetType | None = UNSET


class GenerateAvatarStatusApiResponseBody(Hosted):
    data: GenerateAvatarTaskOutput


class GenerateOutput(Hosted):
    image: str | UnsetType | None = UNSET  # base64 JPEG


class GenerateImageApiResponseBody(Hosted):
    data: GenerateOutput


class GenerateTaskOutput(Hosted):
    task_id: str
    status: TaskStatus
    image: str | UnsetType | None = UNSET


class GenerateImageStatusApiResponseBody(Hosted):
    data: GenerateTaskOutput


class UpscaleOutput(Hosted):
    """Where the hosted clients read an upscale's result (it has no SDK type of its own)."""

    file_url: str
    readable_until: Timestamp


class UpscaleResult(Hosted):
    output: UpscaleOutput


class UpscaleTaskOutput(Hosted):
    task_id: str
    status: TaskStatus
    status_url: str
    completed_at: Timestamp | None
    result: UpscaleResult | UnsetType = UNSET


class UpscaleStatusApiResponseBody(Hosted):
    data: UpscaleTaskOutput


# Voice and speech (SPEC 14)


class PresignedVoiceProfile(Hosted):
    id: str
    created_at: Timestamp | UnsetType | None = UNSET
    description: str | UnsetType | None = UNSET
    is_premade: bool | UnsetType | None = UNSET
    languages: list[str] | UnsetType | None = UNSET
    name: str | UnsetType | None = UNSET
    sample_clip: str | UnsetType | None = UNSET
    status: str | UnsetType | None = UNSET
    user_id: str | UnsetType | None = UNSET


class GetPremadeProfilesApiResponseBody(Hosted):
    data: list[PresignedVoiceProfile] | None


class GetVoiceProfilesApiResponseBody(Hosted):
    data: list[PresignedVoiceProfile] | None


class GetVoiceProfileApiResponseBody(Hosted):
    data: PresignedVoiceProfile


class DataStruct(Hosted, forbid_unknown_fields=True):
    """The SDK's empty object (additionalProperties: false)."""


class DeleteVoiceProfileApiResponseBody(Hosted):
    data: DataStruct


class AsyncFinetuningApiResponseBody(Hosted):
    data: AsyncTaskStatus | UnsetType = UNSET


class FinetuningTaskOutput(Hosted):
    status: TaskStatus
    error: str | UnsetType | None = UNSET
    meta_data: dict[str, Any] | UnsetType | None = UNSET
    profile_id: str | UnsetType | None = UNSET


class FinetuningStatusApiResponseBody(Hosted):
    data: FinetuningTaskOutput | UnsetType = UNSET


class TTSOutput(Hosted):
    id: str
    voice_profile_id: str
    b64_audio_str: str | UnsetType | None = UNSET
    file_url: str | UnsetType | None = UNSET
    output_duration: float | UnsetType | None = UNSET


class TTSApiResponseBody(Hosted):
    data: TTSOutput | UnsetType = UNSET


class STTOutput(Hosted):
    id: str
    text: str
    transcription: list[Any] | None
    input_duration: float | UnsetType | None = UNSET


class STTApiResponseBody(Hosted):
    data: STTOutput | UnsetType = UNSET


# Generated videos (SPEC 14): both kinds answer the same shapes.


class AsyncGenerateTalkingAvatarApiResponseBody(Hosted):
    data: AsyncTaskStatus | UnsetType = UNSET


class GenerateTalkingAvatarTaskOutput(Hosted):
    task_id: str
    status: TaskStatus
    error: str | UnsetType | None = UNSET
    file_url: str | UnsetType | None = UNSET
    output_duration: float | UnsetType | None = UNSET


class GenerateTalkingAvatarStatusApiResponseBody(Hosted):
    data: GenerateTalkingAvatarTaskOutput | UnsetType = UNSET


AsyncGenerateAvatarMotionApiResponseBody = AsyncGenerateTalkingAvatarApiResponseBody
GenerateAvatarMotionStatusApiResponseBody = GenerateTalkingAvatarStatusApiResponseBody


T = TypeVar("T")


def read(response, hosted_type: type[T], status: int = 200) -> T:
    """The answer decoded as the hosted clients decode it (they accept only `status`)."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    return msgspec.json.decode(response.content, type=hosted_type, dec_hook=_decode_custom)


def is_unset(value: object) -> bool:
    """Absent or null: what Go reads as a nil pointer."""
    return value is UNSET or value is None


def check_route(route: AgentRouteResponse) -> None:
    """The lifecycle invariants the hosted CLI checks on every route it reads."""
    assert route.id.strip() and route.agent_id.strip() and route.path.strip()
    assert route.route_version >= 1
    assert route.updated_at >= route.created_at
    if not is_unset(route.expires_at):
        assert route.expires_at >= route.created_at
    if not is_unset(route.revoked_at):
        assert route.created_at <= route.revoked_at <= route.updated_at
    revoked = not is_unset(route.revoked_at)
    if route.status == "active":
        assert not revoked
    elif route.status == "expired":
        assert not is_unset(route.expires_at) and not revoked
    else:
        assert revoked


def check_created_route(route: AgentRouteResponse, agent_id: str, temporary: bool) -> None:
    """What the CLI checks on a route it has just created."""
    assert route.agent_id == agent_id
    assert route.status == "active" and is_unset(route.revoked_at)
    assert is_unset(route.expires_at) != temporary
    check_route(route)
