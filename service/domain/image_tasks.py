"""Image generation as a task (`/v1/image/async_generate`): submission (the reference images
stored under the task's id, chosen first), the kind a worker runs, and what its status shows.

The run calls the backend in the worker's thread, on an event loop of its own, watching the
task's cancel event; the JPEG it made is kept until AVATAR_RESULT_TTL_S (the sweeper removes it
then, and from that moment the status shows no `image`)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from service.domain import image_generation as images
from service.domain.context import Context
from service.domain.drawing import ImageBackend, ImageFailed, Reference
from service.domain.files import DRAWN_IMAGES, drawn_image_key, reference_image_key
from service.domain.ids import new_id
from service.domain.image_generation import ImageRequest
from service.domain.models import IdempotencyKey, Task
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import COMPLETED, new_task, submit
from service.settings import Settings

KIND = images.KIND
# How often a run's backend call looks at the cancel event (a cancel stops it within this).
_CANCEL_POLL_S = 0.2


async def submit_image(
    ctx: Context, owner_id: str, request: ImageRequest, idempotency: IdempotencyKey | None
) -> Task:
    """Queue a generation, or return the task an earlier submission with the same
    Idempotency-Key created. Its reference images are stored first and removed again when the
    submission is refused or answered by that earlier task."""
    task_id = new_id("tsk")
    keys = [reference_image_key(task_id, i) for i in range(len(request.references))]
    references = zip(keys, request.references, strict=True)
    params = {
        "prompt": request.prompt,
        "aspect_ratio": request.aspect_ratio,
        "seed": request.seed,
        "references": [{"key": key, "label": r.label} for key, r in references],
    }
    task = new_task(task_id, owner_id, KIND, params, ctx.clock.now_ms(), request.webhook)
    try:
        for key, reference in zip(keys, request.references, strict=True):
            await ctx.files.put(key, reference.png)
        stored = await submit(ctx, task, idempotency)
    except BaseException:
        await _remove(ctx, keys)
        raise
    if stored.task_id != task_id:
        await _remove(ctx, keys)
    return stored


async def _remove(ctx: Context, keys: list[str]) -> None:
    for key in keys:
        await ctx.files.delete(key)


async def _unless_canceled(work: Coroutine[Any, Any, bytes], cancel: threading.Event) -> bytes:
    """`work`'s outcome, or Stopped (the call abandoned) once `cancel` is set."""
    running = asyncio.ensure_future(work)
    while not running.done():
        await asyncio.wait({running}, timeout=_CANCEL_POLL_S)
        if cancel.is_set() and not running.done():
            running.cancel()
            raise Stopped
    return running.result()


@dataclass(frozen=True)
class Drawn:
    jpeg: bytes
    seconds: float  # how long the backend took


class ImageGeneration:
    """The task kind: draw in the worker's thread, keep the JPEG on completion. `backends`
    makes the backend from the worker's settings (None when none is configured)."""

    name = KIND

    def __init__(self, backends: Callable[[Settings], ImageBackend | None]) -> None:
        self._backends = backends

    def run(self, job: Job) -> Drawn:
        backend = self._backends(job.settings)
        if backend is None:  # unconfigured since the submission
            raise TaskFailed("NOT_CONFIGURED", images.NOT_CONFIGURED)
        params = job.task.params
        request = ImageRequest(
            params["prompt"], params["aspect_ratio"], self._references(job), params["seed"]
        )
        job.report("drawing", 0.1)
        started = time.monotonic()
        try:
            jpeg = asyncio.run(_unless_canceled(images.draw(backend, request), job.cancel))
        except ImageFailed as exc:
            raise TaskFailed("UPSTREAM_ERROR", str(exc)) from None
        return Drawn(jpeg, time.monotonic() - started)

    @staticmethod
    def _references(job: Job) -> list[Reference]:
        found = []
        for reference in job.task.params["references"]:
            with job.files.local_copy(reference["key"]) as path:
                found.append(Reference(path.read_bytes(), reference["label"]))
        return found

    async def complete(self, ctx: Context, task: Task, output: Drawn) -> Completion:
        await ctx.files.put(drawn_image_key(task.task_id), output.jpeg)
        now = ctx.clock.now_ms()
        usage = images.usage_record(
            task.owner_id, task.task_id, task.started_ms or now, now, output.seconds
        )
        return Completion({"bytes": len(output.jpeg)}, usage=usage)

    async def discard(self, ctx: Context, task: Task) -> None:
        await _remove(ctx, [reference["key"] for reference in task.params["references"]])
        if task.status != COMPLETED:
            await ctx.files.delete(drawn_image_key(task.task_id))


async def drawn_jpeg(ctx: Context, task: Task) -> bytes | None:
    """The JPEG a completed task made, while it is kept."""
    if task.status != COMPLETED:
        return None
    key = drawn_image_key(task.task_id)
    size = await ctx.files.size(key)
    if size is None:
        return None
    return b"".join([chunk async for chunk in ctx.files.read(key, 0, size)])


async def remove_old_images(ctx: Context) -> None:
    """The sweeper's part: drawn images older than AVATAR_RESULT_TTL_S."""
    cutoff = ctx.clock.now_ms() - round(ctx.settings.result_ttl_s * 1000)
    for key in await ctx.files.stale(DRAWN_IMAGES, cutoff):
        await ctx.files.delete(key)
