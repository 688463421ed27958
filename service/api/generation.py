"""Avatar generation: /v1/avatar/async_generate."""

from __future__ import annotations

from litestar import Controller, Request

from service.api.body import json_body, read_json
from service.api.context import ctx_of, owner_of, public_base
from service.api.idempotency import IdempotencyKeyHeader, idempotency
from service.api.openapi import error_responses, get, post
from service.domain import generation as domain
from service.domain.kinds import task_kind
from service.domain.tasks import cancel, owned_task
from service.schemas.generation import (
    GenerationCreate,
    GenerationStatusEnvelope,
    generation_status,
)
from service.schemas.tasks import TaskSubmitted, TaskSubmittedEnvelope


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
        generation = body.request(ctx, base)
        key = idempotency(idempotency_key, domain.fingerprint(generation))
        task = await domain.submit_generation(ctx, owner_of(request), generation, key)
        return TaskSubmittedEnvelope(TaskSubmitted.of(task, base))

    @get("/{task_id:str}/status")
    async def get_generation_status(
        self, request: Request, task_id: str
    ) -> GenerationStatusEnvelope:
        ctx = ctx_of(request)
        task = await owned_task(ctx, owner_of(request), task_id, domain.KIND)
        return await generation_status(ctx, task, public_base(request))

    @post("/{task_id:str}/cancel", status_code=200, responses=error_responses(409))
    async def cancel_generation(self, request: Request, task_id: str) -> GenerationStatusEnvelope:
        ctx = ctx_of(request)
        task = await cancel(ctx, owner_of(request), task_id, task_kind(domain.KIND))
        return await generation_status(ctx, task, public_base(request))
