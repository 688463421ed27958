"""Who may read a completed upscale's result (or a generated video's: the same rules), through
which link, and until when.

A result is readable while its task is COMPLETED, before `readable_until` and not deleted:
`readable` is that rule, and every read goes through it (the status view's link and the status
call's 410, see `service.domain.upscale.status`, and the signed file link)."""

from __future__ import annotations

from service.clock import format_ts
from service.domain.context import Context
from service.domain.errors import ResultExpired, UrlExpired
from service.domain.files import result_key
from service.domain.models import Task
from service.domain.signing import signed_path, verified_expiry
from service.domain.talking import KINDS as VIDEO_KINDS
from service.domain.tasks import COMPLETED, not_found, update
from service.domain.upscale import KIND

# The path of a completed upscale's file link: what its signature covers (see `result_link`).
RESULT_PATH = "/files/{task_id}/output.mp4"
# The kinds whose result is such a file: upscales and the generated videos.
RESULT_KINDS = frozenset({KIND, *VIDEO_KINDS})


def result_path(task_id: str) -> str:
    return RESULT_PATH.format(task_id=task_id)


def readable(task: Task, now_ms: int) -> bool:
    """Whether the task's result may be read now (the one place this is decided)."""
    return task.status == COMPLETED and task.result is not None and not _gone(task, now_ms)


def _gone(task: Task, now_ms: int) -> bool:
    """A completed task whose result is past `readable_until` or was deleted."""
    until = task.readable_until_ms
    return task.result_deleted_ms is not None or (until is not None and now_ms >= until)


def result_link(ctx: Context, task: Task) -> str | None:
    """A fresh link to the task's file, valid for AVATAR_URL_TTL_S and never past
    `readable_until`: the file store's own absolute URL when it gives one (S3 presigned), else
    a signed path (with query) under the service's base; None while the result is not
    readable."""
    now = ctx.clock.now_ms()
    if not readable(task, now):
        return None
    expires_ms = now + round(ctx.settings.url_ttl_s * 1000)
    if task.readable_until_ms is not None:
        expires_ms = min(expires_ms, task.readable_until_ms)
    direct = ctx.files.direct_link(result_key(task.task_id), expires_ms, now)
    if direct is not None:
        return direct
    return signed_path(ctx.signing_key, result_path(task.task_id), expires_ms // 1000)


async def result_file(
    ctx: Context, task_id: str, expires: str | None, signature: str | None
) -> tuple[str, int]:
    """(file-store key, size) of the file a signed link names. The checks run in this order:
    the signature (SignatureInvalid), the result's availability (ResultExpired, and the file
    is deleted), the link's own expiry (UrlExpired)."""
    expires_s = verified_expiry(ctx.signing_key, result_path(task_id), expires, signature)
    task = await ctx.store.get_task(task_id)
    if task is None or task.kind not in RESULT_KINDS or task.status != COMPLETED:
        raise not_found(task_id)  # a link is signed only for a completed task: unreachable
    if not readable(task, ctx.clock.now_ms()):
        await delete_result(ctx, task)
        raise expired(task)
    if ctx.clock.now_ms() >= expires_s * 1000:
        raise UrlExpired("This link has expired; read the task's status for a fresh one.")
    size = await ctx.files.size(result_key(task_id))
    if size is None:
        raise expired(task)
    return result_key(task_id), size


async def delete_result(ctx: Context, task: Task) -> None:
    """Remove a completed upscale's file: reads of it then answer as if it had expired."""
    while task.result_deleted_ms is None:
        await ctx.files.delete(result_key(task.task_id))
        deleted = update(task, ctx.clock.now_ms(), result_deleted_ms=ctx.clock.now_ms())
        if await ctx.store.save_task(deleted, task.version):
            return
        task = await ctx.store.get_task(task.task_id) or deleted


def expired(task: Task) -> ResultExpired:
    """The error of a read of `task`'s result once it is not readable."""
    until, deleted = task.readable_until_ms, task.result_deleted_ms
    if deleted is not None and (until is None or deleted < until):
        return ResultExpired(f"The result of task {task.task_id} was deleted.")
    return ResultExpired(
        f"The result of task {task.task_id} was readable until {format_ts(until or 0)}; "
        "it has expired."
    )
