"""Resampling kernels against their peers: `python -m bench.kernels [--repeats N]`.

Upscales a natural-looking yuv420p frame (bench.scene; Y plus both chroma planes) with
every kernel and peer, interleaving the candidates in a shuffled order on every repetition
and reporting medians. Each timed run is a burst of back-to-back frames (`--burst`, as in a
video), reported per frame. Ours write into reused `out=` arrays and swscale goes through one
reused VideoReformatter; the "fresh" rows allocate their output (and, for swscale, the
reformatter) on every call. Every timed burst follows one untimed frame of the same
candidate, so it starts warm, as frames in a video do. Each row also gives its max abs
error, share of pixels equal to the rounded float64 reference and PSNR against the
unrounded reference.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# Numba's OpenMP workers otherwise spin for milliseconds after each call, on the CPUs
# the next candidate needs. Set before numba loads its threading layer.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import engine
from bench.scene import natural_yuv420p
from engine import _reference

Planes = tuple[np.ndarray, ...]
FILTERS = ("lanczos3", "bicubic", "bilinear")
SWSCALE = {"lanczos3": "LANCZOS", "bicubic": "BICUBIC", "bilinear": "BILINEAR"}
SCENARIOS = {
    "1080p": ("1080p -> 2160p", (1920, 1080), (3840, 2160)),
    "720p": ("720p -> 1080p", (1280, 720), (1920, 1080)),
    "4x": ("480x270 -> 1080p (4x)", (480, 270), (1920, 1080)),
}


@dataclass
class Candidate:
    filter: str
    name: str
    run: Callable[[], Planes]
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)  # the calling thread's CPU time
    result: Planes = ()


def plane_sizes(size: tuple[int, int]) -> list[tuple[int, int]]:
    w, h = size
    return [(w, h), (w // 2, h // 2), (w // 2, h // 2)]


def ours(src: Planes, size, filt: str, *, threads: int | None, kernel="native", fresh=False):
    outs = [np.empty((h, w), np.uint8) for w, h in plane_sizes(size)]

    def run() -> Planes:
        return tuple(
            engine.resample(
                plane,
                w,
                h,
                filter=filt,
                kernel=kernel,
                threads=threads,
                out=None if fresh else out,
            )
            for plane, out, (w, h) in zip(src, outs, plane_sizes(size), strict=True)
        )

    return run


def frame_planes(frame) -> Planes:
    planes = []
    for plane, (w, h) in zip(frame.planes, plane_sizes((frame.width, frame.height)), strict=True):
        raw = np.frombuffer(plane, np.uint8)
        planes.append(np.lib.stride_tricks.as_strided(raw, (h, w), (plane.line_size, 1)).copy())
    return tuple(planes)


def swscale(src: Planes, size, filt: str, *, threads: int, fresh: bool):
    import av
    from av.video.reformatter import VideoReformatter

    height, width = src[0].shape
    frame = av.VideoFrame(width, height, "yuv420p")
    for plane, data in zip(frame.planes, src, strict=True):
        view = np.lib.stride_tricks.as_strided(
            np.frombuffer(plane, np.uint8), data.shape, (plane.line_size, 1), writeable=True
        )
        view[...] = data
    reformatter = VideoReformatter()
    last = {}

    def run() -> Planes:
        scaler = VideoReformatter() if fresh else reformatter
        last["frame"] = scaler.reformat(
            frame, size[0], size[1], "yuv420p", interpolation=SWSCALE[filt], threads=threads
        )
        return ()

    def result() -> Planes:
        return frame_planes(last["frame"])

    run.result = result  # type: ignore[attr-defined]
    return run


def opencv(src: Planes, size, filt: str):
    import cv2

    cv2.setNumThreads(1)
    mode = {"lanczos3": cv2.INTER_LANCZOS4, "bicubic": cv2.INTER_CUBIC}.get(filt, cv2.INTER_LINEAR)
    return lambda: tuple(
        cv2.resize(p, (w, h), interpolation=mode)
        for p, (w, h) in zip(src, plane_sizes(size), strict=True)
    )


def pillow(src: Planes, size, filt: str):
    from PIL import Image

    mode = {"lanczos3": Image.LANCZOS, "bicubic": Image.BICUBIC}.get(filt, Image.BILINEAR)
    images = [Image.fromarray(p) for p in src]
    return lambda: tuple(
        np.asarray(img.resize((w, h), mode))
        for img, (w, h) in zip(images, plane_sizes(size), strict=True)
    )


def candidates(src: Planes, size, filt: str) -> list[Candidate]:
    cores = engine.kernel_info()["threads"]
    rows = [
        ("native, 1 thread", ours(src, size, filt, threads=1)),
        (f"native, {cores} threads", ours(src, size, filt, threads=cores)),
        ("native, 1 thread, fresh out", ours(src, size, filt, threads=1, fresh=True)),
        ("numba", ours(src, size, filt, threads=None, kernel="numba")),
        ("swscale, 1 thread", swscale(src, size, filt, threads=1, fresh=False)),
        ("swscale, 1 thread, fresh", swscale(src, size, filt, threads=1, fresh=True)),
        (f"swscale, {cores} threads", swscale(src, size, filt, threads=cores, fresh=False)),
    ]
    for name, factory in (("OpenCV, 1 thread", opencv), ("Pillow", pillow)):
        with contextlib.suppress(ImportError):  # peers from the `bench` extra
            rows.append((name, factory(src, size, filt)))
    return [Candidate(filt, name, run) for name, run in rows]


def measure(cands: list[Candidate], repeats: int, burst: int) -> None:
    """Each sample is `burst` back-to-back frames, a video's steady state, per frame.

    An untimed frame leads each sample: after the others' single-threaded runs, this
    VM's second vCPU ran at a fraction of its speed for about 2 ms.
    """
    for cand in cands:  # warm-up: JIT, tables, page faults of reused buffers
        cand.run()
    order = list(cands)
    for _ in range(repeats):
        random.shuffle(order)
        for cand in order:
            cand.run()
            start, cpu_start = time.perf_counter(), time.thread_time()
            for _ in range(burst):
                cand.result = cand.run()
            cand.times.append((time.perf_counter() - start) / burst)
            cand.cpu_times.append((time.thread_time() - cpu_start) / burst)
    for cand in cands:
        if hasattr(cand.run, "result"):
            cand.result = cand.run.result()


def errors(result: Planes, reference: Planes) -> tuple[int, float, float]:
    worst, exact, total, squared = 0, 0, 0, 0.0
    for got, want in zip(result, reference, strict=True):
        rounded = _reference.round_half_up(want)
        diff = np.abs(got.astype(np.float64) - rounded)
        worst = max(worst, int(diff.max()))
        exact += int((diff == 0).sum())
        total += diff.size
        squared += float(((got - want) ** 2).sum())
    psnr = 10 * np.log10(255.0**2 / max(squared / total, 1e-12))
    return worst, 100.0 * exact / total, psnr


def report(title: str, cands: list[Candidate], references: dict[str, Planes]) -> None:
    print(f"\n### {title}\n")
    print(
        "| filter | kernel | ms (median) | vs swscale 1 thread | CPU ms | max err | exact % "
        "| PSNR dB |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    medians = {(c.filter, c.name): statistics.median(c.times) * 1e3 for c in cands}
    for cand in cands:
        ms = medians[(cand.filter, cand.name)]
        speedup = medians[(cand.filter, "swscale, 1 thread")] / ms
        worst, exact, psnr = errors(cand.result, references[cand.filter])
        print(
            f"| {cand.filter} | {cand.name} | {ms:.2f} | {speedup:.2f}x | {cpu_ms(cand)} | "
            f"{worst} | {exact:.2f} | {psnr:.1f} |"
        )
    cpu = {(c.filter, c.name): statistics.median(c.cpu_times) for c in cands}
    for filt in dict.fromkeys(c.filter for c in cands):
        one = medians[(filt, "native, 1 thread")]
        cpu_ratio = cpu[(filt, "swscale, 1 thread")] / cpu[(filt, "native, 1 thread")]
        many = next(v for (f, n), v in medians.items() if f == filt and n.endswith("threads"))
        numba = medians[(filt, "numba")]
        sws = medians[(filt, "swscale, 1 thread")]
        print(
            f"\n{filt}: native 1 thread vs swscale 1 thread {sws / one:.2f}x "
            f"(CPU time {cpu_ratio:.2f}x); native {cores_label()} / 1 thread speed-up "
            f"{one / many:.2f}x; numba / native 1 thread time {numba / one:.2f}x"
        )


def cpu_ms(cand: Candidate) -> str:
    """Median CPU time of the calling thread: for single-threaded rows it leaves out time
    spent descheduled on a busy machine; meaningless for multi-threaded rows."""
    if "1 thread" not in cand.name and cand.name != "Pillow":
        return "-"
    return f"{statistics.median(cand.cpu_times) * 1e3:.2f}"


def cores_label() -> str:
    return f"{engine.kernel_info()['threads']} threads"


def cpu_ticks() -> tuple[int, int] | None:
    """(steal, total) ticks of all CPUs from /proc/stat, None where there is none."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[7], sum(fields[:8])


