"""The body of a task's webhook: its status response (`{"data": {...}}`), as the status
endpoint of its kind would answer at that moment. `BODIES` is the one place that says which
view renders each kind; the webhook sender (`service.workers.webhooks`) renders through it.

Links in a body start with the base the submission was answered with (AVATAR_PUBLIC_URL, else
the scheme and host the client used), so they work where the submitter's own links worked."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from service.domain import cloning, generation, image_tasks, talking, upscale
from service.domain.context import Context
from service.domain.generation_status import generation_state
from service.domain.image_reads import image_state
from service.domain.models import Task
from service.domain.talking.status import video_state
from service.domain.upscale.status import upscale_state
from service.domain.voice_reads import clone_state
from service.links import authority
from service.schemas.generation import GenerationStatus, GenerationStatusEnvelope
from service.schemas.images import ImageStatus, ImageStatusEnvelope
from service.schemas.talking import VideoStatus, VideoStatusEnvelope
from service.schemas.upscale import UpscaleTask, UpscaleTaskEnvelope
from service.schemas.voice import CloneStatus, CloneStatusEnvelope
from service.settings import Settings

# (ctx, task, base_url) -> what the kind's status endpoint would answer now.
WebhookBody = Callable[[Context, Task, str], Awaitable[msgspec.Struct]]


async def _upscale(ctx: Context, task: Task, base_url: str) -> UpscaleTaskEnvelope:
    return UpscaleTaskEnvelope(UpscaleTask.of(await upscale_state(ctx, task), base_url))


async def _generation(ctx: Context, task: Task, base_url: str) -> GenerationStatusEnvelope:
    state = await generation_state(ctx, task)
    return GenerationStatusEnvelope(GenerationStatus.of(state, base_url))


async def _clone(ctx: Context, task: Task, base_url: str) -> CloneStatusEnvelope:
    return CloneStatusEnvelope(CloneStatus.of(await clone_state(ctx, task), base_url))


async def _video(ctx: Context, task: Task, base_url: str) -> VideoStatusEnvelope:
    return VideoStatusEnvelope(VideoStatus.of(await video_state(ctx, task), base_url))


async def _image(ctx: Context, task: Task, base_url: str) -> ImageStatusEnvelope:
    return ImageStatusEnvelope(ImageStatus.of(await image_state(ctx, task), base_url))


# kind -> the kind's status view (an envelope {"data": ...}).
BODIES: dict[str, WebhookBody] = {
    upscale.KIND: _upscale,
    generation.KIND: _generation,
    cloning.KIND: _clone,
    talking.TALKING: _video,
    talking.MOTION: _video,
    image_tasks.KIND: _image,
}


async def webhook_body(ctx: Context, task: Task, fallback_base: str) -> bytes:
    """The body of `task`'s webhook: its status response now. Its links start with the base
    the submission was answered with (`fallback_base` for a task that has none)."""
    base = (task.webhook and task.webhook.links_base) or fallback_base
    return msgspec.json.encode(await BODIES[task.kind](ctx, task, base))


def webhook_base_url(settings: Settings) -> str:
    """AVATAR_PUBLIC_URL, else the address `serve` listens on (a wildcard address is named
    by this machine's host name, never 0.0.0.0)."""
    return settings.public_url or f"http://{authority(settings.host, settings.port)}"
