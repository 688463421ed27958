"""Image generation (SPEC 14): a picture drawn from a prompt (and up to five reference images)
by the operator's OpenAI-compatible images backend, answered as a base64 JPEG, either at once
(`generate_now`, within SYNC_LIMIT_S) or as a task (`submit_image`, the kind `ImageGeneration`).

No model that draws from a prompt runs on this machine: without AVATAR_IMAGE_BASE_URL both
calls answer NOT_CONFIGURED at once, never a made-up picture. What the backend answers is
decoded and re-encoded here, so the service only ever hands out a JPEG it made itself."""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import time
from dataclasses import dataclass

from service.domain.context import Context
from service.domain.drawing import ImageBackend, ImageFailed, Reference
from service.domain.errors import (
    NotConfigured,
    ServiceError,
    UpstreamError,
    UpstreamTimeout,
    ValidationFailed,
)
from service.domain.ids import new_id
from service.domain.images import MEDIA_FORMATS, decode_image, encode_jpeg, encode_png
from service.domain.models import UsageRecord, WebhookTarget
from service.domain.webhooks import check_target

KIND = "image_generation"
USAGE_KIND = "image"
MAX_PROMPT = 4000
MAX_REFERENCES = 5
MAX_LABEL = 100
MAX_SEED = 2**31 - 1  # the hosted API's int32
# The synchronous call gives up after this long (504 UPSTREAM_TIMEOUT); a task has
# AVATAR_TASK_TIMEOUT_S.
SYNC_LIMIT_S = 60.0
# aspect_ratio -> the backend's `size` (docs/api.md holds the same table): about one
# megapixel, both sides multiples of 64, as diffusion models are trained.
ASPECT_SIZES = {
    "1:1": "1024x1024",
    "16:9": "1344x768",
    "9:16": "768x1344",
    "4:3": "1152x896",
    "3:4": "896x1152",
    "3:2": "1216x832",
    "2:3": "832x1216",
}
# The largest picture a backend may answer (decoded bytes; each side is still <= 4096 px).
MAX_DRAWN_BYTES = 48 * 1024 * 1024
NOT_CONFIGURED = (
    "Image generation needs an images backend: set AVATAR_IMAGE_BASE_URL to an "
    "OpenAI-compatible API serving /images/generations. No built-in model draws pictures."
)


@dataclass(frozen=True)
class ImageRequest:
    prompt: str
    aspect_ratio: str
    references: list[Reference]
    seed: int | None
    webhook: WebhookTarget | None = None


def _data_of(text: str, field: str) -> bytes:
    """The bytes of a data URL (`data:image/png;base64,...`) or of bare base64."""
    if text.startswith("data:"):
        header, comma, text = text.partition(",")
        if not comma or not header.endswith(";base64"):
            raise ValidationFailed.field(
                field, "must be a base64 data URL (data:image/...;base64,)"
            )
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationFailed.field(
            field, "must be base64 (a data URL or the bare base64)"
        ) from None


def _reference(data: str, label: str | None, index: int) -> Reference:
    field = f"images[{index}].data"
    image = decode_image(_data_of(data, field), field=field, formats=MEDIA_FORMATS)
    return Reference(encode_png(image).png, label or None)


async def check_request(
    ctx: Context,
    prompt: str,
    aspect_ratio: str,
    images: list[tuple[str, str | None]],
    seed: int | None,
    webhook: tuple[str | None, str | None] = (None, None),
    links_base: str = "",
) -> ImageRequest:
    """The request with its reference images decoded (PNG, JPEG or WebP, each <= 10 MB and
    <= 4096 px a side) and its webhook checked. NotConfigured first: without a backend
    nothing else matters."""
    if ctx.images is None:
        raise NotConfigured(NOT_CONFIGURED)
    target = check_target(
        *webhook,
        allow_private=ctx.settings.webhook_allow_private,
        url_field="webhook.url",
        token_field="webhook.auth_token",
        links_base=links_base,
    )
    # Decoding is CPU work: off the event loop.
    references = await asyncio.to_thread(
        lambda: [_reference(data, label, i) for i, (data, label) in enumerate(images)]
    )
    return ImageRequest(prompt, aspect_ratio, references, seed, target)


def fingerprint(request: ImageRequest) -> str:
    """What makes two submissions the same request (for Idempotency-Key)."""
    webhook = request.webhook
    canonical = {
        "prompt": request.prompt,
        "aspect_ratio": request.aspect_ratio,
        "images": [[hashlib.sha256(r.png).hexdigest(), r.label] for r in request.references],
        "seed": request.seed,
        "webhook": None if webhook is None else [webhook.url, webhook.token],
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


def backend_prompt(prompt: str, references: list[Reference]) -> str:
    """The prompt the backend gets: the labels of the reference images, which the hosted
    API lets a prompt refer to, are named after it in the order the images are sent."""
    labels = [f"image {i}: {r.label}" for i, r in enumerate(references, 1) if r.label]
    if not labels:
        return prompt
    return f"{prompt}\n\nReference images, in the order given: {'; '.join(labels)}."


def to_jpeg(drawn: bytes) -> bytes:
    """The backend's picture decoded under the upload limits and re-encoded as JPEG."""
    try:
        image = decode_image(drawn, field="image", formats=MEDIA_FORMATS, max_bytes=MAX_DRAWN_BYTES)
    except ServiceError as exc:
        raise ImageFailed(f"The image backend's answer cannot be used: {exc.message}") from None
    return encode_jpeg(image)


async def draw(backend: ImageBackend, params: ImageRequest) -> bytes:
    """The JPEG the backend draws for `params`; raises ImageFailed."""
    size = ASPECT_SIZES[params.aspect_ratio]
    prompt = backend_prompt(params.prompt, params.references)
    drawn = await backend.draw(prompt, size, params.seed, params.references)
    return await asyncio.to_thread(to_jpeg, drawn)


async def generate_now(ctx: Context, owner_id: str, request: ImageRequest) -> bytes:
    """The JPEG drawn for `request`, within SYNC_LIMIT_S (UpstreamTimeout), or UpstreamError
    with the backend's reason; counted as usage when drawn."""
    if ctx.images is None:
        raise NotConfigured(NOT_CONFIGURED)
    started, clock = ctx.clock.now_ms(), time.monotonic()
    try:
        async with asyncio.timeout(SYNC_LIMIT_S):
            jpeg = await draw(ctx.images, request)
    except TimeoutError:
        message = f"The image backend did not answer within {SYNC_LIMIT_S:g} s."
        raise UpstreamTimeout(message + " Use /v1/image/async_generate for slow models.") from None
    except ImageFailed as exc:
        raise UpstreamError(str(exc)) from None
    await ctx.store.add_usage(
        usage_record(owner_id, new_id("img"), started, ctx.clock.now_ms(), time.monotonic() - clock)
    )
    return jpeg


def usage_record(
    owner_id: str, ref_id: str, started_ms: int, ended_ms: int, seconds: float
) -> UsageRecord:
    """One drawn image (its usage counts images; `seconds` is how long the backend took)."""
    seconds = round(seconds, 3)
    return UsageRecord(
        new_id("usg"), owner_id, USAGE_KIND, ref_id, started_ms, ended_ms, seconds, seconds
    )