def report_steal(before: tuple[int, int] | None) -> None:
    """A VM's steal time: what the host took from our vCPUs, which no thread count gets back."""
    after = cpu_ticks()
    if before is None or after is None or after[1] == before[1]:
        return
    share = 100 * (after[0] - before[0]) / (after[1] - before[1])
    print(f"\nvCPU steal time during these runs: {share:.1f}% of all CPU time")


def run_scenario(key: str, repeats: int, burst: int, filters: tuple[str, ...]) -> None:
    title, src_size, out_size = SCENARIOS[key]
    src = natural_yuv420p(*src_size)
    cands, references = [], {}
    for filt in filters:
        references[filt] = tuple(
            _reference.resample_float(p, w, h, filt, (0.0, 0.0))
            for p, (w, h) in zip(src, plane_sizes(out_size), strict=True)
        )
        cands += candidates(src, out_size, filt)
    ticks = cpu_ticks()
    measure(cands, repeats, burst)
    report(
        f"{title} yuv420p, ms per frame: median of {repeats} interleaved runs of {burst} frames",
        cands,
        references,
    )
    report_steal(ticks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--burst",
        type=int,
        default=4,
        help="frames per timed run (1 times lone frames: after idle, a VM's second vCPU "
        "can take milliseconds to run at full speed again)",
    )
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), action="append")
    parser.add_argument("--filter", choices=FILTERS, action="append")
    args = parser.parse_args()
    info = engine.kernel_info()
    print(
        f"native isa {info['isa']} (available {', '.join(info['isas'])}), "
        f"{info['threads']} threads, {os.cpu_count()} CPUs"
    )
    for key in args.scenario or list(SCENARIOS):
        run_scenario(key, args.repeats, args.burst, tuple(args.filter or FILTERS))


if __name__ == "__main__":
    main()
