"""One upscale single-pass against split into segments over a local two-worker Dask cluster.

    python -m bench.scale upscale [--seconds 60] [--segment-seconds 30] [--rounds 1]

The source is a generated 720p 30 fps clip (bench.pipeline's moving texture, AAC audio, an
IDR every 2 s as cameras and encoders commonly place them), upscaled to 4k with the defaults
(lanczos3, native kernel, veryfast, CRF 18). Interleaved per round:
  single:    the upscale kind's in-process run (`engine.upscale` in this process);
  segmented: the same kind's run with AVATAR_DASK_SCHEDULER set: a `dask scheduler` and two
             `dask worker --nthreads 1` processes started here, the segments written to and
             read from the data dir (both workers are on this machine; across machines they
             travel through S3, whose transfer costs are not in these figures);
  1 worker:  the same with one worker: the segments run one after another, each alone on the
             machine as it would be on a machine of its own, so its CPU over `single` is the
             segmenting's own cost (two workers on one machine also pay for two encoders
             sharing two cores).
CPU is summed over every process that works: this one (the task worker's part: plan, Dask
client, join) plus the scheduler and the workers, from /proc (user + system). The segmenting
overhead is segmented CPU minus single CPU. Per-segment times (wall and CPU, measured in the
worker) feed the model in bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

from bench.pipeline import _texture
from service.cluster import dask_segments
from service.cluster.dask_segments import DaskSegments
from service.domain.files import upload_key
from service.domain.models import Task
from service.domain.task_runs import Job
from service.domain.upscale.run import Upscale
from service.domain.upscale.segments import SegmentDone
from service.settings import load_settings
from service.store.files import LocalFileStore
from tests.service.stack import DaskCluster

RATE = 30
KEYINT = 2 * RATE
CACHE = Path(tempfile.gettempdir()) / "avatar-bench-scale"
TICKS = os.sysconf("SC_CLK_TCK")


def _frames(width: int, height: int, count: int):
    """A pan over a textured scene with a disc crossing it: motion everywhere."""
    texture = _texture(width + 2 * count + 64, height + 64, seed=width)
    y, x = np.mgrid[0:height, 0:width]
    for index in range(count):
        top = int(32 + 24 * math.sin(index / 40))
        frame = texture[top : top + height, 2 * index : 2 * index + width].copy()
        cx = width * (0.5 + 0.4 * math.sin(index / 25))
        cy = height * (0.5 + 0.3 * math.cos(index / 31))
        inside = np.clip(height / 8 - np.hypot(x - cx, y - cy), 0, 4)[..., None] / 4
        yield (frame * (1 - inside) + np.array((230, 60, 40)) * inside).astype(np.uint8)


def make_source(seconds: int, width: int = 1280, height: int = 720) -> Path:
    path = CACHE / f"source-{width}x{height}-{seconds}s.mp4"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    with av.open(str(partial), "w", format="mp4") as container:
        video = container.add_stream("libx264", rate=RATE)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.options = {"preset": "veryfast", "crf": "18", "x264-params": f"keyint={KEYINT}"}
        audio = container.add_stream("aac", rate=48_000)
        audio.layout = "mono"
        for index, rgb in enumerate(_frames(width, height, seconds * RATE)):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = index
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        for chunk in range(seconds * 48_000 // 1024 + 1):
            t = (np.arange(1024) + chunk * 1024) / 48_000
            samples = (0.2 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)[None, :]
            frame = av.AudioFrame.from_ndarray(samples, "fltp", "mono")
            frame.sample_rate, frame.pts = 48_000, chunk * 1024
            container.mux(audio.encode(frame))
        container.mux(audio.encode(None))
    partial.rename(path)
    return path


def _cpu_of(pid: int) -> float:
    """User + system seconds of process `pid` (and its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@dataclass
class Result:
    wall: float
    cpu: float
    segments: list[SegmentDone]


class RecordingPool(DaskSegments):
    """The product's Dask pool, keeping each segment's own figures."""

    def __init__(self, settings, seen: list[SegmentDone]) -> None:
        super().__init__(settings)
        self._seen = seen

    def run(self, jobs, done, cancel, stop) -> None:
        def record(segment: SegmentDone) -> None:
            self._seen.append(segment)
            done(segment)

        super().run(jobs, record, cancel, stop)


def _job(work: Path, src: Path, name: str, **overrides) -> Job:
    files = LocalFileStore(work)
    target = work / upload_key(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.symlink_to(src)
    settings = load_settings({}, data_dir=work, **overrides)
    params = {"input_key": upload_key(name), "resolution": "4k"}
    task = Task(name, "own_bench", "upscale", "IN_PROGRESS", "upscaling", 0, 0, params)
    return Job(task, settings, files)


def run_single(work: Path, src: Path, round_: int) -> Result:
    job = _job(work, src, f"tsk_single{round_}")
    wall, cpu = time.perf_counter(), time.process_time()
    Upscale().run(job)
    return Result(time.perf_counter() - wall, time.process_time() - cpu, [])


def run_segmented(
    work: Path, src: Path, name: str, cluster: DaskCluster, segment_seconds: float
) -> Result:
    job = _job(
        work, src, f"tsk_split{name}",
        dask_scheduler=cluster.address, segment_seconds=segment_seconds,
    )  # fmt: skip
    seen: list[SegmentDone] = []
    pool = RecordingPool(job.settings, seen)
    others = [cluster.scheduler.pid, *(worker.pid for worker in cluster.workers)]
    before = sum(_cpu_of(pid) for pid in others)
    wall, cpu = time.perf_counter(), time.process_time()
    Upscale(lambda settings: pool).run(job)
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu + sum(_cpu_of(pid) for pid in others) - before
    return Result(wall, cpu, sorted(seen, key=lambda s: s.index))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="clip length (60: the issue's)")
    parser.add_argument("--segment-seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--profiler", action="store_true", help="keep Dask's worker profiler on (its default)"
    )
    args = parser.parse_args(argv)
    src = make_source(args.seconds)
    print(f"source {src} ({args.seconds} s 720p); load {os.getloadavg()}", file=sys.stderr)
    # Workers as docs/deploy.md starts them: without Dask's statistical profiler, which samples
    # every thread's stack 100 times a second for the dashboard.
    env = {} if args.profiler else {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}
    clusters = {n: DaskCluster(workers=n, env=env) for n in (2, 1)}
    singles, splits, alone = [], [], []
    try:
        with tempfile.TemporaryDirectory() as work:
            for round_ in range(args.rounds):
                singles.append(run_single(Path(work), src, round_))
                _note(round_, "single", singles[-1])
                for runs, workers in ((splits, 2), (alone, 1)):
                    cluster, name = clusters[workers], f"{round_}w{workers}"
                    seconds = args.segment_seconds
                    runs.append(run_segmented(Path(work), src, name, cluster, seconds))
                    _note(round_, f"segmented, {workers} worker(s)", runs[-1])
    finally:
        for cluster in clusters.values():
            with contextlib.suppress(Exception):  # the task worker's client first
                dask_segments._client(cluster.address).close()
            cluster.stop()
    _print(args, singles, splits, alone)


def _note(round_: int, name: str, result: Result) -> None:
    print(f"round {round_ + 1}: {name:<24} wall {result.wall:7.1f} s CPU {result.cpu:7.1f} s",
          file=sys.stderr)  # fmt: skip


def _row(name: str, runs: list[Result], single_cpu: float) -> str:
    wall, cpu = statistics.median(r.wall for r in runs), statistics.median(r.cpu for r in runs)
    extra = f"{cpu - single_cpu:+.1f} s ({(cpu / single_cpu - 1) * 100:+.1f}%)"
    return f"| {name} | {wall:.1f} | {cpu:.1f} | {extra} |"


def _print(args, singles: list[Result], splits: list[Result], alone: list[Result]) -> None:
    single_cpu = statistics.median(r.cpu for r in singles)
    load = os.getloadavg()[0]
    print(f"\n{args.seconds} s 720p -> 4k, segments of >= {args.segment_seconds:g} s, "
          f"median of {args.rounds} interleaved round(s), load now {load:.1f}")  # fmt: skip
    print("| run | wall s | CPU s | CPU over single |\n|---|---:|---:|---:|")
    print(f"| single pass | {statistics.median(r.wall for r in singles):.1f} | "
          f"{single_cpu:.1f} | - |")  # fmt: skip
    print(_row("segmented, 2 Dask workers", splits, single_cpu))
    print(_row("segmented, 1 Dask worker", alone, single_cpu))
    for name, runs in (("2 workers", splits), ("1 worker", alone)):
        print(f"\nper segment, {name} (last round): | segment | frames | wall s | CPU s |")
        print("|---:|---:|---:|---:|")
        for segment in runs[-1].segments:
            print(f"| {segment.index} | {segment.frames} | {segment.seconds:.1f} | "
                  f"{segment.cpu_seconds:.1f} |")  # fmt: skip
        last = runs[-1]
        busy = (
            sum(s.seconds for s in last.segments)
            if name == "1 worker"
            else max(s.seconds for s in last.segments)
        )
        print(f"wall beyond the segments (plan + join + scheduling): {last.wall - busy:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
