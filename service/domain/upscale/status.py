"""What an upscale's status call (and its webhook's body) shows now, and the calls that answer
with it: read, list, cancel, delete the result."""

from __future__ import annotations

from dataclasses import dataclass

from service.domain.context import Context
from service.domain.errors import Conflict
from service.domain.kinds import task_kind
from service.domain.models import Task
from service.domain.pagination import PageRequest
from service.domain.tasks import COMPLETED, FINAL, cancel, list_tasks, owned_task, queue_position
from service.domain.upscale import KIND
from service.domain.upscale.results import delete_result, expired, readable, result_link


@dataclass(frozen=True)
class UpscaleState:
    """What an upscale's status view shows now, beside the task itself."""

    task: Task
    queue_position: int | None  # 1 = next; None once it left the queue
    result_link: str | None  # a link to its result (signed path or absolute), while readable


async def upscale_state(ctx: Context, task: Task) -> UpscaleState:
    """The status of `task` now (for its status call, and its webhook's body)."""
    return UpscaleState(task, await queue_position(ctx, task), result_link(ctx, task))


async def readable_upscale(ctx: Context, owner_id: str, task_id: str) -> UpscaleState:
    """The status of the caller's upscale task; ResultExpired once its result is gone."""
    task = await owned_task(ctx, owner_id, task_id, KIND)
    if task.status == COMPLETED and not readable(task, ctx.clock.now_ms()):
        raise expired(task)
    return await upscale_state(ctx, task)


async def list_upscales(
    ctx: Context, owner_id: str, page: PageRequest
) -> tuple[list[UpscaleState], str | None]:
    """The caller's upscale tasks, newest first, each as its status call shows it."""
    found, cursor = await list_tasks(ctx, owner_id, KIND, page)
    return [await upscale_state(ctx, task) for task in found], cursor


async def cancel_upscale(ctx: Context, owner_id: str, task_id: str) -> UpscaleState:
    task = await cancel(ctx, owner_id, task_id, task_kind(KIND))
    return await upscale_state(ctx, task)


async def delete_upscale_result(ctx: Context, owner_id: str, task_id: str) -> UpscaleState:
    """Delete a completed upscale's result before its time (reads then answer as if it had
    expired); nothing to do for a task that ended otherwise; Conflict while it may still
    produce one. The task's status after it."""
    task = await owned_task(ctx, owner_id, task_id, KIND)
    if task.status not in FINAL:
        raise Conflict(
            f"Task {task_id} is {task.status}: it has no result to delete yet (cancel it to "
            "stop it)."
        )
    if task.status == COMPLETED and task.result_deleted_ms is None:
        await delete_result(ctx, task)
        task = await ctx.store.get_task(task_id) or task
    return await upscale_state(ctx, task)
