"""Standard Webhooks signing: each owner's secret, the headers that sign a delivery, and the
check a receiver makes.

A secret is `whsec_` + base64 of 32 bytes. It is never stored: it derives from the service's
signing key, the owner id and a nonce the store keeps per owner, so rotating means storing a
new nonce. The signature is `v1,` + base64 of HMAC-SHA256 over "{id}.{timestamp}.{body}",
keyed with the secret's 32 bytes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping

from service.domain.context import Context

SECRET_PREFIX = "whsec_"
# What a receiver accepts between a delivery's timestamp and its own clock (the Standard
# Webhooks recommendation): an old delivery replayed later no longer verifies.
TOLERANCE_S = 300
# Keeps webhook secrets apart from anything else the signing key signs (file links).
_PURPOSE = b"webhook-secret\0"


def derive_secret(signing_key: bytes, owner_id: str, nonce: str | None) -> str:
    """The secret of `owner_id` at `nonce` (None: before the owner's first rotation)."""
    message = _PURPOSE + owner_id.encode() + b"\0" + (nonce or "").encode()
    digest = hmac.new(signing_key, message, hashlib.sha256).digest()
    return SECRET_PREFIX + base64.b64encode(digest).decode()


async def owner_secret(ctx: Context, owner_id: str) -> str:
    return derive_secret(ctx.signing_key, owner_id, await ctx.store.webhook_nonce(owner_id))


async def rotate_secret(ctx: Context, owner_id: str) -> str:
    """A new secret for `owner_id`; deliveries signed with the old one no longer verify."""
    nonce = secrets.token_urlsafe(16)
    await ctx.store.rotate_webhook_nonce(owner_id, nonce, ctx.clock.now_ms())
    return derive_secret(ctx.signing_key, owner_id, nonce)


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` value of one delivery."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signed_headers(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, msg_id, timestamp, body),
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now_s: float | None = None,
    tolerance_s: float = TOLERANCE_S,
) -> bool:
    """What a receiver checks: a `v1` signature among those in `webhook-signature` matches,
    and `webhook-timestamp` is within `tolerance_s` of now. `headers` has lower-case names
    (or is case-insensitive, as web frameworks' header mappings are)."""
    try:
        msg_id, timestamp = headers["webhook-id"], int(headers["webhook-timestamp"])
        offered = headers["webhook-signature"].split()
    except (KeyError, ValueError):
        return False
    now_s = time.time() if now_s is None else now_s
    if abs(now_s - timestamp) > tolerance_s:
        return False
    expected = signature(secret, msg_id, timestamp, body)
    return any(hmac.compare_digest(expected.encode(), sig.encode()) for sig in offered)
