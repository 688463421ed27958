"""What the face does in each frame of a talking video: how open and wide the mouth is, how far
the lids are closed, and where the head is. Mouth from a viseme timeline and the sound's
loudness; blinks and head motion from a seeded random source and the motion plan, timed by the
sound (nods on stressed syllables, stillness in pauses).

Frame i shows the sound of [i / fps, (i + 1) / fps): its mouth is the mean of the shapes the
timeline holds over that span, so a shape starts in the frame its sound starts in (lips within
one frame of the sound) and a shape held for less than a frame still shows partly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from service.domain.motion_presets import MotionPlan
from service.domain.visemes import MOUTH, REST
from service.generators.lipsync import loudness_db, speech_threshold

_SUBSTEPS = 4  # timeline samples per frame
_BLINK = (0.5, 1.0, 0.7, 0.3)  # lid closure over a blink's frames at 25 fps (~160 ms)
_BLINK_GAP_S = (2.0, 5.5)
_SPEAKING_RISE_S = 0.15  # how fast motion settles in and out as speech starts and stops


@dataclass(frozen=True)
class FaceTrack:
    """Per-frame arrays, each of length `frames`. Offsets and angles are in face heights
    (dx, dy) and degrees (angle, positive = counter-clockwise) so they scale with the face."""

    open: np.ndarray  # 0..1, the jaw
    wide: np.ndarray  # 0..1, lip spread
    smile: np.ndarray  # 0..1, corners up
    blink: np.ndarray  # 0..1, lids closed
    dx: np.ndarray
    dy: np.ndarray
    angle: np.ndarray

    @property
    def frames(self) -> int:
        return len(self.open)


def frame_levels(pcm: bytes, rate: int, fps: int, frames: int) -> np.ndarray:
    """Each frame's loudness, 0 at the recording's speech threshold (and below) to 1 at its
    peaks."""
    samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    db = loudness_db(samples, rate)  # every 10 ms
    threshold, peak = speech_threshold(db), float(np.percentile(db, 99))
    hop_level = np.clip((db - threshold) / max(peak - threshold, 1e-6), 0, 1)
    hops_per_frame = 100 / fps
    out = np.zeros(frames, np.float32)
    for i in range(frames):
        lo = int(i * hops_per_frame)
        hi = max(lo + 1, int((i + 1) * hops_per_frame))
        out[i] = hop_level[lo:hi].mean() if lo < len(hop_level) else 0.0
    return out


def mouth_track(cues: Sequence[tuple[int, str]], levels: np.ndarray, fps: int):
    """(open, wide) per frame from the timeline, the jaw opening further on louder sound."""
    frames = len(levels)
    starts = np.array([at for at, _ in cues], np.float64)
    shapes = np.array([MOUTH[name] for _, name in cues], np.float32)  # (cues, 2)
    resting = np.array([name == REST for _, name in cues])
    times = (np.arange(frames)[:, None] + (np.arange(_SUBSTEPS) + 0.5) / _SUBSTEPS) * 1000 / fps
    index = np.clip(np.searchsorted(starts, times, side="right") - 1, 0, len(cues) - 1)
    open_, wide = shapes[index, 0].mean(axis=1), shapes[index, 1].mean(axis=1)
    speaking = ~resting[index].all(axis=1)
    open_ = np.where(speaking, open_ * (0.65 + 0.35 * levels), open_)
    return open_.astype(np.float32), wide.astype(np.float32)


def _blinks(frames: int, fps: int, rng: np.random.Generator) -> np.ndarray:
    out = np.zeros(frames, np.float32)
    at = rng.uniform(0.5, 3.0) * fps  # the first blink comes early
    shape = np.interp(np.linspace(0, len(_BLINK) - 1, max(2, round(len(_BLINK) * fps / 25))),
                      np.arange(len(_BLINK)), _BLINK)  # fmt: skip
    while at < frames:
        start = int(at)
        out[start : start + len(shape)] = shape[: max(0, frames - start)]
        at += rng.uniform(*_BLINK_GAP_S) * fps
    return out


def _smooth_noise(frames: int, fps: int, rng: np.random.Generator, periods) -> np.ndarray:
    """A slow wandering signal in about [-1, 1]: a few sines of random phase."""
    t = np.arange(frames) / fps
    total = sum(np.sin(2 * np.pi * t / p + rng.uniform(0, 2 * np.pi)) for p in periods)
    return (total / len(periods)).astype(np.float32)


def _speaking(levels: np.ndarray, fps: int) -> np.ndarray:
    """0 in pauses, 1 while speaking, easing between the two."""
    active = (levels > 0.05).astype(np.float32)
    alpha = 1 - np.exp(-1 / (_SPEAKING_RISE_S * fps))
    out, value = np.zeros_like(active), 0.0
    for i, a in enumerate(active):
        value += alpha * (a - value)
        out[i] = value
    return out


def _stresses(levels: np.ndarray, fps: int) -> np.ndarray:
    """Pulses (0..1) on stressed syllables: loudness peaks well above their neighbourhood,
    at least 0.4 s apart, each a quick dip and return over about 0.4 s."""
    frames, out = len(levels), np.zeros(len(levels), np.float32)
    radius, last = max(1, fps // 5), -fps
    pulse = np.sin(np.linspace(0, np.pi, max(3, round(0.4 * fps))))
    for i in range(frames):
        around = levels[max(0, i - radius) : i + radius + 1]
        if levels[i] > 0.5 and levels[i] >= around.max() and i - last >= 0.4 * fps:
            end = min(frames, i + len(pulse))
            out[i:end] = np.maximum(out[i:end], pulse[: end - i] * levels[i])
            last = i
    return out


def head_track(levels: np.ndarray, fps: int, plan: MotionPlan, seed: int):
    """(dx, dy, angle) per frame from the plan's presets."""
    frames, rng = len(levels), np.random.default_rng(seed)
    speaking, stresses = _speaking(levels, fps), _stresses(levels, fps)
    dx, dy, angle = (np.zeros(frames, np.float32) for _ in range(3))
    if plan.has("sway"):  # calmer in pauses
        calm = 0.35 + 0.65 * speaking
        dx += 0.006 * calm * _smooth_noise(frames, fps, rng, (3.7, 6.1))
        dy += 0.004 * calm * _smooth_noise(frames, fps, rng, (4.3, 7.9))
        angle += 0.8 * calm * _smooth_noise(frames, fps, rng, (5.3, 8.7))
    if plan.has("nod"):
        dy += 0.018 * stresses
    if plan.has("shake"):
        t = np.arange(frames) / fps
        dx += 0.02 * stresses * np.sin(2 * np.pi * 3 * t)
    if plan.has("tilt"):
        angle += 4.0 * speaking * (0.6 + 0.4 * _smooth_noise(frames, fps, rng, (6.0,)))
    if plan.has("look_around"):
        dx += 0.03 * (1 - 0.5 * speaking) * _smooth_noise(frames, fps, rng, (4.1, 9.3))
    if plan.has("still"):
        dx, dy, angle = dx * 0.2, dy * 0.2, angle * 0.2
    return dx, dy, angle


def face_track(
    cues: Sequence[tuple[int, str]],
    levels: np.ndarray,
    fps: int,
    plan: MotionPlan,
    seed: int,
) -> FaceTrack:
    """The whole track of a video with `len(levels)` frames."""
    frames = len(levels)
    open_, wide = mouth_track(cues, levels, fps)
    rng = np.random.default_rng(seed)
    blink = _blinks(frames, fps, rng) if plan.has("blink") else np.zeros(frames, np.float32)
    smile = np.full(frames, 0.8 if plan.has("smile") else 0.0, np.float32)
    dx, dy, angle = head_track(levels, fps, plan, seed + 1)
    return FaceTrack(open_, np.clip(wide + 0.25 * smile, 0, 1), smile, blink, dx, dy, angle)
