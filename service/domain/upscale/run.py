"""The upscale's run, in a task worker: `engine.upscale` (the only place the service calls
it), the result it records and its billing."""

from __future__ import annotations

import engine
from service.domain.context import Context
from service.domain.files import result_key
from service.domain.ids import new_id
from service.domain.models import Task, UsageRecord
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import COMPLETED
from service.domain.upscale import KIND

# Billing counts at least this many seconds per completed upscale.
MIN_BILLABLE_S = 5.0


class Upscale:
    name = KIND

    def run(self, job: Job) -> engine.UpscaleResult:
        task, settings = job.task, job.settings
        # Tasks queued before submissions chose a filter run AVATAR_FILTER. Only the native
        # kernel has `detail`: a task queued for it runs there even if AVATAR_KERNEL changed.
        filter = task.params.get("filter", settings.filter)
        kernel = "native" if filter == "detail" else settings.kernel

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
                    filter=filter,
                    kernel=kernel,
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
