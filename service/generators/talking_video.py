"""The built-in talking-video engine (`VideoRenderer` of `service.domain.talking.run`): the
portrait, scaled to fit the video's size, animated frame by frame (`talking_face`) along a
track (`face_track`) made from the sound and its viseme timeline (the TTS's own, else heard
by `lipsync`), encoded with the sound by `engine.compose`. It draws one frame at a time, so a
ten-minute video needs no more memory than a short one."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

import engine
from service.domain.faces import FaceLandmarks, Point
from service.domain.talking.run import Scene
from service.generators.face_track import FaceTrack, face_track, frame_levels
from service.generators.lipsync import audio_timeline
from service.generators.talking_face import TalkingFace


def _even_fit(width: int, height: int, max_side: int) -> tuple[int, int]:
    """The video's size: the portrait's, scaled down to fit `max_side`, rounded to even."""
    scale = min(1.0, max_side / max(width, height))
    return max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def _scaled(face: FaceLandmarks, sx: float, sy: float) -> FaceLandmarks:
    def point(p: Point) -> Point:
        return Point(p.x * sx, p.y * sy)

    return FaceLandmarks(
        face.left * sx, face.top * sy, face.width * sx, face.height * sy,
        point(face.left_eye), point(face.right_eye), face.eye_width * sx,
        point(face.mouth), face.mouth_width * sx, face.method,
    )  # fmt: skip


def portrait_of(png: bytes, face: FaceLandmarks, max_side: int):
    """(RGB pixels at the video's size, the face's landmarks in them). Transparent parts of
    the image are shown over white."""
    image = Image.open(io.BytesIO(png))
    image.load()
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        image = image.convert("RGBA")
        backdrop = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(backdrop, image)
    image = image.convert("RGB")
    width, height = _even_fit(image.width, image.height, max_side)
    sx, sy = width / image.width, height / image.height
    if (width, height) != image.size:
        image = image.resize((width, height), Image.Resampling.LANCZOS)
    return np.asarray(image), _scaled(face, sx, sy)


def track_of(scene: Scene) -> FaceTrack:
    """What the face does in each frame: as many frames as the sound lasts, to the nearest."""
    frames = engine.frame_count(len(scene.pcm) / 2 / scene.sample_rate, scene.fps)
    cues = (
        scene.visemes if scene.visemes is not None else audio_timeline(scene.pcm, scene.sample_rate)
    )
    levels = frame_levels(scene.pcm, scene.sample_rate, scene.fps, frames)
    return face_track(cues, levels, scene.fps, scene.plan, scene.seed)


class BuiltInTalkingVideos:
    def render(
        self, scene: Scene, dst: Path, *, preset: str, crf: float, progress=None, cancel=None
    ) -> engine.ComposedVideo:
        pixels, face = portrait_of(scene.png, scene.face, scene.max_side)
        track = track_of(scene)  # about a second for ten minutes of sound: look at cancel after
        if cancel is not None and cancel.is_set():
            raise engine.Canceled("the video was canceled")
        talking = TalkingFace(pixels, face)

        def frames() -> Iterator[np.ndarray]:
            for i in range(track.frames):
                yield talking.frame(track, i)

        height, width = pixels.shape[:2]
        return engine.compose(
            dst, frames(), width=width, height=height, fps=scene.fps, pcm=scene.pcm,
            sample_rate=scene.sample_rate, preset=preset, crf=crf,
            total_frames=track.frames, progress=progress, cancel=cancel,
        )  # fmt: skip
