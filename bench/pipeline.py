"""Benchmark of `engine.upscale` against the encoder limit and the ffmpeg CLI.

    python -m bench.pipeline [--repeats 3] [--clips 720p,360p] [--psnr-every 10]

Two generated 10-second 30 fps clips with AAC audio and moving, textured content:
1280x720 -> 4k (3840x2160) and 640x360 -> 1080p. For each, interleaved and repeated:
  (a) ours:    engine.upscale(IN, OUT, resolution) with the defaults (lanczos3, native,
               veryfast, CRF 18);
  (b) encoder: the same PyAV libx264 settings encoding the already-upscaled frames held in
               memory, packets discarded: the floor any pipeline around this encoder can reach;
  (c) ffmpeg:  ffmpeg -i IN -vf scale=W:H:flags=lanczos -c:v libx264 -preset veryfast -crf 18
               -c:a copy OUT (needs the ffmpeg CLI, e.g. `apt-get install ffmpeg`);
  (d) ffmpeg-enc: the same ffmpeg command without decode and scale: it encodes (b)'s frames,
               read as raw video from a file. (d)/(c) is the share of (c)'s time that its
               encoder alone takes (at 4k (d) also reads 3.7 GB of raw frames, and its libx264
               keeps one lookahead thread where ours has two).
Reported: median wall seconds, frames per second, CPU seconds (user + system of this process
or of the ffmpeg child), CPU/wall, output size, each row's wall time over (b)'s and over
(c)'s (the ours row holds a/b and a/c), and the Y PSNR of each output against a float64
reference upscale (engine.resample kernel="numpy") of the decoded source, measured on every
`--psnr-every`-th frame.
"""

from __future__ import annotations

import argparse
import math
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

import engine
from engine.video.output import OutputSpec, configure_x264
from engine.video.planes import FrameScaler, plane_array, plane_targets

RATE = 30
SECONDS = 10
CLIPS = {"720p": ((1280, 720), "4k"), "360p": ((640, 360), "1080p")}
CACHE = Path(tempfile.gettempdir()) / "avatar-bench-pipeline"


