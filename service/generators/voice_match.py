"""A matched voice: the built-in voice, pitch, pitch range and speaking rate nearest to a
speaker's samples. This is what the clone task makes; it is not a neural clone (no model learns
the speaker's timbre), and docs/api.md says so.

The samples are measured (F0 median and spread by `pitch`, words per minute of sounding audio
from their annotations), and so is each candidate voice on a calibration text at a few settings
of eSpeak NG's pitch, range and rate; the settings that reproduce the samples' measures are
interpolated from those. Calibrations are measured once per process."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np

import engine
from service.domain.speech import STT_SAMPLE_RATE, MatchedVoice, PremadeVoice, Voice
from service.generators import espeak
from service.generators.pitch import PitchStats, f0_track, pitch_stats

_CALIBRATION = {
    "en": "Hello there, I am testing how my voice sounds today. It is a fine morning for a walk.",
    "zh": "你好，我正在测试我的声音。今天早上天气很好，适合散步。",
}
_PITCHES = (0, 25, 50, 75, 100)
_RANGES = (0, 50, 100)
_RATE = 175
_CJK = re.compile(r"[\u3400-\u9fff]")
# Chinese has no spaces: about 1.5 characters make a "word" in words-per-minute terms.
_CHARACTERS_PER_WORD = 1.5


def _words(text: str) -> float:
    characters = len(_CJK.findall(text))
    return len(_CJK.sub(" ", text).split()) + characters / _CHARACTERS_PER_WORD


def _language(texts: list[str]) -> str:
    characters = sum(len(_CJK.findall(text)) for text in texts)
    return "zh" if characters > sum(len(text) for text in texts) / 3 else "en"


def _samples(speech) -> np.ndarray:
    wav = engine.wav_bytes(speech.pcm, speech.sample_rate)
    return np.frombuffer(engine.decode_audio(wav, STT_SAMPLE_RATE, 120).pcm, "<i2")


def _measure(samples: list[np.ndarray], words: float) -> tuple[PitchStats, float]:
    """Pitch statistics over all samples together, and words per minute of sounding audio."""
    pooled = np.concatenate([f0_track(s, STT_SAMPLE_RATE) for s in samples])
    voiced = pooled[~np.isnan(pooled)]
    sounding = sum(pitch_stats(s, STT_SAMPLE_RATE).sounding_s for s in samples)
    if len(voiced) < 5:
        return PitchStats(0.0, 0.0, 0.0, sounding), 0.0
    low, median, high = np.percentile(voiced, [10, 50, 90])
    stats = PitchStats(float(median), float(12 * np.log2(high / low)), len(voiced) * 0.01, sounding)
    return stats, (words / sounding * 60 if sounding else 0.0)


@dataclass(frozen=True)
class _Calibration:
    f0_by_pitch: tuple[float, ...]  # median Hz at each of _PITCHES
    range_by_setting: tuple[float, ...]  # semitones at each of _RANGES
    wpm: float  # measured words per minute at _RATE


@cache
def _calibration(name: str, language: str) -> _Calibration:
    text = _CALIBRATION[language]

    def measured(**settings: int) -> tuple[PitchStats, float]:
        speech = espeak.speak(text, Voice("builtin", name, **settings))
        return _measure([_samples(speech)], _words(text))

    f0 = tuple(measured(pitch=p)[0].median_hz for p in _PITCHES)
    spread = tuple(measured(pitch_range=r)[0].range_semitones for r in _RANGES)
    return _Calibration(f0, spread, measured(rate=_RATE)[1])


def _setting(target: float, measured: tuple[float, ...], settings: tuple[int, ...]) -> int:
    """The setting whose measure is `target`, interpolated (measures rise with settings)."""
    order = np.argsort(measured)
    value = np.interp(target, np.asarray(measured)[order], np.asarray(settings)[order])
    return round(float(value))


def match(samples: list[tuple[bytes, str]], candidates: tuple[PremadeVoice, ...]) -> MatchedVoice:
    """The candidate voice (of the samples' language) and settings nearest to the samples,
    (16-bit mono PCM at STT_SAMPLE_RATE, what is said). Raises ValueError when they hold too
    little voiced speech to measure."""
    language = _language([text for _, text in samples])
    pool = [c for c in candidates if language in c.languages] or list(candidates)
    audio = [np.frombuffer(pcm, "<i2") for pcm, _ in samples]
    stats, wpm = _measure(audio, sum(_words(text) for _, text in samples))
    if stats.median_hz <= 0 or wpm <= 0:
        raise ValueError("the samples hold too little voiced speech to measure a pitch")

    def distance(candidate: PremadeVoice) -> float:
        f0 = _calibration(candidate.voice.name, language).f0_by_pitch
        if f0[0] <= stats.median_hz <= f0[-1]:  # reachable: prefer the voice's own middle
            return abs(np.log2(stats.median_hz / f0[2]))
        return 10 + min(abs(np.log2(stats.median_hz / f)) for f in (f0[0], f0[-1]))

    best = min(pool, key=distance)
    calibration = _calibration(best.voice.name, language)
    voice = Voice(
        best.voice.engine,
        best.voice.name,
        pitch=_setting(stats.median_hz, calibration.f0_by_pitch, _PITCHES),
        pitch_range=_setting(stats.range_semitones, calibration.range_by_setting, _RANGES),
        rate=int(np.clip(round(_RATE * wpm / calibration.wpm), espeak.MIN_RATE, espeak.MAX_RATE)),
    )
    measured = {
        "f0_median_hz": round(stats.median_hz, 1),
        "f0_range_semitones": round(stats.range_semitones, 2),
        "words_per_minute": round(wpm, 1),
        "voiced_seconds": round(stats.voiced_s, 2),
    }
    return MatchedVoice(voice, best.languages, measured)


class BuiltInMatcher:
    """`service.domain.cloning.VoiceMatcher` over eSpeak NG's premade voices."""

    def match(self, samples: list[tuple[bytes, str]]) -> MatchedVoice:
        return match(samples, espeak.EspeakSpeech().premade())
