"""A task worker of `serve` (there are `--task-workers` of them, each its own process): it
claims the oldest waiting task, runs its kind's work in a thread (the engine releases the GIL,
so the event loop stays free for heartbeats), and watches the run: a cancel, the task timeout
or SIGTERM stop the work within a fraction of a second."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets

from service.domain import task_runs as runs
from service.domain.context import Context
from service.domain.kinds import task_kinds
from service.domain.models import Task, TaskError
from service.domain.task_runs import Job, Stopped, TaskFailed, TaskKind
from service.runtime import open_context
from service.settings import Settings
from service.workers.supervisor import first_of, run_until_terminated

log = logging.getLogger("service.tasks")

# How often a run looks at its task (a cancel shows there) between heartbeats.
WATCH_S = 0.2
IDLE_WAIT_S = 1.0


class TaskWorker:
    def __init__(self, ctx: Context, kinds: dict[str, TaskKind]) -> None:
        self._ctx = ctx
        self._kinds = kinds
        self._worker_id = "wrk_" + secrets.token_urlsafe(12)

    async def serve(self, stop: asyncio.Event) -> None:
        """Claim and run tasks until `stop` is set."""
        while not stop.is_set():
            task = await runs.claim(self._ctx, self._worker_id, tuple(self._kinds))
            if task is None:
                await first_of([self._ctx.store.wait_for_tasks(IDLE_WAIT_S), stop.wait()])
                continue
            try:
                await self._run(task, stop)
            except Exception:  # never lose the worker over one task: its lease will lapse
                log.exception("task %s: the run failed unexpectedly", task.task_id)

    async def _run(self, task: Task, stop: asyncio.Event) -> None:
        kind = self._kinds[task.kind]
        job = Job(task, self._ctx.settings, self._ctx.files)
        work = asyncio.ensure_future(asyncio.to_thread(kind.run, job))
        try:
            task, reason = await self._follow(task, job, work, stop)
        except BaseException:
            # Work left running unwatched would run beside the next claim and could publish
            # a result for a task run again elsewhere: stop it (its lease lapses, and the
            # sweeper puts the task back).
            job.cancel.set()
            with contextlib.suppress(BaseException):
                await work
            raise
        if reason is not None:
            job.cancel.set()
        await self._end(task, kind, work, reason)

    async def _follow(
        self, task: Task, job: Job, work: asyncio.Future, stop: asyncio.Event
    ) -> tuple[Task, str | None]:
        """Watch the run, renewing its lease, until its work is done or it must stop; the
        task as last saved, and why it must stop (None when the work finished)."""
        deadline_ms = task.started_ms + round(self._ctx.settings.task_timeout_s * 1000)
        loop = asyncio.get_running_loop()
        reason, beat = None, loop.time()
        while reason is None and not work.done():
            await asyncio.wait({work}, timeout=WATCH_S)
            if work.done():
                break
            reason = await self._watch(task, stop, deadline_ms)
            if reason is None and loop.time() - beat >= runs.HEARTBEAT_S:
                beat = loop.time()
                renewed = await runs.heartbeat(self._ctx, task, job)
                task, reason = (renewed, None) if renewed else (task, "lost")
        return task, reason

    async def _watch(self, task: Task, stop: asyncio.Event, deadline_ms: int) -> str | None:
        """Why the run must stop now, if it must."""
        if stop.is_set():
            return "stopping"
        if self._ctx.clock.now_ms() >= deadline_ms:
            return "timed_out"
        if not runs.still_running(await self._ctx.store.get_task(task.task_id), task.worker_id):
            return "lost"
        return None

    async def _end(self, task: Task, kind: TaskKind, work: asyncio.Future, reason: str | None):
        """Record how the run ended. Work that finished counts even if a stop came too late
        to interrupt it, unless the task is no longer this run's."""
        ctx = self._ctx
        try:
            output = await work
        except Stopped:
            ended = await self._stopped(task, kind, reason)
        except TaskFailed as exc:
            ended = reason != "lost" and await runs.fail(ctx, task, kind, exc.error)
        except Exception as exc:
            log.exception("task %s failed", task.task_id)
            message = f"The task failed unexpectedly ({type(exc).__name__})."
            ended = reason != "lost" and await runs.fail(
                ctx, task, kind, TaskError("INTERNAL_ERROR", message)
            )
        else:
            ended = reason != "lost" and await runs.complete(ctx, task, kind, output)
        if not ended:
            await runs.abandoned(ctx, task, kind)

    async def _stopped(self, task: Task, kind: TaskKind, reason: str | None) -> bool:
        if reason == "stopping":
            return await runs.put_back(self._ctx, task, kind)
        if reason == "timed_out":
            return await runs.time_out(self._ctx, task, kind)
        return False


async def _work(settings: Settings, stop: asyncio.Event) -> None:
    async with open_context(settings) as ctx:
        await TaskWorker(ctx, task_kinds()).serve(stop)


def run_task_worker(settings: Settings) -> None:
    run_until_terminated(lambda stop: _work(settings, stop))
