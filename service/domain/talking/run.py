"""A generated video's run, in a task worker: find the face, decode the sound, render and encode
(through a `VideoRenderer`), then record the result (a signed `file_url`, like an upscale's:
`service.domain.upscale.results`) and its usage (seconds of video, of the task's kind)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import msgspec

import engine
from service.domain.context import Context
from service.domain.faces import FaceFinder, FaceLandmarks
from service.domain.files import result_key
from service.domain.ids import new_id
from service.domain.models import Task, UsageRecord
from service.domain.motion_presets import TALKING_PLAN, MotionPlan, plan_of
from service.domain.talking import FPS, MAX_VIDEO_SIDE, MOTION
from service.domain.talking.inputs import AUDIO_RATE, MAX_AUDIO_S, remove_inputs
from service.domain.task_runs import Completion, Job, Stopped, TaskFailed
from service.domain.tasks import COMPLETED


@dataclass(frozen=True)
class Scene:
    """Everything a video is made of."""

    png: bytes  # the portrait
    face: FaceLandmarks  # in the portrait's pixels
    pcm: bytes  # 16-bit mono at `sample_rate`
    sample_rate: int
    visemes: list[tuple[int, str]] | None  # None: heard from the sound itself
    plan: MotionPlan
    seed: int  # blinks and sway: the same task draws the same video
    fps: int = FPS
    max_side: int = MAX_VIDEO_SIDE


class VideoRenderer(Protocol):
    """Draws and encodes a scene (`service.generators.talking_video`)."""

    def render(
        self, scene: Scene, dst: Path, *, preset: str, crf: float, progress, cancel
    ) -> engine.ComposedVideo:
        """Raises engine.Canceled once `cancel` is set, engine.EngineError when encoding
        fails, ValueError when the face's landmarks cannot be drawn on the image."""
        ...


def _read(job: Job, key: str) -> bytes:
    with job.files.local_copy(key) as path:
        return path.read_bytes()


class GeneratedVideo:
    """The task kind of both generated videos (`name` is TALKING or MOTION)."""

    def __init__(self, name: str, finder: FaceFinder, renderer: VideoRenderer) -> None:
        self.name = name
        self._finder, self._renderer = finder, renderer

    def run(self, job: Job) -> engine.ComposedVideo:
        params = job.task.params
        try:
            png, audio = _read(job, params["image_key"]), _read(job, params["audio_key"])
            visemes = None
            if "visemes_key" in params:
                visemes = [(at, name) for at, name in json.loads(_read(job, params["visemes_key"]))]
        except FileNotFoundError:
            raise TaskFailed("INPUT_MISSING", "The task's inputs are no longer there.") from None
        sound = self._decode(audio)
        if job.cancel.is_set():
            raise Stopped
        job.report("finding the face", 0.02)
        seed = int(hashlib.sha256(job.task.task_id.encode()).hexdigest()[:8], 16)
        face = self._face(png, params.get("face"))
        scene = Scene(png, face, *sound, visemes, self._plan(params), seed)
        if job.cancel.is_set():
            raise Stopped
        return self._render(job, scene)

    def _face(self, png: bytes, known: dict | None) -> FaceLandmarks:
        """The face kept with the avatar the request named, else the largest one found."""
        if known is not None:
            return msgspec.convert(known, FaceLandmarks)
        faces = self._finder.find(png)
        if not faces:
            raise TaskFailed("NO_FACE", "No face was found in the image; send a portrait "
                             "with one face seen from the front.")  # fmt: skip
        return faces[0]  # the largest

    @staticmethod
    def _decode(audio: bytes) -> tuple[bytes, int]:
        try:
            decoded = engine.decode_audio(audio, AUDIO_RATE, MAX_AUDIO_S)
        except engine.InvalidAudio as exc:
            raise TaskFailed("INVALID_AUDIO", f"audio: {exc.message}") from None
        return decoded.pcm, decoded.sample_rate

    def _plan(self, params: dict) -> MotionPlan:
        if self.name == MOTION:
            return plan_of(params["positive_prompt"], params["negative_prompt"])
        return TALKING_PLAN

    def _render(self, job: Job, scene: Scene) -> engine.ComposedVideo:
        def progress(done: int, total: int) -> None:
            job.report("rendering", 0.05 + 0.94 * done / max(total, 1))

        settings = job.settings
        try:
            with job.files.local_target(result_key(job.task.task_id)) as dst:
                return self._renderer.render(
                    scene, dst, preset=settings.x264_preset, crf=settings.x264_crf,
                    progress=progress, cancel=job.cancel,
                )  # fmt: skip
        except engine.Canceled:
            raise Stopped from None
        except (engine.EngineError, ValueError) as exc:  # ValueError: landmarks it cannot use
            raise TaskFailed("PROCESSING_FAILED", f"The video could not be made: {exc}.") from None

    async def complete(self, ctx: Context, task: Task, output: engine.ComposedVideo) -> Completion:
        duration = round(output.duration, 3)
        result = {
            "output_duration": duration,
            "width": output.width,
            "height": output.height,
            "frames": output.frames,
            "size_bytes": output.size_bytes,
        }
        usage = UsageRecord(
            new_id("usg"), task.owner_id, self.name, task.task_id, task.started_ms,
            ctx.clock.now_ms(), duration, duration,
        )  # fmt: skip
        readable_until = task.created_ms + round(ctx.settings.result_ttl_s * 1000)
        return Completion(result, usage, readable_until)

    async def discard(self, ctx: Context, task: Task) -> None:
        await remove_inputs(ctx, task)
        if task.status != COMPLETED:
            await ctx.files.delete(result_key(task.task_id))
