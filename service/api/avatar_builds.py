"""Avatars built from a photo: POST /v1/avatar/async_build (SPEC 14). The avatar it answers
with is read like any other (`/v1/avatar/{id}`, `/v1/avatars/{id}`), its `status` telling how
the build goes."""

from __future__ import annotations

from litestar import Controller, Request, Router

from service.api.body import json_body, read_json
from service.api.context import ctx_of, owner_of
from service.api.idempotency import IdempotencyKeyHeader, idempotency
from service.api.openapi import error_responses, post
from service.api.speech import MAX_SPEECH_BODY
from service.domain import avatar_builds as domain
from service.schemas.avatars import AvatarBuildCreate, AvatarBuildEnvelope, AvatarBuildStarted


class AvatarBuildController(Controller):
    path = "/avatar/async_build"
    tags = ("avatars",)

    @post(
        operation_class=json_body(AvatarBuildCreate),
        status_code=200,
        responses=error_responses(503),
    )
    async def build_avatar(
        self, request: Request, idempotency_key: IdempotencyKeyHeader = None
    ) -> AvatarBuildEnvelope:
        ctx, body = ctx_of(request), await read_json(request, AvatarBuildCreate)
        build = domain.check_request(body.image, body.name)
        key = idempotency(idempotency_key, domain.fingerprint(build))
        avatar_id = await domain.submit_build(ctx, owner_of(request), build, key)
        return AvatarBuildEnvelope(AvatarBuildStarted(avatar_id))


def avatar_build_router() -> Router:
    """A 10 MB photo in base64 fits in the media endpoints' 32 MiB (SPEC 14)."""
    return Router(
        path="/", route_handlers=[AvatarBuildController], request_max_body_size=MAX_SPEECH_BODY
    )
