"""The task worker's side of a segmented upscale, with the real engine and a real file store
and a segment pool that runs the jobs right here: progress counts finished frames, a rerun
after a lost run reuses the segments already finished (and does not make them again), and
a segment job stops at the cancel mark. (tests/service/test_dask_upscale.py runs the same on a
real Dask cluster.)"""

from __future__ import annotations

import threading
import time

import pytest

import engine
from service.domain.files import result_key, segment_cancel_key, upload_key
from service.domain.models import Task
from service.domain.task_runs import Job
from service.domain.upscale.run import Upscale
from service.domain.upscale.segments import SegmentDone, SegmentJob, run_segment
from service.settings import load_settings
from service.store.files import LocalFileStore
from tests.engine.conftest import make_clip

# 60 frames at 30 fps, an IDR every 15: four segments of 15 frames at 0.5 s.
CLOSED_GOP = "keyint=15:min-keyint=15:scenecut=0"


class LocalPool:
    """Runs each job here, in order; `fail_after` jobs it stops as if its machine died."""

    def __init__(self, files, fail_after: int | None = None) -> None:
        self.files, self.fail_after = files, fail_after
        self.ran: list[int] = []

    def run(self, jobs: list[SegmentJob], done, cancel, stop) -> None:
        for job in jobs:
            if self.fail_after is not None and len(self.ran) == self.fail_after:
                raise ConnectionError("the segment pool went away")
            self.ran.append(job.segment.index)
            done(run_segment(job, self.files))


class Recorder(Job):
    def report(self, stage: str, progress: float) -> None:
        super().report(stage, progress)
        self.seen.append((stage, progress))


@pytest.fixture
def upscale_job(tmp_path):
    files = LocalFileStore(tmp_path / "files")
    (tmp_path / "files" / "uploads").mkdir(parents=True)
    make_clip(tmp_path / "files" / upload_key("tsk_1"), width=96, height=64, frames=60,
              x264_params=CLOSED_GOP, audio=())  # fmt: skip
    settings = load_settings({}, data_dir=tmp_path, segment_seconds=0.5, x264_preset="ultrafast")
    params = {"input_key": upload_key("tsk_1"), "resolution": "1080p"}
    task = Task("tsk_1", "own_1", "upscale", "IN_PROGRESS", "upscaling", 0, 0, params)

    def make() -> Recorder:
        job = Recorder(task, settings, files)
        job.seen = []
        return job

    return files, make


def _blobs(root) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (root / "segments" / "tsk_1").glob("*.mp4")}


def test_progress_counts_finished_frames(upscale_job):
    files, make = upscale_job
    job = make()
    result = Upscale(lambda settings: LocalPool(files)).run(job)
    assert result.frames == 60
    upscaling = [progress for stage, progress in job.seen if stage == "upscaling"]
    assert upscaling == [pytest.approx(0.99 * frames / 60) for frames in (0, 15, 30, 45, 60)]
    assert job.seen[-1] == ("finalizing", 0.99)


def test_a_rerun_reuses_the_segments_already_finished(upscale_job, tmp_path):
    files, make = upscale_job
    with pytest.raises(ConnectionError):
        Upscale(lambda settings: LocalPool(files, fail_after=2)).run(make())
    finished = _blobs(tmp_path / "files")
    assert len(finished) == 2
    pool = LocalPool(files)
    job = make()
    result = Upscale(lambda settings: pool).run(job)
    assert pool.ran == [2, 3]  # only what the first run did not finish
    assert _blobs(tmp_path / "files").items() >= finished.items()  # not written again
    assert job.seen[0] == ("upscaling", pytest.approx(0.99 * 30 / 60))
    assert result.frames == 60 and (tmp_path / "files" / result_key("tsk_1")).is_file()


def test_a_segment_stops_at_the_cancel_mark(upscale_job, tmp_path, poll):
    files, _ = upscale_job
    big = make_clip(tmp_path / "files" / upload_key("tsk_2"), width=640, height=360, frames=60,
                    x264_params=CLOSED_GOP, audio=())  # fmt: skip
    plan = engine.plan_segments(big, 2.0)
    job = SegmentJob("tsk_2", upload_key("tsk_2"), "segments/tsk_2/x-00000.mp4",
                     segment_cancel_key("tsk_2", "r1"), plan.segments[0], "4k", "lanczos3",
                     "native", "veryfast", 18, 2**30)  # fmt: skip
    outcome: list[BaseException | SegmentDone] = []

    def work() -> None:
        try:
            outcome.append(run_segment(job, files))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    folder = tmp_path / "files" / "segments" / "tsk_2"
    poll(lambda: any(folder.glob(".*.part")) or outcome, timeout=30)  # it is encoding
    assert not outcome
    (folder / "cancel-r1").write_bytes(b"")
    marked = time.monotonic()
    thread.join(timeout=10)
    assert time.monotonic() - marked < 2.0
    assert isinstance(outcome[0], engine.Canceled)
    assert [p.name for p in folder.iterdir()] == ["cancel-r1"]
