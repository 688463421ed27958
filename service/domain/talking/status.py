"""What a generated video's status call (and its webhook's body) shows now, and the calls that
answer with it: read, cancel. The result is read like an upscale's (`upscale.results`): a fresh
signed link while readable, 410 once past AVATAR_RESULT_TTL_S."""

from __future__ import annotations

from dataclasses import dataclass

from service.domain.context import Context
from service.domain.kinds import task_kind
from service.domain.models import Task
from service.domain.tasks import COMPLETED, cancel, owned_task, queue_position
from service.domain.upscale.results import expired, readable, result_link


@dataclass(frozen=True)
class VideoState:
    task: Task
    queue_position: int | None  # 1 = next; None once it left the queue
    result_link: str | None  # a link to the MP4 (signed path or absolute), while readable


async def video_state(ctx: Context, task: Task) -> VideoState:
    return VideoState(task, await queue_position(ctx, task), result_link(ctx, task))


async def readable_video(ctx: Context, owner_id: str, task_id: str, kind: str) -> VideoState:
    """The status of the caller's video task of `kind`; ResultExpired once its result is gone."""
    task = await owned_task(ctx, owner_id, task_id, kind)
    if task.status == COMPLETED and not readable(task, ctx.clock.now_ms()):
        raise expired(task)
    return await video_state(ctx, task)


async def cancel_video(ctx: Context, owner_id: str, task_id: str, kind: str) -> VideoState:
    return await video_state(ctx, await cancel(ctx, owner_id, task_id, task_kind(kind)))
