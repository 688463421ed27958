"""What a generation's status call (and its webhook's body) shows now, and the calls that
answer with it: read, cancel."""

from __future__ import annotations

from dataclasses import dataclass

from service.domain.context import Context
from service.domain.files import avatar_key
from service.domain.generation import KIND
from service.domain.kinds import task_kind
from service.domain.models import Task
from service.domain.tasks import COMPLETED, cancel, owned_task, queue_position


@dataclass(frozen=True)
class GenerationState:
    """What a generation's status view shows now, beside the task itself."""

    task: Task
    queue_position: int | None  # 1 = next; None once it left the queue
    png: bytes | None  # the image it made, while its avatar exists


async def generation_state(ctx: Context, task: Task) -> GenerationState:
    """The status of `task` now (for its status call, and its webhook's body)."""
    return GenerationState(task, await queue_position(ctx, task), await generated_png(ctx, task))


async def owned_generation(ctx: Context, owner_id: str, task_id: str) -> GenerationState:
    return await generation_state(ctx, await owned_task(ctx, owner_id, task_id, KIND))


async def cancel_generation(ctx: Context, owner_id: str, task_id: str) -> GenerationState:
    return await generation_state(ctx, await cancel(ctx, owner_id, task_id, task_kind(KIND)))


async def generated_png(ctx: Context, task: Task) -> bytes | None:
    """The PNG a completed generation made, or None when its avatar has been deleted since."""
    avatar_id = (task.result or {}).get("avatar_id")
    if task.status != COMPLETED or avatar_id is None:
        return None
    avatar = await ctx.store.get_avatar(avatar_id)
    size = None if avatar is None else await ctx.files.size(avatar_key(avatar_id))
    if size is None:
        return None
    return b"".join([chunk async for chunk in ctx.files.read(avatar_key(avatar_id), 0, size)])
