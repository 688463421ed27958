"""The parts of the generated videos: the motion words, the visemes heard in a recording, and
the per-frame track (blinks, head motion timed by the sound)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import engine
from service.domain.motion_presets import DEFAULT_ON, MotionPlan, plan_of
from service.domain.speech import BUILT_IN, Voice
from service.domain.visemes import REST, VISEMES
from service.generators.espeak import EspeakSpeech
from service.generators.face_track import face_track, frame_levels, mouth_track
from service.generators.lipsync import HOP_MS, audio_timeline

RATE, FPS = 24_000, 25


@pytest.mark.parametrize(
    ("positive", "negative", "presets"),
    [
        ("", "", DEFAULT_ON | {"nod"}),
        ("A happy man, tilting his head", "", DEFAULT_ON | {"smile", "tilt"}),
        (
            "Nodding, smiling. Looking around!",
            "no Nodding or blinks",
            {"sway", "smile", "look_around"},
        ),
        ("calm", "swaying", {"blink", "still"}),
        ("unblinking nodder", "", DEFAULT_ON | {"nod"}),  # whole words only
    ],
)
def test_prompt_words_choose_the_motions(positive, negative, presets):
    assert plan_of(positive, negative).presets == frozenset(presets)


def buzz(seconds: float, f0: float = 130.0) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    wave = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 25))
    return 0.3 * wave / np.abs(wave).max()


def pcm(samples: np.ndarray) -> bytes:
    return (samples * 32767).astype("<i2").tobytes()


def test_silence_is_a_closed_mouth_and_sound_opens_it():
    rng = np.random.default_rng(1)
    quiet = rng.normal(0, 1e-4, RATE // 2)
    cues = audio_timeline(pcm(np.concatenate([quiet, buzz(0.5), quiet])), RATE)
    assert cues[0] == (0, REST) and cues[-1][1] == REST
    assert all(name in VISEMES for _, name in cues)
    spoken = [at for at, name in cues if name != REST]
    # Speech starts where the sound does (within a hop and the window), and ends by its end.
    assert abs(spoken[0] - 500) <= 3 * HOP_MS and max(spoken) < 1000
    assert audio_timeline(pcm(quiet), RATE) == [(0, REST)]


def test_hiss_is_frication():
    rng = np.random.default_rng(2)
    hiss = np.diff(rng.normal(0, 0.2, RATE // 2 + 1))  # energy mostly at high frequencies
    names = {
        name for _, name in audio_timeline(pcm(np.concatenate([np.zeros(RATE // 4), hiss])), RATE)
    }
    assert "SS" in names or "FF" in names


def test_blinks_and_nods_follow_the_plan_and_the_sound():
    sound = np.concatenate([buzz(2.0) * np.sin(np.pi * 3 * np.arange(2 * RATE) / RATE) ** 2,
                            np.zeros(2 * RATE)])  # fmt: skip
    levels = frame_levels(pcm(sound), RATE, FPS, 100)
    cues = audio_timeline(pcm(sound), RATE)
    plain = face_track(cues, levels, FPS, MotionPlan(frozenset({"nod"})), 5)
    assert not plain.blink.any() and not plain.dx.any() and not plain.angle.any()
    assert plain.dy[:50].max() > 0.01 and not plain.dy[55:].any()  # nods only while speaking
    full = face_track(cues, levels, FPS, plan_of("", ""), 5)
    assert full.blink.max() == 1.0
    assert np.abs(full.dx[60:]).max() < np.abs(full.dx[:50]).max() + 1e-3  # calmer in the pause
    again = face_track(cues, levels, FPS, plan_of("", ""), 5)
    assert np.array_equal(again.dx, full.dx)  # seeded: the same task draws the same video


def test_the_mouth_heard_agrees_with_the_speech_engines_own():
    """eSpeak NG says which shape each moment of its speech is: the shapes heard in the same
    audio without that timeline open and close the mouth in the same frames, nearly always."""
    voice = Voice(BUILT_IN, "en-us")
    text = "Hello there. How are you today? I am fine, thank you very much."
    speech = asyncio.run(EspeakSpeech().synthesize(text, voice))
    decoded = engine.decode_audio(engine.wav_bytes(speech.pcm, speech.sample_rate), RATE, 60)
    frames = engine.frame_count(decoded.duration_s, FPS)
    steady = np.ones(frames, np.float32)
    told, _ = mouth_track(list(speech.visemes), steady, FPS)
    heard, _ = mouth_track(audio_timeline(decoded.pcm, RATE), steady, FPS)
    assert np.mean((told > 0.1) == (heard > 0.1)) > 0.85
    assert np.corrcoef(told, heard)[0, 1] > 0.6
