"""One upscale split across machines: the task worker cuts the input into segments at
closed-GOP keyframes (`engine.plan_segments`), a segment pool (Dask, see
`service.cluster`) runs one job per segment wherever it has room, and the task worker joins
the finished segments with the input's audio.

Everything the segments share lives in the file store (never in store tables), under
`segments/{task_id}/`: each finished segment as a blob keyed by its index and a fingerprint
of the input and the settings, and each run's cancel mark its segment jobs poll (a running job
cannot be interrupted from outside, so it stops itself when the mark appears). A run of the
task after a lost lease finds the segments its earlier run finished and runs only the rest;
the blobs go when the task is final (`discard`)."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import engine
from service.domain.files import (
    FileStore,
    result_key,
    segment_cancel_key,
    segment_key,
    segment_prefix,
)
from service.domain.task_runs import Job

# How often a segment job looks for the cancel mark: cancel stops the work within 2 s.
CANCEL_POLL_S = 0.25

T = TypeVar("T")


@dataclass(frozen=True)
class SegmentJob:
    """One segment's work, as plain data (it travels to another machine)."""

    task_id: str
    input_key: str
    output_key: str
    cancel_key: str
    segment: engine.Segment
    resolution: str
    filter: str
    kernel: str
    preset: str
    crf: float
    max_file_size: int


@dataclass(frozen=True)
class SegmentDone:
    index: int
    frames: int
    seconds: float  # wall time of the segment's upscale
    cpu_seconds: float  # CPU time of the process that ran it, over that time


class SegmentPool(Protocol):
    def run(
        self,
        jobs: list[SegmentJob],
        done: Callable[[SegmentDone], None],
        cancel: threading.Event,
        stop: Callable[[], None],
    ) -> None:
        """Run every job (somewhere), calling `done` as each finishes; raise the first
        job's error, or Stopped soon after `cancel` is set. Before raising, drop the jobs
        not started, call `stop` (it sets the cancel mark the running ones watch) and wait
        a little for those to end."""
        ...


def _blocking(coro: Coroutine[Any, Any, T]) -> T:
    """A file store call from a worker thread (no event loop runs there)."""
    return asyncio.run(coro)


class CancelMark:
    """`is_set` once the cancel mark of a segment job exists (polled in a thread)."""

    def __init__(self, files: FileStore, key: str) -> None:
        self._files, self._key = files, key
        self._seen = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="segment-cancel", daemon=True)

    def __enter__(self) -> CancelMark:
        self._look()  # a job started after the cancel starts nothing
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _look(self) -> None:
        if _blocking(self._files.size(self._key)) is not None:
            self._seen.set()

    def _poll(self) -> None:
        while not self._seen.is_set() and not self._done.wait(CANCEL_POLL_S):
            self._look()

    def is_set(self) -> bool:
        return self._seen.is_set()


def run_segment(job: SegmentJob, files: FileStore) -> SegmentDone:
    """Upscale one segment and publish it under `job.output_key` (on a pool's machine)."""
    started, cpu = time.perf_counter(), time.process_time()
    with CancelMark(files, job.cancel_key) as cancel:
        if cancel.is_set():
            raise engine.Canceled("the upscale was canceled")
        with files.local_copy(job.input_key) as src, files.local_target(job.output_key) as dst:
            frames = engine.upscale_segment(
                src, dst, job.resolution, job.segment, filter=job.filter, kernel=job.kernel,
                preset=job.preset, crf=job.crf, cancel=cancel, max_file_size=job.max_file_size,
            )  # fmt: skip
    seconds = time.perf_counter() - started
    return SegmentDone(job.segment.index, frames, seconds, time.process_time() - cpu)


def _fingerprint(plan: engine.SegmentPlan, job: Job, filter: str, kernel: str) -> str:
    """The input's and the settings' digest: a finished segment is reused only by a run
    that would make the very same one."""
    settings = job.settings
    options = (job.task.params["resolution"], filter, kernel, settings.x264_preset)
    text = repr((plan.fingerprint, options, settings.x264_crf, engine.__version__))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class SegmentedUpscale:
    """The task worker's side of one segmented upscale (runs in the run's thread)."""

    def __init__(self, job: Job, pool: SegmentPool, filter: str, kernel: str) -> None:
        self._job, self._pool = job, pool
        self._filter, self._kernel = filter, kernel
        self._files = job.files
        self._task_id = job.task.task_id
        self._cancel_key = segment_cancel_key(self._task_id, secrets.token_hex(6))

    def run(self) -> engine.UpscaleResult:
        files, params = self._files, self._job.task.params
        with files.local_copy(params["input_key"]) as src:
            engine.plan(engine.probe(src), params["resolution"])  # refusals before any work
            plan = engine.plan_segments(
                src, self._job.settings.segment_seconds,
                max_file_size=self._job.settings.max_upload_bytes,
            )  # fmt: skip
            fingerprint = _fingerprint(plan, self._job, self._filter, self._kernel)
            keys = [segment_key(self._task_id, fingerprint, s.index) for s in plan.segments]
            self._run_missing(plan, keys)
            with (
                self._local_parts(keys) as parts,
                files.local_target(result_key(self._task_id)) as dst,
            ):
                self._job.report("finalizing", 0.99)
                return engine.join_segments(src, plan, parts, dst)

    def _run_missing(self, plan: engine.SegmentPlan, keys: list[str]) -> None:
        """Run the segments no earlier run finished, counting finished frames."""
        finished = {i for i, key in enumerate(keys) if _blocking(self._files.size(key)) is not None}
        done_frames = sum(plan.segments[i].frames for i in finished)
        self._report(done_frames, plan.frames)
        missing = [s for s in plan.segments if s.index not in finished]
        jobs = [self._segment_job(segment, keys[segment.index]) for segment in missing]

        def done(segment: SegmentDone) -> None:
            nonlocal done_frames
            done_frames += segment.frames
            self._report(done_frames, plan.frames)

        def stop() -> None:
            _blocking(self._files.put(self._cancel_key, b""))

        self._pool.run(jobs, done, self._job.cancel, stop)

    def _segment_job(self, segment: engine.Segment, key: str) -> SegmentJob:
        params, settings = self._job.task.params, self._job.settings
        return SegmentJob(
            self._task_id, params["input_key"], key, self._cancel_key, segment,
            params["resolution"], self._filter, self._kernel, settings.x264_preset,
            settings.x264_crf, settings.max_upload_bytes,
        )  # fmt: skip

    def _report(self, frames: int, total: int) -> None:
        self._job.report("upscaling", 0.99 * frames / max(total, 1))

    @contextmanager
    def _local_parts(self, keys: list[str]) -> Iterator[list[Path]]:
        with ExitStack() as stack:
            yield [stack.enter_context(self._files.local_copy(key)) for key in keys]


async def delete_segments(files: FileStore, task_id: str) -> None:
    """Every blob the segmented runs of the task left (segments, cancel marks)."""
    for key in await files.stale(segment_prefix(task_id), 2**62):
        await files.delete(key)
