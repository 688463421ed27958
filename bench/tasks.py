"""Upscales through the API against the same upscales through `engine.upscale`, interleaved.

    python -m bench.tasks [--clips 10] [--seconds 2] [--rounds 1]

Makes `--clips` small H.264 clips (640x360, `--seconds` long, 30 fps, distinct content), starts
`avatar-service serve` (1 task worker, the default encoder settings) and then, clip by clip,
runs each upscale to 1080p twice: once through the API (submit the upload, poll the status
every 20 ms until COMPLETED, download the result through its signed link: see `Api`) and once
by calling `engine.upscale` in this process with the same settings, alternating which goes
first. It
prints both wall times per clip, their sums and the API's overhead over the direct calls."""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from urllib.parse import urlsplit

import av
import httpx
import numpy as np

import engine
from bench.server import running_serve

RESOLUTION = "1080p"


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


class Api:
    """The client: httpx for the multipart upload, and a plain keep-alive `http.client`
    connection for the polls and the download. Both share this machine's two CPUs with the
    upscale, so a poll's client-side cost shows in the result: http.client spends about a
    quarter of httpx's per request here."""

    def __init__(self, base: str, key: str, poll_s: float) -> None:
        self._poll_s = poll_s
        self._headers = {"Authorization": f"Bearer {key}"}
        self._uploads = httpx.Client(base_url=base, headers=self._headers, timeout=120)
        host = urlsplit(base)
        self._conn = http.client.HTTPConnection(host.hostname, host.port, timeout=120)

    def get(self, url: str, headers: dict | None = None) -> bytes:
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        self._conn.request("GET", target, headers=headers or {})
        response = self._conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {parts.path}: {response.status} {body[:200]!r}")
        return body

    def upscale(self, clip: Path, out: Path) -> float:
        started = time.perf_counter()
        with clip.open("rb") as body:
            files = {"file": (clip.name, body, "video/mp4")}
            params = {"resolution": RESOLUTION}
            submitted = self._uploads.post("/v1/video/upscale", params=params, files=files)
        submitted.raise_for_status()
        status_url = submitted.json()["data"]["status_url"]
        while (task := self._status(status_url))["status"] in ("IN_QUEUE", "IN_PROGRESS"):
            time.sleep(self._poll_s)
        if task["status"] != "COMPLETED":
            raise RuntimeError(f"the task ended {task['status']}: {task.get('error')}")
        out.write_bytes(self.get(task["result"]["output"]["file_url"]))
        return time.perf_counter() - started

    def _status(self, url: str) -> dict:
        return json.loads(self.get(url, self._headers))["data"]

    def close(self) -> None:
        self._uploads.close()
        self._conn.close()


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
    parser.add_argument("--poll-ms", type=float, default=20, help="status poll interval (20)")
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
            api = Api(server.base, key, args.poll_ms / 1000)
            try:
                api.upscale(clips[0], work_dir / "warm.mp4")  # imports, first encode
                direct(clips[0], work_dir / "warm-direct.mp4")
                for run in range(args.rounds * args.clips):
                    clip = clips[run % args.clips]
                    for way in ("api", "direct") if run % 2 == 0 else ("direct", "api"):
                        if way == "api":
                            api_times.append(api.upscale(clip, work_dir / "a.mp4"))
                        else:
                            direct_times.append(direct(clip, work_dir / "d.mp4"))
            finally:
                api.close()
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