def _noise(width: int, height: int, octaves: int, decay: float, rng) -> np.ndarray:
    """Value noise summed over octaves (each twice as fine, `decay` times as strong)."""
    total = np.zeros((height, width))
    for octave in range(octaves):
        cells = 4 << octave
        grid = rng.integers(0, 256, (max(cells * height // width, 2), cells), dtype=np.uint8)
        total += engine.resample(grid, width, height, filter="bicubic") * decay**octave
    total -= total.min()
    return total / total.max()


def _texture(width: int, height: int, seed: int) -> np.ndarray:
    """A scene-like still: fine-grained luminance texture down to single pixels, soft colour
    regions, and hard-edged blocks (the edges and detail of real footage, which x264 pays for)."""
    rng = np.random.default_rng(seed)
    luma = _noise(width, height, 9, 0.8, rng)
    tint = np.stack([_noise(width, height, 4, 0.6, rng) for _ in range(3)], axis=-1)
    image = (0.35 + 0.9 * luma[..., None]) * (0.45 + 0.8 * tint) * 150
    for _ in range(60):
        w, h = rng.integers(20, 160, 2)
        x, y = rng.integers(0, width - w), rng.integers(0, height - h)
        image[y : y + h, x : x + w] *= rng.uniform(0.5, 1.4)
    return np.clip(image, 0, 255).astype(np.uint8)


def _frames(width: int, height: int) -> Iterator[np.ndarray]:
    """A slow pan and zoom over the texture with two objects crossing: motion everywhere."""
    pan = 3 * RATE * SECONDS
    texture = _texture(width + pan + 64, height + 64, seed=width)
    y, x = np.mgrid[0:height, 0:width]
    for index in range(RATE * SECONDS):
        left = 3 * index
        top = int(32 + 24 * math.sin(index / 40))
        frame = texture[top : top + height, left : left + width].copy()
        for phase, colour in ((0.0, (230, 60, 40)), (2.0, (40, 90, 230))):
            cx = width * (0.5 + 0.4 * math.sin(index / 25 + phase))
            cy = height * (0.5 + 0.3 * math.cos(index / 31 + phase))
            radius = height / 8
            inside = np.clip(radius - np.hypot(x - cx, y - cy), 0, 4) / 4
            frame = (frame * (1 - inside[..., None]) + np.array(colour) * inside[..., None]).astype(
                np.uint8
            )
        yield frame


def _audio(container: av.container.OutputContainer) -> None:
    stream = container.add_stream("aac", rate=48_000)
    stream.layout = "stereo"
    rng = np.random.default_rng(1)
    for chunk in range(SECONDS * 48_000 // 1024 + 1):
        t = (np.arange(1024) + chunk * 1024) / 48_000
        tone = 0.2 * np.sin(2 * np.pi * (220 + 40 * np.sin(t)) * t)
        samples = np.stack([tone, tone]) + 0.02 * rng.standard_normal((2, 1024))
        frame = av.AudioFrame.from_ndarray(samples.astype(np.float32), "fltp", "stereo")
        frame.sample_rate, frame.pts = 48_000, chunk * 1024
        container.mux(stream.encode(frame))
    container.mux(stream.encode(None))


def make_clip(width: int, height: int) -> Path:
    path = CACHE / f"source-{width}x{height}.mp4"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    with av.open(str(partial), "w", format="mp4") as container:
        video = container.add_stream("libx264", rate=RATE)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.options = {"preset": "medium", "crf": "16"}
        _audio(container)
        for index, rgb in enumerate(_frames(width, height)):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = index
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
    partial.rename(path)
    return path


@dataclass
class Run:
    wall: float
    cpu: float
    size: int


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _timed(body: Callable[[], int], who: int = resource.RUSAGE_SELF) -> Run:
    cpu, wall = _cpu(who), time.perf_counter()
    size = body()
    return Run(time.perf_counter() - wall, _cpu(who) - cpu, size)


def run_ours(src: Path, dst: Path, resolution: str) -> Run:
    return _timed(lambda: engine.upscale(src, dst, resolution).size_bytes)


def upscaled_frames(src: Path, resolution: str) -> list[av.VideoFrame]:
    info = engine.probe(src)
    size = engine.plan(info, resolution)
    targets = plane_targets(info.chroma_format, info.chroma_location, info.orientation,
                            (info.width, info.height), size)  # fmt: skip
    scaler = FrameScaler(targets, info.orientation, "yuv420p", "lanczos3", "native")
    with av.open(str(src)) as container:
        return [scaler.scale(frame) for frame in container.decode(video=0)]


def run_encoder(frames: list[av.VideoFrame], src: Path) -> Run:
    def encode() -> int:
        with av.open(str(src)) as source:
            template = source.streams.video[0]
            codec = av.CodecContext.create("libx264", "w")
            codec.width, codec.height, codec.pix_fmt = frames[0].width, frames[0].height, "yuv420p"
            codec.time_base = template.time_base
            codec.framerate = Fraction(RATE)
            configure_x264(codec, OutputSpec(codec.width, codec.height, "veryfast", 18))
            size = 0
            for frame in frames:
                size += sum(packet.size for packet in codec.encode(frame))
            return size + sum(packet.size for packet in codec.encode(None))

    return _timed(encode)


def _run_cli(arguments: list[str], dst: Path) -> Run:
    command = ["ffmpeg", "-nostdin", "-y", "-v", "error", *arguments, "-c:v", "libx264",
               "-preset", "veryfast", "-crf", "18", str(dst)]  # fmt: skip

    def body() -> int:
        subprocess.run(command, check=True)
        return dst.stat().st_size

    return _timed(body, resource.RUSAGE_CHILDREN)


def run_ffmpeg(src: Path, dst: Path, size: tuple[int, int]) -> Run:
    scale = f"scale={size[0]}:{size[1]}:flags=lanczos"
    return _run_cli(["-i", str(src), "-vf", scale, "-c:a", "copy"], dst)


def write_raw(frames: list[av.VideoFrame], path: Path) -> Path:
    """The frames' planes back to back, as `-f rawvideo -pix_fmt yuv420p` reads them."""
    with path.open("wb") as raw:
        for frame in frames:
            for plane in frame.planes:
                raw.write(plane_array(plane).tobytes())
    return path


def run_ffmpeg_encoder(raw: Path, dst: Path, size: tuple[int, int]) -> Run:
    video = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-video_size", f"{size[0]}x{size[1]}"]
    return _run_cli([*video, "-framerate", str(RATE), "-i", str(raw)], dst)


def _decoded_luma(path: Path, every: int) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        frames = enumerate(container.decode(video=0))
        return [plane_array(f.planes[0]).copy() for i, f in frames if i % every == 0]


def psnr(path: Path, reference: list[np.ndarray], every: int) -> float:
    errors = [
        np.mean((got.astype(np.float64) - want) ** 2)
        for got, want in zip(_decoded_luma(path, every), reference, strict=True)
    ]
    mse = float(np.mean(errors))
    return math.inf if mse == 0 else 10 * math.log10(255**2 / mse)


def reference_luma(src: Path, size: tuple[int, int], every: int) -> list[np.ndarray]:
    """The float64 reference upscale of the source's Y planes, rounded once."""
    return [
        engine.resample(luma, *size, kernel="numpy").astype(np.float64)
        for luma in _decoded_luma(src, every)
    ]


@dataclass
class ClipReport:
    name: str
    frames: int
    size: tuple[int, int]
    runs: dict[str, list[Run]]
    psnr: dict[str, float]


def bench_clip(name: str, repeats: int, every: int, work: Path) -> ClipReport:
    (width, height), resolution = CLIPS[name]
    src = make_clip(width, height)
    info = engine.probe(src)
    size = engine.plan(info, resolution)
    frames = upscaled_frames(src, resolution)
    raw = write_raw(frames, work / f"{name}-upscaled.yuv")
    runs: dict[str, list[Run]] = {"ours": [], "encoder": [], "ffmpeg": [], "ffmpeg-enc": []}
    for repeat in range(repeats):
        runs["ours"].append(run_ours(src, work / f"{name}-ours.mp4", resolution))
        runs["encoder"].append(run_encoder(frames, src))
        runs["ffmpeg"].append(run_ffmpeg(src, work / f"{name}-ffmpeg.mp4", size))
        runs["ffmpeg-enc"].append(run_ffmpeg_encoder(raw, work / f"{name}-ffmpeg-enc.mp4", size))
        done = ", ".join(f"{m} {r[-1].wall:.2f} s ({r[-1].cpu:.2f} CPU s)" for m, r in runs.items())
        print(f"{name} run {repeat + 1}/{repeats}: {done}", file=sys.stderr, flush=True)
    del frames
    raw.unlink()
    reference = reference_luma(src, size, every)
    quality = {
        method: psnr(work / f"{name}-{method}.mp4", reference, every)
        for method in ("ours", "ffmpeg")
    }
    return ClipReport(name, info.frames, size, runs, quality)


def _median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(run, field) for run in runs)


def print_table(reports: list[ClipReport], repeats: int, every: int) -> None:
    print(f"\nmedians of {repeats} interleaved runs; Y PSNR vs float64 reference on every "
          f"{every}th frame\n")  # fmt: skip
    header = (f"{'clip':<22}{'method':<11}{'wall s':>8}{'fps':>8}{'CPU s':>8}{'CPU/wall':>9}"
              f"{'out MB':>8}{'/b':>7}{'/c':>7}{'Y PSNR':>9}")  # fmt: skip
    print(header)
    print("-" * len(header))
    for report in reports:
        encoder = _median(report.runs["encoder"], "wall")
        ffmpeg = _median(report.runs["ffmpeg"], "wall")
        label = f"{report.name}->{report.size[0]}x{report.size[1]}"
        for method, runs in report.runs.items():
            wall, cpu = _median(runs, "wall"), _median(runs, "cpu")
            quality = f"{report.psnr[method]:.2f}" if method in report.psnr else ""
            print(f"{label:<22}{method:<11}{wall:>8.2f}{report.frames / wall:>8.1f}{cpu:>8.2f}"
                  f"{cpu / wall:>9.2f}{_median(runs, 'size') / 1e6:>8.2f}"
                  f"{wall / encoder:>7.3f}{wall / ffmpeg:>7.3f}{quality:>9}")  # fmt: skip
            label = ""
    print("\n/b, /c: the row's wall time over the encoder limit's (b) and over the ffmpeg CLI's "
          "(c);\nthe ours row holds a/b and a/c. The encoder row's size counts video packets "
          "only;\nffmpeg-enc writes no audio.")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clips", default=",".join(CLIPS))
    parser.add_argument("--psnr-every", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("ffmpeg") is None:
        raise SystemExit("the ffmpeg CLI is needed for the peer (apt-get install ffmpeg)")
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as work:
        reports = [
            bench_clip(name, args.repeats, args.psnr_every, Path(work))
            for name in args.clips.split(",")
        ]
    print_table(reports, args.repeats, args.psnr_every)


if __name__ == "__main__":
    main()
