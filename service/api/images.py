"""Image generation: /v1/image/generate and /v1/image/async_generate (SPEC 14)."""

from __future__ import annotations

from litestar import Controller, Request, Router

from service.api.body import json_body, read_json
from service.api.context import ctx_of, owner_of, public_base
from service.api.idempotency import IdempotencyKeyHeader, idempotency
from service.api.openapi import error_responses, get, post
from service.api.speech import MAX_SPEECH_BODY
from service.domain import image_generation as domain
from service.domain import image_reads, image_tasks
from service.schemas.images import (
    GenerateOutput,
    GenerateOutputEnvelope,
    ImageCreate,
    ImageStatus,
    ImageStatusEnvelope,
    ImageTaskCreate,
)
from service.schemas.tasks import TaskSubmitted, TaskSubmittedEnvelope


class ImageController(Controller):
    path = "/image"
    tags = ("image generation",)

    @post(
        "/generate",
        operation_class=json_body(ImageCreate),
        status_code=200,
        responses=error_responses(502, 503, 504),
    )
    async def generate_image(self, request: Request) -> GenerateOutputEnvelope:
        ctx, body = ctx_of(request), await read_json(request, ImageCreate)
        drawing = await domain.check_request(
            ctx, body.prompt, body.aspect_ratio, body.labeled(), body.seed
        )
        jpeg = await domain.generate_now(ctx, owner_of(request), drawing)
        return GenerateOutputEnvelope(GenerateOutput.of(jpeg))

    @post(
        "/async_generate",
        operation_class=json_body(ImageTaskCreate),
        status_code=200,
        responses=error_responses(503),
    )
    async def generate_image_async(
        self, request: Request, idempotency_key: IdempotencyKeyHeader = None
    ) -> TaskSubmittedEnvelope:
        ctx, body = ctx_of(request), await read_json(request, ImageTaskCreate)
        base = public_base(request)
        drawing = await domain.check_request(
            ctx, body.prompt, body.aspect_ratio, body.labeled(), body.seed,
            body.webhook_fields(), base,
        )  # fmt: skip
        key = idempotency(idempotency_key, domain.fingerprint(drawing))
        task = await image_tasks.submit_image(ctx, owner_of(request), drawing, key)
        return TaskSubmittedEnvelope(TaskSubmitted.of(task, base))

    @get("/async_generate/{task_id:str}/status")
    async def get_image_generation_status(
        self, request: Request, task_id: str
    ) -> ImageStatusEnvelope:
        state = await image_reads.owned_image(ctx_of(request), owner_of(request), task_id)
        return ImageStatusEnvelope(ImageStatus.of(state, public_base(request)))

    @post("/async_generate/{task_id:str}/cancel", status_code=200, responses=error_responses(409))
    async def cancel_image_generation(self, request: Request, task_id: str) -> ImageStatusEnvelope:
        state = await image_reads.cancel_image(ctx_of(request), owner_of(request), task_id)
        return ImageStatusEnvelope(ImageStatus.of(state, public_base(request)))


def image_router() -> Router:
    """Five reference images of up to 10 MB fit in the media endpoints' 32 MiB (SPEC 14)."""
    return Router(path="/", route_handlers=[ImageController], request_max_body_size=MAX_SPEECH_BODY)
