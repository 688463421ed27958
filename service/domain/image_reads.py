"""What an image generation task's status call (and its webhook's body) shows now, and the
calls that answer with it: read, cancel. The view (`service.schemas.images`) is made from it."""

from __future__ import annotations

from dataclasses import dataclass

from service.domain.context import Context
from service.domain.image_tasks import KIND, drawn_jpeg
from service.domain.kinds import task_kind
from service.domain.models import Task
from service.domain.tasks import cancel, owned_task, queue_position


@dataclass(frozen=True)
class ImageState:
    task: Task
    queue_position: int | None  # 1 = next; None once it left the queue
    jpeg: bytes | None  # the picture, once COMPLETED and while it is kept


async def image_state(ctx: Context, task: Task) -> ImageState:
    return ImageState(task, await queue_position(ctx, task), await drawn_jpeg(ctx, task))


async def owned_image(ctx: Context, owner_id: str, task_id: str) -> ImageState:
    return await image_state(ctx, await owned_task(ctx, owner_id, task_id, KIND))


async def cancel_image(ctx: Context, owner_id: str, task_id: str) -> ImageState:
    return await image_state(ctx, await cancel(ctx, owner_id, task_id, task_kind(KIND)))
