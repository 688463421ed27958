"""Webhook signing secrets: /v1/webhooks/secret."""

from __future__ import annotations

from litestar import Controller, Request

from service.api.context import ctx_of, owner_of
from service.api.openapi import get, post
from service.api.responses import NO_STORE
from service.domain import webhook_signing as domain
from service.schemas.webhooks import WebhookSecret, WebhookSecretEnvelope


class WebhooksController(Controller):
    path = "/webhooks/secret"
    tags = ("webhooks",)
    response_headers = NO_STORE

    @get()
    async def get_webhook_secret(self, request: Request) -> WebhookSecretEnvelope:
        """The secret that signs this owner's webhooks (Standard Webhooks)."""
        secret = await domain.owner_secret(ctx_of(request), owner_of(request))
        return WebhookSecretEnvelope(WebhookSecret(secret))

    @post("/rotate", status_code=200)
    async def rotate_webhook_secret(self, request: Request) -> WebhookSecretEnvelope:
        """Replace the secret; deliveries from now on are signed with the new one."""
        secret = await domain.rotate_secret(ctx_of(request), owner_of(request))
        return WebhookSecretEnvelope(WebhookSecret(secret))
