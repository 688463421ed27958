"""The body of a task's webhook: its status response (`{"data": {...}}`), as the status
endpoint of its kind would answer at that moment. `BODIES` is the one place that says which
view renders each kind; the webhook sender (`service.workers.webhooks`) renders through it.

Links in a body start with the base the submission was answered with (AVATAR_PUBLIC_URL, else
the scheme and host the client used), so they work where the submitter's own links worked."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec

from service.domain.context import Context
from service.domain.models import Task
from service.links import authority
from service.schemas.generation import generation_status
from service.schemas.upscale import upscale_status
from service.schemas.voice import clone_status
from service.settings import Settings

# (ctx, task, base_url) -> what the kind's status endpoint would answer now.
WebhookBody = Callable[[Context, Task, str], Awaitable[msgspec.Struct]]


# kind -> the kind's status view (an envelope {"data": ...}), the one place that says which
# view renders each kind's webhook.
BODIES: dict[str, WebhookBody] = {
    "upscale": upscale_status,
    "avatar_generation": generation_status,
    "voice_clone": clone_status,
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
