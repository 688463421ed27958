"""Housekeeping of tasks and files, run by the one sweeper of `serve`: runs whose worker died
go back to the queue, results, speech files and drawn images past their availability are
deleted, uploads and build photos nobody will read and segments nobody will join are removed,
and idempotency keys are forgotten after their day."""

from __future__ import annotations

from service.domain.avatar_builds import remove_abandoned_photos
from service.domain.context import Context
from service.domain.conversations import close_quiet
from service.domain.files import SEGMENTS, UPLOADS
from service.domain.image_tasks import remove_old_images
from service.domain.speaking import remove_old_speech
from service.domain.task_runs import TaskKind, recover_lapsed
from service.domain.tasks import FINAL, IDEMPOTENCY_WINDOW_MS
from service.domain.upscale.results import delete_result

# An upload not written to for this long was abandoned (its client or server went away).
ABANDONED_UPLOAD_MS = 3600 * 1000
_BATCH = 500
_FOREVER = 2**62


async def tidy(ctx: Context, kinds: dict[str, TaskKind]) -> None:
    now = ctx.clock.now_ms()
    await recover_lapsed(ctx, kinds)
    for task in await ctx.store.results_past(now, _BATCH):
        await delete_result(ctx, task)
    await remove_abandoned_uploads(ctx)
    await remove_abandoned_segments(ctx)
    await remove_old_speech(ctx)
    await remove_old_images(ctx)
    await remove_abandoned_photos(ctx)
    await ctx.store.forget_idempotency_keys(now - IDEMPOTENCY_WINDOW_MS)


async def remove_abandoned_uploads(ctx: Context) -> None:
    """Uploads untouched for an hour whose task never came to be, or has ended."""
    stale = await ctx.files.stale(UPLOADS, ctx.clock.now_ms() - ABANDONED_UPLOAD_MS)
    by_task = {_task_id(key): key for key in stale}
    waiting = set()
    for task_id in await ctx.store.known_task_ids(list(by_task)):
        task = await ctx.store.get_task(task_id)
        if task is not None and task.status not in FINAL:
            waiting.add(task_id)
    for task_id, key in by_task.items():
        if task_id not in waiting:
            await ctx.files.delete(key)


async def remove_abandoned_segments(ctx: Context) -> None:
    """Segments untouched for an hour of a task that has ended (or is gone): a Dask worker
    cannot be interrupted, so one that a dead task node had started may still write its
    segment after the task's end removed the others."""
    stale = await ctx.files.stale(SEGMENTS, ctx.clock.now_ms() - ABANDONED_UPLOAD_MS)
    by_task: dict[str, list[str]] = {}
    for key in stale:
        by_task.setdefault(key.split("/")[1], []).append(key)
    for task_id, keys in by_task.items():
        task = await ctx.store.get_task(task_id)
        if task is None or task.status in FINAL:
            for key in keys:
                await ctx.files.delete(key)


def _task_id(key: str) -> str:
    """The task an upload key belongs to ("uploads/tsk_x.mp4", or a partial ".tsk_x.mp4.*")."""
    return key.rpartition("/")[2].lstrip(".").split(".", 1)[0]


async def recover_after_restart(ctx: Context, kinds: dict[str, TaskKind]) -> None:
    """On start-up, when no worker of this data dir can be alive: every running task, every
    claimed webhook and every open conversation was interrupted."""
    await recover_lapsed(ctx, kinds, lease_before_ms=_FOREVER)
    await ctx.store.release_delivery_claims()
    await close_quiet(ctx, quiet_since_ms=_FOREVER)
