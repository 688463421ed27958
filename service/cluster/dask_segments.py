"""`DaskSegments`: the domain's segment pool on a Dask distributed cluster
(AVATAR_DASK_SCHEDULER). The task worker submits one Dask task per segment; a Dask worker
runs `run_segment_task`, which opens the shared file store (S3) from the settings and runs
the domain's `run_segment`. When a worker is lost, the scheduler runs its segment again on
another (each segment is a pure function of its job: it writes only its own blob), up to
Dask's `distributed.scheduler.allowed-failures` times; a segment that raised is retried once
(a passing S3 or network fault)."""

from __future__ import annotations

import asyncio
import functools
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import engine
from service.domain.task_runs import Stopped, TaskFailed
from service.domain.upscale.segments import SegmentDone, SegmentJob, run_segment
from service.settings import Settings

CONNECT_TIMEOUT_S = 10.0
# How often the task worker looks at its segments and its cancel event.
WATCH_S = 0.2
# A segment that raised runs once more (a passing fault); lost workers are counted apart.
RETRIES = 1
# How long a canceled run waits for its running segments to see the cancel mark.
STOP_WAIT_S = 5.0
STOP_POLL_S = 0.05


class SchedulerUnavailable(ConnectionError):
    """The Dask scheduler cannot be reached, or Dask is not installed; the message says
    which and why."""


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise SchedulerUnavailable(
            "AVATAR_DASK_SCHEDULER needs Dask distributed: pip install 'avatar-service[cluster]'"
        ) from None
    return distributed


def _connect(address: str) -> Any:
    distributed = _distributed()
    try:
        return distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise SchedulerUnavailable(
            f"cannot reach the Dask scheduler at {address}: {exc or type(exc).__name__}"
        ) from None


def check_scheduler(address: str) -> None:
    """Raise SchedulerUnavailable unless a Dask scheduler answers at `address` (at start)."""
    _distributed()
    where = urlsplit(address)
    try:
        # Dask's client keeps retrying a refused connection until its timeout; a plain
        # connection fails at once when nothing listens.
        socket.create_connection((where.hostname, where.port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise SchedulerUnavailable(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    _connect(address).close()


@functools.cache
def _client(address: str) -> Any:
    """One client per task worker process; it reconnects by itself after a scheduler restart."""
    return _connect(address)


def run_segment_task(settings: Settings, job: SegmentJob) -> SegmentDone | None:
    """What a Dask worker runs for one segment; None when it stopped at the cancel mark (an
    answer, not an error: Dask would run an error again). With S3 (as `serve` requires), its
    own temporary directory spools the input and the segment: the task worker's data dir is
    on another machine. (bench.scale's local cluster shares one data dir instead.)"""
    from service.runtime import open_files

    if settings.s3_bucket is not None:
        spool = Path(tempfile.gettempdir()) / "avatar-segments"
        settings = settings.with_overrides(data_dir=spool)
    try:
        return run_segment(job, asyncio.run(open_files(settings)))
    except engine.Canceled:
        return None


def _files_only(settings: Settings) -> Settings:
    """The settings a Dask worker needs: where the files are, and nothing secret (Dask's
    messages are not encrypted unless its TLS is set up)."""
    return Settings(
        data_dir=settings.data_dir,
        s3_bucket=settings.s3_bucket,
        s3_endpoint_url=settings.s3_endpoint_url,
        s3_region=settings.s3_region,
        s3_prefix=settings.s3_prefix,
    )


class DaskSegments:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._remote = _files_only(settings)

    def run(
        self,
        jobs: list[SegmentJob],
        done: Callable[[SegmentDone], None],
        cancel: threading.Event,
        stop: Callable[[], None],
    ) -> None:
        distributed = _distributed()
        client = _client(self._settings.dask_scheduler)
        run = secrets.token_hex(4)  # a rerun never meets an earlier run's futures
        pending = {self._submit(client, job, run) for job in jobs}
        try:
            while pending:
                if cancel.is_set():
                    raise Stopped
                finished = {future for future in pending if future.done()}
                pending -= finished
                for future in finished:
                    if (segment := future.result()) is None:  # raises the segment's error
                        raise Stopped  # it saw a cancel mark (this run's, set meanwhile)
                    done(segment)
                if pending and not finished:
                    cancel.wait(WATCH_S)
        except distributed.KilledWorker as exc:
            raise TaskFailed(
                "PROCESSING_FAILED", f"A segment's Dask workers kept dying ({exc})."
            ) from None
        finally:
            if pending:
                _wind_down(client, pending, stop)

    def _submit(self, client: Any, job: SegmentJob, run: str) -> Any:
        key = f"avatar-{job.output_key}-{run}"
        return client.submit(
            run_segment_task, self._remote, job, key=key, pure=False, retries=RETRIES
        )


def _wind_down(client: Any, pending: set, stop: Callable[[], None]) -> None:
    """After a cancel or a segment's failure: segments not started are dropped; the running
    ones (Dask cannot interrupt them) get the cancel mark, and the task's clean-up waits a
    little for them, so it comes after their last write."""
    stop()
    running = {key for keys in client.processing().values() for key in keys}
    client.cancel([future for future in pending if future.key not in running])
    # (distributed.wait would look for a default client, which this one is not.)
    waiting, deadline = [f for f in pending if f.key in running], time.monotonic() + STOP_WAIT_S
    while any(not future.done() for future in waiting) and time.monotonic() < deadline:
        time.sleep(STOP_POLL_S)


def dask_segments(settings: Settings) -> DaskSegments | None:
    """The segment pool of `settings`: Dask's when AVATAR_DASK_SCHEDULER is set."""
    return DaskSegments(settings) if settings.dask_scheduler else None
