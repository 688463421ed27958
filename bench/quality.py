"""How the picture looks: `python -m bench.quality [--repeats N] [--picture PATH]`.

Each held-out photo (scikit-image's astronaut, coffee and chelsea: never trained on) is turned
into luma, cropped to whole blocks, area-downscaled by 2 or 3 and sent through H.264 at CRF 18
or 23 (`engine.video.degrade`, as training does), then upscaled back to its size by each method.
The tables give PSNR and SSIM of each result's Y against the original. The speed table times
each method on one luma plane, 1080p -> 3840x2160 (and 1.5x and 4x fits) on one thread, the
methods taking turns in a shuffled order on every repetition, medians of `--repeats` samples;
`--picture` writes a PNG of one crop under each method.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import numpy as np

import engine
from bench.scene import natural_yuv420p
from engine.train_detail import HELD_OUT, skimage_image
from engine.video.degrade import degrade

Method = Callable[[np.ndarray, int, int], np.ndarray]
Sample = tuple[float, float]  # wall and CPU milliseconds
CASES = [(factor, crf) for factor in (2, 3) for crf in (18, 23)]


def ours(filter: str) -> Method:
    def run(plane: np.ndarray, width: int, height: int) -> np.ndarray:
        return engine.resample(plane, width, height, filter=filter, threads=1)

    return run


def swscale_lanczos(plane: np.ndarray, width: int, height: int) -> np.ndarray:
    """FFmpeg's swscale (through PyAV) with its Lanczos filter, one thread, on a grey frame."""
    import av
    from av.video.reformatter import Interpolation

    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(plane), format="gray")
    scaled = frame.reformat(width, height, "gray", interpolation=Interpolation.LANCZOS, threads=1)
    return scaled.to_ndarray()


METHODS: dict[str, Method] = {
    "Lanczos3": ours("lanczos3"),
    "bicubic": ours("bicubic"),
    "swscale Lanczos": swscale_lanczos,
    "detail": ours("detail"),
}


def psnr(result: np.ndarray, target: np.ndarray) -> float:
    error = np.mean((result.astype(np.float64) - target) ** 2)
    return float(10 * np.log10(255.0**2 / error))


def ssim(result: np.ndarray, target: np.ndarray) -> float:
    from skimage.metrics import structural_similarity

    return float(structural_similarity(result, target, data_range=255))


def scores() -> dict[tuple[str, int, int], dict[str, tuple[float, float]]]:
    """(image, factor, crf) -> method -> (PSNR, SSIM)."""
    found = {}
    for name in HELD_OUT:
        original = skimage_image(name)
        for factor, crf in CASES:
            target, source = degrade(original, factor, crf)
            height, width = target.shape
            found[name, factor, crf] = {
                method: (psnr(out, target), ssim(out, target))
                for method, run in METHODS.items()
                for out in [run(source, width, height)]
            }
    return found


def quality_table(found: dict[tuple[str, int, int], dict[str, tuple[float, float]]]) -> str:
    head = " | ".join(f"{m} dB / SSIM" for m in METHODS)
    lines = [f"| image | scale | CRF | {head} | detail - Lanczos3 dB |", "|---|---|---|"]
    lines[1] += "---:|" * (len(METHODS) + 1)
    for factor, crf in CASES:
        rows = [(name, found[name, factor, crf]) for name in HELD_OUT]
        means = {m: tuple(np.mean([r[m][i] for _, r in rows]) for i in (0, 1)) for m in METHODS}
        for name, row in [*rows, ("**mean**", means)]:
            cells = " | ".join(f"{row[m][0]:.2f} / {row[m][1]:.4f}" for m in METHODS)
            gain = row["detail"][0] - row["Lanczos3"][0]
            lines.append(f"| {name} | {factor}x | {crf} | {cells} | {gain:+.2f} |")
    return "\n".join(lines)


# (source, output) sizes timed: the bar (2x), then the box fit's 1.5x and 4x.
SIZES = [((1920, 1080), (3840, 2160)), ((1280, 720), (1920, 1080)), ((960, 540), (3840, 2160))]


def timings(repeats: int, source: tuple[int, int], size: tuple[int, int]) -> dict[str, Sample]:
    """Median (wall, CPU) ms of each method for a `source` luma plane -> `size`, interleaved."""
    plane = natural_yuv420p(*source)[0]
    samples: dict[str, list[Sample]] = {m: [] for m in METHODS}
    for run in METHODS.values():  # warm-up: tables, model, page faults
        run(plane, *size)
    order = list(METHODS)
    for _ in range(repeats):
        random.shuffle(order)
        for method in order:
            start, cpu_start = time.perf_counter(), time.thread_time()
            METHODS[method](plane, *size)
            cpu = time.thread_time() - cpu_start
            samples[method].append(((time.perf_counter() - start) * 1e3, cpu * 1e3))
    return {
        m: tuple(statistics.median(s[i] for s in t) for i in (0, 1)) for m, t in samples.items()
    }


def timing_table(repeats: int) -> str:
    """Wall and CPU time: on a busy VM the wall time also counts the time other jobs held the
    CPU; the calling thread's CPU time (every method here runs on it) does not."""
    lines = [
        "| luma plane | method | ms (median) | vs Lanczos3 | CPU ms | CPU vs Lanczos3 |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for source, size in SIZES:
        medians = timings(repeats, source, size)
        wall_ref, cpu_ref = medians["Lanczos3"]
        case = "{}x{} -> {}x{}".format(*source, *size)
        for method, (wall, cpu) in medians.items():
            lines.append(
                f"| {case} | {method} | {wall:.2f} | {wall / wall_ref:.2f}x | {cpu:.2f} | "
                f"{cpu / cpu_ref:.2f}x |"
            )
    return "\n".join(lines)


def picture(path: Path, name: str = "astronaut", crop: tuple[int, int, int] = (40, 170, 128)):
    """Original and each method side by side: one crop at 2x, CRF 23, pixels doubled."""
    from PIL import Image

    target, source = degrade(skimage_image(name), 2, 23)
    height, width = target.shape
    top, left, side = crop
    panels = [target] + [run(source, width, height) for run in METHODS.values()]
    row = np.hstack(
        [np.pad(p[top : top + side, left : left + side], ((0, 0), (0, 4))) for p in panels]
    )
    Image.fromarray(row.repeat(2, 0).repeat(2, 1)).save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--picture", type=Path, help="write the crop comparison PNG here")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    isa = engine.kernel_info()["isa"]
    print(f"{date.today()}, commit {commit.stdout.strip() or '?'}, native variant {isa}\n")
    print(quality_table(scores()))
    print(f"\nOne thread, medians of {args.repeats} interleaved runs\n")
    print(timing_table(args.repeats))
    if args.picture:
        picture(args.picture)
        print(f"\nwrote {args.picture}: original, " + ", ".join(METHODS))


if __name__ == "__main__":
    main()
