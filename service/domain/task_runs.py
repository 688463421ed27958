"""Running tasks: what a worker does with a task between claiming it and its final status.

A run holds a lease it renews with each heartbeat (with the progress made so far). It ends
COMPLETED or FAILED by its kind's outcome, TIMED_OUT past AVATAR_TASK_TIMEOUT_S, back IN_QUEUE
when its worker is told to stop, or it is simply abandoned when someone else changed the task
(a cancel): every write is a compare-and-set, so a worker never overwrites such a change. A
lease that lapses means the worker died; `recover_lapsed` puts such a task back (see there)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol

from service.domain.context import Context
from service.domain.files import FileStore
from service.domain.models import Task, TaskError, UsageRecord
from service.domain.tasks import (
    COMPLETED,
    FAILED,
    FINAL,
    IN_PROGRESS,
    IN_QUEUE,
    MAX_RERUNS,
    TIMED_OUT,
    delivery_for,
    move,
    update,
)
from service.settings import Settings

# A run's lease; its heartbeat renews it well before it lapses.
LEASE_MS = 10_000
HEARTBEAT_S = 1.0


class TaskFailed(Exception):
    """A run's work failed for a reason the task reports (`code`, `message`)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error = TaskError(code, message)


class Stopped(Exception):
    """The work saw its cancel event and stopped, leaving no partial output."""


@dataclass
class Job:
    """What the CPU-heavy part of a run gets (it runs in a thread of the worker process)."""

    task: Task
    settings: Settings
    files: FileStore
    cancel: threading.Event = field(default_factory=threading.Event)
    stage: str = field(init=False)
    progress: float = field(init=False)

    def __post_init__(self) -> None:
        # The run starts where its claim put the task (`tasks.move` knows the first stage).
        self.stage, self.progress = self.task.stage, self.task.progress

    def report(self, stage: str, progress: float) -> None:
        """Note how far the work is; the heartbeat writes it (so this is cheap to call often)."""
        self.stage, self.progress = stage, progress


@dataclass(frozen=True)
class Completion:
    """What a completed run records besides its status."""

    result: dict[str, Any]
    usage: UsageRecord | None = None
    readable_until_ms: int | None = None


class TaskKind(Protocol):
    name: str

    def run(self, job: Job) -> Any:
        """The work itself (blocking): its output, or TaskFailed, or Stopped once
        `job.cancel` is set."""
        ...

    async def complete(self, ctx: Context, task: Task, output: Any) -> Completion: ...

    async def discard(self, ctx: Context, task: Task) -> None:
        """Remove what the task holds once it is final (its input, a result nobody will read)."""
        ...


def still_running(current: Task | None, worker_id: str | None) -> bool:
    """Whether `current` (the task as stored now) is still the run of `worker_id`; when it
    is not (canceled, or put back and perhaps claimed again), the run must stop and write
    nothing more."""
    return current is not None and current.status == IN_PROGRESS and current.worker_id == worker_id


async def claim(ctx: Context, worker_id: str, kinds: tuple[str, ...] | None = None) -> Task | None:
    """The oldest waiting task, leased to `worker_id` and started; only of `kinds` when given
    (a worker takes only what it can run: a task of a kind a newer version made waits)."""
    now = ctx.clock.now_ms()
    return await ctx.store.claim_task(
        worker_id, now + LEASE_MS, lambda task: move(task, IN_PROGRESS, now), kinds
    )


async def heartbeat(ctx: Context, task: Task, job: Job) -> Task | None:
    """Renew the lease and record progress; None when the task is no longer this run's."""
    while True:
        now = ctx.clock.now_ms()
        renewed = update(
            task,
            now,
            stage=job.stage,
            progress=round(job.progress, 4),
            lease_until_ms=now + LEASE_MS,
        )
        if await ctx.store.save_task(renewed, task.version):
            return renewed
        task = await ctx.store.get_task(task.task_id)
        if not still_running(task, job.task.worker_id):
            return None


async def _settle(ctx: Context, task: Task, status: str, kind: TaskKind, **changes: Any) -> bool:
    """Save the run's end; False when the task changed meanwhile (it is no longer ours)."""
    now = ctx.clock.now_ms()
    usage = changes.pop("usage", None)
    ended = move(task, status, now, **changes)
    saved = await ctx.store.save_task(ended, task.version, delivery_for(ended, now), usage)
    if saved and status != IN_QUEUE:
        await kind.discard(ctx, ended)
    return saved


async def complete(ctx: Context, task: Task, kind: TaskKind, output: Any) -> bool:
    """Record the run's result; False when the task changed meanwhile (then `abandoned`)."""
    done = await kind.complete(ctx, task, output)
    return await _settle(
        ctx,
        task,
        COMPLETED,
        kind,
        result=done.result,
        usage=done.usage,
        readable_until_ms=done.readable_until_ms,
    )


async def fail(ctx: Context, task: Task, kind: TaskKind, error: TaskError) -> bool:
    return await _settle(ctx, task, FAILED, kind, error=error)


async def time_out(ctx: Context, task: Task, kind: TaskKind) -> bool:
    limit = ctx.settings.task_timeout_s
    error = TaskError("TIMED_OUT", f"The task ran longer than the {limit:g} s allowed.")
    return await _settle(ctx, task, TIMED_OUT, kind, error=error)


async def put_back(ctx: Context, task: Task, kind: TaskKind) -> bool:
    """Back to the queue, to run again from the start (its worker is stopping)."""
    return await _settle(ctx, task, IN_QUEUE, kind)


async def abandoned(ctx: Context, task: Task, kind: TaskKind) -> None:
    """After a run's end was refused (the task was changed by someone else: canceled, so
    nobody will read what it made, or run again): clean up if that made it final. The one
    caller is the worker, whatever way the run ended."""
    current = await ctx.store.get_task(task.task_id)
    if current is not None and current.status in FINAL:
        await kind.discard(ctx, current)


async def recover_lapsed(
    ctx: Context, kinds: dict[str, TaskKind], lease_before_ms: int | None = None
) -> int:
    """Tasks whose lease lapsed (their worker died, or the whole service stopped) run again
    from the start, up to MAX_RERUNS times, then FAILED saying so. `lease_before_ms` far in
    the future takes every running task (on start-up, when no worker can be alive)."""
    now = ctx.clock.now_ms()
    recovered = 0
    for task in await ctx.store.tasks_in_progress(lease_before_ms or now, 500):
        kind = kinds.get(task.kind)
        if kind is None:  # a newer version's kind: its own workers will take it back
            continue
        if task.reruns >= MAX_RERUNS:
            message = (
                f"The worker running this task stopped {task.reruns + 1} times; it was run "
                f"again {MAX_RERUNS} times and is not run again."
            )
            recovered += await _settle(
                ctx, task, FAILED, kind, error=TaskError("WORKER_LOST", message)
            )
        else:
            recovered += await _settle(ctx, task, IN_QUEUE, kind, reruns=task.reruns + 1)
    return recovered
