"""Video upscale: /v1/video/upscale (submit, status, list, cancel, delete) and the public,
signed /files/{task_id}/output.mp4."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Request, Router
from litestar.types import ASGIApp

from service.api.blobs import signed_file
from service.api.context import ctx_of, owner_of, public_base
from service.api.idempotency import IdempotencyKeyHeader, checked_key
from service.api.openapi import error_responses, file_download, get, post
from service.api.params import Cursor, Expires, Limit, RangeHeader, Signature, text
from service.api.upload import UploadForm, body_limit, multipart_body, receive_upload
from service.domain.pagination import DEFAULT_LIMIT, page_request
from service.domain.upscale import results, status
from service.domain.upscale.checks import FILTER, RESOLUTIONS, WEBHOOK_TOKEN, WEBHOOK_URL
from service.domain.upscale.status import UpscaleState
from service.domain.upscale.submission import begin_upscale
from service.schemas.tasks import TaskSubmitted, TaskSubmittedEnvelope
from service.schemas.upscale import (
    UpscaleTask,
    UpscaleTaskEnvelope,
    UpscaleTaskPage,
    UpscaleTaskPageEnvelope,
)
from service.settings import Settings

Resolution = Annotated[
    str | None, text("The box to fit the video in.", required=True, enum=RESOLUTIONS)
]
# Both are required to read the file; a link without them is answered 403 like a forged one.
_FORM = multipart_body(
    "file",
    "The video: MP4, H.264, 8-bit, SDR, within the input limits.",
    {
        WEBHOOK_URL: "https URL (at most 1,000 bytes) to POST the final status to.",
        WEBHOOK_TOKEN: "Sent as `Authorization: Bearer <token>` with the webhook (<= 512 bytes).",
        FILTER: "Resampling filter: lanczos3, bicubic, bilinear or detail (the learned filter "
        "for luma, Lanczos3 for chroma). Default: the server's AVATAR_FILTER.",
    },
)


def _envelope(request: Request, state: UpscaleState) -> UpscaleTaskEnvelope:
    return UpscaleTaskEnvelope(UpscaleTask.of(state, public_base(request)))


class UpscaleController(Controller):
    tags = ("video upscale",)

    @post(
        status_code=200,
        operation_class=_FORM,
        responses=error_responses(415, 503, 507),
        summary="Upload a video and queue its upscale",
    )
    async def submit_upscale(
        self,
        request: Request,
        resolution: Resolution = None,
        idempotency_key: IdempotencyKeyHeader = None,
    ) -> TaskSubmittedEnvelope:
        """The resolution and the Idempotency-Key are checked before the body is read, the
        webhook as soon as it can be judged, then the video while it streams in."""
        ctx, base = ctx_of(request), public_base(request)
        submission = begin_upscale(ctx, owner_of(request), resolution, base)
        key = checked_key(idempotency_key)
        form = UploadForm(
            "file",
            "the video",
            (WEBHOOK_URL, WEBHOOK_TOKEN, FILTER),
            ctx.settings.max_upload_bytes,
            digest=key is not None,
        )
        upload = await receive_upload(
            request, ctx.files, submission.upload_key, form, submission.file_starts
        )
        task = await submission.accept(upload.fields, upload.sha256, key)
        return TaskSubmittedEnvelope(TaskSubmitted.of(task, base))

    @get()
    async def list_upscales(
        self, request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
    ) -> UpscaleTaskPageEnvelope:
        states, next_cursor = await status.list_upscales(
            ctx_of(request), owner_of(request), page_request(limit, cursor)
        )
        views = [UpscaleTask.of(state, public_base(request)) for state in states]
        return UpscaleTaskPageEnvelope(UpscaleTaskPage(views, next_cursor))

    @get("/{task_id:str}", responses=error_responses(410))
    async def get_upscale(self, request: Request, task_id: str) -> UpscaleTaskEnvelope:
        state = await status.readable_upscale(ctx_of(request), owner_of(request), task_id)
        return _envelope(request, state)

    @post("/{task_id:str}/cancel", status_code=200, responses=error_responses(409))
    async def cancel_upscale(self, request: Request, task_id: str) -> UpscaleTaskEnvelope:
        state = await status.cancel_upscale(ctx_of(request), owner_of(request), task_id)
        return _envelope(request, state)

    @post("/{task_id:str}/delete", status_code=200, responses=error_responses(409))
    async def delete_upscale(self, request: Request, task_id: str) -> UpscaleTaskEnvelope:
        state = await status.delete_upscale_result(ctx_of(request), owner_of(request), task_id)
        return _envelope(request, state)


def upscale_router(settings: Settings) -> Router:
    """The upscale endpoints, whose bodies may be as large as AVATAR_MAX_UPLOAD_BYTES allows
    (plus the multipart framing)."""
    return Router(
        path="/video/upscale",
        route_handlers=[UpscaleController],
        request_max_body_size=body_limit(settings.max_upload_bytes),
    )


@get(
    results.RESULT_PATH.replace("{task_id}", "{task_id:str}"),
    tags=["public"],
    summary="An upscaled video (signed link, no key)",
    operation_class=file_download("video/mp4"),
    responses=error_responses(403, 410, 416),
)
async def result_file(
    request: Request,
    task_id: str,
    expires: Expires = None,
    signature: Signature = None,
    byte_range: RangeHeader = None,
) -> ASGIApp:
    """The result file a signed `file_url` names; `Range` and `HEAD` work."""
    ctx = ctx_of(request)
    key, size = await results.result_file(ctx, task_id, expires, signature)
    return signed_file(ctx.files, key, size, "video/mp4", f"{task_id}.mp4", byte_range)
