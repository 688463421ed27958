"""Generated-video bodies (SPEC 14, the hosted API's shapes): the submissions of a talking-avatar
and an avatar motion video, and their status view (the answer to a status call, and the body of
the task's webhook), made from what `service.domain.talking.status` reads."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated

import msgspec

from service.domain.errors import ValidationFailed
from service.domain.talking import MOTION, TALKING
from service.domain.talking.inputs import MAX_PROMPT, MAX_TEXT, VideoRequest
from service.domain.talking.status import VideoState
from service.schemas.common import StrictBody
from service.schemas.generation import GenerationWebhook
from service.schemas.tasks import TaskView, error_view, task_view_fields
from service.schemas.upscale import absolute_link

Prompt = Annotated[str, msgspec.Meta(max_length=MAX_PROMPT)]
Text = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


def _decoded(field: str, value: str | None) -> bytes | None:
    if value is None:
        return None
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationFailed.field(field, "must be base64 (the file's bytes)") from None
    if not data:
        raise ValidationFailed.field(field, "is empty")
    return data


class TalkingVideoCreate(StrictBody):
    """`image` (base64 PNG, JPEG or WebP) or `avatar_id`; `audio` (base64, any common format)
    or `text` with `voice_profile_id`."""

    image: str | None = None
    avatar_id: Id | None = None
    audio: str | None = None
    text: Text | None = None
    voice_profile_id: Id | None = None
    webhook: GenerationWebhook | None = None

    def request(self, kind: str = TALKING, positive: str = "", negative: str = "") -> VideoRequest:
        webhook = self.webhook or GenerationWebhook()
        return VideoRequest(
            kind=kind,
            image=_decoded("image", self.image),
            avatar_id=self.avatar_id,
            audio=_decoded("audio", self.audio),
            text=self.text,
            voice_profile_id=self.voice_profile_id,
            webhook_url=webhook.url,
            webhook_token=webhook.auth_token,
            positive_prompt=positive,
            negative_prompt=negative,
        )


class MotionVideoCreate(TalkingVideoCreate):
    """A talking-avatar request with prompts choosing its motions (docs/api.md)."""

    positive_prompt: Prompt = ""
    negative_prompt: Prompt = ""

    def motion_request(self) -> VideoRequest:
        return self.request(MOTION, self.positive_prompt, self.negative_prompt)


class VideoStatus(TaskView, kw_only=True):
    """Every task's fields, then the hosted API's: `file_url` and `output_duration` once
    COMPLETED (while the result is readable), `error` as a string when it failed."""

    file_url: str | msgspec.UnsetType = msgspec.UNSET
    output_duration: float | msgspec.UnsetType = msgspec.UNSET
    width: int | msgspec.UnsetType = msgspec.UNSET
    height: int | msgspec.UnsetType = msgspec.UNSET
    error: str | msgspec.UnsetType = msgspec.UNSET
    error_code: str | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(cls, state: VideoState, base_url: str) -> VideoStatus:
        task, link, unset = state.task, state.result_link, msgspec.UNSET
        result = (task.result or {}) if link is not None else {}
        error = error_view(task)
        return cls(
            **task_view_fields(task, base_url, state.queue_position),
            file_url=unset if link is None else absolute_link(base_url, link),
            output_duration=result.get("output_duration", unset),
            width=result.get("width", unset),
            height=result.get("height", unset),
            error=unset if error is unset else error.message,
            error_code=unset if error is unset else error.code,
        )


class VideoStatusEnvelope(msgspec.Struct):
    data: VideoStatus
