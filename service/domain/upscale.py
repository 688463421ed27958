"""The video upscale task: its request checks, the inspection of an uploaded video (headers
only, before the task is accepted), the run (`engine.upscale`, in a task worker: the only
place the service calls it), its result and its billing."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from typing import Any

import engine
from service.domain.context import Context
from service.domain.errors import InvalidVideo, TargetNotLarger, ValidationFailed
from service.domain.files import result_key, upload_key
from service.domain.ids import new_id
from service.domain.models import IdempotencyKey, Task, UsageRecord, WebhookTarget
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import COMPLETED, new_task, submit, update
from service.domain.webhooks import check_target

KIND = "upscale"
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
    ctx: Context, resolution: str | None, webhook_url: str | None, webhook_token: str | None
) -> UpscaleRequest:
    """The request's own checks, in order: the resolution, then the webhook fields."""
    return UpscaleRequest(
        check_resolution(resolution),
        check_target(
            webhook_url,
            webhook_token,
            allow_private=ctx.settings.webhook_allow_private,
            url_field="webhook_url",
            token_field="webhook_token",
        ),
    )


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
    box fit); raises InvalidVideo or TargetNotLarger."""
    with ctx.files.local_copy(upload_key(task_id)) as path:
        return await asyncio.to_thread(
            _inspect, str(path), resolution, ctx.settings.max_upload_bytes
        )


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
