"""Speed of the generated videos on one core (this process pinned to one CPU).

    python -m bench.media [--seconds 10] [--rounds 5]

A talking video of a 512x512 portrait at 25 fps (the built-in generator's, with the landmarks it
drew; the sound: eSpeak NG speaking a paragraph, its viseme timeline driving the mouth) is made
three ways, interleaved round by round:

- `render + encode`: what a task worker does (`BuiltInTalkingVideos.render`: track, frames,
  `engine.compose` with libx264 `veryfast`, CRF 18, and AAC);
- `render only`: the same frames drawn and dropped (the renderer's share);
- `encode only`: the same frames, drawn beforehand, through `engine.compose` (the encoders'
  share: the peer the renderer is judged against).

Each figure is the median over the rounds of seconds of video per second of CPU (the process's
CPU time, every thread included) and per second of wall time. The bar is 2x real time for
`render + encode`. Then an avatar build's CPU time, step by step (decode, find the face, align
and encode the portrait), on scikit-image's astronaut photo as a 512 and a 2048 px JPEG; finding
the face is also the other CPU work of a video task made from a photo."""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image
from skimage.data import astronaut

import engine
from service.domain.avatar_builds import one_face
from service.domain.images import MEDIA_FORMATS, decode_image
from service.domain.motion_presets import TALKING_PLAN
from service.domain.portraits import align
from service.domain.speech import BUILT_IN, Voice
from service.domain.talking.run import Scene
from service.generators.espeak import EspeakSpeech
from service.generators.face_finders import face_finder
from service.generators.procedural import ProceduralPortraits
from service.generators.talking_face import TalkingFace
from service.generators.talking_video import BuiltInTalkingVideos, portrait_of, track_of

SIDE, FPS = 512, 25
BUILD_SIDES = (512, 2048)
TEXT = (
    "Good morning, and welcome to the station. Today we will look at the garden on the upper "
    "deck, where the tomatoes are finally ripe. After that, we can talk about the new solar "
    "panels, and what they mean for the long winter ahead. Questions are welcome at any time."
)


def _scene(seconds: float) -> Scene:
    speech = asyncio.run(EspeakSpeech().synthesize(TEXT, Voice(BUILT_IN, "en-us")))
    decoded = engine.decode_audio(engine.wav_bytes(speech.pcm, speech.sample_rate), 24_000, 600)
    pcm = decoded.pcm[: int(seconds * 24_000) * 2]
    visemes = [(at, name) for at, name in speech.visemes if at < seconds * 1000]
    generator = ProceduralPortraits()
    png = generator.render("a friendly astronaut", SIDE, SIDE, 4)
    face = generator.face("a friendly astronaut", SIDE, SIDE, 4)
    return Scene(png, face, pcm, 24_000, visemes, TALKING_PLAN, 1)


def _cpu_and_wall(work: Callable[[], None]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    return time.process_time() - cpu, time.perf_counter() - wall


def _candidates(scene: Scene, folder: Path) -> dict[str, Callable[[], None]]:
    renderer = BuiltInTalkingVideos()
    pixels, face = portrait_of(scene.png, scene.face, scene.max_side)

    def draw_all() -> list[np.ndarray]:
        track, talking = track_of(scene), TalkingFace(pixels, face)
        return [talking.frame(track, i) for i in range(track.frames)]

    drawn = draw_all()

    def encode_only() -> None:
        engine.compose(folder / "e.mp4", iter(drawn), width=SIDE, height=SIDE, fps=FPS,
                       pcm=scene.pcm, sample_rate=scene.sample_rate)  # fmt: skip

    def render_only() -> None:
        track, talking = track_of(scene), TalkingFace(pixels, face)
        for i in range(track.frames):
            talking.frame(track, i)

    def both() -> None:
        renderer.render(scene, folder / "r.mp4", preset="veryfast", crf=18)

    return {"render + encode": both, "render only": render_only, "encode only": encode_only}


def _photo(side: int) -> bytes:
    """scikit-image's astronaut (a real face) as a JPEG `side` px a side, as users upload."""
    out = io.BytesIO()
    Image.fromarray(astronaut()).resize((side, side), Image.LANCZOS).save(out, format="JPEG")
    return out.getvalue()


def _build_steps(finder, data: bytes) -> dict[str, Callable[[], object]]:
    """The CPU steps of an avatar build's task (`AvatarBuild.run`), each on its own."""
    photo = decode_image(data, formats=MEDIA_FORMATS).convert("RGB")
    face = one_face(finder.find(data))
    return {
        "decode": lambda: decode_image(data, formats=MEDIA_FORMATS).convert("RGB"),
        "find the face": lambda: one_face(finder.find(data)),
        "align + PNG": lambda: align(photo, face),
    }


def _builds(rounds: int) -> None:
    """Avatar build time (POST /v1/avatar/async_build's task) per step, CPU ms, medians."""
    finder = face_finder()
    print(f"\navatar build of the astronaut photo (JPEG), CPU ms, median of {rounds} rounds")
    print(f"{'side':>6} {'decode':>8} {'find the face':>14} {'align + PNG':>12} {'total':>8}")
    for side in BUILD_SIDES:
        steps = _build_steps(finder, _photo(side))
        ms = {name: [] for name in steps}
        for _ in range(rounds):
            for name, step in steps.items():
                ms[name].append(_cpu_and_wall(step)[0] * 1000)
        cells = [statistics.median(values) for values in ms.values()]
        print(f"{side:>6} {cells[0]:>8.0f} {cells[1]:>14.0f} {cells[2]:>12.0f} {sum(cells):>8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    scene = _scene(args.seconds)
    video_s = engine.frame_count(len(scene.pcm) / 2 / scene.sample_rate, FPS) / FPS
    with tempfile.TemporaryDirectory() as folder:
        candidates = _candidates(scene, Path(folder))
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in candidates}
        for _ in range(args.rounds):
            for name, work in candidates.items():
                samples[name].append(_cpu_and_wall(work))
    print(f"{video_s:.2f} s of talking video, {SIDE}x{SIDE} at {FPS} fps, one core, "
          f"{args.rounds} interleaved rounds (medians)")  # fmt: skip
    print(f"{'':>16} {'CPU s':>7} {'wall s':>7} {'video s / CPU s':>16} {'video s / wall s':>17}")
    for name, runs in samples.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        print(f"{name:>16} {cpu:>7.2f} {wall:>7.2f} {video_s / cpu:>16.2f} {video_s / wall:>17.2f}")
    _builds(args.rounds)


if __name__ == "__main__":
    main()
