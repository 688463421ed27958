"""The upscale's run, in a task worker: `engine.upscale` (the only place the service calls
it), or the same upscale split into segments across a segment pool when one is configured
(`segments`), the result it records and its billing."""

from __future__ import annotations

from collections.abc import Callable

import engine
from service.domain.context import Context
from service.domain.files import result_key
from service.domain.ids import new_id
from service.domain.models import Task, UsageRecord
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import COMPLETED
from service.domain.upscale import KIND
from service.domain.upscale.segments import SegmentedUpscale, SegmentPool, delete_segments
from service.settings import Settings

# Billing counts at least this many seconds per completed upscale.
MIN_BILLABLE_S = 5.0


def _no_pool(settings: Settings) -> SegmentPool | None:
    return None


class Upscale:
    name = KIND

    def __init__(self, segment_pool: Callable[[Settings], SegmentPool | None] = _no_pool) -> None:
        # The pool that runs segments for the given settings; None runs the whole upscale here.
        self._segment_pool = segment_pool

    def run(self, job: Job) -> engine.UpscaleResult:
        task, settings = job.task, job.settings
        # Tasks queued before submissions chose a filter run AVATAR_FILTER. Only the native
        # kernel has `detail`: a task queued for it runs there even if AVATAR_KERNEL changed.
        filter = task.params.get("filter", settings.filter)
        kernel = "native" if filter == "detail" else settings.kernel
        try:
            if (pool := self._segment_pool(settings)) is not None:
                return SegmentedUpscale(job, pool, filter, kernel).run()
            return _in_process(job, filter, kernel)
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
        await delete_segments(ctx.files, task.task_id)
        if task.status != COMPLETED:
            await ctx.files.delete(result_key(task.task_id))


def _in_process(job: Job, filter: str, kernel: str) -> engine.UpscaleResult:
    task, settings = job.task, job.settings

    def progress(done: int, total: int) -> None:
        job.report("upscaling" if done < total else "finalizing", 0.99 * done / max(total, 1))

    with (
        job.files.local_copy(task.params["input_key"]) as src,
        job.files.local_target(result_key(task.task_id)) as dst,
    ):
        return engine.upscale(
            src,
            dst,
            task.params["resolution"],
            filter=filter,
            kernel=kernel,
            preset=settings.x264_preset,
            crf=settings.x264_crf,
            progress=progress,
            cancel=job.cancel,
            max_file_size=settings.max_upload_bytes,
        )
