"""Avatar generation: /v1/avatar/async_generate."""

from __future__ import annotations

from litestar import Controller, Request

from service.api.body import json_body, read_json
from service.api.context import ctx_of, owner_of, public_base
from service.api.idempotency import IdempotencyKeyHeader, idempotency
from service.api.openapi import error_responses, get, post
from service.domain import generation as domain
from service.domain.context import Context
from service.domain.generation_status import (
    GenerationState,
    cancel_generation,
    owned_generation,
)
from service.schemas.generation import (
    GenerationCreate,
    GenerationStatus,
    GenerationStatusEnvelope,
    GenerationWebhook,
)
from service.schemas.tasks import TaskSubmitted, TaskSubmittedEnvelope


def _request(ctx: Context, body: GenerationCreate, links_base: str) -> domain.GenerationRequest:
    webhook = body.webhook or GenerationWebhook()
    return domain.check_request(
        ctx,
        body.prompt,
        body.width or domain.DEFAULT_SIDE,
        body.height or domain.DEFAULT_SIDE,
        body.seed,
        webhook.url,
        webhook.auth_token,
        links_base,
    )


def _envelope(request: Request, state: GenerationState) -> GenerationStatusEnvelope:
    return GenerationStatusEnvelope(GenerationStatus.of(state, public_base(request)))


class GenerationController(Controller):
    path = "/avatar/async_generate"
    tags = ("avatar generation",)

    @post(
        operation_class=json_body(GenerationCreate),
        status_code=200,
        responses=error_responses(503),
    )
    async def generate_avatar(
        self, request: Request, idempotency_key: IdempotencyKeyHeader = None
    ) -> TaskSubmittedEnvelope:
        ctx, body = ctx_of(request), await read_json(request, GenerationCreate)
        base = public_base(request)
        generation = _request(ctx, body, base)
        key = idempotency(idempotency_key, domain.fingerprint(generation))
        task = await domain.submit_generation(ctx, owner_of(request), generation, key)
        return TaskSubmittedEnvelope(TaskSubmitted.of(task, base))

    @get("/{task_id:str}/status")
    async def get_generation_status(
        self, request: Request, task_id: str
    ) -> GenerationStatusEnvelope:
        state = await owned_generation(ctx_of(request), owner_of(request), task_id)
        return _envelope(request, state)

    @post("/{task_id:str}/cancel", status_code=200, responses=error_responses(409))
    async def cancel_generation(self, request: Request, task_id: str) -> GenerationStatusEnvelope:
        state = await cancel_generation(ctx_of(request), owner_of(request), task_id)
        return _envelope(request, state)
