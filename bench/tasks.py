"""Upscales through the API against the same upscales through `engine.upscale`, interleaved.

    python -m bench.tasks [--clips 10] [--seconds 2] [--rounds 1]

Makes `--clips` small H.264 clips (640x360, `--seconds` long, 30 fps, distinct content), starts
`avatar-service serve` (1 task worker, the default encoder settings) and then, clip by clip,
runs each upscale to 1080p twice: once through the API (submit the upload, poll the status
every 20 ms until COMPLETED, download the result through its signed link) and once by calling
`engine.upscale` in this process with the same settings, alternating which goes first. It
prints both wall times per clip, their sums and the API's overhead over the direct calls."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import httpx
import numpy as np

import engine
from bench.server import running_serve

RESOLUTION = "1080p"
POLL_S = 0.02


def make_clip(path: Path, seconds: float, seed: int) -> None:
    """A 640x360 H.264 clip of moving gradients (different per seed)."""
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, 3)
    y, x = np.mgrid[0:360, 0:640].astype(np.float32)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 640, 360, "yuv420p"
        stream.options = {"preset": "veryfast", "crf": "20"}
        for n in range(round(seconds * 30)):
            t = n / 30
            rgb = np.stack(
                [127 + 120 * np.sin(x / 40 + y / 60 + 3 * t + p) for p in phase], axis=-1
            ).astype(np.uint8)
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts, frame.time_base = n, Fraction(1, 30)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def through_api(client: httpx.Client, clip: Path, out: Path) -> float:
    started = time.perf_counter()
    with clip.open("rb") as body:
        files = {"file": (clip.name, body, "video/mp4")}
        submitted = client.post("/v1/video/upscale", params={"resolution": RESOLUTION}, files=files)
    submitted.raise_for_status()
    status_url = submitted.json()["data"]["status_url"]
    while (task := client.get(status_url).json()["data"])["status"] in ("IN_QUEUE", "IN_PROGRESS"):
        time.sleep(POLL_S)
    if task["status"] != "COMPLETED":
        raise RuntimeError(f"the task ended {task['status']}: {task.get('error')}")
    with client.stream("GET", task["result"]["output"]["file_url"]) as download:
        download.raise_for_status()
        with out.open("wb") as file:
            for chunk in download.iter_bytes(1 << 20):
                file.write(chunk)
    return time.perf_counter() - started


def direct(clip: Path, out: Path) -> float:
    started = time.perf_counter()
    engine.upscale(clip, out, RESOLUTION)
    return time.perf_counter() - started


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tasks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--clips", type=int, default=10, help="clips (10)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per clip (2)")
    parser.add_argument("--rounds", type=int, default=1, help="passes over the clips (1)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    api_times: list[float] = []
    direct_times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-tasks-") as work:
        work_dir = Path(work)
        clips = [work_dir / f"clip{n}.mp4" for n in range(args.clips)]
        for seed, clip in enumerate(clips):
            make_clip(clip, args.seconds, seed)
        env = {"AVATAR_RATE_LIMIT": "1000000"}
        with running_serve(work_dir, env) as (server, key):
            headers = {"Authorization": f"Bearer {key}"}
            with httpx.Client(base_url=server.base, headers=headers, timeout=120) as client:
                through_api(client, clips[0], work_dir / "warm.mp4")  # imports, first encode
                direct(clips[0], work_dir / "warm-direct.mp4")
                for run in range(args.rounds * args.clips):
                    clip = clips[run % args.clips]
                    for way in ("api", "direct") if run % 2 == 0 else ("direct", "api"):
                        if way == "api":
                            api_times.append(through_api(client, clip, work_dir / "a.mp4"))
                        else:
                            direct_times.append(direct(clip, work_dir / "d.mp4"))
    _report(args, api_times, direct_times)
    return 0


def _report(args: argparse.Namespace, api_times: list[float], direct_times: list[float]) -> None:
    print(
        f"{args.clips} clips of 640x360, {args.seconds:g} s at 30 fps, upscaled to {RESOLUTION}; "
        f"{args.rounds} round(s), API and direct calls interleaved"
    )
    print(f"{'run':>4} {'API s':>8} {'direct s':>9} {'API/direct':>11}")
    for n, (a, d) in enumerate(zip(api_times, direct_times, strict=True), 1):
        print(f"{n:>4} {a:>8.3f} {d:>9.3f} {a / d:>11.3f}")
    total_api, total_direct = sum(api_times), sum(direct_times)
    ratios = [a / d for a, d in zip(api_times, direct_times, strict=True)]
    print(
        f"sum: API {total_api:.2f} s, direct {total_direct:.2f} s, API/direct "
        f"{total_api / total_direct:.3f} (median per run {statistics.median(ratios):.3f}); "
        "bar: within 5 %"
    )


if __name__ == "__main__":
    sys.exit(main())
