"""Webhook bodies (the owner's signing secret)."""

from __future__ import annotations

import msgspec


class WebhookSecret(msgspec.Struct):
    secret: str  # whsec_ + base64 of 32 bytes; verifies the webhook-signature of deliveries


class WebhookSecretEnvelope(msgspec.Struct):
    data: WebhookSecret
