"""The task core through the domain, where the races are: a claim hands a task to one worker
only; a run that lost its task (a cancel, or a rerun after its lease lapsed) never overwrites
the change nor removes what the new owner of the task needs; leftovers go once a task ends."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import threading
import time
from types import SimpleNamespace

import pytest

from service.domain import task_runs
from service.domain.files import result_key, segment_key, upload_key
from service.domain.ids import new_id
from service.domain.janitor import remove_abandoned_segments
from service.domain.kinds import task_kind, task_kinds
from service.domain.models import Task, TaskError
from service.domain.tasks import CANCELED, IN_PROGRESS, IN_QUEUE, cancel, new_task, submit
from service.domain.upscale.results import delete_result
from service.settings import load_settings
from service.workers.tasks import TaskWorker
from tests.service.conftest import ON_S3, another_store

# What engine.upscale reports of a finished run (only what Upscale.complete reads).
OUTPUT = SimpleNamespace(
    width=1920, height=1080, duration=2.0, frame_rate=30.0, frame_rate_fraction="30/1",
    frames=60, size_bytes=1000,
)  # fmt: skip


class Tasks:
    def __init__(self, api) -> None:
        self.api, self.ctx = api, api.ctx
        api.key("alice")
        self.owner_id = self.run(self.ctx.store.get_owner_by_name, "alice").owner_id

    def run(self, fn, *args):
        with self.api.client.portal() as portal:
            return portal.call(fn, *args)

    async def upscale(self) -> Task:
        """A queued upscale whose uploaded input is in the file store."""
        task_id = new_id("tsk")
        await self.ctx.files.put(upload_key(task_id), b"video")
        params = {"resolution": "1080p", "input_key": upload_key(task_id)}
        task = new_task(task_id, self.owner_id, "upscale", params, self.ctx.clock.now_ms())
        return await submit(self.ctx, task, None)

    async def lapse(self) -> None:
        """The running tasks' leases lapse and the sweeper puts them back."""
        self.api.clock.advance(task_runs.LEASE_MS / 1000 + 1)
        await task_runs.recover_lapsed(self.ctx, task_kinds())

    async def exists(self, key: str) -> bool:
        return await self.ctx.files.size(key) is not None


@pytest.fixture
def tasks(api) -> Tasks:
    return Tasks(api)


def test_a_task_is_claimed_by_one_worker_of_many(tasks, tmp_path):
    """Two stores on one database stand for two worker processes claiming at once."""
    ctx = tasks.ctx

    async def scenario() -> list[str]:
        for _ in range(4):
            await tasks.upscale()
        other = await another_store(ctx.settings)
        try:
            ctxs = [ctx, dataclasses.replace(ctx, store=other)]
            claims = await asyncio.gather(
                *(task_runs.claim(ctxs[n % 2], f"wrk_{n}") for n in range(10))
            )
        finally:
            await other.close()
        return [claimed.task_id for claimed in claims if claimed is not None]

    claimed = tasks.run(scenario)
    assert len(claimed) == len(set(claimed)) == 4


def test_a_run_put_back_keeps_its_place_in_the_queue(tasks):
    """Its worker got SIGTERM: the task runs again before those submitted after it."""
    kind = task_kind("upscale")

    async def scenario() -> tuple[str, str, str]:
        first = await tasks.upscale()
        tasks.api.clock.advance(1)
        await tasks.upscale()
        running = await task_runs.claim(tasks.ctx, "wrk_stopping")
        assert await task_runs.put_back(tasks.ctx, running, kind)
        again = await task_runs.claim(tasks.ctx, "wrk_next")
        return first.task_id, running.task_id, again.task_id

    first, running, again = tasks.run(scenario)
    assert first == running == again


def test_a_canceled_run_keeps_the_cancel_and_leaves_nothing(tasks):
    kind = task_kind("upscale")

    async def scenario() -> tuple[Task, bool, bool]:
        queued = await tasks.upscale()
        running = await task_runs.claim(tasks.ctx, "wrk_a")
        await cancel(tasks.ctx, tasks.owner_id, queued.task_id, kind)
        job = task_runs.Job(running, tasks.ctx.settings, tasks.ctx.files)
        assert await task_runs.heartbeat(tasks.ctx, running, job) is None
        # The work ended before it saw the cancel: its result is made but not wanted.
        await tasks.ctx.files.put(result_key(running.task_id), b"result")
        assert not await task_runs.complete(tasks.ctx, running, kind, OUTPUT)
        await task_runs.abandoned(tasks.ctx, running, kind)  # as the worker does then
        stored = await tasks.ctx.store.get_task(running.task_id)
        input_kept = await tasks.exists(queued.params["input_key"])
        return stored, input_kept, await tasks.exists(result_key(running.task_id))

    stored, input_kept, result_kept = tasks.run(scenario)
    assert (stored.status, stored.result, input_kept, result_kept) == (CANCELED, None, False, False)


def test_a_run_that_lost_its_task_to_a_rerun_leaves_the_rerun_alone(tasks):
    """A worker too slow to renew its lease finishes after the task was put back and claimed
    again: its outcome is refused, and the input the rerun reads stays."""
    kind = task_kind("upscale")

    async def scenario() -> tuple[Task, bool]:
        queued = await tasks.upscale()
        slow = await task_runs.claim(tasks.ctx, "wrk_slow")
        await tasks.lapse()
        assert (await tasks.ctx.store.get_task(slow.task_id)).status == IN_QUEUE
        rerun = await task_runs.claim(tasks.ctx, "wrk_next")
        assert rerun.task_id == slow.task_id
        assert not await task_runs.complete(tasks.ctx, slow, kind, OUTPUT)
        assert not await task_runs.fail(tasks.ctx, slow, kind, task_runs.TaskError("X", "x"))
        await task_runs.abandoned(tasks.ctx, slow, kind)  # as the worker does then
        stored = await tasks.ctx.store.get_task(slow.task_id)
        return stored, await tasks.exists(queued.params["input_key"])

    stored, input_kept = tasks.run(scenario)
    assert (stored.status, stored.worker_id, stored.reruns) == (IN_PROGRESS, "wrk_next", 1)
    assert input_kept


