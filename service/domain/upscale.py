"""The video upscale task: its request checks, the inspection of an uploaded video (headers
only, before the task is accepted), the run (`engine.upscale`, in a task worker: the only
place the service calls it), its result and its billing."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import engine
from service.clock import format_ts
from service.domain.context import Context
from service.domain.errors import (
    Conflict,
    InvalidVideo,
    ResultExpired,
    TargetNotLarger,
    UrlExpired,
    ValidationFailed,
)
from service.domain.files import FileStore, result_key, upload_key
from service.domain.ids import new_id
from service.domain.models import IdempotencyKey, Task, UsageRecord, WebhookTarget
from service.domain.signing import signed_path, verified_expiry
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import COMPLETED, FINAL, new_task, not_found, owned_task, submit, update
from service.domain.webhooks import check_target

KIND = "upscale"
# The submission's text fields (beside the `file` part).
WEBHOOK_URL = "webhook_url"
WEBHOOK_TOKEN = "webhook_token"
# Billing counts at least this many seconds per completed upscale.
MIN_BILLABLE_S = 5.0


@dataclass(frozen=True)
class UpscaleRequest:
    resolution: str
    webhook: WebhookTarget | None


def check_resolution(resolution: str | None) -> str:
    if resolution is None:
        raise ValidationFailed.field("resolution", f"is required: one of {_RESOLUTIONS}")
    if resolution not in engine.RESOLUTIONS:
        raise ValidationFailed.field("resolution", f"must be one of {_RESOLUTIONS}")
    return resolution


_RESOLUTIONS = ", ".join(engine.RESOLUTIONS)


def check_request(
    ctx: Context,
    resolution: str | None,
    webhook_url: str | None,
    webhook_token: str | None,
    links_base: str,
) -> UpscaleRequest:
    """The request's own checks, in order: the resolution, then the webhook fields.
    `links_base` starts the links of the answers (and of the webhook's body)."""
    return UpscaleRequest(
        check_resolution(resolution),
        check_target(
            webhook_url,
            webhook_token,
            allow_private=ctx.settings.webhook_allow_private,
            url_field=WEBHOOK_URL,
            token_field=WEBHOOK_TOKEN,
            links_base=links_base,
        ),
    )


def check_form(
    ctx: Context, resolution: str | None, fields: Mapping[str, str], links_base: str
) -> UpscaleRequest:
    """`check_request` of a submission whose webhook comes in the form's text fields."""
    url, token = fields.get(WEBHOOK_URL), fields.get(WEBHOOK_TOKEN)
    return check_request(ctx, resolution, url, token, links_base)


def _inspect(path: str, resolution: str, max_bytes: int) -> dict[str, Any]:
    try:
        info = engine.probe(path, max_file_size=max_bytes)
        out_w, out_h = engine.plan(info, resolution)
    except engine.InvalidVideo as exc:
        details = {"limit": exc.limit, "actual": exc.actual, "allowed": exc.allowed}
        raise InvalidVideo(f"The video breaks an input limit: {exc.message}.", details) from None
    except engine.TargetNotLarger as exc:
        raise TargetNotLarger(f"Nothing to upscale: {exc}.") from None
    return {
        "width": info.width,
        "height": info.height,
        "duration": info.duration,
        "frame_rate": info.frame_rate,
        "frame_rate_fraction": info.frame_rate_fraction,
        "frames": info.frames,
        "has_audio": info.has_audio,
        "size_bytes": info.size_bytes,
        "output_width": out_w,
        "output_height": out_h,
    }


async def inspect_upload(ctx: Context, task_id: str, resolution: str) -> dict[str, Any]:
    """The uploaded video's facts (its headers checked against every input limit, then the
    box fit); raises InvalidVideo or TargetNotLarger. In a thread: the file store may have
    to fetch the upload first."""
    return await asyncio.to_thread(
        _inspect_stored, ctx.files, upload_key(task_id), resolution, ctx.settings.max_upload_bytes
    )


def _inspect_stored(files: FileStore, key: str, resolution: str, max_bytes: int) -> dict:
    with files.local_copy(key) as path:
        return _inspect(str(path), resolution, max_bytes)


def fingerprint(request: UpscaleRequest, upload_digest: str) -> str:
    """What makes two submissions the same request (for Idempotency-Key)."""
    parts = [request.resolution, upload_digest]
    if request.webhook is not None:
        parts += [request.webhook.url, request.webhook.token or ""]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


async def submit_upscale(
    ctx: Context,
    owner_id: str,
    task_id: str,
    request: UpscaleRequest,
    facts: dict[str, Any],
    idempotency: IdempotencyKey | None,
) -> Task:
    """Queue the upscale of the video uploaded as `task_id`; an earlier task when this repeats
    an idempotent submission (the new upload is then dropped)."""
    params = {"resolution": request.resolution, "input_key": upload_key(task_id)}
    task = new_task(
        task_id, owner_id, KIND, params, ctx.clock.now_ms(), request.webhook, input=facts
    )
    try:
        stored = await submit(ctx, task, idempotency)
    except BaseException:
        await ctx.files.delete(upload_key(task_id))
        raise
    if stored.task_id != task_id:
        await ctx.files.delete(upload_key(task_id))
    return stored


async def accept_upload(
    ctx: Context,
    owner_id: str,
    task_id: str,
    resolution: str | None,
    fields: Mapping[str, str],
    upload_digest: str | None,
    idempotency_key: str | None,
    links_base: str,
) -> Task:
    """Check the request, inspect the video uploaded as `task_id` and queue its upscale (see
    `submit_upscale`); the upload is removed when it is refused. `fields` are the form's
    text fields; `upload_digest` (the video's SHA-256) is needed only with an Idempotency-Key."""
    try:
        request = check_form(ctx, resolution, fields, links_base)
        facts = await inspect_upload(ctx, task_id, request.resolution)
    except BaseException:
        await ctx.files.delete(upload_key(task_id))
        raise
    idempotency = None
    if idempotency_key is not None:
        idempotency = IdempotencyKey(idempotency_key, fingerprint(request, upload_digest or ""))
    return await submit_upscale(ctx, owner_id, task_id, request, facts, idempotency)


class Upscale:
    name = KIND

    def run(self, job: Job) -> engine.UpscaleResult:
        task, settings = job.task, job.settings

        def progress(done: int, total: int) -> None:
            job.report("upscaling" if done < total else "finalizing", 0.99 * done / max(total, 1))

        try:
            with (
                job.files.local_copy(task.params["input_key"]) as src,
                job.files.local_target(result_key(task.task_id)) as dst,
            ):
                return engine.upscale(
                    src,
                    dst,
                    task.params["resolution"],
                    filter=settings.filter,
                    kernel=settings.kernel,
                    preset=settings.x264_preset,
                    crf=settings.x264_crf,
                    progress=progress,
                    cancel=job.cancel,
                    max_file_size=settings.max_upload_bytes,
                )
        except engine.Canceled:
            raise Stopped from None
        except FileNotFoundError:
            raise TaskFailed("INPUT_MISSING", "The uploaded video is no longer there.") from None
        except engine.InvalidVideo as exc:
            raise TaskFailed("INVALID_VIDEO", f"The video breaks an input limit: {exc}.") from None
        except engine.EngineError as exc:
            raise TaskFailed(
                "PROCESSING_FAILED", f"The video could not be upscaled: {exc}."
            ) from None

    async def complete(self, ctx: Context, task: Task, output: engine.UpscaleResult) -> Completion:
        now = ctx.clock.now_ms()
        result = {
            "output": {
                "width": output.width,
                "height": output.height,
                "duration": output.duration,
                "frame_rate": output.frame_rate,
                "frame_rate_fraction": output.frame_rate_fraction,
                "frames": output.frames,
                "size_bytes": output.size_bytes,
            }
        }
        billable = round(max(MIN_BILLABLE_S, output.duration), 3)
        result["billable_seconds"] = billable
        usage = UsageRecord(
            new_id("usg"), task.owner_id, KIND, task.task_id, task.started_ms, now,
            round(output.duration, 3), billable,
        )  # fmt: skip
        readable_until = task.created_ms + round(ctx.settings.result_ttl_s * 1000)
        return Completion(result, usage, readable_until)

    async def discard(self, ctx: Context, task: Task) -> None:
        await ctx.files.delete(task.params["input_key"])
        if task.status != COMPLETED:
            await ctx.files.delete(result_key(task.task_id))


async def delete_result(ctx: Context, task: Task) -> None:
    """Remove a completed upscale's file: reads of it then answer as if it had expired."""
    while task.result_deleted_ms is None:
        await ctx.files.delete(result_key(task.task_id))
        deleted = update(task, ctx.clock.now_ms(), result_deleted_ms=ctx.clock.now_ms())
        if await ctx.store.save_task(deleted, task.version):
            return
        task = await ctx.store.get_task(task.task_id) or deleted


# The path of a completed upscale's file link: what its signature covers (see `result_link`).
RESULT_PATH = "/files/{task_id}/output.mp4"


def result_path(task_id: str) -> str:
    return RESULT_PATH.format(task_id=task_id)


def result_gone(task: Task, now_ms: int) -> bool:
    """A completed task whose result is past `readable_until` or was deleted."""
    if task.status != COMPLETED:
        return False
    until = task.readable_until_ms
    return task.result_deleted_ms is not None or (until is not None and now_ms >= until)


def result_link(ctx: Context, task: Task) -> str:
    """A fresh link to the task's file, valid for AVATAR_URL_TTL_S and never past
    `readable_until`: the file store's own absolute URL when it gives one (S3 presigned),
    else a signed path (with query) under the service's base."""
    now = ctx.clock.now_ms()
    expires_ms = now + round(ctx.settings.url_ttl_s * 1000)
    if task.readable_until_ms is not None:
        expires_ms = min(expires_ms, task.readable_until_ms)
    direct = ctx.files.direct_link(result_key(task.task_id), expires_ms, now)
    if direct is not None:
        return direct
    return signed_path(ctx.signing_key, result_path(task.task_id), expires_ms // 1000)


async def readable_upscale(ctx: Context, owner_id: str, task_id: str) -> Task:
    """The caller's upscale task for its status call; ResultExpired once its result is gone."""
    task = await owned_task(ctx, owner_id, task_id, KIND)
    if result_gone(task, ctx.clock.now_ms()):
        raise _expired(task)
    return task


async def result_file(
    ctx: Context, task_id: str, expires: str | None, signature: str | None
) -> tuple[str, int]:
    """(file-store key, size) of the file a signed link names. The checks run in this order:
    the signature (SignatureInvalid), the result's availability (ResultExpired, and the file
    is deleted), the link's own expiry (UrlExpired)."""
    expires_s = verified_expiry(ctx.signing_key, result_path(task_id), expires, signature)
    task = await ctx.store.get_task(task_id)
    if task is None or task.kind != KIND or task.status != COMPLETED:
        raise not_found(task_id)  # a link is signed only for a completed task: unreachable
    if result_gone(task, ctx.clock.now_ms()):
        await delete_result(ctx, task)
        raise _expired(task)
    if ctx.clock.now_ms() >= expires_s * 1000:
        raise UrlExpired("This link has expired; read the task's status for a fresh one.")
    size = await ctx.files.size(result_key(task_id))
    if size is None:
        raise _expired(task)
    return result_key(task_id), size


async def delete_upscale_result(ctx: Context, owner_id: str, task_id: str) -> Task:
    """Delete a completed upscale's result before its time (reads then answer as if it had
    expired); nothing to do for a task that ended otherwise; Conflict while it may still
    produce one."""
    task = await owned_task(ctx, owner_id, task_id, KIND)
    if task.status not in FINAL:
        raise Conflict(
            f"Task {task_id} is {task.status}: it has no result to delete yet (cancel it to "
            "stop it)."
        )
    if task.status == COMPLETED and task.result_deleted_ms is None:
        await delete_result(ctx, task)
        task = await ctx.store.get_task(task_id) or task
    return task


def _expired(task: Task) -> ResultExpired:
    until, deleted = task.readable_until_ms, task.result_deleted_ms
    if deleted is not None and (until is None or deleted < until):
        return ResultExpired(f"The result of task {task.task_id} was deleted.")
    return ResultExpired(
        f"The result of task {task.task_id} was readable until {format_ts(until or 0)}; "
        "it has expired."
    )
