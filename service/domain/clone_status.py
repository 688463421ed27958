"""What a clone task's status call (and its webhook's body) shows now, and the calls that
answer with it: read, cancel."""

from __future__ import annotations

from dataclasses import dataclass

from service.domain.cloning import KIND
from service.domain.context import Context
from service.domain.kinds import task_kind
from service.domain.models import Task
from service.domain.tasks import cancel, owned_task, queue_position


@dataclass(frozen=True)
class CloneState:
    """What a clone's status view shows now, beside the task itself."""

    task: Task
    queue_position: int | None  # 1 = next; None once it left the queue


async def clone_state(ctx: Context, task: Task) -> CloneState:
    """The status of `task` now (for its status call, and its webhook's body)."""
    return CloneState(task, await queue_position(ctx, task))


async def owned_clone(ctx: Context, owner_id: str, task_id: str) -> CloneState:
    return await clone_state(ctx, await owned_task(ctx, owner_id, task_id, KIND))


async def cancel_clone(ctx: Context, owner_id: str, task_id: str) -> CloneState:
    return await clone_state(ctx, await cancel(ctx, owner_id, task_id, task_kind(KIND)))