class _UntilCanceled:
    """An upscale kind whose work runs until it is told to stop."""

    name = "upscale"

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def run(self, job: task_runs.Job) -> None:
        job.cancel.wait(10)
        self.stopped.set()
        raise task_runs.Stopped

    async def complete(self, ctx, task, output):
        raise AssertionError("the work never completes")

    async def discard(self, ctx, task) -> None:
        return None


@pytest.mark.skipif(
    ON_S3, reason="partial files of the data dir (on S3 the engine writes to spool)"
)
def test_a_run_cut_short_by_a_crash_leaves_no_partial_output(tasks):
    """The engine writes a result under a temporary name beside it; a worker killed mid-run
    leaves that file, which must go with the result."""
    kind = task_kind("upscale")

    async def scenario() -> list[str]:
        queued = await tasks.upscale()
        crashed = await task_runs.claim(tasks.ctx, "wrk_killed")
        folder = tasks.ctx.settings.data_dir / "results" / crashed.task_id
        folder.mkdir(parents=True)
        (folder / ".output.mp4.0123456789ab.part").write_bytes(b"half a video")
        await tasks.lapse()
        rerun = await task_runs.claim(tasks.ctx, "wrk_next")
        await tasks.ctx.files.put(result_key(rerun.task_id), b"the whole video")
        assert await task_runs.complete(tasks.ctx, rerun, kind, OUTPUT)
        await delete_result(tasks.ctx, await tasks.ctx.store.get_task(queued.task_id))
        return sorted(p.name for p in folder.parent.iterdir())

    assert tasks.run(scenario) == []


def test_a_failure_while_watching_a_run_stops_its_work(tasks, monkeypatch):
    """A store that fails mid-run must not leave the work running beside the next claim."""
    kind = _UntilCanceled()
    worker = TaskWorker(tasks.ctx, {"upscale": kind})

    async def broken(task_id: str) -> Task:
        raise sqlite3.OperationalError("disk I/O error")

    async def scenario() -> bool:
        await tasks.upscale()
        running = await task_runs.claim(tasks.ctx, "wrk_a")
        monkeypatch.setattr(tasks.ctx.store, "get_task", broken)
        with pytest.raises(sqlite3.OperationalError):
            await worker._run(running, asyncio.Event())
        return kind.stopped.is_set()

    assert tasks.run(scenario)


def test_a_worker_claims_only_the_kinds_it_runs(tasks):
    """A task of a kind this version does not know waits (and the recovery leaves it alone)
    instead of being claimed by a worker that cannot run it."""

    async def scenario():
        ctx = tasks.ctx
        params = {"model": "next"}
        strange = new_task(new_id("tsk"), tasks.owner_id, "hologram", params, ctx.clock.now_ms())
        await submit(ctx, strange, None)
        known = await tasks.upscale()
        kinds = tuple(task_kinds())
        assert (await task_runs.claim(ctx, "wrk_1", kinds)).task_id == known.task_id
        assert await task_runs.claim(ctx, "wrk_1", kinds) is None
        # A worker of a newer version, which knows the kind, takes it, then dies.
        assert (await task_runs.claim(ctx, "wrk_newer")).task_id == strange.task_id
        await tasks.lapse()
        assert (await ctx.store.get_task(strange.task_id)).status == IN_PROGRESS
        assert (await ctx.store.get_task(known.task_id)).status == IN_QUEUE

    tasks.run(scenario)


def test_the_janitor_removes_segments_of_ended_tasks_only(make_api, s3_env):
    """A segment written after its task ended (a Dask worker that could not be stopped) goes
    an hour later; those of a task still waiting or running stay. (On S3, where segmented
    upscales keep their segments.)"""
    s3 = load_settings(s3_env)
    tasks = Tasks(make_api(s3_bucket=s3.s3_bucket, s3_endpoint_url=s3.s3_endpoint_url,
                           s3_prefix=s3.s3_prefix))  # fmt: skip
    ctx, kind = tasks.ctx, task_kind("upscale")
    # The bucket dates objects by the real clock: the test's starts there.
    tasks.api.clock.advance(time.time() - ctx.clock.now_ms() / 1000)

    async def scenario() -> tuple[str, str]:
        await tasks.upscale()
        ended = await task_runs.claim(ctx, "wrk_1")
        await task_runs.fail(ctx, ended, kind, TaskError("X", "failed"))
        waiting = await tasks.upscale()
        for task_id in (ended.task_id, waiting.task_id, "tsk_gone"):
            await ctx.files.put(segment_key(task_id, "f" * 32, 0), b"segment")
        return ended.task_id, waiting.task_id

    ended, waiting = tasks.run(scenario)
    tasks.run(remove_abandoned_segments, ctx)  # not an hour old yet
    assert tasks.run(tasks.exists, segment_key(ended, "f" * 32, 0))
    tasks.api.clock.advance(2 * 3600)
    tasks.run(remove_abandoned_segments, ctx)
    left = [key for key in (ended, waiting, "tsk_gone")
            if tasks.run(tasks.exists, segment_key(key, "f" * 32, 0))]  # fmt: skip
    assert left == [waiting]
