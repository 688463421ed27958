"""Generated videos: /v1/video/async_generate_talking_avatar and
/v1/video/async_generate_avatar_motion (SPEC 14), their status and cancel calls. The results are
read through the signed /files/{task_id}/output.mp4 of `service.api.upscale`."""

from __future__ import annotations

from litestar import Controller, Request, Router

from service.api.body import json_body, read_json
from service.api.context import ctx_of, owner_of, public_base
from service.api.idempotency import IdempotencyKeyHeader, checked_key
from service.api.openapi import error_responses, get, post
from service.domain.talking import MOTION, TALKING
from service.domain.talking.inputs import VideoRequest, submit_video
from service.domain.talking.status import VideoState, cancel_video, readable_video
from service.schemas.talking import (
    MotionVideoCreate,
    TalkingVideoCreate,
    VideoStatus,
    VideoStatusEnvelope,
)
from service.schemas.tasks import TaskSubmitted, TaskSubmittedEnvelope

# Base64 media inside JSON (SPEC 14): a 10 MB image and 20 MB of audio in one body would be
# about 40 MB of base64; each alone fits, and the limit is the one SPEC 14 names.
MAX_VIDEO_BODY = 32 * 1024 * 1024
# 502: the text-to-speech backend failed.
_SUBMIT_ERRORS = error_responses(413, 502, 503)


async def _submitted(
    request: Request, video: VideoRequest, idempotency_key: str | None
) -> TaskSubmittedEnvelope:
    """Queue the video a create body asked for (either kind) and answer its task."""
    ctx, base = ctx_of(request), public_base(request)
    key = checked_key(idempotency_key)
    task = await submit_video(ctx, owner_of(request), video, key, base)
    return TaskSubmittedEnvelope(TaskSubmitted.of(task, base))


def _envelope(request: Request, state: VideoState) -> VideoStatusEnvelope:
    return VideoStatusEnvelope(VideoStatus.of(state, public_base(request)))


class TalkingVideoController(Controller):
    path = "/video/async_generate_talking_avatar"
    tags = ("generated video",)

    @post(operation_class=json_body(TalkingVideoCreate), status_code=200,
          responses=_SUBMIT_ERRORS)  # fmt: skip
    async def generate_talking_avatar(
        self, request: Request, idempotency_key: IdempotencyKeyHeader = None
    ) -> TaskSubmittedEnvelope:
        body = await read_json(request, TalkingVideoCreate)
        return await _submitted(request, body.request(), idempotency_key)

    @get("/{task_id:str}/status", responses=error_responses(410))
    async def get_talking_avatar_status(
        self, request: Request, task_id: str
    ) -> VideoStatusEnvelope:
        state = await readable_video(ctx_of(request), owner_of(request), task_id, TALKING)
        return _envelope(request, state)

    @post("/{task_id:str}/cancel", status_code=200, responses=error_responses(409))
    async def cancel_talking_avatar(self, request: Request, task_id: str) -> VideoStatusEnvelope:
        state = await cancel_video(ctx_of(request), owner_of(request), task_id, TALKING)
        return _envelope(request, state)


class MotionVideoController(Controller):
    path = "/video/async_generate_avatar_motion"
    tags = ("generated video",)

    @post(operation_class=json_body(MotionVideoCreate), status_code=200,
          responses=_SUBMIT_ERRORS)  # fmt: skip
    async def generate_avatar_motion(
        self, request: Request, idempotency_key: IdempotencyKeyHeader = None
    ) -> TaskSubmittedEnvelope:
        body = await read_json(request, MotionVideoCreate)
        return await _submitted(request, body.motion_request(), idempotency_key)

    @get("/{task_id:str}/status", responses=error_responses(410))
    async def get_avatar_motion_status(self, request: Request, task_id: str) -> VideoStatusEnvelope:
        state = await readable_video(ctx_of(request), owner_of(request), task_id, MOTION)
        return _envelope(request, state)

    @post("/{task_id:str}/cancel", status_code=200, responses=error_responses(409))
    async def cancel_avatar_motion(self, request: Request, task_id: str) -> VideoStatusEnvelope:
        state = await cancel_video(ctx_of(request), owner_of(request), task_id, MOTION)
        return _envelope(request, state)


def video_router() -> Router:
    return Router(
        path="/",
        route_handlers=[TalkingVideoController, MotionVideoController],
        request_max_body_size=MAX_VIDEO_BODY,
    )
