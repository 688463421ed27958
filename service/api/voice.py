"""Voice profiles and the clone task: /v1/voice/... (SPEC 14), and the profiles' sample clips
(signed links, no API key)."""

from __future__ import annotations

from litestar import Controller, Request, Response, Router

from engine import wav_bytes
from service.api.clone_upload import BODY_LIMIT, receive_clone_form
from service.api.context import ctx_of, owner_of, public_base
from service.api.idempotency import IdempotencyKeyHeader, checked_key
from service.api.openapi import delete, error_responses, file_download, get, post
from service.api.upload import multipart_body
from service.domain import cloning, voices
from service.domain.clone_status import cancel_clone, owned_clone
from service.domain.context import Context
from service.domain.ids import new_id
from service.schemas.tasks import TaskSubmitted, TaskSubmittedEnvelope
from service.schemas.voice import (
    CloneStatusEnvelope,
    Nothing,
    NothingEnvelope,
    VoiceProfileEnvelope,
    VoiceProfilesEnvelope,
    VoiceProfileView,
    clone_status,
    profiles_view,
)

_CLONE_FORM = multipart_body(
    cloning.SAMPLES,
    "6 to 20 audio files (any common format, each <= 10 MB and <= 60 s); repeat the part",
    {
        cloning.ANNOTATIONS: "a file of `file name|text` lines, one per sample",
        "name": "3 to 64 characters (default: Matched voice)",
        "description": "at most 512 characters",
        "clean_data": "accepted for compatibility; samples are measured as they are",
        "webhook": "URL told when the task ends",
        "webhook_auth": "token sent with the webhook",
    },
    repeated=True,
)


class VoiceController(Controller):
    path = "/voice"
    tags = ("voice",)

    @get("/premade_profiles")
    async def list_premade_profiles(self, request: Request) -> VoiceProfilesEnvelope:
        ctx = ctx_of(request)
        return profiles_view(_with_links(ctx, voices.premade_profiles(ctx)), public_base(request))

    @get("/profiles")
    async def list_voice_profiles(self, request: Request) -> VoiceProfilesEnvelope:
        ctx = ctx_of(request)
        profiles = await voices.owned_profiles(ctx, owner_of(request))
        return profiles_view(_with_links(ctx, profiles), public_base(request))

    @get("/profiles/{profile_id:str}")
    async def get_voice_profile(self, request: Request, profile_id: str) -> VoiceProfileEnvelope:
        ctx = ctx_of(request)
        profile = await voices.get_profile(ctx, owner_of(request), profile_id)
        link = voices.sample_link(ctx, profile)
        return VoiceProfileEnvelope(VoiceProfileView.of(profile, link, public_base(request)))

    @delete("/profiles/{profile_id:str}", status_code=200, responses=error_responses(403))
    async def delete_voice_profile(self, request: Request, profile_id: str) -> NothingEnvelope:
        await voices.delete_profile(ctx_of(request), owner_of(request), profile_id)
        return NothingEnvelope(Nothing())

    @post("/clone", operation_class=_CLONE_FORM, status_code=200, responses=error_responses(503))
    async def clone_voice(
        self, request: Request, idempotency_key: IdempotencyKeyHeader = None
    ) -> TaskSubmittedEnvelope:
        ctx, base = ctx_of(request), public_base(request)
        checked_key(idempotency_key)
        task_id = new_id("tsk")
        form = await receive_clone_form(request, ctx.files, task_id)
        task = await cloning.accept_clone(
            ctx, owner_of(request), task_id, form.samples, form.annotations, form.fields,
            idempotency_key, base,
        )  # fmt: skip
        return TaskSubmittedEnvelope(TaskSubmitted.of(task, base))

    @get("/clone/{task_id:str}/status")
    async def get_clone_status(self, request: Request, task_id: str) -> CloneStatusEnvelope:
        state = await owned_clone(ctx_of(request), owner_of(request), task_id)
        return clone_status(state, public_base(request))

    @post("/clone/{task_id:str}/cancel", status_code=200, responses=error_responses(409))
    async def cancel_clone(self, request: Request, task_id: str) -> CloneStatusEnvelope:
        state = await cancel_clone(ctx_of(request), owner_of(request), task_id)
        return clone_status(state, public_base(request))


def _with_links(ctx: Context, profiles: list[voices.Profile]) -> list[tuple[voices.Profile, str]]:
    return [(profile, voices.sample_link(ctx, profile)) for profile in profiles]


def voice_router() -> Router:
    """The voice endpoints; the clone form may hold 20 samples of 10 MB."""
    return Router(path="/", route_handlers=[VoiceController], request_max_body_size=BODY_LIMIT)


@get(
    voices.SAMPLE_PATH.replace("{profile_id}", "{profile_id:str}"),
    tags=["public"],
    summary="A voice profile's sample clip (signed link, no key)",
    operation_class=file_download("audio/wav", ranges=False),
    responses=error_responses(403),
)
async def voice_sample(
    request: Request, profile_id: str, expires: str | None = None, signature: str | None = None
) -> Response[bytes]:
    pcm, rate = await voices.sample_clip(ctx_of(request), profile_id, expires, signature)
    headers = {"Cache-Control": "private, max-age=300"}
    return Response(wav_bytes(pcm, rate), media_type="audio/wav", headers=headers)
