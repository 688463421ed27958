"""Video upscale: /v1/video/upscale (submit, status, list, cancel, delete) and the public,
signed /files/{task_id}/output.mp4."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from litestar import Controller, Request, Router, get, post
from litestar.params import Parameter
from litestar.types import ASGIApp

from service.api.blobs import BlobResponse
from service.api.context import ctx_of, owner_of, public_base
from service.api.idempotency import IdempotencyKeyHeader, checked_key
from service.api.openapi import error_responses
from service.api.params import Cursor, Limit
from service.api.upload import UploadForm, body_limit, multipart_body, receive_upload
from service.domain import tasks
from service.domain import upscale as domain
from service.domain.files import upload_key
from service.domain.ids import new_id
from service.domain.kinds import task_kind
from service.domain.models import Task
from service.domain.pagination import DEFAULT_LIMIT, page_request
from service.schemas.tasks import TaskSubmitted, TaskSubmittedEnvelope
from service.schemas.upscale import (
    UpscaleTaskEnvelope,
    UpscaleTaskPage,
    UpscaleTaskPageEnvelope,
    upscale_status,
    upscale_view,
)
from service.settings import Settings

Resolution = Annotated[
    str | None,
    Parameter(
        description="The box to fit: 1080p, 2k or 4k.", schema_extra={"enum": ["1080p", "2k", "4k"]}
    ),
]
_FORM = multipart_body(
    "file",
    "The video: MP4, H.264, 8-bit, SDR, within the input limits.",
    {
        "webhook_url": "https URL (at most 1,000 bytes) to POST the final status to.",
        "webhook_token": "Sent as `Authorization: Bearer <token>` with the webhook (<= 512 bytes).",
        "filter": "Resampling filter: lanczos3, bicubic, bilinear or detail (the learned filter "
        "for luma, Lanczos3 for chroma). Default: the server's AVATAR_FILTER.",
    },
)


class UpscaleController(Controller):
    tags = ("video upscale",)

    @post(
        status_code=200,
        operation_class=_FORM,
        responses=error_responses(415, 503),
        summary="Upload a video and queue its upscale",
    )
    async def submit_upscale(
        self,
        request: Request,
        resolution: Resolution = None,
        idempotency_key: IdempotencyKeyHeader = None,
    ) -> TaskSubmittedEnvelope:
        task = await _submit(request, resolution, idempotency_key)
        return TaskSubmittedEnvelope(TaskSubmitted.of(task, public_base(request)))

    @get()
    async def list_upscales(
        self, request: Request, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
    ) -> UpscaleTaskPageEnvelope:
        ctx, base = ctx_of(request), public_base(request)
        found, next_cursor = await tasks.list_tasks(
            ctx, owner_of(request), domain.KIND, page_request(limit, cursor)
        )
        views = [await upscale_view(ctx, task, base) for task in found]
        return UpscaleTaskPageEnvelope(UpscaleTaskPage(views, next_cursor))

    @get("/{task_id:str}", responses=error_responses(410))
    async def get_upscale(self, request: Request, task_id: str) -> UpscaleTaskEnvelope:
        ctx = ctx_of(request)
        task = await domain.readable_upscale(ctx, owner_of(request), task_id)
        return await upscale_status(ctx, task, public_base(request))

    @post("/{task_id:str}/cancel", status_code=200, responses=error_responses(409))
    async def cancel_upscale(self, request: Request, task_id: str) -> UpscaleTaskEnvelope:
        ctx = ctx_of(request)
        task = await tasks.cancel(ctx, owner_of(request), task_id, task_kind(domain.KIND))
        return await upscale_status(ctx, task, public_base(request))

    @post("/{task_id:str}/delete", status_code=200, responses=error_responses(409))
    async def delete_upscale(self, request: Request, task_id: str) -> UpscaleTaskEnvelope:
        ctx = ctx_of(request)
        task = await domain.delete_upscale_result(ctx, owner_of(request), task_id)
        return await upscale_status(ctx, task, public_base(request))


def upscale_router(settings: Settings) -> Router:
    """The upscale endpoints, whose bodies may be as large as AVATAR_MAX_UPLOAD_BYTES allows
    (plus the multipart framing)."""
    return Router(
        path="/video/upscale",
        route_handlers=[UpscaleController],
        request_max_body_size=body_limit(settings.max_upload_bytes),
    )


@get(
    domain.RESULT_PATH.replace("{task_id}", "{task_id:str}"),
    tags=["public"],
    summary="An upscaled video (signed link, no key)",
    responses=error_responses(403, 410, 416),
)
async def result_file(
    request: Request, task_id: str, expires: str | None = None, signature: str | None = None
) -> ASGIApp:
    """The result file a signed `file_url` names; `Range` and `HEAD` work."""
    ctx = ctx_of(request)
    key, size = await domain.result_file(ctx, task_id, expires, signature)
    headers = {
        "Content-Disposition": f'inline; filename="{task_id}.mp4"',
        "Cache-Control": "private",
    }
    return BlobResponse(ctx.files, key, size, "video/mp4", request.headers.get("range"), headers)


async def _submit(request: Request, resolution: str | None, idempotency_key: str | None) -> Task:
    """The submission's steps in their order: the resolution and the Idempotency-Key before
    the body is read, the webhook fields as soon as they can be judged, the upload, then the
    video's inspection and the queue."""
    ctx = ctx_of(request)
    domain.check_resolution(resolution)
    checked_key(idempotency_key)
    task_id = new_id("tsk")
    form = UploadForm(
        "file",
        "the video",
        (domain.WEBHOOK_URL, domain.WEBHOOK_TOKEN, domain.FILTER),
        ctx.settings.max_upload_bytes,
        digest=idempotency_key is not None,
    )

    def check_webhook_first(fields: Mapping[str, str]) -> None:
        # Refuse a bad webhook before the file is read when the URL came first.
        if domain.WEBHOOK_URL in fields:
            domain.check_form(ctx, resolution, fields, public_base(request))

    upload = await receive_upload(
        request, ctx.files, upload_key(task_id), form, check_webhook_first
    )
    return await domain.accept_upload(
        ctx,
        owner_of(request),
        task_id,
        resolution,
        upload.fields,
        upload.sha256,
        idempotency_key,
        public_base(request),
    )
